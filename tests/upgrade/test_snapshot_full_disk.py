"""A disk that fills while a snapshot is written (after `make upgrade`'s room check passed, say
another job filled it): compose.snapshot.take fails with one line naming the volume, leaves no
partial folder that a later rollback could take for a snapshot, and never touches the volume."""

from __future__ import annotations

import datetime
import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from docker import DockerClient

from compose import snapshot

FILL = "head -c 4M /dev/urandom > /v/blob && sha256sum /v/blob | cut -d' ' -f1"


@pytest.fixture
def filled_volume(docker_client: DockerClient, image: str) -> Iterator[tuple[str, str]]:
    """A volume holding 4 MiB of random data, and that data's SHA-256."""
    name = f"tf29-env-fulldisk-{secrets.token_hex(4)}"
    docker_client.volumes.create(name)
    try:
        out = docker_client.containers.run(image, ["sh", "-c", FILL], entrypoint=[], user="root", remove=True,
                                           volumes={name: {"bind": "/v", "mode": "rw"}})
        yield name, out.decode().strip()
    finally:
        docker_client.volumes.get(name).remove(force=True)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB file system: smaller than the volume, so the tar cannot be written whole."""
    folder = tmp_path / "small"
    folder.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder)], check=True)
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def test_a_disk_that_fills_during_the_snapshot_leaves_no_partial_snapshot(
        docker_client: DockerClient, image: str, filled_volume: tuple[str, str], small_disk: Path) -> None:
    name, digest = filled_volume
    folder = small_disk / snapshot.folder_name("tf29-env", datetime.datetime.now(datetime.UTC))
    with pytest.raises(snapshot.SnapshotError) as failed:
        snapshot.take(docker_client, image, folder, [(name, "/home/jovyan/work")], {"kind": "upgrade"})
    message = str(failed.value)
    assert "\n" not in message and f"the snapshot of {name} failed" in message, message
    assert not folder.exists() and list(small_disk.iterdir()) == []
    assert snapshot.snapshots_of(small_disk, "tf29-env") == []
    again = docker_client.containers.run(image, ["sh", "-c", "sha256sum /v/blob | cut -d' ' -f1"], entrypoint=[],
                                         user="root", remove=True, volumes={name: {"bind": "/v", "mode": "ro"}})
    assert again.decode().strip() == digest
