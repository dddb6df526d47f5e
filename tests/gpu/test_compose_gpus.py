"""The team setup with compose/gpu.yml on a GPU-capable engine (the stand-in: GPUs 0 and 1, and a
third in MIG mode with two slices), under both compose implementations: the shipped examples alice
and bob keep GPUs 0 and 1 as compose/gpu.yml gives them, members added by compose/member.py without
a GPU option get the next free devices of the box's `nvidia-smi -L` (here the two MIG slices),
`--gpus all` stays available, `make up` starts them all, and each member's container gets its own
NVIDIA_VISIBLE_DEVICES. A bad --gpu-ids is one line."""

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.gpuengine import MIG_UUIDS, GpuEngine, visible_devices
from testkit.net import free_host_port
from testkit.ssh import KeyPair
from testkit.wait import wait_until
from tests.compose.team import IMPLEMENTATIONS, Team, copy_project
from tests.gpu.conftest import assert_no_gpu_holders

# Member -> what member.py is told about GPUs -> what the member's container must see.
MEMBERS = {"ann": ([], MIG_UUIDS[0]), "ben": ([], MIG_UUIDS[1]), "cleo": (["--gpus", "all"], "all")}
SHIPPED = {"alice": "0", "bob": "1"}


def member_py(engine: GpuEngine, project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """compose/member.py as run on the GPU box: its nvidia-smi is the stand-in's."""
    return subprocess.run([sys.executable, str(project / "compose" / "member.py"), "--project-dir", str(project),
                           *args], env=engine.environ(), capture_output=True, text=True, check=False)


@pytest.fixture(scope="module")
def gpu_project(tmp_path_factory: pytest.TempPathFactory, gpu_engine: GpuEngine, keypair: KeyPair) -> Path:
    project = copy_project(tmp_path_factory.mktemp("gpu-team"))
    compose_file = project / "docker-compose.yml"
    text = compose_file.read_text()
    for shipped_port in ("8801", "8802", "2201", "2202"):  # the examples' ports may be taken on this host
        text = text.replace(f":{shipped_port}:", f":{free_host_port()}:")
    compose_file.write_text(text)
    for example in SHIPPED:
        given = member_py(gpu_engine, project, "secrets", example, "--ssh-key", f"{keypair.private}.pub")
        assert given.returncode == 0, given.stderr
    for uid, (name, (gpu_args, _)) in enumerate(MEMBERS.items(), 1201):
        added = member_py(gpu_engine, project, "add", name, "--uid", str(uid), "--jupyter-port",
                          str(free_host_port()), "--ssh-port", str(free_host_port()), "--ssh-key",
                          f"{keypair.private}.pub", *gpu_args)
        assert added.returncode == 0, added.stderr
    return project


@pytest.fixture(scope="module", params=sorted(IMPLEMENTATIONS))
def gpu_team(request: pytest.FixtureRequest, gpu_engine: GpuEngine, image: str, gpu_project: Path) -> Iterator[Team]:
    team = Team(gpu_engine.client(), gpu_project, image, IMPLEMENTATIONS[str(request.param)],
                files="docker-compose.yml:compose/gpu.yml")
    team.env.update({"DOCKER_HOST": gpu_engine.url, "PATH": gpu_engine.environ()["PATH"]})
    try:
        team.make("up")
        yield team
    finally:
        team.remove_everything()
        assert_no_gpu_holders(gpu_engine)


def test_members_get_the_next_free_gpu(gpu_project: Path) -> None:
    gpu_file = (gpu_project / "compose" / "gpu.yml").read_text()
    for name, device in (("ann", MIG_UUIDS[0]), ("ben", MIG_UUIDS[1])):
        assert (f"{name}:\n    deploy: {{resources: {{reservations: {{devices: [{{driver: nvidia, "
                f'device_ids: ["{device}"]') in gpu_file
    assert "cleo:\n    deploy: {resources: {reservations: {devices: [{driver: nvidia, count: all," in gpu_file


def test_each_member_sees_its_own_gpus(gpu_team: Team) -> None:
    expected_of = {**SHIPPED, **{name: expected for name, (_, expected) in MEMBERS.items()}}
    assert sorted(gpu_team.config()["services"]) == sorted(expected_of)
    for name, expected in expected_of.items():
        container = gpu_team.container(name)
        (request,) = container.attrs["HostConfig"]["DeviceRequests"]
        assert request["Driver"] == "nvidia"

        def running(member: str = name) -> bool:
            container = gpu_team.container(member)
            return bool(container.attrs["State"]["Running"])

        wait_until(running, timeout=60, what=f"{name}'s container running")
        assert visible_devices(gpu_team.container(name)) == expected, name


@pytest.mark.parametrize(("gpu_ids", "error"), [
    ("7", "member.py: error: --gpu-ids: 7 is not a GPU of this host (nvidia-smi -L lists: 0, 1, MIG-"),
    ("GPU-1234", "member.py: error: --gpu-ids: 'GPU-1234' is not a GPU index, GPU UUID or MIG UUID"),
])
def test_bad_gpu_ids_are_one_line(gpu_engine: GpuEngine, gpu_project: Path, keypair: KeyPair, gpu_ids: str,
                                  error: str) -> None:
    before = {path: path.read_bytes() for path in (gpu_project / "docker-compose.yml", gpu_project / "compose" /
                                                   "gpu.yml")}
    refused = member_py(gpu_engine, gpu_project, "add", "dora", "--uid", "1299", "--ssh-key",
                        f"{keypair.private}.pub", "--gpu-ids", gpu_ids)
    assert refused.returncode == 2
    assert refused.stderr.splitlines() == [refused.stderr.strip()] and refused.stderr.startswith(error)
    assert {path: path.read_bytes() for path in before} == before
