"""What the start-up plan reads beyond the environment: the image's users and groups, files, /proc, the
mount table and the self-check (System; unit tests pass a fake), and the mount table as read once (Mounts).
Standard library only, run by the distro's python3 -I (3.8 or newer).
"""

import grp
import os
import pwd
import secrets
import shutil
import socket
import subprocess
from dataclasses import dataclass
from typing import List, Optional, Tuple  # python 3.8: no list[...]

from tf29image.startup import apptainer, tls
from tf29image.startup.userstate import MOUNTINFO, read_mounts

SELFCHECK = "/opt/tf29-env/bin/selfcheck"
UNPRIVILEGED_PORT_START = "/proc/sys/net/ipv4/ip_unprivileged_port_start"
STATUS = "/proc/self/status"


class System:
    """What the plan reads beyond the environment: the image's users and groups, files, /proc and
    the self-check. Unit tests pass a fake."""

    def group_name(self, gid: int) -> Optional[str]:
        try:
            return grp.getgrgid(gid).gr_name
        except KeyError:
            return None

    def user_uid(self, name: str) -> Optional[int]:
        try:
            return pwd.getpwnam(name).pw_uid
        except KeyError:
            return None

    def file_size(self, path: str) -> Optional[int]:
        """The size of a regular file (links followed), or None."""
        return os.stat(path).st_size if os.path.isfile(path) else None

    def read_file(self, path: str) -> Optional[str]:
        """A readable regular file's contents, or None."""
        if not (os.path.isfile(path) and os.access(path, os.R_OK)):
            return None
        with open(path, encoding="utf-8", errors="surrogateescape") as file:
            return file.read()

    def has_command(self, name: str) -> bool:
        return shutil.which(name) is not None

    def unprivileged_port_start(self) -> Optional[int]:
        text = self.read_file(UNPRIVILEGED_PORT_START)
        return int(text.split()[0]) if text and text.split() and text.split()[0].isdigit() else None

    def self_check_mode(self) -> Tuple[int, str]:
        """The self-check's exit status and its last line (the mode, or why there is none)."""
        done = subprocess.run([SELFCHECK, "--start-mode"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              check=False)
        lines = done.stdout.decode("utf-8", "replace").rstrip("\n").split("\n")
        return done.returncode, lines[-1]

    def new_token(self) -> str:
        return secrets.token_hex(24)

    def check_public_keys(self, keys: str) -> Tuple[int, str]:
        """ssh-keygen's exit status and messages for KEYS: one run over all of them (one per line is far
        too slow), read from stdin (given a file whose first line says PRIVATE KEY it reads a private key)."""
        try:
            done = subprocess.run(["ssh-keygen", "-v", "-l", "-f", "-"], input=keys.encode("utf-8", "surrogateescape"),
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
        except FileNotFoundError:  # a base image without openssh-client: one line, not a traceback
            return 127, "ssh-keygen is not installed (openssh-client)"
        return done.returncode, done.stderr.decode("utf-8", "replace")

    def writable(self, path: str) -> bool:
        """As the shell's -w: with the effective ids and capabilities."""
        return os.access(path, os.W_OK, effective_ids=os.access in os.supports_effective_ids)

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(path)

    def entries(self, path: str) -> List[str]:
        """A folder's entry names, sorted; none for what is not a readable folder."""
        try:
            return sorted(os.listdir(path))
        except OSError:
            return []

    def lexists(self, path: str) -> bool:
        return os.path.lexists(path)

    def user_ids(self, name: str) -> Tuple[int, int]:
        entry = pwd.getpwnam(name)
        return entry.pw_uid, entry.pw_gid

    def user_home(self, name: str) -> str:
        return pwd.getpwnam(name).pw_dir

    def user_name(self, uid: int) -> Optional[str]:
        try:
            return pwd.getpwuid(uid).pw_name
        except KeyError:
            return None

    def group_gid(self, name: str) -> Optional[int]:
        try:
            return grp.getgrnam(name).gr_gid
        except KeyError:
            return None

    def group_members(self, name: str) -> Tuple[int, List[str]]:
        """A group's gid and listed members; (0, []) when there is no such group."""
        try:
            entry = grp.getgrnam(name)
        except KeyError:
            return 0, []
        return entry.gr_gid, list(entry.gr_mem)

    def effective_capabilities(self) -> int:
        for line in (self.read_file(STATUS) or "").splitlines():
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
        return 0

    def port_free(self, port: int) -> bool:
        return apptainer.port_free(port)

    def host_name(self) -> str:
        return socket.gethostname()

    def certificate_problem(self, cert: str, key: str) -> str:
        """Why the key is not the certificate's, or the certificate has expired (tls.py); "" when neither."""
        return tls.problem(cert, key)

    def owner_and_mode(self, path: str) -> str:
        """As `stat -c 'owner %u:%g, mode %a'` says it, or "missing"."""
        try:
            info = os.stat(path)
        except OSError:
            return "missing"
        return f"owner {info.st_uid}:{info.st_gid}, mode {info.st_mode & 0o7777:o}"


@dataclass(frozen=True)
class Mounts:
    """The mount table, read once: (mount point, options) in mountinfo's order (for one point the later is
    on top)."""

    table: Tuple[Tuple[str, str], ...]

    @classmethod
    def read(cls, system: System) -> "Mounts":
        return cls(tuple((mount.point, mount.options) for mount in read_mounts(system.read_file(MOUNTINFO) or "")))

    def read_only(self, path: str) -> bool:
        """PATH lies on a file system mounted read-only: the mount on top whose point is the longest prefix decides."""
        options, best = "", -1
        for point, found in self.table:
            if (path == point or path.startswith(point.rstrip("/") + "/")) and len(point) >= best:
                options, best = found, len(point)
        return "ro" in options.split(",")

    def why_not_writable(self, path: str, euid: int, system: System) -> str:
        if self.read_only(path):
            return " (read-only file system)"
        return f" for uid {euid} ({system.owner_and_mode(path)})"
