"""The install kit (build.py kit; its install.sh is scripts/kit-install.sh; docs/kit.md) of the image under
test, made as one tarball, unpacked and checked as docs/kit.md shows, and installed on a second Docker
engine that lacks the image, with every registry and proxy pointed at a closed port on 127.0.0.1: the
image is `docker load`ed there, the venvs and the hub's proxy come from the kit alone, and the team flow
(member.py add, make up) and `make hub` (no HUB_IMAGE: .env names the loaded image) work there without
make reaching for pip, npm or a build. A damaged kit, an engine too old and no docker are one line each,
with nothing loaded. (A folder kit differs only in its last rename: tests/unit/tf29env/release/test_kit.py.)

The tarball is made once per image and project (build-output/kit-cache/): a warm run reuses it, and a
kit of the same image made again reuses the earlier tarball's image archive instead of a new `docker save`."""

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from docker import DockerClient

from hub import upgradesnap
from testkit import docblocks, gpuengine, kitbox
from testkit.docblocks import Plan
from testkit.gpuengine import GpuEngine
from testkit.net import free_host_port
from testkit.ssh import KeyPair
from testkit.wait import wait_until
from tests.hub.hubrun import hub_environment
from tf29env.core.errors import UserError
from tf29env.core.paths import DEFAULT_OUTPUT
from tf29env.release import kit

CACHE = DEFAULT_OUTPUT / "kit-cache"
MEMBER = "kitann"
# docs/kit.md's blocks typed here: unpacking and checking a carried kit (the kit_folder fixture), and
# installing it (the box fixture).
BLOCKS = docblocks.blocks_for(__file__)


def cached_kit(client: DockerClient, image: str) -> Path:
    """The kit of IMAGE and this checkout's files as one tarball: reused, or made (the image archive of an
    earlier tarball of the same image reused: its name starts with the image's id)."""
    image_id = client.images.get(image).id
    tarball = CACHE / f"{image_id[7:19]}-{kit.project_digest(kit.project_files())[:12]}{kit.TARBALL}"
    if tarball.is_file():
        return tarball
    CACHE.mkdir(parents=True, exist_ok=True)
    said: list[str] = []
    with tempfile.TemporaryDirectory(dir=CACHE) as scratch:
        old = next(CACHE.glob(f"{image_id[7:19]}-*{kit.TARBALL}"), None)
        if old is not None:  # a few seconds of tar, where docker save takes a minute or two
            subprocess.run(["tar", "-xf", str(old), "-C", scratch], check=True)
        try:
            kit.make(client, image, tarball, DEFAULT_OUTPUT, said.append,
                     earlier=Path(scratch) / old.stem if old else None)
        except UserError as error:
            raise AssertionError(f"making the kit failed: {error}\n" + "\n".join(said)) from None
    for other in CACHE.iterdir():  # each holds a 4.6 GB archive
        if other.is_dir():
            shutil.rmtree(other)
        elif other != tarball:
            other.unlink()
    return tarball


