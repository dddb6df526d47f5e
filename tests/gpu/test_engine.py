"""The stand-in GPU engine itself (testkit/gpuengine.py): Docker's nvidia device driver is
registered, so `--gpus` and device requests reach the container as NVIDIA_VISIBLE_DEVICES with
the stand-in hook run as a prestart hook; the main engine keeps its docker0, its iptables chains
and its published ports while the stand-in runs; and a stopped stand-in leaves no process, bridge
or folder behind."""

import ipaddress
import subprocess
from pathlib import Path

import requests
from docker import DockerClient
from docker.types import DeviceRequest

from testkit import gpuengine
from testkit.containers import TrackedContainer
from testkit.gpuengine import GpuEngine
from testkit.wait import wait_until
from tests.gpu.conftest import assert_no_gpu_holders

SHOW = "tr '\\0' '\\n' </proc/1/environ | grep '^NVIDIA_VISIBLE_DEVICES=' | tail -n 1"


def visible_with(engine: GpuEngine, image: str, request: DeviceRequest) -> str:
    out = engine.client().containers.run(image, ["-c", SHOW], entrypoint="/bin/sh", device_requests=[request],
                                         network_mode="none", remove=True)
    return bytes(out).decode().strip()


def test_device_requests_become_nvidia_visible_devices(gpu_engine: GpuEngine, image: str) -> None:
    assert "nvidia-container-runtime" in gpu_engine.client().info()["Runtimes"]["nvidia"]["path"]
    calls_before = len(gpu_engine.hook_calls())
    by_id = DeviceRequest(driver="nvidia", device_ids=["1", gpuengine.MIG_UUIDS[0]], capabilities=[["gpu"]])
    assert visible_with(gpu_engine, image, by_id) == f"NVIDIA_VISIBLE_DEVICES=1,{gpuengine.MIG_UUIDS[0]}"
    by_count = DeviceRequest(count=2, capabilities=[["gpu"]])
    assert visible_with(gpu_engine, image, by_count) == "NVIDIA_VISIBLE_DEVICES=0,1"
    assert gpu_engine.hook_calls()[calls_before:] == ["prestart", "prestart"]
    assert_no_gpu_holders(gpu_engine)


def test_the_main_engine_keeps_working(gpu_engine: GpuEngine, tracked: TrackedContainer) -> None:
    """The stand-in has its own bridge and leaves iptables alone: docker0 stays, the main engine's
    chains stay, and its containers start on docker0 and answer on their published ports."""
    docker0 = subprocess.run(["ip", "-4", "-o", "addr", "show", "docker0"], capture_output=True, text=True, check=False)
    assert docker0.returncode == 0 and "inet " in docker0.stdout, docker0.stderr
    assert gpu_engine.bridge != "docker0"
    for table in ("nat", "filter"):
        chain = subprocess.run(["iptables", "-t", table, "-n", "-L", "DOCKER"], capture_output=True, text=True,
                               check=False)
        assert chain.returncode == 0, f"the main engine's {table} DOCKER chain is gone: {chain.stderr}"
    server = tracked.run(publish=(8000,), entrypoint=["/opt/venv/bin/python", "-m", "http.server", "8000"],
                         healthcheck={"test": ["NONE"]})
    assert server.attrs["HostConfig"]["NetworkMode"] == "default"
    url = f"http://127.0.0.1:{tracked.port(server, 8000)}/"
    wait_until(lambda: requests.get(url, timeout=2).status_code == 200, timeout=30, what="a main-engine container")


def addresses_in(engine: GpuEngine) -> list[str]:
    out = subprocess.run(["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True, check=True).stdout
    return [line.split()[1] for line in out.splitlines()
            if ipaddress.IPv4Interface(line.split()[3]).ip in engine.subnet]


def test_a_stopped_engine_leaves_nothing(docker_client: DockerClient) -> None:
    """Even a network left on it (a test that failed before its teardown): its bridge goes too."""
    engine = gpuengine.start()
    pid, root, bridge = engine.process.pid, engine.root, engine.bridge
    engine.client().networks.create("left-behind", driver="bridge")
    assert len(addresses_in(engine)) == 2  # its own bridge and the network's
    engine.stop()
    assert addresses_in(engine) == []
    assert engine.process.poll() is not None
    assert not Path(f"/proc/{pid}").exists()
    assert gpuengine.processes_of(root) == [], "its containerd outlived it"
    assert subprocess.run(["ip", "link", "show", bridge], capture_output=True, check=False).returncode != 0
    assert not root.exists()
    assert subprocess.run(["ip", "link", "show", "docker0"], capture_output=True, check=False).returncode == 0
    assert docker_client.ping()
