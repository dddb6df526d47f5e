"""The team hub before it serves a new image (issue 40, part 2): a hub on the image under test where
a user's server wrote a file to ~/work, stopped with `make hub-down` (the server keeps running), then
`make hub` on an image built FROM it with one tiny layer: one line names both image ids and the
snapshot folder, which verifies with `sha256sum -c`, holds the file in the user's work volume's tar
and the hub's database in the state's tar; the same image again does nothing; and a backup folder
on a full disk stops `up` in one line, non-zero, with the hub not started."""

import io
import json
import re
import secrets
import subprocess
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
from docker import DockerClient

from compose import snapshot
from hub import upgradesnap
from testkit import docblocks
from testkit.docblocks import Plan
from tests.hub.conftest import start_hub
from tests.hub.hubrun import ADMIN, HubRun, User, ctl

pytestmark = pytest.mark.image

BLOCKS = docblocks.blocks_for(__file__)

EXIT_SNAPSHOT = 6  # hub/ctl.py's
CONTENT = "written before the new image"


@pytest.fixture(scope="module")
def new_image(docker_client: DockerClient, image: str) -> Iterator[str]:
    """IMAGE with one tiny layer on top: another image id, built in a second, removed afterwards."""
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        for name, data in (("Dockerfile", f"FROM {image}\nCOPY marker /etc/tf29-hubtest-marker\n"),
                           ("marker", secrets.token_hex(8))):
            info = tarfile.TarInfo(name)
            info.size = len(data.encode())
            tar.addfile(info, io.BytesIO(data.encode()))
    context.seek(0)
    tag = f"tf29-hubsnap-test:{secrets.token_hex(4)}"
    docker_client.images.build(fileobj=context, custom_context=True, tag=tag, rm=True, forcerm=True)
    try:
        yield tag
    finally:
        docker_client.images.remove(tag)


@pytest.fixture(scope="module")
def snap_hub(hub_tools: None, docker_client: DockerClient, image: str,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubRun]:
    base = tmp_path_factory.mktemp("hub-snapshot")
    yield from start_hub(docker_client, image, base / "state", HUB_BACKUP_DIR=str(base / "backups"))


@dataclass
class Upgraded:
    hub: HubRun
    ann: User
    old_id: str
    new_id: str
    started: subprocess.CompletedProcess[str]

    @property
    def backups(self) -> Path:
        return Path(self.hub.env["HUB_BACKUP_DIR"])

    def folders(self) -> list[Path]:
        return snapshot.snapshots_of(self.backups, self.hub.prefix)


@pytest.fixture(scope="module")
def upgraded(docker_client: DockerClient, image: str, new_image: str, snap_hub: HubRun) -> Upgraded:
    """ann's server writes ~/work/kept.txt; make hub-down; make hub on the new image."""
    hub = snap_hub
    admin = hub.signup(ADMIN)
    assert hub.login(admin)
    ann = hub.enrol("ann")
    hub.start(ann, profile="cpu")
    hub.wait_ready(ann)
    saved = requests.put(f"{hub.url}/user/ann/api/contents/work/kept.txt", timeout=30,
                         headers={"Authorization": f"token {ann.token}"},
                         json={"type": "file", "format": "text", "content": CONTENT})
    assert saved.status_code in (200, 201), saved.text
    old_id, new_id = (str(docker_client.images.get(name).id) for name in (image, new_image))
    assert upgradesnap.recorded_image(hub.state) == old_id  # recorded by the first start
    down = hub.make("hub-down")
    assert down.returncode == 0, down.stderr
    assert hub.container("ann").status == "running"  # hub-down leaves servers running
    hub.env["HUB_IMAGE"] = new_image
    started = hub.make("hub")
    assert started.returncode == 0, f"make hub: {started.stdout[-2000:]}\n{started.stderr[-2000:]}"
    return Upgraded(hub, ann, old_id, new_id, started)


