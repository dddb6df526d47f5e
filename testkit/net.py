"""Free TCP ports on 127.0.0.1, for publishing container ports and running servers on loopback.

They come from below the kernel's ephemeral range, where outgoing connections, port-0 binds and
Docker's own random host ports never land, so nothing takes them by chance between the check and
the engine's bind; each pytest-xdist worker draws from a slice of its own, and a process never hands
out the same port twice. Where the ephemeral range leaves no room below it, a port-0 bind is used."""

import itertools
import os
import random
import socket
from collections.abc import Iterator
from pathlib import Path

LOOPBACK = "127.0.0.1"
# Below this, ports are well-known or registered services' habits; the slices start here.
FIRST = 20000
MIN_ROOM = 2000


def ephemeral_low() -> int:
    return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])


def worker_slice(low: int, worker: str, count: int) -> range:
    """This worker's ports in [FIRST, low): gw0 the first of COUNT equal slices, gw1 the next, ..."""
    index = int(worker.removeprefix("gw")) if worker.startswith("gw") and worker[2:].isdigit() else 0
    size = (low - FIRST) // max(count, 1)
    return range(FIRST + index * size, FIRST + (index + 1) * size)


def bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((LOOPBACK, port))
        except OSError:
            return False
        return True


def _candidates() -> Iterator[int]:
    low = ephemeral_low()
    if low - FIRST < MIN_ROOM:
        while True:
            yield 0
    ports = worker_slice(low, os.environ.get("PYTEST_XDIST_WORKER", "gw0"),
                         int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
    # A random start: two processes outside xdist (a test run and a bench) rarely meet.
    start = random.randrange(len(ports))  # noqa: S311 - spreading, not secrecy
    yield from (ports[(start + step) % len(ports)] for step in itertools.count())


_next = _candidates()


def free_host_port() -> int:
    """A port that can be bound on 127.0.0.1 now, not handed out before by this process."""
    for _ in range(10_000):
        port = next(_next)
        if port == 0:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
                sock.bind((LOOPBACK, 0))
                return int(sock.getsockname()[1])
        if bindable(port):
            return port
    raise AssertionError("no free port on 127.0.0.1 below the ephemeral range")


def free_port_range(count: int) -> range:
    """COUNT consecutive ports that can all be bound now (a hub's SSH port range)."""
    for _ in range(1000):
        first = free_host_port()
        if all(bindable(port) for port in range(first + 1, first + count)):
            for _ in range(count - 1):
                free_host_port()  # the process hands none of them out again soon
            return range(first, first + count)
    raise AssertionError(f"no {count} consecutive free ports on 127.0.0.1")
