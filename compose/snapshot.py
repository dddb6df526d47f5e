"""Snapshots of an environment's volumes, taken before an upgrade or a rollback changes them.

A snapshot is a folder BACKUP_DIR/<container>-<UTC time>/ holding one tar per named volume
(<volume>.tar, numeric owners, taken by a helper container of the environment's own image with the
volume mounted read-only: no other image is needed on a box without a registry), snapshot.json
(the container's name, image and settings, for putting it back) and SHA256SUMS over all of them,
in `sha256sum -c`'s format. Nothing is restored from a folder whose sums do not verify.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker.errors
from docker import DockerClient

MANIFEST = "snapshot.json"
SUMS = "SHA256SUMS"
# A folder name: the container's name, then the UTC time it was taken (sorting by name sorts by time).
STAMP = "%Y%m%d-%H%M%S"
FOLDER = re.compile(r"^(?P<container>.+)-(?P<time>\d{8}-\d{6})$")
# Where the helper container sees the volumes and the snapshot folder.
VOLUMES_AT = "/tf29-volumes"
FOLDER_AT = "/tf29-snapshot"
# What a snapshot needs beyond the volumes' bytes: tar's headers and a margin for what changes meanwhile.
MARGIN_BYTES = 64 * 1024 * 1024
CHUNK = 1024 * 1024


class SnapshotError(Exception):
    """A snapshot cannot be taken, verified or restored: one line, nothing changed."""


@dataclass(frozen=True)
class Snapshot:
    folder: Path
    manifest: dict[str, Any]

    @property
    def volumes(self) -> list[tuple[str, str]]:
        return [(volume["name"], volume["destination"]) for volume in self.manifest["volumes"]]

    @property
    def image(self) -> str:
        """The id of the image the environment ran when the snapshot was taken."""
        return str(self.manifest["image"])


def folder_name(container: str, now: datetime.datetime) -> str:
    return f"{container}-{now.astimezone(datetime.UTC).strftime(STAMP)}"


def snapshots_of(backup_dir: Path, container: str) -> list[Path]:
    """The snapshot folders of CONTAINER in BACKUP_DIR, oldest first (a folder of another container
    whose name starts the same, e.g. tf29-env-b for tf29-env, is not one)."""
    if not backup_dir.is_dir():
        return []
    found = []
    for entry in backup_dir.iterdir():
        match = FOLDER.match(entry.name)
        if entry.is_dir() and match and match["container"] == container:
            found.append(entry)
    return sorted(found, key=lambda path: path.name)


def to_prune(folders: Sequence[Path], keep: int) -> list[Path]:
    """Of FOLDERS (oldest first), the ones beyond the newest KEEP."""
    return list(folders[:-keep]) if keep > 0 and len(folders) > keep else []


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for chunk in iter(lambda: stream.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def parse_sums(text: str) -> dict[str, str]:
    """`sha256sum` lines ("HEX  NAME") as {name: hex}; a line of another shape is an error."""
    sums = {}
    for number, line in enumerate(text.splitlines(), 1):
        match = re.fullmatch(r"([0-9a-f]{64}) [ *]([^/]+)", line)
        if not match:
            raise SnapshotError(f"{SUMS} line {number} is not a sha256sum line")
        sums[match[2]] = match[1]
    return sums


def verify(folder: Path) -> Snapshot:
    """The snapshot in FOLDER, once every file its SHA256SUMS lists matches and it lists the manifest
    and every volume's tar; else SnapshotError naming the first problem."""
    if not (folder / SUMS).is_file():
        raise SnapshotError(f"{folder} has no {SUMS}: not a complete snapshot")
    sums = parse_sums((folder / SUMS).read_text())
    if MANIFEST not in sums:
        raise SnapshotError(f"{folder}/{SUMS} does not list {MANIFEST}")
    for name, expected in sums.items():
        path = folder / name
        if not path.is_file():
            raise SnapshotError(f"{path} is missing")
        if sha256(path) != expected:
            raise SnapshotError(f"{path} does not match its checksum in {SUMS}: the snapshot is damaged")
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
        volumes = [(volume["name"], volume["destination"]) for volume in manifest["volumes"]]
        str(manifest["image"])
    except (ValueError, KeyError, TypeError) as exc:
        raise SnapshotError(f"{folder}/{MANIFEST} is not a snapshot manifest ({exc})") from exc
    for name, _ in volumes:
        if f"{name}.tar" not in sums:
            raise SnapshotError(f"{folder}/{SUMS} does not list {name}.tar")
    return Snapshot(folder, manifest)


