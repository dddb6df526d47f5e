"""Snapshots before the team hub serves a new image (docs/hub.md, "Versions"). `up` records the id of
the image it serves in the state folder (served-image) at each successful start; when HUB_IMAGE now
resolves to another id, it first snapshots, with compose/snapshot.py, the users' named volumes the
hub manages and the hub's state folder into one folder HUB_BACKUP_DIR/<prefix>-<UTC time>/ (a tar
per volume, hub-state.tar, snapshot.json of kind hub-upgrade with both image ids, SHA256SUMS), then
lets the hub start. No room, or a snapshot that fails, stops `up` before the hub starts. Servers
still running the old image are left running (a hub restart never ends a training run): their
volumes are read while in use, and left out, with a line, when they change under the read."""

from __future__ import annotations

import datetime
import os
import re
import shutil
import tarfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import docker.errors
from docker import DockerClient

from compose import snapshot
from hub.settings import Settings

KIND = "hub-upgrade"
SERVED_IMAGE = "served-image"
STATE_TAR = "hub-state.tar"
# The users' volumes as hub/spawner.py names and mounts them: {prefix}-{escaped user}-{kind}.
VOLUME_MOUNTS = {
    "work": "/home/jovyan/work",
    "nv": "/home/jovyan/.nv",
    "hostkeys": "/etc/ssh/host-keys",
    "local": "/home/jovyan/.local",
}
# What the state tar leaves out: pid files of processes that are not running during `up`.
STATE_SKIP = ("run",)


class HubSnapshotError(Exception):
    """The snapshot before a new image cannot be taken: one line, the hub not started."""


@dataclass(frozen=True)
class Taken:
    folder: Path
    users: tuple[str, ...]  # whose volumes are in it
    running: tuple[str, ...]  # of those, whose servers ran while their volumes were read
    left_out: tuple[str, ...]  # whose volumes changed under the read (servers running): not in it
    reason: str = ""  # why they were left out


def served_image_file(state: Path) -> Path:
    return state / SERVED_IMAGE


def recorded_image(state: Path) -> str | None:
    """The image id the hub served at its last successful start; None before the first one."""
    try:
        return served_image_file(state).read_text().strip() or None
    except FileNotFoundError:
        return None


def record_image(state: Path, image_id: str) -> None:
    """Write IMAGE_ID as the served image, atomically (a crash never leaves half an id)."""
    target = served_image_file(state)
    partial = target.with_name(f".{SERVED_IMAGE}.partial")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(f"{image_id}\n")
    partial.replace(target)


def short_id(image_id: str) -> str:
    return image_id.removeprefix("sha256:")[:12]


def users_volumes(names: Iterable[str], prefix: str) -> dict[str, list[str]]:
    """Of the volume NAMES, the ones spawner.py makes for the hub with PREFIX, by escaped user name."""
    pattern = re.compile(rf"{re.escape(prefix)}-(?P<user>[A-Za-z0-9-]+)-(?P<kind>{'|'.join(VOLUME_MOUNTS)})")
    found: dict[str, list[str]] = {}
    for name in sorted(names):
        match = pattern.fullmatch(name)
        if match:
            found.setdefault(match["user"], []).append(name)
    return found


def destination(volume: str) -> str:
    return VOLUME_MOUNTS[volume.rsplit("-", 1)[1]]


def in_use(mounts_of_running: Iterable[Iterable[Mapping[str, object]]], volumes: Iterable[str]) -> set[str]:
    """Of VOLUMES, those a running container mounts (its inspect's Mounts, one list per container)."""
    wanted = set(volumes)
    return {str(mount.get("Name")) for mounts in mounts_of_running for mount in mounts
            if mount.get("Type") == "volume" and mount.get("Name") in wanted}


def write_state_tar(state: Path, target: Path) -> None:
    """The state folder as TARGET (mode 600: it holds the cookie secret, the proxy token and password
    hashes), paths relative to the folder, without its pid files."""
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out, tarfile.open(fileobj=out, mode="w") as tar:
        for entry in sorted(state.iterdir()):
            if entry.name not in STATE_SKIP:
                tar.add(entry, arcname=f"./{entry.name}")


def add_to_sums(folder: Path, name: str) -> None:
    """List NAME in FOLDER's SHA256SUMS, in sha256sum's format."""
    with (folder / snapshot.SUMS).open("a") as sums:
        sums.write(f"{snapshot.sha256(folder / name)}  {name}\n")


def tree_bytes(root: Path) -> int:
    return sum(path.stat().st_size for path in root.rglob("*") if path.is_file() and not path.is_symlink())


