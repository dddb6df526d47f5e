"""SSH keys and clients for the image tests (paramiko, the real protocol)."""

import subprocess
from dataclasses import dataclass
from pathlib import Path

import paramiko

from testkit.containers import LOOPBACK


@dataclass(frozen=True)
class KeyPair:
    private: Path
    public_text: str


def make_keypair(directory: Path, name: str = "id_ed25519") -> KeyPair:
    """A fresh ed25519 key made by the host's ssh-keygen, as a user would make one."""
    private = directory / name
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"test-{name}", "-f", str(private)],
                   check=True)
    return KeyPair(private, (directory / f"{name}.pub").read_text().strip())


def connect(port: int, user: str, key: KeyPair | None = None, password: str | None = None) -> paramiko.SSHClient:
    """Log in on 127.0.0.1:port with exactly one method (no agent, no key files looked up)."""
    client = paramiko.SSHClient()
    client.set_missing_host_key_policy(paramiko.AutoAddPolicy())  # noqa: S507 - a fresh test container
    try:
        client.connect(
            LOOPBACK, port=port, username=user,
            key_filename=str(key.private) if key else None, password=password,
            allow_agent=False, look_for_keys=False, timeout=10, banner_timeout=10, auth_timeout=10,
        )
    except BaseException:
        client.close()  # a refused login's connection would hold one of sshd's MaxStartups slots until collected
        raise
    return client


def run(client: paramiko.SSHClient, command: str, timeout: float = 120) -> tuple[int, str]:
    """Run a command over SSH; return its exit status and stdout+stderr."""
    _, stdout, stderr = client.exec_command(command, timeout=timeout)
    out = stdout.read().decode() + stderr.read().decode()
    return stdout.channel.recv_exit_status(), out


def run_as(port: int, user: str, key: KeyPair, command: str) -> tuple[int, str]:
    """Log in with KEY, run one command, log out: (exit status, its output)."""
    client = connect(port, user, key)
    try:
        return run(client, command)
    finally:
        client.close()


def host_key(port: int) -> str:
    """The server's host key fingerprint as a client sees it on connect (no login needed)."""
    transport = paramiko.Transport((LOOPBACK, port))
    try:
        transport.start_client(timeout=10)
        return transport.get_remote_server_key().get_fingerprint().hex()
    finally:
        transport.close()
