"""testkit.net: each pytest-xdist worker draws ports from its own slice below the ephemeral range,
and one process never hands out the same port twice."""

import pytest

from testkit import net


@pytest.mark.parametrize(("worker", "count", "expected"), [
    ("gw0", 1, range(20000, 32768)),
    ("gw0", 2, range(20000, 26384)),
    ("gw1", 2, range(26384, 32768)),
    ("master", 2, range(20000, 26384)),  # not a worker: the first slice
])
def test_worker_slices_do_not_overlap(worker: str, count: int, expected: range) -> None:
    assert net.worker_slice(32768, worker, count) == expected


def test_ports_are_below_the_ephemeral_range_and_not_repeated() -> None:
    ports = [net.free_host_port() for _ in range(50)]
    assert len(set(ports)) == len(ports)
    if net.ephemeral_low() - net.FIRST >= net.MIN_ROOM:
        assert all(net.FIRST <= port < net.ephemeral_low() for port in ports), ports


def test_a_range_is_consecutive_and_bindable() -> None:
    ports = net.free_port_range(5)
    assert len(ports) == 5 and all(net.bindable(port) for port in ports)
    assert not set(ports) & {net.free_host_port() for _ in range(5)}
