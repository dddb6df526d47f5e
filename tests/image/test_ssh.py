"""SSH: key-only logins as the dev user, with the container's environment; never root."""

import contextlib
import re
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import paramiko
import pytest
from docker import DockerClient
from docker.models.containers import Container

from testkit import ssh
from testkit.containers import LOOPBACK, TrackedContainer
from testkit.ssh import KeyPair


def start(
    tracked: TrackedContainer,
    key: KeyPair,
    environment: dict[str, str] | None = None,
    volumes: dict[str, dict[str, str]] | None = None,
) -> tuple[Container, int]:
    """A healthy container that takes `key`; returns it and its published SSH port."""
    container = tracked.run(environment={"SSH_AUTHORIZED_KEYS": key.public_text, **(environment or {})},
                            volumes=volumes or {})
    tracked.wait_healthy(container)
    return container, tracked.port(container, 22)


def test_key_login_as_dev_user_with_container_environment(
    tracked: TrackedContainer, keypair: KeyPair, variant: str
) -> None:
    _, port = start(tracked, keypair, environment={"JUPYTER_TOKEN": "not-for-ssh-sessions"})
    with ssh.connect(port, "jovyan", keypair) as client:
        code, out = ssh.run(client, "id -un; echo \"$PATH\"; env")
        assert code == 0
        user, path, *env = out.splitlines()
        assert user == "jovyan"
        assert path.startswith("/opt/venv/bin:")
        assert "TF_FORCE_GPU_ALLOW_GROWTH=true" in env
        assert "NVIDIA_VISIBLE_DEVICES=all" in env
        # The CUDA base sets LD_LIBRARY_PATH for the driver's libraries; plain Debian/Ubuntu does not.
        assert any(line.startswith("LD_LIBRARY_PATH=") for line in env) is (variant == "gpu")
        assert not any("not-for-ssh-sessions" in line for line in env)
        code, out = ssh.run(client, "python -c 'import tensorflow as tf; print(tf.__version__)' 2>/dev/null")
        assert (code, out.strip().splitlines()[-1]) == (0, "2.9.3")
        # Login shells run /etc/profile, which resets PATH; the venv must still come first.
        code, out = ssh.run(client, "bash -lc 'command -v python'")
        assert (code, out.strip()) == (0, "/opt/venv/bin/python")


def test_password_root_and_unknown_key_logins_refused(sshd: int, keypair: KeyPair, other_keypair: KeyPair) -> None:
    port = sshd
    with pytest.raises(paramiko.AuthenticationException):
        ssh.connect(port, "jovyan", password="jovyan")
    with pytest.raises(paramiko.AuthenticationException):
        ssh.connect(port, "root", keypair)
    with pytest.raises(paramiko.AuthenticationException):
        ssh.connect(port, "jovyan", other_keypair)
    ssh.connect(port, "jovyan", keypair).close()  # the same server does take the right key


def test_the_healthchecks_probes_leave_no_log_lines_but_a_refused_login_does(
        sshd: int, module_tracked: TrackedContainer, other_keypair: KeyPair) -> None:
    # The probe (every second here) opens and closes a connection; sshd logs two lines for each.
    container = next(c for c in module_tracked.containers if module_tracked.port(c, 22) == sshd)
    assert module_tracked.exec(container, ["healthcheck"])[0] == 0
    with pytest.raises(paramiko.AuthenticationException):
        ssh.connect(sshd, "jovyan", other_keypair)
    logs = module_tracked.wait_log(container, "Connection closed by authenticating user jovyan")
    assert "kex_exchange_identification" not in logs
    assert "Connection closed by 127.0.0.1" not in logs
    assert "\r" not in logs  # sshd -e ends its lines with CR LF


