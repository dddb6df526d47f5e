"""The two outputs: the banner (one line per check, for `docker logs`) and the JSON report
(schema tf29-env/selfcheck/v1, see report.schema.json and docs/selfcheck.md)."""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import platform
import socket
import tempfile
from typing import Any

from tf29image.selfcheck import SCHEMA_ID, __version__
from tf29image.selfcheck.model import STATUSES, LayerResult

PREFIX = "selfcheck:"


def banner_lines(result: LayerResult) -> list[str]:
    lines = []
    for check in result.checks:
        line = f"{PREFIX} [{result.layer} {result.name}] {check.status} {check.id}: {check.what}"
        if check.fix:
            line += f" -> fix: {check.fix}"
        lines.append(line)
    return lines


def counts(layers: list[LayerResult]) -> dict[str, int]:
    totals = {status.lower(): 0 for status in STATUSES}
    for layer in layers:
        for check in layer.checks:
            totals[check.status.lower()] += 1
    return totals


def build(layers: list[LayerResult], mode: str, started: datetime.datetime, seconds: float, time_limit: float,
          gpu_visible: bool, exit_code: int) -> dict[str, Any]:
    return {
        "schema": SCHEMA_ID,
        "tool_version": __version__,
        "mode": mode,
        "started_at": started.isoformat(timespec="seconds"),
        "seconds": round(seconds, 3),
        "time_limit": time_limit,
        "host": {"hostname": socket.gethostname(), "python": platform.python_version(), "uid": os.getuid()},
        "gpu_visible": gpu_visible,
        "summary": counts(layers),
        "exit_code": exit_code,
        "layers": [layer.to_json() for layer in layers],
    }


def hand_to_dev_user(path: str) -> None:
    """A report written by root (`docker exec tf selfcheck`) goes to the dev user: in the sticky run
    directory only a file's owner may replace it, and the dev user reruns the check too."""
    if os.getuid() != 0:
        return
    try:
        uid, gid = int(os.environ["NB_UID"]), int(os.environ.get("NB_GID", "100"))
    except (KeyError, ValueError):
        return
    with contextlib.suppress(OSError):
        os.chown(path, uid, gid)


def write(report: dict[str, Any], path: str) -> str | None:
    """Write atomically (readers never see half a file); the error in one line, or None."""
    directory = os.path.dirname(path) or "."
    scratch = ""
    try:
        fd, scratch = tempfile.mkstemp(prefix=".selfcheck-", suffix=".json", dir=directory)
        with os.fdopen(fd, "w") as handle:
            json.dump(report, handle, indent=2)
            handle.write("\n")
        os.chmod(scratch, 0o644)
        hand_to_dev_user(scratch)
        os.replace(scratch, path)
    except OSError as exc:
        if scratch:
            with contextlib.suppress(OSError):
                os.unlink(scratch)
        return f"{path}: {exc.strerror or exc}"
    return None
