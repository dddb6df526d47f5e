"""compose/snapshot.py's pure parts: folder names, which snapshots are pruned, and verification of
a folder's SHA256SUMS (in `sha256sum`'s own format, checked against the real tool)."""

from __future__ import annotations

import datetime
import json
import subprocess
from pathlib import Path

import pytest

from compose import snapshot


def make_snapshot(folder: Path, volumes: dict[str, bytes]) -> Path:
    folder.mkdir(parents=True)
    manifest = {"image": "sha256:" + "a" * 64,
                "volumes": [{"name": name, "destination": f"/{name}"} for name in volumes]}
    (folder / snapshot.MANIFEST).write_text(json.dumps(manifest))
    for name, data in volumes.items():
        (folder / f"{name}.tar").write_bytes(data)
    names = [snapshot.MANIFEST, *(f"{name}.tar" for name in volumes)]
    (folder / snapshot.SUMS).write_text("".join(f"{snapshot.sha256(folder / n)}  {n}\n" for n in names))
    return folder


def test_folder_names_sort_by_time_and_belong_to_one_container(tmp_path: Path) -> None:
    when = datetime.datetime(2026, 12, 7, 2, 30, 5, tzinfo=datetime.UTC)
    assert snapshot.folder_name("tf29-env", when) == "tf29-env-20261207-023005"
    for name in ("tf29-env-20261207-023005", "tf29-env-20261101-000000", "tf29-env-b-20261207-023005", "notes"):
        (tmp_path / name).mkdir()
    assert [p.name for p in snapshot.snapshots_of(tmp_path, "tf29-env")] == [
        "tf29-env-20261101-000000", "tf29-env-20261207-023005"]
    assert snapshot.snapshots_of(tmp_path / "none", "tf29-env") == []


@pytest.mark.parametrize(("count", "keep", "pruned"), [(5, 3, 2), (3, 3, 0), (1, 3, 0), (4, 1, 3)])
def test_the_newest_keep_stay(count: int, keep: int, pruned: int) -> None:
    folders = [Path(f"s{i}") for i in range(count)]
    assert snapshot.to_prune(folders, keep) == folders[:pruned]


def test_a_complete_snapshot_verifies_and_sha256sum_agrees(tmp_path: Path) -> None:
    folder = make_snapshot(tmp_path / "tf29-env-20261207-023005", {"tf29-env-work": b"x" * 3000})
    found = snapshot.verify(folder)
    assert found.volumes == [("tf29-env-work", "/tf29-env-work")] and found.image.startswith("sha256:")
    check = subprocess.run(["sha256sum", "-c", snapshot.SUMS], cwd=folder, capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_damaged_or_incomplete_snapshot_is_refused(tmp_path: Path) -> None:
    folder = make_snapshot(tmp_path / "s", {"v": b"data"})
    (folder / "v.tar").write_bytes(b"dat4")
    with pytest.raises(snapshot.SnapshotError, match=r"v\.tar does not match its checksum"):
        snapshot.verify(folder)
    (folder / "v.tar").unlink()
    with pytest.raises(snapshot.SnapshotError, match=r"v\.tar is missing"):
        snapshot.verify(folder)
    (folder / snapshot.SUMS).unlink()
    with pytest.raises(snapshot.SnapshotError, match="has no SHA256SUMS"):
        snapshot.verify(folder)


def test_sums_must_list_every_volume_and_be_well_formed(tmp_path: Path) -> None:
    folder = make_snapshot(tmp_path / "s", {"v": b"data"})
    lines = (folder / snapshot.SUMS).read_text().splitlines()
    (folder / snapshot.SUMS).write_text(lines[0] + "\n")
    with pytest.raises(snapshot.SnapshotError, match=r"does not list v\.tar"):
        snapshot.verify(folder)
    with pytest.raises(snapshot.SnapshotError, match="line 1 is not a sha256sum line"):
        snapshot.parse_sums("abc  x\n")
