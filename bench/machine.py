"""The machine the numbers were measured on: the table's header."""

import datetime
import os
import platform
from typing import Any

from docker import DockerClient


def describe(client: DockerClient) -> dict[str, Any]:
    info = client.info()
    version = client.version()
    load = os.getloadavg()
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host_cpus": os.cpu_count(),
        "engine_cpus": int(info.get("NCPU", 0)),
        "memory_bytes": int(info.get("MemTotal", 0)),
        "engine_version": str(version.get("Version", "")),
        "engine_api": str(version.get("ApiVersion", "")),
        "storage_driver": str(info.get("Driver", "")),
        "kernel": platform.release(),
        "os": str(info.get("OperatingSystem", "")),
        "load_average_at_start": [round(value, 2) for value in load],
    }


def header_line(machine: dict[str, Any]) -> str:
    memory = machine["memory_bytes"] / 2**30
    load = machine["load_average_at_start"]
    return (f"{machine['date']}: {machine['engine_cpus']} cores, {memory:.1f} GiB, Docker {machine['engine_version']} "
            f"({machine['storage_driver']}), {machine['os']}, kernel {machine['kernel']}; "
            f"load average at start {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f} (1/5/15 min)")