def test_keys_from_file(tracked: TrackedContainer, keypair: KeyPair, tmp_path: Path) -> None:
    keys = tmp_path / "authorized_keys"
    keys.write_text(f"# team keys\n{keypair.public_text}\n")
    container = tracked.run(environment={"SSH_AUTHORIZED_KEYS_FILE": "/run/secrets/keys"},
                            volumes={str(keys): {"bind": "/run/secrets/keys", "mode": "ro"}})
    tracked.wait_healthy(container)
    with ssh.connect(tracked.port(container, 22), "jovyan", keypair) as client:
        assert ssh.run(client, "whoami") == (0, "jovyan\n")


def test_no_key_means_no_sshd(tracked: TrackedContainer) -> None:
    container = tracked.run()
    tracked.wait_healthy(container)
    assert "SSH is off: no SSH_AUTHORIZED_KEYS" in tracked.logs(container)
    code, out = tracked.exec(container, ["ps", "-eo", "comm"])
    assert code == 0 and "sshd" not in out.split()


def test_each_container_makes_its_own_host_keys(tracked: TrackedContainer, keypair: KeyPair) -> None:
    (_, port_a), (_, port_b) = start(tracked, keypair), start(tracked, keypair)
    assert ssh.host_key(port_a) != ssh.host_key(port_b)


def test_host_keys_survive_recreation_on_a_volume(
    tracked: TrackedContainer, keypair: KeyPair, docker_client: DockerClient
) -> None:
    volume = f"tf29-env-test-hostkeys-{id(tracked)}"
    mounts = {volume: {"bind": "/etc/ssh/host-keys", "mode": "rw"}}
    first, port = start(tracked, keypair, volumes=mounts)
    before = ssh.host_key(port)
    first.remove(force=True)
    _, port = start(tracked, keypair, volumes=mounts)
    try:
        assert ssh.host_key(port) == before
    finally:
        tracked.remove_all()
        docker_client.volumes.get(volume).remove(force=True)


# Algorithms (image/ssh/sshd_config). paramiko is held to one algorithm of a kind through its
# Transport's security options (what it offers) and, for the signature an RSA user key makes,
# disabled_algorithms.
RSA_SIGNATURES = ("rsa-sha2-512", "rsa-sha2-256", "ssh-rsa")


@pytest.fixture(scope="module")
def rsa_keypair(tmp_path_factory: pytest.TempPathFactory) -> KeyPair:
    """A user's RSA key, as ssh-keygen makes it for -t rsa."""
    private = tmp_path_factory.mktemp("ssh-rsa") / "id_rsa"
    subprocess.run(["ssh-keygen", "-q", "-t", "rsa", "-N", "", "-C", "test-rsa", "-f", str(private)], check=True)
    return KeyPair(private, private.with_suffix(".pub").read_text().strip())


@pytest.fixture(scope="module")
def sshd(module_tracked: TrackedContainer, keypair: KeyPair, rsa_keypair: KeyPair) -> int:
    """The published SSH port of one container taking an ed25519 and an RSA key, for the checks that
    only log in (or are refused)."""
    return start(module_tracked, keypair, environment={
        "SSH_AUTHORIZED_KEYS": f"{keypair.public_text}\n{rsa_keypair.public_text}"})[1]


@contextlib.contextmanager
def offering(port: int, key: KeyPair, *, cipher: str = "", mac: str = "", host_key: str = "",
             rsa_signature: str = "") -> Iterator[paramiko.Transport]:
    """A paramiko login that offers only the algorithms named (the others as paramiko comes)."""
    disabled = {"pubkeys": [name for name in RSA_SIGNATURES if name != rsa_signature]} if rsa_signature else {}
    transport = paramiko.Transport(socket.create_connection((LOOPBACK, port), timeout=10),
                                   disabled_algorithms=disabled)
    try:
        options = transport.get_security_options()
        if cipher:
            options.ciphers = (cipher,)
        if mac:
            options.digests = (mac,)
        if host_key:
            options.key_types = (host_key,)
        transport.start_client(timeout=10)
        transport.auth_publickey("jovyan", paramiko.PKey.from_path(key.private))
        yield transport
    finally:
        transport.close()


