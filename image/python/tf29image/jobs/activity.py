"""Activity Jupyter cannot see. The server's last_activity (`/api/status`, and what jupyterhub-singleuser
reports to the hub, whose idle culler reads it) moves only with requests and kernel messages: a job,
a script started over SSH, or a cell training with verbose=0 sends none, and the culler would stop
the server under it. While a job runs or a kernel is busy, this marks the server active."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from tf29image.jobs import store

SETTING = "tf29_runs_last_activity"  # Jupyter Server counts every setting named *_last_activity
INTERVAL_MS = 10_000


def busy_kernels(kernel_manager: Any) -> int:
    return sum(1 for kernel_id in kernel_manager.list_kernel_ids()
               if getattr(kernel_manager.get_kernel(kernel_id), "execution_state", "") == "busy")


def beat(settings: dict[str, Any]) -> None:
    if busy_kernels(settings["kernel_manager"]) or store.any_running():
        settings[SETTING] = datetime.now(timezone.utc)


def watch(settings: dict[str, Any]) -> None:
    from tornado.ioloop import PeriodicCallback  # noqa: PLC0415 - the server's, only in the server

    PeriodicCallback(lambda: beat(settings), INTERVAL_MS).start()
