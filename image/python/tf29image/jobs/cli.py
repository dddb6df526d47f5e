"""`job run|list|log|stop|resume`: the command line (docs/jobs.md). Bad input is one line on stderr and
exit 2; a job that cannot be made or found, exit 1 or 2; `job run` in the foreground exits with
the run's own exit code."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from typing import Any, Callable, Sequence

from tf29image.jobs import procs, provenance, store
from tf29image.jobs.supervise import JOB_MAIN, supervise

KINDS = {".ipynb": "notebook", ".py": "script"}
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
START_TIMEOUT = 30  # seconds a background supervisor has to take its lock
FOLLOW_POLL = 0.5


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        raise store.JobError(f"{message} (job --help)", 2)


def parameter_value(text: str) -> Any:
    """-p's value as papermill's own -p takes it: an int, a float, true/false/none, else the string."""
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    if lowered in ("none", "null"):
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            continue
    return text


def parameters(pairs: list[list[str]] | None) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for name, value in pairs or []:
        if not IDENTIFIER.fullmatch(name):
            raise store.JobError(f"-p {name!r}: a parameter's name must be a Python identifier (like epochs)", 2)
        found[name] = parameter_value(value)
    return found


def make_job(path: str, params: dict[str, Any], name: str | None) -> str:
    source = os.path.abspath(path)
    kind = KINDS.get(os.path.splitext(source)[1])
    if not os.path.isfile(source):
        raise store.JobError(f"{path}: no such file", 2)
    if kind is None:
        raise store.JobError(f"{path}: a job runs a notebook (.ipynb) or a Python script (.py)", 2)
    name = name or os.path.splitext(os.path.basename(source))[0]
    name = name if store.NAME.fullmatch(name) else re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")[:64] or "job"
    folder = store.new_folder(store.jobs_dir(), name)
    job_id = os.path.basename(folder)
    try:
        shutil.copy2(source, os.path.join(folder, "input" + os.path.splitext(source)[1]))
        os.mkdir(os.path.join(folder, store.CHECKPOINTS))
    except OSError as exc:
        shutil.rmtree(folder, ignore_errors=True)  # only what this run just made
        raise store.JobError(f"cannot copy {path} into {folder}: {exc.strerror}") from exc
    record: dict[str, Any] = {
        "id": job_id, "name": name, "kind": kind, "input": source, "input_copy": "input" + os.path.splitext(source)[1],
        "cwd": os.path.dirname(source), "parameters": params, "folder": folder,
        "checkpoint_dir": os.path.join(folder, store.CHECKPOINTS), "state": "running", "exit_code": None,
        "started": None, "ended": None, "attempts": [], "provenance": provenance.collect(dict(os.environ)),
    }
    try:
        store.write(folder, record)
    except store.JobError:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return folder


def foreground_asked(args: argparse.Namespace) -> bool:
    # `docker run IMAGE job run ...`: the entrypoint's command mode, where nothing would outlive the command.
    return bool(args.foreground) or os.environ.get("JOB_FOREGROUND") == "1"


def wait_for(done: Callable[[], bool], seconds: float, failure: str) -> None:
    """Poll DONE until it holds; after SECONDS, the one line FAILURE."""
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() > deadline:
            raise store.JobError(failure)
        time.sleep(0.05)


def start(folder: str, foreground: bool) -> int:
    if foreground:
        record = store.read(folder)
        print(f"job {record['id']}: running in the foreground; folder {folder}", flush=True)
        code = supervise(folder, foreground=True)
        record = store.read(folder)
        print(f"job {record['id']}: {record['state']} (exit code {code})" +
              (f": {record['message']}" if record.get("message") else ""), file=sys.stderr, flush=True)
        return code
    with open(os.path.join(folder, store.LOG), "ab") as log:
        subprocess.Popen(
            [sys.executable, JOB_MAIN, "_supervise", folder], cwd="/", stdin=subprocess.DEVNULL,
            stdout=log, stderr=log, start_new_session=True)
    def started() -> bool:
        attempts = store.read(folder).get("attempts")
        return store.is_running(folder) or bool(attempts and attempts[-1].get("ended"))  # or so quick it ended

    wait_for(started, START_TIMEOUT, f"the job in {folder} did not start in {START_TIMEOUT} s (see {store.LOG} there)")
    record = store.read(folder)
    print(f"{record['id']}\t{folder}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    params = parameters(args.parameter)
    folder = make_job(args.path, params, args.name)
    return start(folder, foreground_asked(args))


def cmd_resume(args: argparse.Namespace) -> int:
    folder = store.find(args.id)
    record = store.read(folder)
    if record["state"] == "running":
        raise store.JobError(f"job {record['id']} is running", 2)
    if record["state"] == "done":
        raise store.JobError(f"job {record['id']} is done; `job run {record['input']}` starts a new one", 2)
    return start(folder, foreground_asked(args))


def cmd_list(args: argparse.Namespace) -> int:
    records = store.records()
    fields = ("id", "name", "state", "exit_code", "started", "ended", "folder")
    if args.json:
        print(json.dumps([{field: record.get(field) for field in (*fields, "message")} for record in records],
                         indent=2))
        return 0
    rows = [("ID", "NAME", "STATE", "EXIT", "STARTED", "ENDED")]
    rows += [(r["id"], r["name"], r["state"], "" if r.get("exit_code") is None else str(r["exit_code"]),
              r.get("started") or "", r.get("ended") or "") for r in records]
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    if not records:
        print(f"(no jobs in {store.jobs_dir()})")
    return 0


def cmd_log(args: argparse.Namespace) -> int:
    folder = store.find(args.id)
    path = os.path.join(folder, store.LOG)
    with open(path, "rb") as log:
        while True:
            chunk = log.read(65536)
            if chunk:
                sys.stdout.buffer.write(chunk)
                sys.stdout.flush()
                continue
            if not args.follow or not store.is_running(folder):
                # One last read: what the job wrote while its lock was let go.
                sys.stdout.buffer.write(log.read())
                sys.stdout.flush()
                return 0
            time.sleep(FOLLOW_POLL)


def cmd_stop(args: argparse.Namespace) -> int:
    folder = store.find(args.id)
    record = store.read(folder)
    if not store.is_running(folder):
        raise store.JobError(f"job {record['id']} is not running ({record['state']})", 2)
    os.kill(int(record["pid"]), signal.SIGINT)
    seconds = store.stop_grace() + 10
    wait_for(lambda: not store.is_running(folder), seconds, f"job {record['id']} did not stop in {seconds} s")
    record = store.read(folder)
    print(f"{record['id']}: {record['state']} (exit code {record.get('exit_code')})")
    return 0


def cmd_interrupt_all(args: argparse.Namespace) -> int:
    """The container's stop (supervise): every running job's supervisor is asked to stop (it interrupts
    its run), every kernel of the server gets an interrupt (ipykernel ignores it unless a cell runs),
    then this waits up to --wait s for the jobs to end."""
    running = [folder for folder in store.folders() if store.is_running(folder)]
    for folder in running:
        with contextlib.suppress(OSError, ValueError, KeyError):
            os.kill(int(store.read(folder)["pid"]), signal.SIGTERM)
    if args.server_pid:
        procs.signal_all(procs.kernels_of(args.server_pid), signal.SIGINT)
    deadline = time.monotonic() + args.wait
    while any(store.is_running(folder) for folder in running) and time.monotonic() < deadline:
        time.sleep(0.1)
    return 0


def build_parser() -> Parser:
    parser = Parser(prog="job", description="Run notebooks and scripts as jobs that outlive the browser, "
                    "the SSH session and the container's stop (docs/jobs.md).")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    run = commands.add_parser("run", help="start a notebook (.ipynb) or script (.py) as a job")
    run.add_argument("path")
    run.add_argument("-p", "--parameter", nargs=2, action="append", metavar=("NAME", "VALUE"),
                     help="a parameter: injected after the notebook's cell tagged `parameters`; "
                          "a script gets --NAME VALUE")
    run.add_argument("--name", help="the job's name (default: the file's name)")
    run.add_argument("--foreground", action="store_true",
                     help="run here and exit with the run's exit code (as `docker run IMAGE job run` does)")
    run.set_defaults(handler=cmd_run)
    listing = commands.add_parser("list", help="the jobs: id, name, state, exit code, times")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(handler=cmd_list)
    log = commands.add_parser("log", help="a job's output")
    log.add_argument("id")
    log.add_argument("-f", "--follow", action="store_true", help="go on printing while the job runs")
    log.set_defaults(handler=cmd_log)
    stop = commands.add_parser("stop", help="interrupt a job, then terminate it after STOP_GRACE_SECONDS")
    stop.add_argument("id")
    stop.set_defaults(handler=cmd_stop)
    resume = commands.add_parser("resume", help="run a stopped or failed job again: same input, parameters "
                                 "and checkpoint folder")
    resume.add_argument("id")
    resume.add_argument("--foreground", action="store_true")
    resume.set_defaults(handler=cmd_resume)
    # For the image's own use: the detached supervisor, a notebook's worker, the container's stop.
    hidden = commands.add_parser("_supervise")
    hidden.add_argument("folder")
    hidden.set_defaults(handler=lambda args: supervise(args.folder, foreground=False))
    worker = commands.add_parser("_notebook")
    worker.add_argument("folder")
    worker.add_argument("output")
    worker.set_defaults(handler=run_notebook)
    interrupt = commands.add_parser("_interrupt-all")
    interrupt.add_argument("--wait", type=float, default=0)
    interrupt.add_argument("--server-pid", type=int, default=0)
    interrupt.set_defaults(handler=cmd_interrupt_all)
    return parser


def run_notebook(args: argparse.Namespace) -> int:
    from tf29image.jobs import notebook_worker  # noqa: PLC0415 - imports papermill; only the worker needs it

    return notebook_worker.main(args.folder, args.output)


def main(argv: Sequence[str]) -> int:
    try:
        args = build_parser().parse_args(argv)
        return int(args.handler(args))
    except store.JobError as error:
        print(f"job: {error}", file=sys.stderr)
        return error.code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