def whoami(transport: paramiko.Transport) -> str:
    channel = transport.open_session(timeout=10)
    channel.exec_command("whoami")
    out = channel.makefile("rb").read().decode()
    assert channel.recv_exit_status() == 0
    return out.strip()


def openssh_login(port: int, key: KeyPair, *options: str) -> subprocess.CompletedProcess[str]:
    """`ssh ... true` with the host's OpenSSH client, leaving out its user config and agent."""
    return subprocess.run(
        ["ssh", "-F", "/dev/null", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
         "-o", "UserKnownHostsFile=/dev/null", "-o", "IdentitiesOnly=yes", "-o", "IdentityAgent=none",
         "-o", "ConnectTimeout=10", *options, "-i", str(key.private), "-p", str(port), "jovyan@127.0.0.1", "true"],
        capture_output=True, text=True, timeout=60, check=False)


def test_sha1_and_64_bit_macs_are_refused(sshd: int, keypair: KeyPair) -> None:
    port = sshd
    # A CTR cipher, since AES-GCM brings its own MAC and would make the MAC offer moot.
    with pytest.raises(paramiko.SSHException, match="no acceptable macs"), \
            offering(port, keypair, cipher="aes128-ctr", mac="hmac-sha1"):
        pass
    refused = openssh_login(port, keypair, "-o", "Ciphers=aes128-ctr", "-o", "MACs=umac-64@openssh.com")
    assert refused.returncode == 255 and "no matching MAC found" in refused.stderr, refused.stderr
    # The same client with a SHA-2 MAC gets in: what was refused is the MAC.
    with offering(port, keypair, cipher="aes128-ctr", mac="hmac-sha2-256-etm@openssh.com") as transport:
        assert whoami(transport) == "jovyan"


def test_sha1_rsa_signatures_are_refused(sshd: int, keypair: KeyPair, rsa_keypair: KeyPair) -> None:
    port = sshd
    # The server's RSA host key signing with SHA-1 (ssh-rsa): no host key algorithm in common.
    with pytest.raises(paramiko.SSHException, match="no acceptable host key"), \
            offering(port, keypair, host_key="ssh-rsa"):
        pass
    refused = openssh_login(port, keypair, "-o", "HostKeyAlgorithms=ssh-rsa")
    assert refused.returncode == 255 and "no matching host key type found" in refused.stderr, refused.stderr
    # The user's RSA key signing with SHA-1: not accepted.
    with pytest.raises(paramiko.AuthenticationException), offering(port, rsa_keypair, rsa_signature="ssh-rsa"):
        pass
    # The same RSA host key and user key with SHA-2 signatures get in.
    for algorithm in ("rsa-sha2-256", "rsa-sha2-512"):
        with offering(port, rsa_keypair, host_key=algorithm, rsa_signature=algorithm) as transport:
            assert whoami(transport) == "jovyan"


def test_modern_clients_log_in(sshd: int, keypair: KeyPair, rsa_keypair: KeyPair) -> None:
    """The host's OpenSSH client and paramiko as they come, with an ed25519 or an RSA key."""
    port = sshd
    for key in (keypair, rsa_keypair):
        done = openssh_login(port, key)
        assert done.returncode == 0, done.stderr
        with ssh.connect(port, "jovyan", key) as client:
            assert ssh.run(client, "whoami") == (0, "jovyan\n")


# Authorized keys: checked in one ssh-keygen pass over the file sshd reads (entrypoint.d/server.sh: prepare_ssh),
# after the start-up planner (startup/plan.py) bounded their size (SSH_AUTHORIZED_KEYS_FILE: 2 MiB).
KEYS_FILE_LIMIT = 2 * 1024 * 1024