def helper(client: DockerClient, image: str, command: list[str], volumes: dict[str, dict[str, str]]) -> str:
    """Run COMMAND as root in a throwaway container of IMAGE, without network; its output, or
    SnapshotError with its last line."""
    container = client.containers.create(image, entrypoint=command[:1], command=command[1:], user="0:0",
                                         network_disabled=True, volumes=volumes, labels={"tf29-env.role": "snapshot"})
    try:
        container.start()
        code = container.wait()["StatusCode"]
        out = container.logs().decode(errors="replace")
    finally:
        container.remove(force=True)
    if code != 0:
        last = (out.strip().splitlines() or ["no output"])[-1]
        raise SnapshotError(f"{command[0]} exited {code}: {last}")
    return str(out)


def volume_bytes(client: DockerClient, image: str, volumes: Sequence[str]) -> int:
    """What the volumes hold, measured by `du` in a helper container (they may be in use: read-only)."""
    if not volumes:
        return 0
    mounts = {name: {"bind": f"{VOLUMES_AT}/{name}", "mode": "ro"} for name in volumes}
    out = helper(client, image, ["du", "-s", "-B1", *(f"{VOLUMES_AT}/{name}" for name in volumes)], mounts)
    return sum(int(line.split()[0]) for line in out.splitlines() if line.strip())


def check_room(client: DockerClient, image: str, volumes: Sequence[str], backup_dir: Path) -> int:
    """The bytes a snapshot of VOLUMES needs; SnapshotError when BACKUP_DIR's disk has less free."""
    need = volume_bytes(client, image, volumes)
    backup_dir.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(backup_dir).free
    if need + MARGIN_BYTES > free:
        raise SnapshotError(f"a snapshot needs about {mib(need + MARGIN_BYTES)} and {backup_dir} has {mib(free)} "
                            "free: free some space or set BACKUP_DIR to a bigger disk")
    return need


def mib(size: int) -> str:
    return f"{size / 1024 / 1024:.0f} MiB"


def take(client: DockerClient, image: str, folder: Path, volumes: Sequence[tuple[str, str]],
         manifest: dict[str, Any]) -> Snapshot:
    """Tar each volume into FOLDER (made here, private), write the manifest and SHA256SUMS, and
    verify them. On failure (a full disk, say) the folder is removed: it was never a snapshot."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    folder.mkdir(mode=0o700)
    try:
        for name, _ in volumes:
            mounts = {name: {"bind": f"{VOLUMES_AT}/{name}", "mode": "ro"},
                      str(folder.resolve()): {"bind": FOLDER_AT, "mode": "rw"}}
            helper(client, image, ["tar", "--numeric-owner", "-C", f"{VOLUMES_AT}/{name}", "-cf",
                                   f"{FOLDER_AT}/{name}.tar", "."], mounts)
        full = {**manifest, "volumes": [{"name": name, "destination": where} for name, where in volumes]}
        (folder / MANIFEST).write_text(json.dumps(full, indent=2, sort_keys=True) + "\n")
        os.chmod(folder / MANIFEST, 0o600)  # the container's settings may hold its secrets
        names = [MANIFEST, *(f"{name}.tar" for name, _ in volumes)]
        (folder / SUMS).write_text("".join(f"{sha256(folder / name)}  {name}\n" for name in names))
        return verify(folder)
    except (SnapshotError, OSError, docker.errors.DockerException) as exc:
        shutil.rmtree(folder, ignore_errors=True)
        raise SnapshotError(f"the snapshot of {', '.join(name for name, _ in volumes)} failed: {exc}") from exc


def restore(client: DockerClient, image: str, snapshot: Snapshot) -> None:
    """Put each volume of SNAPSHOT back as it was (emptied, then unpacked), once its sums verify
    again; the containers using the volumes must be stopped."""
    verify(snapshot.folder)
    for name, _ in snapshot.volumes:
        try:
            client.volumes.get(name)
        except docker.errors.NotFound:
            client.volumes.create(name)
        mounts = {name: {"bind": f"{VOLUMES_AT}/{name}", "mode": "rw"},
                  str(snapshot.folder.resolve()): {"bind": FOLDER_AT, "mode": "ro"}}
        target = f"{VOLUMES_AT}/{name}"
        helper(client, image, ["sh", "-c", 'find "$1" -mindepth 1 -delete && tar --numeric-owner -xpf "$2" -C "$1"',
                               "restore", target, f"{FOLDER_AT}/{name}.tar"], mounts)


def prune(backup_dir: Path, container: str, keep: int, spare: Path) -> list[Path]:
    """Remove the snapshots of CONTAINER beyond the newest KEEP (never SPARE, the one just taken)."""
    removed = []
    for folder in to_prune(snapshots_of(backup_dir, container), keep):
        if folder.resolve() != spare.resolve():
            shutil.rmtree(folder)
            removed.append(folder)
    return removed
