"""The team hub hands out GPUs on a GPU-capable engine (the stand-in, on a box with GPUs 0 and 1 and
a third in MIG mode with two slices; docs/hub.md): two users who start the 1-GPU profile at the same
time get different GPUs, a third gets the "no free GPU" line (the API and the spawn form), the MIG
slice pinned to a user goes to them, a hub restart keeps every assignment (it is read from the
running containers), a stopped server frees its GPU, and with HUB_GPU_POLICY=share a full box
shares its least used GPU. Each server carries its user's name as a label (carl.d's container is
named carl-2ed): `hub.ctl gpus` names him by it. Bad GPU settings stop `make hub` with one line before
anything starts."""

import html
from collections.abc import Iterator
from pathlib import Path

import pytest
from docker.models.containers import Container

from hub import settings as hub_settings
from hub.settings import GPUS_LABEL, USER_LABEL
from testkit import gpuengine
from testkit.gpuengine import GPU0_UUID, GPU1_UUID, MIG_UUIDS, GpuEngine, visible_devices
from tests.gpu.conftest import assert_no_gpu_holders
from tests.hub.hubrun import ADMIN, HubRun, User, ctl, hub_environment

PINS = f"dora={MIG_UUIDS[1]}"
CARL = "carl.d"  # a name DockerSpawner escapes in the container's name (carl-2ed)
NO_FREE = ("no free GPU for the 1 GPU profile: 2 of the 2 GPUs for it are in use by other servers; try again when "
           "one stops, or choose another profile")


@pytest.fixture(scope="module")
def gpu_hub(hub_tools: None, gpu_engine: GpuEngine, image: str,
            tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubRun]:
    env = gpu_engine.environ(hub_environment(image, tmp_path_factory.mktemp("gpu-hub-state"), HUB_GPU_PINS=PINS,
                                             HUB_SELF_CHECK="off"))
    run = HubRun(gpu_engine.client(), env)
    try:
        run.up()
        yield run
    finally:
        run.remove_everything()
        assert_no_gpu_holders(gpu_engine)


@pytest.fixture(scope="module")
def people(gpu_hub: HubRun) -> dict[str, User]:
    admin = gpu_hub.signup(ADMIN)
    assert gpu_hub.login(admin)
    return {name: gpu_hub.enrol(name) for name in ("ann", "ben", CARL, "dora")}


def server_of(hub: HubRun, name: str) -> Container:
    """NAME's server, found by the user label the spawner puts on it."""
    (container,) = hub.client.containers.list(filters={"label": f"{USER_LABEL}={name}"})
    assert container.name.startswith(f"{hub.prefix}-"), container.name
    return container


def gpus_of(hub: HubRun, name: str) -> str:
    """What the user's server was given: the device request, its label and its NVIDIA_VISIBLE_DEVICES, as one."""
    container = server_of(hub, name)
    (request,) = container.attrs["HostConfig"]["DeviceRequests"]
    ids = ",".join(request["DeviceIDs"])
    assert container.labels[GPUS_LABEL] == ids
    assert visible_devices(container) == ids
    return ids


def spawn_form(hub: HubRun, user: User) -> str:
    page = user.session.get(f"{hub.url}/hub/spawn", timeout=30)
    assert page.status_code == 200
    return html.unescape(page.text)


def test_two_servers_get_different_gpus(gpu_hub: HubRun, people: dict[str, User]) -> None:
    form = spawn_form(gpu_hub, people["ann"])
    assert "1 GPU: 2 of 2 free" in form and "2 GPUs: 2 of 2 free" in form
    assert "1 MIG slice 1g.5gb (TensorFlow uses one MIG device per process): 1 of 1 free" in form  # one is dora's
    for name in ("ann", "ben"):  # together: the hub must not give both the same free GPU
        gpu_hub.start(people[name], profile="gpu1")
    for name in ("ann", "ben"):
        gpu_hub.wait_ready(people[name])
    assert {gpus_of(gpu_hub, "ann"), gpus_of(gpu_hub, "ben")} == {"0", "1"}


def test_no_free_gpu_is_one_line(gpu_hub: HubRun, people: dict[str, User]) -> None:
    carl = people[CARL]
    refused = gpu_hub.api(carl, "POST", f"/users/{CARL}/server", json={"profile": "gpu1"})
    assert refused.status_code == 409 and refused.json()["message"] == NO_FREE, refused.text
    assert gpu_hub.server_model(carl) is None
    form = spawn_form(gpu_hub, carl)
    assert "1 GPU: no free GPU now: 2 of 2 in use" in form
    page = carl.session.post(f"{gpu_hub.url}/hub/spawn", timeout=60,
                             data={"profile": "gpu1", "ssh_key": "", "_xsrf": carl.session.cookies.get("_xsrf")})
    assert NO_FREE in html.unescape(page.text), page.text[-2000:]


def test_the_pinned_mig_slice_goes_to_its_user(gpu_hub: HubRun, people: dict[str, User]) -> None:
    gpu_hub.start(people["dora"], profile="mig-1g.5gb")
    gpu_hub.wait_ready(people["dora"])
    assert gpus_of(gpu_hub, "dora") == MIG_UUIDS[1]


