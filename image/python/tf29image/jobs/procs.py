"""The process table, from /proc: a job's processes and the server's kernels, to signal them."""

from __future__ import annotations

import contextlib
import os

KERNEL_MARK = b"ipykernel_launcher"


def children() -> dict[int, list[int]]:
    found: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as stat:
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        found.setdefault(parent, []).append(int(entry))
    return found


def descendants(pid: int) -> list[int]:
    """PID's children, their children, ...: a notebook's kernel runs in a session of its own."""
    table, found, todo = children(), [], [pid]
    while todo:
        for child in table.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def kernels_of(server_pid: int) -> list[int]:
    """The Jupyter server's kernels (its children that run ipykernel), not its terminals."""
    found = []
    for pid in children().get(server_pid, []):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
                if KERNEL_MARK in cmdline.read():
                    found.append(pid)
        except OSError:
            continue
    return found


def signal_all(pids: list[int], signum: int) -> None:
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signum)