def test_a_key_file_as_large_as_allowed_is_checked_in_one_pass(
    tracked: TrackedContainer, keypair: KeyPair, other_keypair: KeyPair, tmp_path: Path
) -> None:
    """One ssh-keygen per line took 38 s for 10,000 keys, with no log line."""
    lines: list[str] = []
    while sum(map(len, lines)) + 2 * len(other_keypair.public_text) < KEYS_FILE_LIMIT:
        lines.append(f"{other_keypair.public_text.rsplit(' ', 1)[0]} member{len(lines)}@team\n")
    lines.append(keypair.public_text + "\n")  # the key logged in with, last
    keys = tmp_path / "authorized_keys"
    keys.write_text("".join(lines))
    assert len(lines) > 10_000 and keys.stat().st_size <= KEYS_FILE_LIMIT
    # ssh-keygen as the entrypoint finds it on PATH, counting its runs.
    counting = tmp_path / "ssh-keygen"
    counting.write_text("#!/bin/sh\nprintf '%s\\n' \"$*\" >>/tmp/ssh-keygen.runs\nexec /usr/bin/ssh-keygen \"$@\"\n")
    counting.chmod(0o755)
    container = tracked.run(environment={"SSH_AUTHORIZED_KEYS_FILE": "/run/secrets/keys"}, volumes={
        str(keys): {"bind": "/run/secrets/keys", "mode": "ro"},
        str(counting): {"bind": "/usr/local/bin/ssh-keygen", "mode": "ro"}})
    # A deadline against a hang only (the one pass is what is checked): 56 s idle, over 120 s on a loaded engine.
    tracked.wait_healthy(container, timeout=300)
    assert f"SSH: listening on port 22 for jovyan ({len(lines)} public keys; no passwords)" in tracked.logs(container)
    code, runs = tracked.exec(container, ["cat", "/tmp/ssh-keygen.runs"])  # noqa: S108 - in the container
    assert code == 0
    assert [run for run in runs.splitlines() if "-l" in run.split()] == ["-v -l -f -"]
    with ssh.connect(tracked.port(container, 22), "jovyan", keypair) as client:
        assert ssh.run(client, "whoami") == (0, "jovyan\n")


def assert_refused_at_once(tracked: TrackedContainer, container: Container, pattern: str) -> None:
    """Exit 2 within seconds, and one line: the error."""
    assert tracked.wait_exit(container, timeout=20) == 2
    lines = tracked.logs(container).strip().splitlines()
    assert len(lines) == 1 and re.fullmatch(pattern, lines[0]), lines


@pytest.mark.parametrize(("garbage", "error"), [
    # A 1 MB single-line garbage key file took 48 s to be refused: now one ssh-keygen pass.
    (1_000_000, r"SSH_AUTHORIZED_KEYS_FILE: line 1 is not an SSH public key .*"),
    # Over the bound, it is not even read.
    (KEYS_FILE_LIMIT, rf"SSH_AUTHORIZED_KEYS_FILE=/run/secrets/keys: the file is {KEYS_FILE_LIMIT + 12} bytes; "
                      rf"at most {KEYS_FILE_LIMIT}"),
])
def test_a_garbage_key_file_is_refused_at_once(tracked: TrackedContainer, tmp_path: Path, garbage: int,
                                               error: str) -> None:
    keys = tmp_path / "keys"
    keys.write_text("ssh-ed25519 " + "A" * garbage)
    container = tracked.run(environment={"SSH_AUTHORIZED_KEYS_FILE": "/run/secrets/keys"},
                            volumes={str(keys): {"bind": "/run/secrets/keys", "mode": "ro"}})
    assert_refused_at_once(tracked, container, "tf29-env: ERROR: " + error)


def test_keys_that_are_all_comments_are_refused(tracked: TrackedContainer, tmp_path: Path) -> None:
    """sshd would start and let nobody in."""
    keys = tmp_path / "keys"
    keys.write_text("# team keys\n\n# alice: see the wiki\n")
    container = tracked.run(environment={"SSH_AUTHORIZED_KEYS_FILE": "/run/secrets/keys"},
                            volumes={str(keys): {"bind": "/run/secrets/keys", "mode": "ro"}})
    assert_refused_at_once(tracked, container, "tf29-env: ERROR: SSH_AUTHORIZED_KEYS_FILE: no SSH public key in "
                                               "it, only comments and blank lines")