def test_new_image_snapshots_volumes_and_state(upgraded: Upgraded) -> None:
    hub = upgraded.hub
    (folder,) = upgraded.folders()
    short_new, short_old = (upgradesnap.short_id(upgraded.new_id), upgradesnap.short_id(upgraded.old_id))
    lines = [line for line in upgraded.started.stdout.splitlines() if line.startswith("tf29-hub: ")]
    assert lines[0] == (f"tf29-hub: new image {short_new} (was {short_old}): snapshot of 1 users' volumes and "
                        f"the hub's state: {folder}"), upgraded.started.stdout
    assert lines[1].startswith("tf29-hub: the servers of ann still run the old image"), lines
    assert lines[-1].startswith(f"tf29-hub: the hub is up: {hub.url}/"), lines
    checked = subprocess.run(["sha256sum", "-c", snapshot.SUMS], cwd=folder, capture_output=True, text=True,
                             check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    volumes = [f"{hub.prefix}-ann-{kind}" for kind in ("hostkeys", "local", "nv", "work")]
    assert sorted(re.findall(r"^(.+): OK$", checked.stdout, re.MULTILINE)) == sorted(
        [snapshot.MANIFEST, upgradesnap.STATE_TAR, *(f"{name}.tar" for name in volumes)])
    manifest = json.loads((folder / snapshot.MANIFEST).read_text())
    assert (manifest["kind"], manifest["old_image"], manifest["new_image"]) == (
        "hub-upgrade", upgraded.old_id, upgraded.new_id)
    assert sorted(volume["name"] for volume in manifest["volumes"]) == volumes
    with tarfile.open(folder / f"{hub.prefix}-ann-work.tar") as work:
        kept = work.extractfile("./kept.txt")
        assert kept is not None and kept.read().decode() == CONTENT
    with tarfile.open(folder / upgradesnap.STATE_TAR) as state:
        assert "./jupyterhub.sqlite" in state.getnames()
    assert folder.stat().st_mode & 0o077 == 0 and (folder / upgradesnap.STATE_TAR).stat().st_mode & 0o077 == 0
    assert upgradesnap.recorded_image(hub.state) == upgraded.new_id


def test_same_image_does_nothing(upgraded: Upgraded) -> None:
    hub = upgraded.hub
    before = upgraded.folders()
    assert hub.make("hub-down").returncode == 0
    again = hub.make("hub")
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    lines = [line for line in again.stdout.splitlines() if line.startswith("tf29-hub: ")]
    assert len(lines) == 1 and lines[0].startswith(f"tf29-hub: the hub is up: {hub.url}/"), again.stdout
    assert "new image" not in again.stderr, again.stderr
    assert upgraded.folders() == before


def in_volume(client: DockerClient, image: str, volume: str, script: str) -> str:
    """SCRIPT (sh) in a throwaway container of IMAGE with VOLUME at /v: its output."""
    out = client.containers.run(image, ["-c", script], entrypoint="sh", user="0", network_disabled=True, remove=True,
                                volumes={volume: {"bind": "/v", "mode": "rw"}})
    return bytes(out).decode()


def test_restore_a_users_volume_as_the_docs_say(upgraded: Upgraded, docker_client: DockerClient,
                                                new_image: str) -> None:
    """docs/hub.md's block, typed as written: ann's server stopped, her lost file comes back from the snapshot."""
    hub = upgraded.hub
    (folder,) = upgraded.folders()
    work = f"{hub.prefix}-ann-work"
    hub.stop(upgraded.ann)
    in_volume(docker_client, new_image, work, "rm /v/kept.txt && echo lost > /v/new.txt")
    plans = {("docs/hub.md", "(cd backups/"): Plan(placeholders={
        "tf29-hub-20261207-023005": folder.name, "tf29-hub-ann-work": work, "tf29-env:latest-gpu": new_image},
        timeout=120)}
    ((block, _, plan),) = docblocks.with_plans(BLOCKS, plans)
    said = docblocks.run_block(block, docblocks.bash(upgraded.backups.parent, hub.env), plan)
    assert f"{work}.tar: OK" in said, said
    # The file as it was, with its owner (jovyan, 1000), and nothing made since.
    assert in_volume(docker_client, new_image, work, "stat -c %u /v/kept.txt; cat /v/kept.txt; ls /v") == \
        f"1000\n{CONTENT}kept.txt\n"


def test_no_room_stops_up(upgraded: Upgraded, image: str, tmp_path: Path) -> None:
    """Back to the first image with HUB_BACKUP_DIR on a 1 MiB tmpfs: one line, exit 6, hub not started."""
    hub = upgraded.hub
    assert hub.make("hub-down").returncode == 0
    full = tmp_path / "full"
    full.mkdir()
    env = {**hub.env, "HUB_IMAGE": image, "HUB_BACKUP_DIR": str(full)}
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(full)], check=True)
    try:
        result = ctl(env, "up")
        left = sorted(path.name for path in full.iterdir())
    finally:
        subprocess.run(["umount", str(full)], check=True)
    assert result.returncode == EXIT_SNAPSHOT, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    errors = [line for line in lines if "ERROR" in line]
    assert errors == lines[-1:] and lines[-1].startswith("tf29-hub: ERROR: no snapshot before the new image"), lines
    assert str(full) in lines[-1] and "HUB_BACKUP_DIR" in lines[-1], lines[-1]
    assert result.stdout == "" and left == []
    assert ctl(env, "status").returncode == 1
    assert upgradesnap.recorded_image(hub.state) == upgraded.new_id