def summary(new_id: str, old_id: str, taken: Taken) -> list[str]:
    """What `up` prints: the snapshot in one line, then one line for running servers if any."""
    lines = [f"tf29-hub: new image {short_id(new_id)} (was {short_id(old_id)}): snapshot of {len(taken.users)} "
             f"users' volumes and the hub's state: {taken.folder}"]
    if taken.running:
        lines.append(f"tf29-hub: the servers of {', '.join(taken.running)} still run the old image: their volumes "
                     "were snapshotted while in use (a file being written then may be incomplete); "
                     "they get the new image at their next start")
    if taken.left_out:
        lines.append(f"tf29-hub: the volumes of {', '.join(taken.left_out)} changed while they were read (their "
                     f"servers run) and are not in the snapshot ({taken.reason}); stop those servers and "
                     f"copy them by hand if they matter")
    return lines


def check_room(client: DockerClient, image: str, volumes: Sequence[str], team: Settings) -> None:
    try:
        need = snapshot.check_room(client, image, volumes, team.backup_dir)
        state_need = tree_bytes(team.state_dir)
        free = shutil.disk_usage(team.backup_dir).free
    except (snapshot.SnapshotError, OSError, docker.errors.DockerException) as exc:
        raise HubSnapshotError(f"no snapshot before the new image: {str(exc).replace('BACKUP_DIR', 'HUB_BACKUP_DIR')}; "
                               "the hub is not started") from None
    if need + state_need + snapshot.MARGIN_BYTES > free:
        raise HubSnapshotError(f"no snapshot before the new image: it needs about "
                               f"{snapshot.mib(need + state_need + snapshot.MARGIN_BYTES)} and {team.backup_dir} has "
                               f"{snapshot.mib(free)} free: free some space or set HUB_BACKUP_DIR to a bigger disk; "
                               "the hub is not started")


def take(client: DockerClient, team: Settings, image: str, folder: Path, users: Mapping[str, list[str]],
         manifest: Mapping[str, object]) -> None:
    """The users' volumes, then the state's tar, into FOLDER; verified, or removed and SnapshotError."""
    volumes = [(name, destination(name)) for user in sorted(users) for name in users[user]]
    done = snapshot.take(client, image, folder, volumes, {**manifest, "users": {u: users[u] for u in sorted(users)}})
    try:
        write_state_tar(team.state_dir, folder / STATE_TAR)
        add_to_sums(folder, STATE_TAR)
        snapshot.verify(done.folder)
    except (OSError, tarfile.TarError, snapshot.SnapshotError) as exc:
        shutil.rmtree(folder, ignore_errors=True)
        raise snapshot.SnapshotError(f"the hub's state folder {team.state_dir}: {exc}") from exc


def before_new_image(client: DockerClient, team: Settings, image_id: str,
                     now: datetime.datetime | None = None) -> list[str]:
    """When IMAGE_ID is not the image last served, the snapshot, and the lines saying so; [] when it is
    (or nothing was recorded yet: a first start has nothing served to go back to)."""
    old_id = recorded_image(team.state_dir)
    if old_id is None or old_id == image_id:
        return []
    users = users_volumes((volume.name for volume in client.volumes.list()), team.name_prefix)
    every = [name for names in users.values() for name in names]
    running_mounts = [container.attrs.get("Mounts") or [] for container in client.containers.list()]
    busy = in_use(running_mounts, every)
    running = tuple(user for user, names in sorted(users.items()) if busy & set(names))
    check_room(client, team.image, every, team)
    when = now or datetime.datetime.now(datetime.UTC)
    folder = team.backup_dir / snapshot.folder_name(team.name_prefix, when)
    manifest = {"kind": KIND, "image": old_id, "old_image": old_id, "new_image": image_id, "hub_image": team.image,
                "state": STATE_TAR, "state_dir": str(team.state_dir), "running": list(running),
                "taken": when.astimezone(datetime.UTC).isoformat(timespec="seconds")}
    try:
        take(client, team, team.image, folder, users, manifest)
        taken = Taken(folder, tuple(sorted(users)), running, ())
    except snapshot.SnapshotError as exc:
        if not running:
            raise HubSnapshotError(f"{exc}; the hub is not started") from None
        # A volume read while its server writes may fail tar ("file changed as we read it"): keep the rest.
        quiet = {user: names for user, names in users.items() if user not in running}
        try:
            take(client, team, team.image, folder, quiet, {**manifest, "running": [], "left_out": list(running)})
        except snapshot.SnapshotError as again:
            raise HubSnapshotError(f"{again}; the hub is not started") from None
        taken = Taken(folder, tuple(sorted(quiet)), (), running, str(exc).splitlines()[0][:200])
    snapshot.prune(team.backup_dir, team.name_prefix, team.backup_keep, folder)
    return summary(image_id, old_id, taken)

