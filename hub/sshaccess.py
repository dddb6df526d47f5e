"""Per-user SSH for the hub's servers: the user's public keys (kept in the state folder and
mounted read-only as SSH_AUTHORIZED_KEYS_FILE) and a host port that stays the user's for good.
Standard library only; the spawner calls it, the tests import it."""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
from pathlib import Path

# The key types the image's sshd accepts (README: ed25519, ECDSA, FIDO, RSA with SHA-2).
_KEY_LINE = re.compile(
    r"(?:\S+\s+)?"  # options, e.g. from="10.0.0.0/8" (no spaces inside, which is the common case)
    r"(ssh-ed25519|ecdsa-sha2-nistp(?:256|384|521)|sk-ssh-ed25519@openssh\.com"
    r"|sk-ecdsa-sha2-nistp256@openssh\.com|ssh-rsa)\s+[A-Za-z0-9+/]+={0,2}(?:\s.*)?"
)
MAX_KEYS_BYTES = 64 * 1024  # the image takes at most 64 KiB of key text in a variable
KEYS_FILE_NAME = "authorized_keys"


class SshSetupError(Exception):
    """Something the user or the admin must fix; shown on the spawn page as one line."""


def check_keys(text: str) -> str:
    """The keys as they will be stored (CRLF undone, a final newline), or SshSetupError."""
    if len(text.encode()) > MAX_KEYS_BYTES:
        raise SshSetupError(f"the SSH keys are longer than {MAX_KEYS_BYTES // 1024} KiB")
    lines = [line.strip() for line in text.replace("\r\n", "\n").split("\n")]
    keys = [line for line in lines if line and not line.startswith("#")]
    if not keys:
        raise SshSetupError("no SSH public key given (paste the one line of your id_ed25519.pub)")
    for number, line in enumerate(keys, 1):
        if not _KEY_LINE.fullmatch(line):
            raise SshSetupError(f"SSH key {number} is not a public key line (ssh-ed25519 AAAA... comment); "
                                "paste the .pub file, never the private key")
    return "\n".join(keys) + "\n"


def keys_file(users_dir: Path, escaped_name: str) -> Path:
    return users_dir / escaped_name / KEYS_FILE_NAME


def store_keys(users_dir: Path, escaped_name: str, text: str) -> Path:
    """Write the checked keys (replacing the user's earlier ones) with mode 644 inside a 700 tree:
    only root reads them here; the container's entrypoint reads them as root too."""
    path = keys_file(users_dir, escaped_name)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    scratch = path.with_suffix(".new")
    scratch.write_text(check_keys(text))
    scratch.chmod(0o644)
    scratch.replace(path)
    return path


def port_free(address: str, port: int) -> bool:
    """Whether a listener could bind ADDRESS:PORT now (the hub's own ports and users' SSH ports)."""
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((address, port))
        except OSError:
            return False
    return True


def _table(ports_file: Path) -> dict[str, int]:
    with contextlib.suppress(FileNotFoundError):
        loaded = json.loads(ports_file.read_text())
        if isinstance(loaded, dict):
            return {str(name): int(port) for name, port in loaded.items()}
    return {}


def recorded_port(ports_file: Path, user: str) -> int | None:
    """USER's SSH port if they have one (nothing is allocated)."""
    return _table(ports_file).get(user)


def assigned_port(ports_file: Path, user: str, ports: range, address: str) -> int:
    """USER's SSH port: the one recorded for them, else the lowest port of PORTS that no other
    user holds and nothing on this host listens on, recorded at once (mode 600). A user keeps the
    port across stops, restarts of the hub and changes of the range, so known_hosts entries and
    ~/.ssh/config lines stay right; an admin frees one by deleting its line."""
    table = _table(ports_file)
    if user in table:
        return table[user]
    taken = set(table.values())
    port = next((p for p in ports if p not in taken and port_free(address, p)), None)
    if port is None:
        raise SshSetupError(f"no free SSH port left in HUB_SSH_PORTS={ports.start}-{ports.stop - 1}: "
                            "ask the admin to widen it")
    table[user] = port
    scratch = ports_file.with_suffix(".new")
    fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(table, out, indent=1, sort_keys=True)
    scratch.replace(ports_file)
    return port
