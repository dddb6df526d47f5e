"""Polling with a deadline, for things that become true (a port answers, a container is healthy)."""

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(
    probe: Callable[[], T | None],
    *,
    timeout: float,
    interval: float = 0.25,
    what: str = "condition",
) -> T:
    """Call probe until it returns something truthy (returned) or raises nothing past the deadline.

    Exceptions from probe count as "not yet"; the last one is chained when the deadline passes.
    """
    deadline = time.monotonic() + timeout
    last_error: Exception | None = None
    while True:
        try:
            result = probe()
            if result:
                return result
        except Exception as exc:  # noqa: BLE001 - "not ready yet" takes many shapes
            last_error = exc
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not reached within {timeout:.0f}s (last error: {last_error!r})") from last_error
        time.sleep(interval)
