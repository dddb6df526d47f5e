"""`make run` on a GPU-capable engine (the stand-in): every GPU by default (--gpus all, as on a real
GPU box), the devices GPUS names (an index, a MIG UUID), none with GPUS=none, and a bad GPUS as one
line that leaves the running environment as it was. The image is the one under test (`make -o
build`: not built again); its ports are bound to 127.0.0.1. The self-check in the started
container says that GPUs were named but no driver was injected (the stand-in hook injects none)."""

import re
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
import requests
from docker import DockerClient
from docker.models.containers import Container

from testkit.gpuengine import MIG_UUIDS, GpuEngine, visible_devices
from testkit.net import free_host_port
from testkit.ssh import KeyPair, run_as
from testkit.wait import wait_until
from tests.gpu.conftest import assert_no_gpu_holders
from tf29env.core.paths import REPO

NAME = "tf29-env"  # the Makefile's container
VOLUMES = ("tf29-env-work", "tf29-env-hostkeys", "tf29-env-nv", "tf29-env-local")


@pytest.fixture(scope="module")
def engine(gpu_engine: GpuEngine) -> Iterator[GpuEngine]:
    yield gpu_engine
    client = gpu_engine.client()
    for container in client.containers.list(all=True, filters={"name": NAME}):
        container.remove(force=True)
    for volume in VOLUMES:
        client.volumes.get(volume).remove(force=True)
    assert_no_gpu_holders(gpu_engine)


def make_run(engine: GpuEngine, image: str, keypair: KeyPair, *variables: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in engine.environ().items() if key != "GPUS"}
    return subprocess.run(
        ["make", "--no-print-directory", "-o", "build", "run", f"IMAGE={image}", "HOST_ADDRESS=127.0.0.1",
         f"JUPYTER_HOST_PORT={free_host_port()}", f"SSH_HOST_PORT={free_host_port()}",
         f"SSH_PUBLIC_KEY={keypair.private}.pub", *variables],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)


def started(engine: GpuEngine, image: str, keypair: KeyPair, *variables: str) -> Container:
    done = make_run(engine, image, keypair, *variables)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    container = engine.client().containers.get(NAME)

    def healthy() -> bool:
        container.reload()
        return bool(container.attrs["State"]["Health"]["Status"] == "healthy")

    wait_until(healthy, timeout=120, what="make run's container healthy")
    return container


def requests_of(container: Container) -> list[dict[str, Any]]:
    return list(container.attrs["HostConfig"].get("DeviceRequests") or [])


def self_check_line(container: Container, check: str) -> str:
    def line() -> str | None:
        logs = container.logs().decode(errors="replace")
        return next((row for row in logs.splitlines() if f" {check}: " in row and row.startswith("selfcheck: [")), None)

    return wait_until(line, timeout=60, what=f"the self-check's {check} line")


def test_every_gpu_on_a_gpu_capable_engine(engine: GpuEngine, image: str, keypair: KeyPair) -> None:
    calls = len(engine.hook_calls())
    container = started(engine, image, keypair)
    (request,) = requests_of(container)
    assert (request["Count"], request["DeviceIDs"], request["Capabilities"]) == (-1, None, [["gpu"]])
    assert visible_devices(container) == "all"
    assert engine.hook_calls()[calls:] == ["prestart"]


def test_gpus_names_the_devices(engine: GpuEngine, image: str, keypair: KeyPair) -> None:
    container = started(engine, image, keypair, f"GPUS=0,{MIG_UUIDS[1]}")
    (request,) = requests_of(container)
    assert request["DeviceIDs"] == ["0", MIG_UUIDS[1]]
    assert visible_devices(container) == f"0,{MIG_UUIDS[1]}"
    line = self_check_line(container, "driver.present")
    assert line.startswith(f"selfcheck: [1 driver] FAIL driver.present: NVIDIA_VISIBLE_DEVICES=0,{MIG_UUIDS[1]} "
                           "names GPUs but no NVIDIA driver was injected"), line
    assert "-> fix: install the NVIDIA Container Toolkit on the host" in line


def test_gpus_none_starts_without_gpus(engine: GpuEngine, image: str, keypair: KeyPair) -> None:
    container = started(engine, image, keypair, "GPUS=none")
    assert requests_of(container) == []
    assert visible_devices(container) == "void"
    assert "SKIP driver.cpu_only" in self_check_line(container, "driver.cpu_only")


@pytest.mark.parametrize(("gpus", "error"), [
    ("7", "tf29-env: ERROR: GPUS: 7 is not a GPU of this host (nvidia-smi -L lists: 0, 1, "),
    ("GPU-12", "tf29-env: ERROR: GPUS: 'GPU-12' is not a GPU index, GPU UUID or MIG UUID"),
    ("2", "tf29-env: ERROR: GPUS: GPU 2 is in MIG mode: name its MIG slices"),
])
def test_bad_gpus_is_one_line_and_keeps_the_running_environment(engine: GpuEngine, image: str, keypair: KeyPair,
                                                                gpus: str, error: str) -> None:
    client: DockerClient = engine.client()
    before = client.containers.get(NAME)
    done = make_run(engine, image, keypair, f"GPUS={gpus}")
    assert done.returncode != 0
    ours = [line for line in done.stderr.splitlines() if line.startswith("tf29-env:")]
    assert len(ours) == 1 and ours[0].startswith(error), done.stderr
    after = client.containers.get(NAME)
    assert (after.id, after.status) == (before.id, "running")


def printed(done: subprocess.CompletedProcess[str], prefix: str) -> str:
    lines = [line for line in done.stdout.splitlines() if line.startswith(prefix)]
    assert len(lines) == 1, done.stdout + done.stderr
    return lines[0]


def test_the_url_and_ssh_line_it_prints_answer(engine: GpuEngine, image: str, keypair: KeyPair) -> None:
    """What a person copies from `make run`'s last lines: the URL opens JupyterLab, the ssh command logs in."""
    done = make_run(engine, image, keypair, "GPUS=none")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    url = printed(done, "JupyterLab: ").split()[1]
    assert re.fullmatch(r"http://localhost:\d+/lab\?token=[0-9a-f]{48}", url), url
    assert requests.get(url, timeout=30).status_code == 200
    assert requests.get(url.split("?")[0].replace("/lab", "/api/status"), timeout=30).status_code == 403
    ssh = re.fullmatch(r"SSH: ssh -p (\d+) jovyan@localhost \(the key (\S+)\)", printed(done, "SSH: "))
    assert ssh and ssh.group(2) == f"{keypair.private}.pub", done.stdout
    code, out = run_as(int(ssh.group(1)), "jovyan", keypair, "id -un")
    assert code == 0 and out.splitlines()[-1] == "jovyan", out


def test_without_a_key_it_says_ssh_is_off_and_how_to_turn_it_on(engine: GpuEngine, image: str,
                                                                 keypair: KeyPair) -> None:
    done = make_run(engine, image, keypair, "GPUS=none", "SSH_PUBLIC_KEY=")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert printed(done, "SSH: ") == ("SSH: off, as no ~/.ssh/id_ed25519.pub or ~/.ssh/id_rsa.pub was found: "
                                      "`make run SSH_PUBLIC_KEY=FILE.pub` turns it on")
    assert "ssh -p" not in done.stdout
    assert requests.get(printed(done, "JupyterLab: ").split()[1], timeout=30).status_code == 200
