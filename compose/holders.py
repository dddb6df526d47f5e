"""Who holds each GPU of this host: `make gpus`, and the hub admin's `python -m hub.ctl gpus`.

For each GPU that `nvidia-smi --query-gpu` lists: its memory in use and in all, then each process
that `nvidia-smi --query-compute-apps` lists on it, named by what holds it: the compose member
(its `com.docker.compose.service` label) or hub user (the user label the hub's spawner puts on a
server, read by `hub.ctl gpus`) and the container, found through the process's cgroup
(/proc/PID/cgroup: cgroup v1 or v2, Docker's cgroupfs `/docker/ID` or systemd `docker-ID.scope`)
and the Docker engine that DOCKER_HOST names; a process in no container is a host process, with
its command line. `nvidia-smi` inside a container lists no processes: this runs
on the host. No nvidia-smi, or one that fails: one line, exit 1.

The parsers and the join are pure functions (tests/unit/compose/test_holders.py); `main` reads
the host. Needs the Docker SDK: run it with the host tools' venv (`make gpus`) or the hub's.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import docker
import docker.errors

EXIT_NO_DRIVER = 1
GPU_FIELDS = "index,uuid,name,memory.used,memory.total"
APP_FIELDS = "gpu_uuid,pid,used_memory"
FORMAT = "--format=csv,noheader,nounits"
# Compose's own labels on every container it starts.
SERVICE_LABEL = "com.docker.compose.service"
PROJECT_LABEL = "com.docker.compose.project"
# Docker names a container's cgroup after its full ID: /docker/ID (cgroupfs) or docker-ID.scope (systemd).
_CGROUP_ID = re.compile(r"(?:^|/)docker[-/]([0-9a-f]{64})(?:\.scope)?(?=/|$)")
COMMAND_WIDTH = 60


class HoldersError(Exception):
    """nvidia-smi is missing, fails, or prints what this does not understand: one line, exit 1."""


@dataclass(frozen=True)
class Gpu:
    index: str
    uuid: str
    name: str
    used_mib: int | None  # None: nvidia-smi said [N/A] or [Insufficient Permissions]
    total_mib: int | None


@dataclass(frozen=True)
class App:
    """One compute process on a GPU, as nvidia-smi --query-compute-apps lists it."""

    gpu_uuid: str
    pid: int
    used_mib: int | None


@dataclass(frozen=True)
class ContainerInfo:
    id: str
    name: str
    labels: Mapping[str, str] = field(default_factory=dict)


# What holds a container, in people's words ("member ann"), or None when the describer does not know it.
Describer = Callable[[ContainerInfo], str | None]


def _mib(value: str) -> int | None:
    """A memory field in MiB; None for nvidia-smi's [N/A], N/A or [Insufficient Permissions]."""
    return int(value) if value.isdigit() else None


def _rows(text: str, columns: int, what: str) -> list[list[str]]:
    rows = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("No running processes found"):
            continue
        fields = [part.strip() for part in line.split(",")]
        if len(fields) < columns:
            raise HoldersError(f"nvidia-smi --query-{what} printed a line this does not understand: {line[:120]!r}")
        rows.append(fields)
    return rows


def parse_gpus(text: str) -> tuple[Gpu, ...]:
    """The GPUs in `nvidia-smi --query-gpu=index,uuid,name,memory.used,memory.total` CSV (no header,
    no units); a name with commas stays whole."""
    return tuple(Gpu(row[0], row[1], ", ".join(row[2:-2]), _mib(row[-2]), _mib(row[-1]))
                 for row in _rows(text, 5, "gpu"))


def parse_apps(text: str) -> tuple[App, ...]:
    """The processes in `nvidia-smi --query-compute-apps=gpu_uuid,pid,used_memory` CSV."""
    apps = []
    for row in _rows(text, 3, "compute-apps"):
        if not row[1].isdigit():
            raise HoldersError(f"nvidia-smi --query-compute-apps printed a pid that is not a number: {row[1]!r}")
        apps.append(App(row[0], int(row[1]), _mib(row[2])))
    return tuple(apps)


def container_id(cgroup: str) -> str | None:
    """The full ID of the Docker container whose cgroup /proc/PID/cgroup names, None for a host process."""
    for line in cgroup.splitlines():
        path = line.split(":", 2)[-1]
        if found := _CGROUP_ID.findall(path):
            return str(found[-1])
    return None


def compose_member(container: ContainerInfo) -> str | None:
    service = container.labels.get(SERVICE_LABEL)
    if not service:
        return None
    project = container.labels.get(PROJECT_LABEL)
    return f"member {service}" + (f" (project {project})" if project else "")


