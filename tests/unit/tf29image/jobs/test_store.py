"""tf29image.jobs.store: the job folders without a container (ids, records, the lock a supervisor
holds, the stop grace). Its runs themselves are tested in the image: tests/image/test_jobs.py."""

import fcntl
import json
import os
from pathlib import Path

import pytest

from tf29image.jobs import store


def test_folders_are_never_reused(tmp_path: Path) -> None:
    made = [store.new_folder(str(tmp_path), "train") for _ in range(3)]
    assert len(set(made)) == 3 and all(Path(folder).is_dir() and "-train" in folder for folder in made)


def test_a_folder_that_cannot_be_made_is_one_line(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("")
    with pytest.raises(store.JobError) as refused:
        store.new_folder(str(blocked / "jobs"), "train")
    assert "cannot make the jobs folder" in str(refused.value) and "\n" not in str(refused.value)


def write_job(base: Path, ident: str, state: str = "running") -> Path:
    folder = base / ident
    folder.mkdir(parents=True)
    store.write(str(folder), {"id": ident, "state": state})
    return folder


def test_a_running_job_without_its_supervisor_reads_stopped(tmp_path: Path) -> None:
    """The container was killed: job.json still says running, but nobody holds the lock."""
    folder = tmp_path / "20261206-101010-a"
    folder.mkdir()
    store.write(str(folder), {"id": folder.name, "state": "running", "message": ""})  # as a supervisor leaves it
    found = store.read(str(folder))
    assert found["state"] == "stopped" and "killed" in found["message"]
    fd = store.hold(str(folder))
    try:
        assert store.read(str(folder))["state"] == "running"
        assert store.is_running(str(folder)) and store.any_running(str(tmp_path))
        with pytest.raises(store.JobError, match="is already running"):
            store.hold(str(folder))  # a second resume at once
    finally:
        os.close(fd)
    assert not store.is_running(str(folder))


def test_is_running_does_not_take_the_lock_from_a_supervisor(tmp_path: Path) -> None:
    folder = write_job(tmp_path, "20261206-101010-a")
    (folder / store.RUNNING).touch()
    assert not store.is_running(str(folder))
    fd = os.open(folder / store.RUNNING, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free again once the check is done
    finally:
        os.close(fd)


def test_ids_are_found_whole_or_by_a_unique_start(tmp_path: Path) -> None:
    for ident in ("20261206-101010-a", "20261206-101010-a-2", "20261207-090000-b"):
        write_job(tmp_path, ident)
    assert store.find("20261206-101010-a", str(tmp_path)).endswith("/20261206-101010-a")  # whole, though a prefix too
    assert store.find("20261207", str(tmp_path)).endswith("/20261207-090000-b")
    for ident, message in (("2026120", "names 3 jobs"), ("x", "no job 'x'"), ("", "no job ''")):
        with pytest.raises(store.JobError) as refused:
            store.find(ident, str(tmp_path))
        assert refused.value.code == 2 and message in str(refused.value)


def test_listing_skips_what_is_not_a_job(tmp_path: Path) -> None:
    write_job(tmp_path, "20261206-101010-a", "done")
    (tmp_path / "notes").mkdir()
    (tmp_path / "20261206-101011-half").mkdir()
    (tmp_path / "20261206-101011-half" / store.RECORD).write_text("{")  # being written, or edited by hand
    assert [record["id"] for record in store.records(str(tmp_path))] == ["20261206-101010-a"]


def test_the_record_is_replaced_whole(tmp_path: Path) -> None:
    store.write(str(tmp_path), {"id": "a", "state": "done"})
    assert json.loads((tmp_path / store.RECORD).read_text()) == {"id": "a", "state": "done"}
    assert [path.name for path in tmp_path.iterdir()] == [store.RECORD]  # no temporary file left


@pytest.mark.parametrize(("value", "grace"), [("", 8), ("30", 30), ("0", 8), ("x", 8), ("3601", 8), ("3600", 3600)])
def test_the_grace_falls_back_to_the_default(value: str, grace: int) -> None:
    assert store.stop_grace({"STOP_GRACE_SECONDS": value}) == grace
