"""hub/upgradesnap.py without an engine: which volumes are the users' (as hub/spawner.py names them),
which are in use, the served image recorded privately, the state's tar (secrets private, no pid
files) listed in SHA256SUMS, the lines `up` prints, the two new settings, and nothing done (the
engine not even asked) when the image is the one served or none was recorded. The snapshot itself,
with a hub, a user's server and a new image, is tests/hub/test_hub_snapshot.py."""

import re
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest

from compose import snapshot
from hub import REPO, upgradesnap
from hub import settings as hub_settings
from hub.settings import HubConfigError
from hub.upgradesnap import Taken

OLD = "sha256:" + "a" * 64
NEW = "sha256:" + "b" * 64


def test_the_volumes_are_the_spawners() -> None:
    """Every volume spawner.py mounts for a user is one upgradesnap snapshots, at the same place."""
    source = (REPO / "hub" / "spawner.py").read_text()
    mounts = dict(re.findall(r'f"\{self\.team\.name_prefix\}-\{\{username\}\}-(\w+)": "([^"]+)"', source))
    assert mounts == upgradesnap.VOLUME_MOUNTS


def test_users_volumes_by_name() -> None:
    names = ["tf29-hub-ann-work", "tf29-hub-ann-nv", "tf29-hub-ann-hostkeys", "tf29-hub-ann-local",
             "tf29-hub-a-2eb-work",  # a.b escaped by DockerSpawner
             "tf29-hub-ben-cache",  # not a kind the spawner makes
             "tf29-env-work", "other-ann-work", "tf29-hubx-ann-work", "tf29-hub-work"]
    assert upgradesnap.users_volumes(names, "tf29-hub") == {
        "a-2eb": ["tf29-hub-a-2eb-work"],
        "ann": ["tf29-hub-ann-hostkeys", "tf29-hub-ann-local", "tf29-hub-ann-nv", "tf29-hub-ann-work"],
    }
    assert upgradesnap.destination("tf29-hub-a-2eb-work") == "/home/jovyan/work"
    assert upgradesnap.users_volumes(names, "tf29.hub") == {}  # the prefix is matched as it is, not as a pattern


def test_in_use() -> None:
    running: list[list[dict[str, Any]]] = [
        [{"Type": "volume", "Name": "tf29-hub-ann-work"}, {"Type": "bind", "Name": "tf29-hub-ben-work"}],
        [{"Type": "volume", "Name": "unrelated"}],
    ]
    assert upgradesnap.in_use(running, ["tf29-hub-ann-work", "tf29-hub-ben-work"]) == {"tf29-hub-ann-work"}


def test_served_image_is_recorded_privately(tmp_path: Path) -> None:
    assert upgradesnap.recorded_image(tmp_path) is None
    upgradesnap.record_image(tmp_path, OLD)
    upgradesnap.record_image(tmp_path, NEW)
    assert upgradesnap.recorded_image(tmp_path) == NEW
    assert upgradesnap.served_image_file(tmp_path).stat().st_mode & 0o777 == 0o600
    assert sorted(path.name for path in tmp_path.iterdir()) == [upgradesnap.SERVED_IMAGE]
    assert upgradesnap.short_id(NEW) == "b" * 12


def make_state(state: Path) -> None:
    for folder in (state / "run", state / "users" / "ann", state / "logs"):
        folder.mkdir(parents=True)
    hub_settings.db_file(state).write_bytes(b"SQLite format 3\0")
    hub_settings.cookie_secret_file(state).write_text("secret\n")
    (state / "users" / "ann" / "authorized_keys").write_text("ssh-ed25519 AAAA ann\n")
    (state / "run" / "hub.pid").write_text("123\n")


def test_state_tar_is_private_and_listed(tmp_path: Path) -> None:
    state, folder = tmp_path / "state", tmp_path / "snap"
    make_state(state)
    folder.mkdir()
    (folder / snapshot.MANIFEST).write_text('{"image": "x", "volumes": []}\n')
    (folder / snapshot.SUMS).write_text(f"{snapshot.sha256(folder / snapshot.MANIFEST)}  {snapshot.MANIFEST}\n")
    upgradesnap.write_state_tar(state, folder / upgradesnap.STATE_TAR)
    upgradesnap.add_to_sums(folder, upgradesnap.STATE_TAR)
    assert (folder / upgradesnap.STATE_TAR).stat().st_mode & 0o777 == 0o600
    with tarfile.open(folder / upgradesnap.STATE_TAR) as tar:
        names = set(tar.getnames())
    assert {"./jupyterhub.sqlite", "./jupyterhub_cookie_secret", "./users/ann/authorized_keys"} <= names
    assert not any(name.startswith("./run") for name in names), names
    snapshot.verify(folder)
    checked = subprocess.run(["sha256sum", "-c", snapshot.SUMS], cwd=folder, capture_output=True, text=True,
                             check=False)
    assert checked.returncode == 0 and f"{upgradesnap.STATE_TAR}: OK" in checked.stdout, checked.stdout