def describe_process(pid: int, container: ContainerInfo | None, cid: str | None, command: str | None,
                     describers: Sequence[Describer]) -> str:
    """Who holds PID: a member or user and its container, a container, or a host process."""
    if cid is None:
        return f"host process {pid} ({command})" if command is not None else f"process {pid} (gone)"
    if container is None:
        return f"container {cid[:12]} (not on this Docker engine), pid {pid}"
    who = next((said for describe in describers if (said := describe(container))), None)
    return f"{who}: container {container.name}, pid {pid}" if who else f"container {container.name}, pid {pid}"


def _memory(used: int | None, total: int | None) -> str:
    return f"{'?' if used is None else used} / {'?' if total is None else total} MiB in use"


def report(gpus: Sequence[Gpu], apps: Sequence[App], holders: Mapping[int, str]) -> list[str]:
    """The lines `make gpus` prints: each GPU, then each process on it with its holder (HOLDERS: by pid)."""
    lines = []
    known = {gpu.uuid for gpu in gpus}
    for gpu in gpus:
        lines.append(f"GPU {gpu.index} ({gpu.name}, {gpu.uuid}): {_memory(gpu.used_mib, gpu.total_mib)}")
        on_it = [app for app in apps if app.gpu_uuid == gpu.uuid]
        lines.extend(f"  {holders[app.pid]}, {'?' if app.used_mib is None else app.used_mib} MiB" for app in on_it)
        if not on_it:
            lines.append("  no processes")
    for app in apps:
        if app.gpu_uuid not in known:  # nvidia-smi listed it on a GPU the GPU query did not list
            lines.append(f"{app.gpu_uuid}: {holders[app.pid]}")
    return lines


def run_smi(*args: str) -> str:
    """What nvidia-smi prints for ARGS; HoldersError when there is none or it fails."""
    path = shutil.which("nvidia-smi")
    if path is None:
        raise HoldersError("no NVIDIA driver on this host: nvidia-smi is not on PATH")
    try:
        done = subprocess.run([path, *args], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise HoldersError(f"nvidia-smi did not answer: {exc}") from None
    if done.returncode != 0:
        said = (done.stdout + done.stderr).strip().splitlines() or [f"exit {done.returncode}"]
        raise HoldersError(f"nvidia-smi failed (is the NVIDIA driver loaded?): {said[-1][:200]}")
    return done.stdout


def read_proc(pid: int, name: str) -> str | None:
    try:
        return Path(f"/proc/{pid}/{name}").read_bytes().decode(errors="replace")
    except OSError:
        return None


def command_of(pid: int) -> str | None:
    raw = read_proc(pid, "cmdline")
    if raw is None:
        return None
    command = " ".join(raw.split("\0")).strip() or f"[{(read_proc(pid, 'comm') or '?').strip()}]"
    return command if len(command) <= COMMAND_WIDTH else command[: COMMAND_WIDTH - 3] + "..."


def lookup_containers(ids: Iterable[str]) -> dict[str, ContainerInfo]:
    """Name and labels of each container ID on the engine DOCKER_HOST names ({} where none answers)."""
    wanted = set(ids)
    if not wanted:
        return {}
    found = {}
    try:
        client = docker.from_env(timeout=30)
        for cid in wanted:
            try:
                container = client.containers.get(cid)
            except docker.errors.NotFound:
                continue
            found[cid] = ContainerInfo(cid, str(container.name), dict(container.labels or {}))
    except docker.errors.DockerException:
        return found
    return found


def holders_of(apps: Sequence[App], describers: Sequence[Describer]) -> dict[int, str]:
    """Who holds each app's pid on this host: its cgroup, then its container's name and labels."""
    cgroups = {app.pid: read_proc(app.pid, "cgroup") for app in apps}
    ids = {pid: container_id(text) if text is not None else None for pid, text in cgroups.items()}
    containers = lookup_containers(cid for cid in ids.values() if cid)
    return {pid: describe_process(pid, containers.get(cid) if cid else None, cid,
                                  command_of(pid) if cid is None else None, describers)
            for pid, cid in ids.items()}


def host_report(describers: Sequence[Describer] = (compose_member,)) -> list[str]:
    gpus = parse_gpus(run_smi(f"--query-gpu={GPU_FIELDS}", FORMAT))
    apps = parse_apps(run_smi(f"--query-compute-apps={APP_FIELDS}", FORMAT))
    return report(gpus, apps, holders_of(apps, describers))


def main(argv: Sequence[str] | None = None, describers: Sequence[Describer] = (compose_member,)) -> int:
    parser = argparse.ArgumentParser(prog="python -m compose.holders", description=__doc__.splitlines()[0])
    parser.parse_args(argv)
    try:
        lines = host_report(describers)
    except HoldersError as exc:
        print(f"tf29-env: ERROR: {exc}", file=sys.stderr)
        return EXIT_NO_DRIVER
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
