"""Job folders and job.json. A folder is made once (mkdir, so two runs never share one) and named
DATE-TIME-NAME; its supervisor holds a lock on its RUNNING file while it lives, so a job whose
container was killed reads `stopped`, never `running` for ever. Loaded by the Jupyter server's
activity hook as well (activity.py), so stdlib only."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import time
from typing import Any, Iterator

# Docker's `docker stop` waits 10 s before it kills: 8 leaves the services their 2.
STOP_GRACE_DEFAULT = 8
STOP_GRACE_MAX = 3600
STATES = ("running", "done", "failed", "stopped")
RECORD = "job.json"
RUNNING = "RUNNING"  # locked by the supervisor while it lives
FAILURE = "failure.txt"  # the worker's one line on why it failed
LOG = "output.log"
CHECKPOINTS = "checkpoints"
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


class JobError(Exception):
    """One line for the user; the command exits non-zero."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def jobs_dir(environ: dict[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    return env.get("JOBS_DIR") or os.path.join(env.get("HOME") or os.path.expanduser("~"), "work", "jobs")


def stop_grace(environ: dict[str, str] | None = None) -> int:
    """STOP_GRACE_SECONDS as the entrypoint checked it; a hand-set bad value falls back to the default."""
    value = (os.environ if environ is None else environ).get("STOP_GRACE_SECONDS", "")
    return int(value) if value.isdigit() and 0 < int(value) <= STOP_GRACE_MAX else STOP_GRACE_DEFAULT


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S%z")


def new_folder(base: str, name: str) -> str:
    """A folder no job had: DATE-TIME-NAME, or with -2, -3, ... when a run in the same second took it."""
    try:
        os.makedirs(base, exist_ok=True)
    except OSError as exc:
        raise JobError(f"cannot make the jobs folder {base}: {exc.strerror}") from exc
    stem = f"{time.strftime('%Y%m%d-%H%M%S')}-{name}"
    for count in range(1, 1000):
        folder = os.path.join(base, stem if count == 1 else f"{stem}-{count}")
        try:
            os.mkdir(folder)
        except FileExistsError:
            continue
        except OSError as exc:
            raise JobError(f"cannot make a job folder in {base}: {exc.strerror}") from exc
        return folder
    raise JobError(f"cannot make a job folder in {base}: {stem} is taken 999 times")


def write(folder: str, record: dict[str, Any]) -> None:
    """job.json replaced whole (a temporary file renamed over it): a reader sees the old or the new."""
    path = os.path.join(folder, RECORD)
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        with open(temporary, "w", encoding="utf-8") as out:
            json.dump(record, out, indent=2, sort_keys=True)
            out.write("\n")
        os.replace(temporary, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise JobError(f"cannot write {path}: {exc.strerror}") from exc


def read(folder: str) -> dict[str, Any]:
    with open(os.path.join(folder, RECORD), encoding="utf-8") as record_file:
        record: dict[str, Any] = json.load(record_file)
    if record.get("state") == "running" and not is_running(folder):
        # Its supervisor is gone without writing an end: the container or the process was killed.
        record["state"] = "stopped"
        record["message"] = record.get("message") or "ended without a clean stop (the container or the job was killed)"
    return record


def is_running(folder: str) -> bool:
    """Whether a supervisor holds the folder's lock (a process that ended, however, holds none)."""
    try:
        fd = os.open(os.path.join(folder, RUNNING), os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError as exc:
        return exc.errno in (errno.EAGAIN, errno.EACCES)
    finally:
        os.close(fd)
    return False


def hold(folder: str) -> int:
    """The lock that says the job runs; released when this process ends, however it ends. A second
    supervisor of the same job (two `job resume` at once) is refused, not queued."""
    fd = os.open(os.path.join(folder, RUNNING), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        raise JobError(f"job {os.path.basename(folder)} is already running", 2) from exc
    return fd


def folders(base: str | None = None) -> Iterator[str]:
    """Every job folder, oldest first (the names start with the time)."""
    base = base or jobs_dir()
    try:
        names = sorted(os.listdir(base))
    except FileNotFoundError:
        return
    for name in names:
        folder = os.path.join(base, name)
        if os.path.isfile(os.path.join(folder, RECORD)):
            yield folder


def records(base: str | None = None) -> list[dict[str, Any]]:
    found = []
    for folder in folders(base):
        try:
            found.append(read(folder))
        except (OSError, ValueError):
            continue  # a folder being made, or one a person edited: not a job to list
    return found


def find(job_id: str, base: str | None = None) -> str:
    """The folder of the job with this id, or of the only one whose id starts with it."""
    base = base or jobs_dir()
    ids = [os.path.basename(folder) for folder in folders(base)]
    matches = [job_id] if job_id in ids else [found for found in ids if job_id and found.startswith(job_id)]
    if len(matches) == 1:
        return os.path.join(base, matches[0])
    if not matches:
        raise JobError(f"no job '{job_id}' in {base} (`job list` shows them)", 2)
    raise JobError(f"'{job_id}' names {len(matches)} jobs ({', '.join(matches[:3])}, ...): give more of the id", 2)


def any_running(base: str | None = None) -> bool:
    return any(is_running(folder) for folder in folders(base))