@pytest.fixture(scope="module")
def kit_folder(docker_client: DockerClient, image: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The kit's tarball carried to a box, unpacked and checked as docs/kit.md shows."""
    tarball = cached_kit(docker_client, image)
    carried = tmp_path_factory.mktemp("carried")
    block = docblocks.block_at(__file__, "docs/kit.md", "tar -xf tf29-kit.tar")
    said = docblocks.run_block(block, docblocks.bash(carried, os.environ),
                               Plan(placeholders={"tf29-kit.tar": str(tarball), "tf29-kit": tarball.stem}))
    assert docblocks.last_line(said) == "kit intact", said
    assert [path.name for path in carried.iterdir()] == [tarball.stem]
    yield carried / tarball.stem
    shutil.rmtree(carried / tarball.stem)  # 4.6 GB, which pytest would keep for three runs


@pytest.fixture(scope="module")
def second_engine() -> Iterator[GpuEngine]:
    """A second engine with a data root of its own: it lacks the image until the kit loads it."""
    engine = gpuengine.start()
    try:
        yield engine
    finally:
        engine.stop()


@pytest.fixture(scope="module")
def offline(second_engine: GpuEngine) -> Iterator[dict[str, str]]:
    with kitbox.offline(second_engine) as env:
        yield env


def one_line(result: subprocess.CompletedProcess[str], starts: str) -> None:
    assert result.returncode != 0, result.stdout
    assert result.stderr.splitlines() == [result.stderr.strip()], result.stderr
    assert result.stderr.startswith(f"tf29-kit: error: {starts}"), result.stderr
    assert result.stdout == "", result.stdout


def no_images(engine: GpuEngine) -> None:
    assert engine.client().images.list() == [], "the refused install loaded an image"


def test_the_kit_holds_what_a_box_needs(kit_folder: Path, docker_client: DockerClient, image: str) -> None:
    assert len(BLOCKS) == 2, [block.where for block in BLOCKS]
    record = kit.read(kit_folder)
    assert record["id"] == docker_client.images.get(image).id
    sums = kit.sums(kit_folder)
    on_disk = {str(path.relative_to(kit_folder)) for path in kit_folder.rglob("*") if path.is_file()}
    assert set(sums) == on_disk - {kit.SUMS}
    for name in (kit.INSTALL, kit.KIT_FILE, kit.PROJECT, kit.NPM_CACHE, *record["archives"]):
        assert name in sums, name
    wheels = {name.split("/")[1]: name for name in sums if name.startswith("wheels/")}
    assert set(wheels) == {"host", "hub"}
    assert all(name.endswith(".whl") for name in sums if name.startswith("wheels/"))


def test_no_docker_is_one_line(kit_folder: Path, tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    refused = subprocess.run(["/bin/bash", str(kit_folder / kit.INSTALL), str(tmp_path / "box")], cwd=tmp_path,
                             env={"PATH": str(empty), "HOME": str(tmp_path)}, capture_output=True, text=True,
                             timeout=60, check=False)
    one_line(refused, "docker is not installed")
    assert not (tmp_path / "box").exists()


def test_an_engine_too_old_is_one_line(kit_folder: Path, tmp_path: Path, second_engine: GpuEngine,
                                       offline: dict[str, str]) -> None:
    # The docker CLI of a box whose engine is 19.03: only `docker version` is asked before the refusal.
    old = tmp_path / "old-docker"
    old.mkdir()
    (old / "docker").write_text('#!/bin/sh\n[ "$1" = version ] && echo 19.03.15 && exit 0\nexit 99\n')
    (old / "docker").chmod(0o755)
    refused = kitbox.install(kit_folder, tmp_path / "box", {**offline, "PATH": f"{old}:{offline['PATH']}"})
    one_line(refused, "Docker Engine 19.03.15 is too old: the kit needs 20.10 or newer")
    assert not (tmp_path / "box").exists()
    no_images(second_engine)


def test_a_damaged_kit_is_refused_before_anything_is_loaded(kit_folder: Path, tmp_path: Path,
                                                             second_engine: GpuEngine, offline: dict[str, str]) -> None:
    damaged = tmp_path / "kit"
    for name in [*kit.sums(kit_folder), kit.SUMS]:
        (damaged / name).parent.mkdir(parents=True, exist_ok=True)
        if name == kit.PROJECT:
            data = bytearray((kit_folder / name).read_bytes())
            data[len(data) // 2] ^= 0x01
            (damaged / name).write_bytes(bytes(data))
        else:
            os.link(kit_folder / name, damaged / name)  # the 4.6 GB archive is not copied
    refused = kitbox.install(damaged, tmp_path / "box", offline)
    one_line(refused, f"checksum mismatch: {kit.PROJECT} differs from SHA256SUMS")
    assert not (tmp_path / "box").exists()
    no_images(second_engine)


@pytest.fixture(scope="module")
def box(kit_folder: Path, tmp_path_factory: pytest.TempPathFactory, second_engine: GpuEngine,
        offline: dict[str, str]) -> Path:
    """The kit installed on the second engine into a new folder, offline."""
    target = tmp_path_factory.mktemp("offline-box") / "tf29-env"
    block = docblocks.block_at(__file__, "docs/kit.md", "./tf29-kit/install.sh /srv/tf29-env")
    plan = Plan(placeholders={"./tf29-kit": str(kit_folder), "/srv/tf29-env": str(target)},
                timeout=kitbox.INSTALL_TIMEOUT)
    started = time.monotonic()
    said = docblocks.run_block(block, docblocks.bash(target.parent, offline), plan)
    print(f"kit installed in {time.monotonic() - started:.0f} s:\n{said}")
    assert "tf29-kit: done:" in said and "tf29-kit: not done:" in said, said
    return target


def make(target: Path, env: dict[str, str], *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(["make", *args], cwd=target, env=env, capture_output=True, text=True, timeout=timeout,
                            check=False)
    # Nothing is installed again: the venvs' and the proxy's stamps are newer than their inputs.
    for recipe in ("pip install", "npm ci", "build.py build"):
        assert recipe not in result.stdout, f"make {' '.join(args)} ran {recipe}:\n{result.stdout[-2000:]}"
    return result


def test_the_image_is_loaded_and_the_tools_are_done(box: Path, kit_folder: Path, second_engine: GpuEngine,
                                                   docker_client: DockerClient, image: str,
                                                   offline: dict[str, str]) -> None:
    record = kit.read(kit_folder)
    assert second_engine.client().images.get(record["image"]).id == docker_client.images.get(image).id
    assert f"TF29ENV_IMAGE={record['image']}\n" in (box / ".env").read_text()
    for stamp in (".venv/.done", "hub/.venv/.done", "hub/node_modules/.done"):
        assert (box / stamp).is_file(), stamp
    for target in ("venv", "hub-venv", "hub-proxy"):
        up_to_date = subprocess.run(["make", "-q", target], cwd=box, env=offline, capture_output=True, text=True,
                                    timeout=60, check=False)
        assert up_to_date.returncode == 0, f"make {target} would run again: {up_to_date.stdout}{up_to_date.stderr}"


def test_the_team_flow_works_offline(box: Path, second_engine: GpuEngine, offline: dict[str, str],
                                     keypair: KeyPair) -> None:
    port = free_host_port()
    env = {**offline, "COMPOSE_FILE": "docker-compose.yml", "COMPOSE_PROJECT_NAME": "tf29kit",
           "TF29ENV_BIND_ADDRESS": "127.0.0.1", "TF29ENV_SELF_CHECK": "off"}
    try:
        added = subprocess.run(["python3", "compose/member.py", "add", MEMBER, "--ssh-key", f"{keypair.private}.pub",
                                "--uid", "1301", "--jupyter-port", str(port), "--ssh-port", str(free_host_port())],
                               cwd=box, env=env, capture_output=True, text=True, timeout=120, check=False)
        assert added.returncode == 0, added.stderr
        up = make(box, env, "up")
        assert up.returncode == 0, f"make up:\n{up.stdout[-2000:]}{up.stderr[-3000:]}"
        (container,) = second_engine.client().containers.list(
            filters={"label": ["com.docker.compose.project=tf29kit", f"com.docker.compose.service={MEMBER}"]})
        assert container.attrs["State"]["Health"]["Status"] == "healthy"
        answer = requests.get(f"http://127.0.0.1:{port}/api", timeout=10)
        assert answer.status_code == 200 and "version" in answer.json(), answer.text
    finally:
        down = make(box, env, "down", "STOP_TIMEOUT=5")
        assert down.returncode == 0, down.stderr
    assert second_engine.client().containers.list(all=True) == []


def test_the_hub_starts_offline(box: Path, kit_folder: Path, second_engine: GpuEngine, offline: dict[str, str],
                                tmp_path: Path) -> None:
    """`make hub` as docs/kit.md has it, with no HUB_IMAGE: it serves the image .env names, the one loaded."""
    loaded = kit.read(kit_folder)["image"]
    settings = {key: value for key, value in hub_environment(loaded, tmp_path / "hub-state").items()
                if key.startswith("HUB_") and key != "HUB_IMAGE"}
    env = {**offline, **settings}
    try:
        up = make(box, env, "hub")
        assert up.returncode == 0, f"make hub:\n{up.stdout[-2000:]}{up.stderr[-3000:]}"
        served = upgradesnap.recorded_image(Path(settings["HUB_STATE_DIR"]))
        assert served == second_engine.client().images.get(loaded).id, served
        status = make(box, env, "hub-status")
        assert status.returncode == 0, status.stdout + status.stderr
        assert "hub: running" in status.stdout and "proxy: running" in status.stdout, status.stdout
        page = requests.get(f"http://127.0.0.1:{settings['HUB_PORT']}/hub/login", timeout=10)
        assert page.status_code == 200, page.status_code
    finally:
        down = make(box, env, "hub-down")
        for network in second_engine.client().networks.list(names=[settings["HUB_NETWORK"]]):
            network.remove()
    assert down.returncode == 0, down.stdout + down.stderr
    wait_until(lambda: "stopped" in make(box, env, "hub-status").stdout, timeout=30, what="the hub stopped")
