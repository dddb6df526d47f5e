"""A job's supervisor: runs its worker (papermill for a notebook, Python for a script) in a session of
its own, copies what it prints to the job's log as it comes, and writes how it ended to job.json.
A stop (SIGINT or SIGTERM: `job stop`, the container's stop, Slurm's signal) interrupts the worker
first, so that KeyboardInterrupt reaches the run and its last checkpoint stands, and terminates it
only after the grace."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from typing import IO, Any

from tf29image.jobs import procs, store

# Run as a file, as bin/job runs it, not `-m tf29image.jobs`: -m would put the working folder (the
# user's) first on sys.path, and -I would drop the user's PYTHONPATH and site from the worker and from
# what provenance finds. The file's own folder goes first instead; the image's tf29-env.pth finds the
# package.
JOB_MAIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "__main__.py")
# `job stop` interrupts; the container's stop (jobs.cli's _interrupt-all) and Slurm's signal terminate.
STOP_REASONS: dict[int, str] = {signal.SIGINT: "by job stop",
                                signal.SIGTERM: "by the container's or the scheduler's stop"}
KILL_AFTER_TERM = 5  # seconds a terminated worker has before it is killed
POLL = 0.2


def user_pythonpath(environ: dict[str, str]) -> list[str]:
    """PYTHONPATH as the user had it (its non-empty entries)."""
    return [entry for entry in environ.get("PYTHONPATH", "").split(os.pathsep) if entry]


def output_name(record: dict[str, Any], attempt: int) -> str:
    """A script's output is the log; a notebook's each attempt's own notebook, so a resume keeps the last."""
    if record["kind"] == "script":
        return store.LOG
    return "output.ipynb" if attempt == 1 else f"output.{attempt}.ipynb"


def worker_command(folder: str, record: dict[str, Any], output: str) -> list[str]:
    if record["kind"] == "notebook":
        return [sys.executable, JOB_MAIN, "_notebook", folder, output]
    arguments: list[str] = []
    for name, value in record["parameters"].items():
        arguments += [f"--{name}", str(value)]
    return [sys.executable, "-u", os.path.join(folder, record["input_copy"]), *arguments]


def worker_environment(folder: str, record: dict[str, Any]) -> dict[str, str]:
    env = dict(os.environ)
    env.update(JOB_ID=record["id"], JOB_DIR=folder, JOB_CHECKPOINT_DIR=record["checkpoint_dir"],
               PYTHONUNBUFFERED="1")
    user_path = user_pythonpath(env)
    if record["kind"] == "script":
        user_path.insert(0, record["cwd"])  # the script's neighbours import as they did beside it
    # A notebook's worker finds the jobs package through the image's .pth; its kernel gets the user's own.
    if user_path:
        env["PYTHONPATH"] = os.pathsep.join(user_path)
    else:
        env.pop("PYTHONPATH", None)
    return env


def _default_int() -> None:
    # A `job run ... &` from a script starts with SIGINT ignored, and exec keeps that: undo it.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def signal_tree(pid: int, signum: int) -> None:
    procs.signal_all([pid, *procs.descendants(pid)], signum)


class Supervisor:
    def __init__(self, folder: str, echo: IO[str] | None) -> None:
        self.folder, self.echo = folder, echo  # echo: also print the output (a foreground run)
        self.grace = store.stop_grace()
        self.worker: subprocess.Popen[bytes] | None = None
        self.stop_asked: float | None = None
        self.stop_reason = ""
        self.terminated: float | None = None

    def on_signal(self, signum: int, _frame: Any) -> None:
        if self.stop_asked is None:
            self.stop_asked = time.monotonic()
            self.stop_reason = STOP_REASONS.get(signum, signal.Signals(signum).name)
            self.interrupt()

    def interrupt(self) -> None:
        if self.worker is not None:
            with contextlib.suppress(OSError):
                os.killpg(self.worker.pid, signal.SIGINT)

    def copy_output(self, source: IO[bytes], log: IO[bytes]) -> None:
        for chunk in iter(lambda: source.read1(65536), b""):  # type: ignore[attr-defined]
            log.write(chunk)
            log.flush()
            if self.echo is not None:
                self.echo.write(chunk.decode("utf-8", "replace"))
                self.echo.flush()

    def wait(self) -> int:
        assert self.worker is not None
        while True:
            try:
                return self.worker.wait(timeout=POLL)
            except subprocess.TimeoutExpired:
                pass
            if self.stop_asked is None:
                continue
            waited = time.monotonic() - self.stop_asked
            if self.terminated is None and waited > self.grace:
                self.terminated = time.monotonic()
                signal_tree(self.worker.pid, signal.SIGTERM)
            elif self.terminated is not None and time.monotonic() - self.terminated > KILL_AFTER_TERM:
                signal_tree(self.worker.pid, signal.SIGKILL)

    def run(self) -> int:
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, self.on_signal)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)  # a closed terminal or SSH session is no stop
        lock = store.hold(self.folder)
        record = store.read(self.folder)
        attempt = len(record.get("attempts", [])) + 1
        output = output_name(record, attempt)
        entry = {"attempt": attempt, "started": store.now(), "output": output}
        record.update(state="running", exit_code=None, ended=None, message="", pid=os.getpid(),
                      output=output, attempts=[*record.get("attempts", []), entry])
        record["started"] = record.get("started") or entry["started"]
        store.write(self.folder, record)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(self.folder, store.FAILURE))
        with open(os.path.join(self.folder, store.LOG), "ab") as log:
            if attempt > 1:
                log.write(f"--- job resume: attempt {attempt}, {entry['started']} ---\n".encode())
            self.worker = subprocess.Popen(
                worker_command(self.folder, record, output), cwd=record["cwd"],
                env=worker_environment(self.folder, record), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=_default_int)  # noqa: PLW1509
            if self.stop_asked is not None:
                self.interrupt()
            assert self.worker.stdout is not None
            copier = threading.Thread(target=self.copy_output, args=(self.worker.stdout, log), daemon=True)
            copier.start()
            code = self.wait()
            copier.join(timeout=5)
        code = 128 - code if code < 0 else code
        record = store.read(self.folder)
        state = "done" if code == 0 else "stopped" if self.stop_asked is not None else "failed"
        message = self.failure() if state == "failed" else ""
        if state == "stopped":
            message = f"stopped {self.stop_reason}; `job resume {record['id']}` continues from the checkpoint"
        elif state == "failed" and not message:
            message = f"exited with code {code}"
        entry = {**record["attempts"][-1], "ended": store.now(), "state": state, "exit_code": code}
        record.update(state=state, exit_code=code, ended=entry["ended"], message=message,
                      attempts=[*record["attempts"][:-1], entry])
        store.write(self.folder, record)
        os.close(lock)
        return code

    def failure(self) -> str:
        try:
            with open(os.path.join(self.folder, store.FAILURE), encoding="utf-8") as failure:
                return failure.read().strip()
        except OSError:
            return ""


def supervise(folder: str, foreground: bool) -> int:
    return Supervisor(folder, sys.stdout if foreground else None).run()