def test_a_hub_restart_keeps_the_assignment(gpu_hub: HubRun, people: dict[str, User]) -> None:
    before = {name: gpus_of(gpu_hub, name) for name in ("ann", "ben", "dora")}
    down = gpu_hub.make("hub-down")
    assert down.returncode == 0, down.stderr
    gpu_hub.up()
    assert {name: gpus_of(gpu_hub, name) for name in before} == before
    refused = gpu_hub.api(people[CARL], "POST", f"/users/{CARL}/server", json={"profile": "gpu1"})
    assert refused.status_code == 409 and refused.json()["message"] == NO_FREE, refused.text


def test_a_stopped_server_frees_its_gpu(gpu_hub: HubRun, people: dict[str, User]) -> None:
    freed = gpus_of(gpu_hub, "ben")
    gpu_hub.stop(people["ben"])
    gpu_hub.start(people[CARL], profile="gpu1")
    gpu_hub.wait_ready(people[CARL])
    assert gpus_of(gpu_hub, CARL) == freed


def test_the_admin_sees_each_user_by_name(gpu_hub: HubRun, gpu_engine: GpuEngine) -> None:
    """`hub.ctl gpus` with carl.d's server on the stand-in nvidia-smi's list: the user label names him."""
    server = server_of(gpu_hub, CARL)
    assert server.name.removeprefix(f"{gpu_hub.prefix}-") != CARL  # the container's name does not give the user
    pid = int(server.attrs["State"]["Pid"])
    uuid = {"0": GPU0_UUID, "1": GPU1_UUID}[gpus_of(gpu_hub, CARL)]
    gpuengine.set_query(gpu_engine.tools, "compute-apps", f"{uuid}, {pid}, 4096\n")
    try:
        done = ctl(gpu_hub.env, "gpus")
    finally:
        gpuengine.set_query(gpu_engine.tools, "compute-apps", "")
    assert done.returncode == 0, done.stderr
    assert f"  hub user {CARL}: container {server.name}, pid {pid}, 4096 MiB" in done.stdout.splitlines(), done.stdout


def test_share_policy_shares_the_least_used(gpu_hub: HubRun, people: dict[str, User]) -> None:
    """Restarted with HUB_GPU_POLICY=share, a spawn with every GPU taken shares the least used one."""
    held = {name: gpus_of(gpu_hub, name) for name in ("ann", CARL)}
    assert sorted(held.values()) == ["0", "1"]
    assert gpu_hub.make("hub-down").returncode == 0
    gpu_hub.env["HUB_GPU_POLICY"] = "share"
    gpu_hub.env["HUB_GPU_MEMORY_MB"] = "gpu1=2048"  # a budget per shared server (docs/hub.md)
    gpu_hub.up()
    eve = gpu_hub.enrol("eve")
    assert ("1 GPU: 0 of 2 free: you would share the least used (TensorFlow takes at most 2048 MiB of each GPU)"
            in spawn_form(gpu_hub, eve))
    gpu_hub.start(eve, profile="gpu1")
    gpu_hub.wait_ready(eve)
    assert gpus_of(gpu_hub, "eve") == "0"  # both are used once: the first in nvidia-smi's order
    assert "GPU_MEMORY_LIMIT_MB=2048" in gpu_hub.container("eve").attrs["Config"]["Env"]
    assert not any(var.startswith("GPU_MEMORY_LIMIT_MB=") for var in gpu_hub.container("ann").attrs["Config"]["Env"])


@pytest.mark.parametrize(("settings", "error"), [
    ({"HUB_GPUS": "0,7"}, "tf29-hub: ERROR: HUB_GPUS: 7 is not a GPU of this host (nvidia-smi -L lists: 0, 1, MIG-"),
    ({"HUB_GPUS": "GPU-42"}, "tf29-hub: ERROR: HUB_GPUS: 'GPU-42' is not a GPU index, GPU UUID or MIG UUID"),
    ({"HUB_GPU_PINS": "ann=2"}, "tf29-hub: ERROR: HUB_GPU_PINS ann: GPU 2 is in MIG mode: name its MIG slices"),
    ({"HUB_GPUS": "0", "HUB_GPU_PINS": "ann=1"},
     "tf29-hub: ERROR: HUB_GPU_PINS ann: 1 is not a GPU of this host (nvidia-smi -L lists: 0); a pin names GPUs"),
])
def test_bad_gpu_settings_are_one_line(hub_tools: None, gpu_engine: GpuEngine, image: str, tmp_path: Path,
                                       settings: dict[str, str], error: str) -> None:
    env = gpu_engine.environ(hub_environment(image, tmp_path / "state", **settings))
    result = ctl(env, "up")
    assert result.returncode == hub_settings.EXIT_CONFIG, result.stdout + result.stderr
    assert result.stderr.strip().splitlines() == [result.stderr.strip()] and result.stderr.startswith(error)
    assert not (tmp_path / "state").exists()
    assert gpu_engine.client().networks.list(names=[env["HUB_NETWORK"]]) == []
