"""SSH under load: many logins at once, and connections that never log in (a port scanner, a flaky
network). Logins must get through and the container must stay healthy, so that nobody's restart
policy or orchestrator ends everyone's kernels over them (image/ssh/sshd_config: MaxStartups,
LoginGraceTime; image/python/tf29image/healthcheck.py: busy is not broken)."""

import contextlib
import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import paramiko
from docker.models.containers import Container

from testkit import ssh
from testkit.containers import LOOPBACK, SHIPPED_HEALTH, TrackedContainer
from testkit.ssh import KeyPair
from testkit.wait import wait_until

# sshd_config's MaxStartups 128:30:256 and LoginGraceTime 30, as the tests below lean on them.
START, FULL = 128, 256
LOGIN_GRACE_S = 30


def start(tracked: TrackedContainer, key: KeyPair) -> tuple[Container, int]:
    # The image's own health interval: these tests are about its probes under load, as shipped.
    container = tracked.run(environment={"SSH_AUTHORIZED_KEYS": key.public_text}, healthcheck=SHIPPED_HEALTH)
    tracked.wait_healthy(container, timeout=90)
    return container, tracked.port(container, 22)


def login(port: int, key: KeyPair, sock: socket.socket | None = None) -> str:
    """One whole login (on `sock` when given, a connection already made): authenticate, run a command."""
    if sock is None:
        client = ssh.connect(port, "jovyan", key)
    else:
        client = paramiko.SSHClient()
        client.set_missing_host_key_policy(paramiko.AutoAddPolicy())  # noqa: S507 - a fresh test container
        client.connect(LOOPBACK, port=port, username="jovyan", key_filename=str(key.private), sock=sock,
                       allow_agent=False, look_for_keys=False, timeout=60, banner_timeout=60, auth_timeout=60)
    with client:
        code, out = ssh.run(client, "echo logged-in", timeout=60)
    assert code == 0
    return out.strip()


@contextlib.contextmanager
def idle_connections(port: int, count: int) -> Iterator[list[socket.socket]]:
    """`count` TCP connections to the port that never say anything, held open until the block ends."""
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sockets.append(socket.create_connection((LOOPBACK, port), timeout=10))
        yield sockets
    finally:
        for sock in sockets:
            sock.close()


class HealthLog:
    """The health probes Docker ran since this was made (it keeps only the last five: poll often)."""

    def __init__(self, tracked: TrackedContainer, container: Container) -> None:
        self.tracked, self.container = tracked, container
        self.seen = {entry["Start"] for entry in self.entries()}
        self.new: list[dict[str, object]] = []

    def entries(self) -> list[dict[str, object]]:
        self.container.reload()
        return list(self.container.attrs["State"].get("Health", {}).get("Log") or [])

    def poll(self) -> list[dict[str, object]]:
        for entry in self.entries():
            if entry["Start"] not in self.seen and entry.get("End"):
                self.seen.add(entry["Start"])
                self.new.append(entry)
        return self.new


def test_twenty_logins_at_once_all_succeed(tracked: TrackedContainer, keypair: KeyPair) -> None:
    """sshd's default MaxStartups (10:30:100) dropped 3-4 of 20 simultaneous logins."""
    _, port = start(tracked, keypair)
    count = 20
    # All 20 connect first, so that sshd holds 20 logins in progress at once (as when editors open
    # their windows together) however the threads below happen to be scheduled on a busy machine.
    with idle_connections(port, count) as sockets, ThreadPoolExecutor(max_workers=count) as pool:
        futures = [pool.submit(login, port, keypair, sock) for sock in sockets]
        outcomes = []
        for future in futures:
            try:
                outcomes.append(future.result(timeout=180))
            except Exception as exc:  # noqa: BLE001 - every failure is listed, not just the first
                outcomes.append(repr(exc))
    assert outcomes == ["logged-in"] * count


def test_idle_connections_neither_block_logins_nor_fail_the_healthcheck(
    tracked: TrackedContainer, keypair: KeyPair
) -> None:
    """With sshd's defaults, 100 idle connections made the probe read "Exceeded MaxStartups" and the
    container unhealthy within ~20 s; 15 of them already failed 2 of 5 logins."""
    container, port = start(tracked, keypair)
    health = HealthLog(tracked, container)
    with idle_connections(port, 100):
        started = time.monotonic()
        assert wait_until(lambda: login(port, keypair), timeout=20, what="a login past 100 idle connections")
        # Three health probes in a row, the number that turns a container unhealthy, all pass.
        probes = wait_until(lambda: health.poll() if len(health.poll()) >= 3 else None, timeout=LOGIN_GRACE_S - 5,
                            interval=1, what="three health probes while the connections are held")
        assert time.monotonic() - started < LOGIN_GRACE_S  # sshd had not closed them yet
    assert [(p["ExitCode"], str(p["Output"]).split(";")[-1].strip()) for p in probes] == [
        (0, "ssh ok (port 22)")] * len(probes)
    assert tracked.health(container) == "healthy"


def test_a_saturated_sshd_is_busy_not_unhealthy_and_frees_itself(
    tracked: TrackedContainer, keypair: KeyPair
) -> None:
    """Idle connections up to MaxStartups' full: new connections are refused ("Exceeded MaxStartups")
    and the healthcheck says busy, staying healthy; after LoginGraceTime sshd closes the idle ones
    (the client still holds them) and logins get through again."""
    container, port = start(tracked, keypair)
    health = HealthLog(tracked, container)
    held: list[socket.socket] = []
    try:
        opened_at = time.monotonic()
        refused = 0
        # sshd drops more and more of them above START: keep the ones it greets, up to FULL.
        for _ in range(6 * FULL):
            if len(held) == FULL:
                break
            sock = socket.create_connection((LOOPBACK, port), timeout=10)
            sock.settimeout(10)
            first = sock.recv(64)
            if first.startswith(b"SSH-2.0-"):
                held.append(sock)
            else:
                assert first in (b"", b"Exceeded MaxStartups\r\n"), first
                refused += 1
                sock.close()
        assert len(held) == FULL and refused > 0, (len(held), refused)
        assert time.monotonic() - opened_at < LOGIN_GRACE_S - 10, "too slow to fill sshd before LoginGraceTime"

        # Full: sshd refuses every new connection, logins included; the probe says busy.
        with socket.create_connection((LOOPBACK, port), timeout=10) as extra:
            extra.settimeout(10)
            assert extra.recv(64) == b"Exceeded MaxStartups\r\n"
        busy = wait_until(
            lambda: [p for p in health.poll() if "ssh busy" in str(p["Output"])],
            timeout=LOGIN_GRACE_S, interval=1, what="a health probe that finds sshd busy")
        assert busy[0]["ExitCode"] == 0, busy[0]

        # LoginGraceTime later sshd has closed them, though this client never did: logins work again.
        wait_until(lambda: login(port, keypair), timeout=LOGIN_GRACE_S + 30, interval=2,
                   what="a login once LoginGraceTime has passed")
        assert time.monotonic() - opened_at >= LOGIN_GRACE_S - 5
        assert all(sock.recv(64) == b"" for sock in held[:5])  # closed by sshd, not by us
    finally:
        for sock in held:
            sock.close()
    assert [p["ExitCode"] for p in health.poll()] == [0] * len(health.new)
    assert tracked.health(container) == "healthy"
