"""Who holds each GPU (docs/team.md, compose/holders.py) on the stand-in GPU engine: two real
containers, one with compose's labels (member dana) and one as the team hub starts a user's server
(ann.lee: labelled with the name, which the container's name holds escaped), and a host process hold
GPUs by their real host PIDs, which the stand-in nvidia-smi lists in the CSV of the real format.
`make gpus`, as docs/team.md has it, names the member and its container against its GPU; the hub
admin's `python -m hub.ctl gpus` names the hub user too, by the label. A host without nvidia-smi, or
with one that fails, gets one line and exit 1."""

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from docker.models.containers import Container

from compose import holders
from hub.settings import PROFILE_LABEL, USER_LABEL
from testkit import docblocks, gpuengine
from testkit.gpuengine import GPU0_UUID, GPU1_UUID, GpuEngine
from tests.gpu.conftest import assert_no_gpu_holders
from tf29env.core.paths import REPO

BLOCKS = docblocks.blocks_for(__file__)
HUB_PREFIX = "tf29-hub"  # hub/settings.py's default HUB_NAME_PREFIX, which the hub's ctl reads
HUB_USER = "ann.lee"
HUB_SERVER = f"{HUB_PREFIX}-ann-2elee"  # DockerSpawner's name of ann.lee's server: the name escaped
NO_DRIVER = "tf29-env: ERROR: no NVIDIA driver on this host: nvidia-smi is not on PATH"


@dataclass
class Holders:
    dana: Container  # a compose member's container
    ann: Container  # a hub user's server
    host_pid: int  # a process in no container


def host_pid(container: Container) -> int:
    container.reload()
    pid = int(container.attrs["State"]["Pid"])
    assert pid > 0 and container.status == "running", container.attrs["State"]
    return pid


@pytest.fixture(scope="module")
def held(gpu_engine: GpuEngine, image: str) -> Iterator[Holders]:
    client = gpu_engine.client()
    started: list[Container] = []
    host = subprocess.Popen(["sleep", "600"])
    try:
        # `sleep` as the entrypoint: the process that holds the GPU is the container's PID 1, no start-up.
        for name, labels in (("tf29-dana-1", {holders.SERVICE_LABEL: "dana", holders.PROJECT_LABEL: "tf29"}),
                             (HUB_SERVER, {PROFILE_LABEL: "gpu1", USER_LABEL: HUB_USER})):
            started.append(client.containers.run(image, ["infinity"], entrypoint=["sleep"], name=name, labels=labels,
                                                 detach=True))
        dana, ann = started
        gpuengine.set_query(gpu_engine.tools, "gpu", gpuengine.gpu_query(gpuengine.WITH_MIG, {"0": 9216, "1": 4096}))
        gpuengine.set_query(gpu_engine.tools, "compute-apps", f"{GPU0_UUID}, {host_pid(dana)}, 6144\n"
                                                              f"{GPU1_UUID}, {host_pid(ann)}, 4096\n"
                                                              f"{GPU0_UUID}, {host.pid}, [N/A]\n")
        yield Holders(dana, ann, host.pid)
    finally:
        host.kill()
        host.wait()
        for container in started:
            container.remove(force=True)
        gpuengine.set_query(gpu_engine.tools, "compute-apps", "")
        assert_no_gpu_holders(gpu_engine)


def expected(held: Holders, dana: str) -> list[str]:
    return [
        f"GPU 0 (NVIDIA A100-SXM4-40GB, {GPU0_UUID}): 9216 / 40960 MiB in use",
        f"  {dana}: container tf29-dana-1, pid {host_pid(held.dana)}, 6144 MiB",
        f"  host process {held.host_pid} (sleep 600), ? MiB",
        f"GPU 1 (NVIDIA A100-SXM4-40GB, {GPU1_UUID}): 4096 / 40960 MiB in use",
    ]


def test_make_gpus_names_each_member_against_its_gpu(gpu_engine: GpuEngine, held: Holders) -> None:
    (block,) = BLOCKS
    transcript = docblocks.run_block(block, docblocks.bash(REPO, gpu_engine.environ()), docblocks.Plan(timeout=120))
    lines = transcript.splitlines()
    first = lines.index(expected(held, "")[0])
    assert lines[first:first + 5] == [*expected(held, "member dana (project tf29)"),
                                      f"  container {HUB_SERVER}, pid {host_pid(held.ann)}, 4096 MiB"]
    assert lines[first + 5] == "GPU 2 (NVIDIA A100-SXM4-40GB, GPU-3d7c5e74-9f60-4dac-9e83-2c4d5e6f7082): 0 / 40960 " \
                               "MiB in use" and lines[first + 6] == "  no processes", transcript


def test_the_hub_admin_sees_the_users(gpu_engine: GpuEngine, held: Holders) -> None:
    done = subprocess.run([sys.executable, "-m", "hub.ctl", "gpus"], cwd=REPO, env=gpu_engine.environ(),
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[:5] == [*expected(held, "member dana (project tf29)"),
                         f"  hub user {HUB_USER}: container {HUB_SERVER}, pid {host_pid(held.ann)}, 4096 MiB"], \
        done.stdout


def test_no_driver_is_one_line(gpu_engine: GpuEngine, tmp_path: Path) -> None:
    # A PATH with make and python but no nvidia-smi, as on a box without the NVIDIA driver.
    # As a person's shell has it: no MAKEFLAGS/MAKELEVEL of the `make test` this may run under (make[1] lines).
    env = {key: value for key, value in gpu_engine.environ().items() if not key.startswith(("MAKE", "MFLAGS"))}
    env["PATH"] = str(tmp_path)
    for tool in ("make", "bash"):
        found = subprocess.run(["bash", "-c", f"command -v {tool}"], capture_output=True, text=True, check=True)
        (tmp_path / tool).symlink_to(found.stdout.strip())
    module = subprocess.run([sys.executable, "-m", "compose.holders"], cwd=REPO, env=env, capture_output=True,
                            text=True, timeout=60, check=False)
    assert (module.returncode, module.stdout, module.stderr) == (1, "", NO_DRIVER + "\n")
    make = subprocess.run(["make", "gpus"], cwd=REPO, env=env, capture_output=True, text=True, timeout=60,
                          check=False)
    assert make.returncode != 0 and make.stdout == "" and make.stderr.splitlines()[0] == NO_DRIVER, make.stderr


def test_a_failing_driver_is_one_line(gpu_engine: GpuEngine, tmp_path: Path) -> None:
    broken = tmp_path / "nvidia-smi"
    broken.write_text("#!/bin/sh\necho 'NVIDIA-SMI has failed because it couldn'\"'\"'t communicate with the NVIDIA "
                      "driver.'\nexit 9\n")
    broken.chmod(0o755)
    env = gpu_engine.environ()
    env["PATH"] = f"{tmp_path}:{env['PATH']}"
    done = subprocess.run([sys.executable, "-m", "compose.holders"], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == ("tf29-env: ERROR: nvidia-smi failed (is the NVIDIA driver loaded?): NVIDIA-SMI has failed "
                           "because it couldn't communicate with the NVIDIA driver.\n")