def test_summary_lines() -> None:
    folder = Path("/b/tf29-hub-20261207-023005")
    assert upgradesnap.summary(NEW, OLD, Taken(folder, ("ann", "ben"), (), ())) == [
        f"tf29-hub: new image {'b' * 12} (was {'a' * 12}): snapshot of 2 users' volumes and the hub's state: {folder}"]
    running = upgradesnap.summary(NEW, OLD, Taken(folder, ("ann", "ben"), ("ben",), ()))
    assert len(running) == 2 and running[1].startswith("tf29-hub: the servers of ben still run the old image")
    left = upgradesnap.summary(NEW, OLD, Taken(folder, ("ann",), (), ("ben",), "tar exited 1"))
    assert "snapshot of 1 users'" in left[0] and "ben changed while they were read" in left[1]
    assert "(tar exited 1)" in left[1]


class NoEngine:
    """A client that fails the test when asked anything."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the engine was asked for {name}")


@pytest.mark.parametrize("recorded", [None, NEW])
def test_same_image_or_first_start_does_nothing(tmp_path: Path, recorded: str | None) -> None:
    state = tmp_path / "state"
    state.mkdir()
    if recorded:
        upgradesnap.record_image(state, recorded)
    team = hub_settings.load({"HUB_STATE_DIR": str(state), "HUB_BACKUP_DIR": str(tmp_path / "backups")})
    assert upgradesnap.before_new_image(NoEngine(), team, NEW) == []
    assert not (tmp_path / "backups").exists()


def test_backup_settings(tmp_path: Path) -> None:
    team = hub_settings.load({})
    assert team.backup_dir == REPO / "backups" and team.backup_keep == 3
    team = hub_settings.load({"HUB_BACKUP_DIR": str(tmp_path / "b"), "HUB_BACKUP_KEEP": "1"})
    assert (team.backup_dir, team.backup_keep) == (tmp_path / "b", 1)
    for bad in ("0", "two", "-1"):
        with pytest.raises(HubConfigError, match=f"HUB_BACKUP_KEEP='{bad}' is not a whole number >= 1"):
            hub_settings.load({"HUB_BACKUP_KEEP": bad})
    for inside in (tmp_path / "state", tmp_path / "state" / "backups"):
        with pytest.raises(HubConfigError, match=r"HUB_BACKUP_DIR=.* lies in HUB_STATE_DIR"):
            hub_settings.load({"HUB_STATE_DIR": str(tmp_path / "state"), "HUB_BACKUP_DIR": str(inside)})


class Listed:
    def __init__(self, items: list[Any]) -> None:
        self.items = items

    def list(self) -> list[Any]:
        return self.items


class FakeEngine:
    """Volumes of ann and ben by the spawner's names; ben's server runs (it mounts his volumes)."""

    def __init__(self) -> None:
        names = [f"tf29-hub-{user}-{kind}" for user in ("ann", "ben") for kind in upgradesnap.VOLUME_MOUNTS]
        self.volumes = Listed([type("Volume", (), {"name": name})() for name in names])
        ben = type("Container", (), {"attrs": {"Mounts": [{"Type": "volume", "Name": "tf29-hub-ben-work"}]}})()
        self.containers = Listed([ben])


def test_changing_volumes_of_running_servers_are_left_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """tar fails on a volume written under it: the snapshot is taken again without the running servers' users."""
    state = tmp_path / "state"
    state.mkdir()
    upgradesnap.record_image(state, OLD)
    team = hub_settings.load({"HUB_STATE_DIR": str(state), "HUB_BACKUP_DIR": str(tmp_path / "backups")})
    tries: list[tuple[list[str], dict[str, Any]]] = []

    def take(client: Any, team: Any, image: str, folder: Path, users: dict[str, list[str]],
             manifest: dict[str, Any]) -> None:
        tries.append((sorted(users), manifest))
        if "ben" in users:
            raise snapshot.SnapshotError("tar exited 1: tar: ./log: file changed as we read it")
        folder.mkdir(parents=True)

    monkeypatch.setattr(upgradesnap, "check_room", lambda *args: None)
    monkeypatch.setattr(upgradesnap, "take", take)
    lines = upgradesnap.before_new_image(FakeEngine(), team, NEW)
    assert [users for users, _ in tries] == [["ann", "ben"], ["ann"]]
    assert tries[0][1]["running"] == ["ben"] and tries[1][1]["left_out"] == ["ben"]
    assert (tries[0][1]["kind"], tries[0][1]["old_image"], tries[0][1]["new_image"]) == ("hub-upgrade", OLD, NEW)
    assert "snapshot of 1 users' volumes" in lines[0] and len(lines) == 2
    assert lines[1].startswith("tf29-hub: the volumes of ben changed while they were read"), lines
    assert "file changed as we read it" in lines[1]


def test_a_failed_snapshot_without_running_servers_stops_up(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    state = tmp_path / "state"
    state.mkdir()
    upgradesnap.record_image(state, OLD)
    team = hub_settings.load({"HUB_STATE_DIR": str(state), "HUB_BACKUP_DIR": str(tmp_path / "backups")})
    engine = FakeEngine()
    engine.containers = Listed([])

    def take(*args: Any) -> None:
        raise snapshot.SnapshotError("the snapshot of tf29-hub-ann-work failed: no space left on device")

    monkeypatch.setattr(upgradesnap, "check_room", lambda *args: None)
    monkeypatch.setattr(upgradesnap, "take", take)
    with pytest.raises(upgradesnap.HubSnapshotError, match="no space left on device; the hub is not started"):
        upgradesnap.before_new_image(engine, team, NEW)
