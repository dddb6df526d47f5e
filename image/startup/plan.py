"""The start-up plan: every setting the entrypoint reads, checked once, before anything starts.

The entrypoint runs this first (10-config: load_config) with its own PID and the container's command
as the arguments. It prints the plan as shell assignments (each value quoted with shlex.quote, argument
lists as arrays), which the entrypoint reads with one eval; or one line `tf29-env: ERROR: ...`
on stderr and exit 2. WARNING lines for settings that are ignored go to stderr once the plan holds.
What must be tried to be known (a folder that can be made, a writable path) stays with the shell.

Standard library only, run by the distro's python3 -I (3.8 or newer).
"""

import grp
import os
import pwd
import re
import secrets
import shlex
import shutil
import socket
import subprocess
import sys
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union  # python 3.8: no list[...]

from dockerstacks import notebook_args

# The healthcheck reads sshd's configuration; its folder is a sibling of this one (as start_command.py imports it).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "healthchecks"))
from healthcheck import SERVICES, SSHD_CONFIG, per_run_path, sshd_path
from jobs.store import STOP_GRACE_DEFAULT, STOP_GRACE_MAX

from startup import apptainer, environ, users
from startup.userstate import MOUNTINFO, read_mounts

USAGE = 2
PREFIX = "tf29-env: "

# The longest value each variable may have, in the order they are checked. Each is far above any
# real value: a runaway one (a 70 KB base URL, a file pasted into a variable) passes the other
# checks and fails later and obscurely ("Argument list too long" at exec), or makes the error line
# quote all of itself. Checked first, so that no later message quotes such a value.
SETTING_LIMITS: Tuple[Tuple[str, int], ...] = (
    ("NB_USER", 32), ("NB_UID", 10), ("NB_GID", 10),
    ("NB_GROUP", 32), ("NB_UMASK", 16), ("GRANT_SUDO", 16), ("CHOWN_HOME", 16), ("CHOWN_HOME_OPTS", 1024),
    ("CHOWN_EXTRA", 4096), ("CHOWN_EXTRA_OPTS", 1024),
    ("ENABLE_JUPYTER", 16), ("ENABLE_SSH", 16), ("JUPYTER_INSECURE_NO_AUTH", 16), ("SELF_CHECK", 16),
    ("JUPYTER_PORT", 16), ("SSH_PORT", 16), ("JUPYTER_BASE_URL", 1024), ("JUPYTER_ALLOWED_HOSTS", 4096),
    ("JUPYTER_TOKEN", 1024), ("JUPYTER_TOKEN_FILE", 1024), ("JUPYTER_PASSWORD_HASH", 1024),
    ("SSH_AUTHORIZED_KEYS", 65536), ("SSH_AUTHORIZED_KEYS_FILE", 1024), ("SSH_HOST_KEY_DIR", 1024),
    ("JUPYTER_RUNTIME_DIR", 1024), ("TFENV_RUN_DIR", 1024),
    ("JUPYTERHUB_SERVICE_URL", 2048), ("JUPYTERHUB_SERVICE_PREFIX", 1024),
    ("DOCKER_STACKS_JUPYTER_CMD", 16), ("NOTEBOOK_ARGS", 4096), ("JUPYTER_ENV_VARS_TO_UNSET", 4096), ("GEN_CERT", 16),
    ("STOP_GRACE_SECONDS", 16), ("KERNEL_IDLE_TIMEOUT", 16),
)
# The largest file each *_FILE variable may name, in bytes, checked before it is read: a wrong file
# (a log, an archive) is refused instead of read into memory and the environment. 2 MiB of keys is
# a large team's file (10,000 ed25519 keys are about 1 MB).
FILE_LIMITS = {"JUPYTER_TOKEN_FILE": 4096, "SSH_AUTHORIZED_KEYS_FILE": 2097152}
# Needed by the entrypoint or the services themselves: unsetting them breaks the start, not a leak.
KEEP_SET = ("PATH", "HOME", "TFENV_RUN_DIR", "JUPYTER_RUNTIME_DIR")
# Where an earlier start of this container recorded the name it renamed the dev user to (20-user).
RENAMED_USER_FILE = "/etc/tf29-env/dev-user"
SELFCHECK = "/opt/tf29-env/bin/selfcheck"
UNPRIVILEGED_PORT_START = "/proc/sys/net/ipv4/ip_unprivileged_port_start"
STATUS = "/proc/self/status"
# The container's IPv6 addresses: its loopback ::1 is there exactly when IPv6 is on (switching it off
# takes every IPv6 address away). Docker turns IPv6 on for an IPv6 network, Kubernetes on a
# dual-stack cluster; elsewhere it is off, the normal case and no warning's worth.
IF_INET6 = "/proc/net/if_inet6"
IPV6_LOOPBACK = "00000000000000000000000000000001 "
# sshd's run directory, as ssh/sshd_config names it (its PidFile's folder), and the files in it that
# 40-ssh writes: the keys (AuthorizedKeysFile) and the environment's SetEnv line (Include).
SSHD_DIR = str(sshd_path("PidFile").parent)
SSHD_KEYS_FILE, SSHD_ENV_FILE = str(sshd_path("AuthorizedKeysFile")), str(sshd_path("Include"))
# The capabilities some step needs, with their bits in /proc/PID/status (linux/capability.h).
CAP_BITS = {"CHOWN": 0, "DAC_OVERRIDE": 1, "DAC_READ_SEARCH": 2, "FOWNER": 3, "KILL": 5, "SETGID": 6, "SETUID": 7,
            "NET_BIND_SERVICE": 10, "SYS_CHROOT": 18, "AUDIT_WRITE": 29}
HOST_KEY_TYPES = ("ed25519", "rsa")
ROOT_HOME = "/home/root"  # the root triplet's: passwd's /root is not the dev user's kind of home
SCRATCH = "/tmp"  # noqa: S108 - checked, not written
# KERNEL_IDLE_TIMEOUT's most: a week. The culler looks at half the timeout, at most every 5 minutes, so an
# idle kernel goes within 1.5 times it.
KERNEL_IDLE_MAX = 604800
CULL_INTERVAL_MAX = 300

# The container's commands that name a mode (docker-stacks' start commands, as dockerstacks/start_command.py
# links them, and the hub's): a path counts by its name.
HUB_COMMANDS = ("jupyterhub-singleuser", "start-singleuser.sh", "start-singleuser.py")
NOTEBOOK_COMMANDS = ("start-notebook.sh", "start-notebook.py")
COMMAND_WRAPPER = "start.sh"
# The server options that name the folder it serves (and its terminals start in).
ROOT_DIR_OPTIONS = ("--ServerApp.root_dir", "--ServerApp.notebook_dir", "--NotebookApp.notebook_dir", "--notebook-dir")

LOGIN_HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
SERVER_AUTH_ARG = re.compile(r"--?[A-Za-z]*\.?(token|password|hashed_password)(=|$)")
PASSWORD_HASH = re.compile(r"(argon2:\$argon2(id|i|d)\$|sha1:|sha256:)\S+")
HUB_URL = re.compile(r"(https?)://([A-Za-z0-9._-]*|\[[0-9A-Fa-f:.]+\])(:([0-9]{1,5}))?(/\S*)?")
BASE_URL = re.compile(r"/[A-Za-z0-9._~/-]*")
ADDRESS = re.compile(r"[0-9.]+|\[?[0-9a-f:.]*:[0-9a-f:.]*\]?")
HOST_NAME = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*")
LIST_SEPARATORS = re.compile(r"[, \t\n]+")

Value = Union[str, List[str]]


class Refused(Exception):
    """A setting that cannot be used; str() is the one line that says why."""


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

    def owner_and_mode(self, path: str) -> str:
        """As `stat -c 'owner %u:%g, mode %a'` says it, or "missing"."""
        try:
            info = os.stat(path)
        except OSError:
            return "missing"
        return f"owner {info.st_uid}:{info.st_gid}, mode {info.st_mode & 0o7777:o}"


def switch(env: Mapping[str, str], name: str, default: str) -> bool:
    value = env.get(name) or default
    if value.lower() in ("1", "true", "yes", "on"):
        return True
    if value.lower() in ("0", "false", "no", "off"):
        return False
    raise Refused(f"{name}='{value}' is not a switch: use 1/0, true/false, yes/no or on/off")


def check_port(name: str, value: str) -> None:
    if not re.fullmatch(r"[0-9]{1,5}", value) or not 1 <= int(value) <= 65535:
        raise Refused(f"{name}='{value}' is not a TCP port (1-65535)")


def graph(text: str) -> bool:
    """Printable and without white space: the shell's [[:graph:]]*."""
    return all(char.isprintable() and not char.isspace() for char in text)


def split_list(value: str) -> List[str]:
    return [word for word in LIST_SEPARATORS.split(value) if word]


def kernel_culling(timeout: int) -> List[str]:
    """Jupyter Server's own culler for KERNEL_IDLE_TIMEOUT: idle kernels go, connected or not (an open
    tab holds GPU memory as much as a forgotten one), busy ones never."""
    if timeout == 0:
        return []
    return [f"--MappingKernelManager.cull_idle_timeout={timeout}",
            f"--MappingKernelManager.cull_interval={max(1, min(CULL_INTERVAL_MAX, timeout // 2))}",
            "--MappingKernelManager.cull_connected=True", "--MappingKernelManager.cull_busy=False"]


def root_triplet(env: Mapping[str, str]) -> bool:
    """NB_USER=root NB_UID=0 NB_GID=0, all three: the rootless engines' way to run as the container's root."""
    return (env.get("NB_USER") == "root" and re.fullmatch("0+", env.get("NB_UID", "")) is not None
            and re.fullmatch("0+", env.get("NB_GID", "")) is not None)


class Planner:
    def __init__(self, env: Mapping[str, str], args: Sequence[str], euid: int, system: System, pid: int) -> None:
        self.env = env
        self.pid = pid
        self.args = list(args)
        self.system = system
        self.plan: Dict[str, Value] = {"is_root": "1" if euid == 0 else "0", "cfg_report_port": "0",
                                       "cfg_port_retries": "0", "cfg_user_site": "0",
                                       "cfg_server_notes": [], "cfg_tunnel": [], "cfg_sshd_args": []}
        self.exports: Dict[str, str] = {}
        self.messages: List[str] = []  # what the start says once the plan holds, in order
        self.euid = euid
        self.apptainer = bool(env.get("APPTAINER_CONTAINER", "") + env.get("SINGULARITY_CONTAINER", ""))

    def get(self, name: str) -> str:
        return self.env.get(name, "")

    def note(self, line: str) -> None:
        self.messages.append(line)

    def warn(self, line: str) -> None:
        self.messages.append(f"WARNING: {line}")

    def on(self, name: str) -> bool:
        return self.plan[name] == "1"

    def flag(self, name: str, value: bool) -> None:
        self.plan[name] = "1" if value else "0"

    def server_args(self) -> List[str]:
        args = self.plan["cfg_server_args"]
        assert isinstance(args, list)
        return args

    def run(self) -> None:
        self.plan_run_dir()
        self.read_mounts()
        self.check_scratch()
        self.select_mode()
        self.plan_listening()
        self.load_config()
        self.load_user_config()
        if self.apptainer:
            self.load_apptainer_config()
        self.plan_user()
        self.plan_home()
        self.plan_as_user()
        self.check_privileges()
        if self.plan["cfg_mode"] != "command" and self.on("cfg_jupyter"):
            self.plan_server()
        if self.plan["cfg_mode"] != "command" and self.on("ssh_starts") and not self.apptainer:
            self.check_authorized_keys()
            self.plan_sshd()
        self.plan_login()
        self.note_the_settings()

    # The run directory: runtime state the healthcheck and the self-check read too. Its one home is
    # the Dockerfile's `ENV TFENV_RUN_DIR`, which every reader takes from the environment (exec probes
    # get the image's ENV too); empty means a broken image or override. Where it cannot be written
    # (Apptainer's read-only image; --read-only --tmpfs /run --user UID, whose /run is root's), the
    # run has one of its own under TMPDIR or /tmp (a node's /tmp is shared under Apptainer), which
    # 15-privileges makes and removes. Root keeps the image's: sshd needs /run anyway.
    def plan_run_dir(self) -> None:
        for name in ("TFENV_RUN_DIR", "TFENV_IMAGE_USER"):
            if not self.get(name):
                raise Refused(f"{name} is not set: the image's ENV sets it; do not override it with an empty value")
        image_run_dir = run_dir = self.get("TFENV_RUN_DIR")
        parent = image_run_dir.rsplit("/", 1)[0] or "/"
        usable = self.system.exists(run_dir) and self.system.is_dir(run_dir) and self.system.writable(run_dir)
        makeable = not self.system.exists(run_dir) and self.system.writable(parent)
        per_run = self.apptainer or (self.euid != 0 and not usable and not makeable)
        runtime_dir = self.get("JUPYTER_RUNTIME_DIR")
        if per_run:
            run_dir = str(per_run_path(self.get("TMPDIR"), self.euid, self.pid))
            self.exports["TFENV_RUN_DIR"] = run_dir
            if runtime_dir == f"{image_run_dir}/jupyter":  # the image's default follows; one set by -e stays
                runtime_dir = ""
        # Jupyter's own variable (the image's ENV points it into the run directory, so that `docker exec
        # ... jupyter server list` finds the server); fixed from here on, for Jupyter, the healthcheck and SSH.
        runtime_dir = self.exports["JUPYTER_RUNTIME_DIR"] = runtime_dir or f"{run_dir}/jupyter"
        # GEN_CERT's certificate and key (34-runtime makes them, 50-jupyter hands them to Jupyter).
        self.plan.update(cfg_cert_file=f"{runtime_dir}/tf29-env-cert.pem",
                         cfg_key_file=f"{runtime_dir}/tf29-env-key.pem")
        self.plan.update(apptainer_mode="1" if self.apptainer else "0", run_dir_per_run="1" if per_run else "0",
                         IMAGE_RUN_DIR=image_run_dir, RUN_DIR=run_dir, SERVICES_FILE=f"{run_dir}/{SERVICES}",
                         IMAGE_USER=self.get("TFENV_IMAGE_USER"))

    # The mount table, read once: mount point and options in pairs, in mountinfo's order (for one
    # point the later is on top); read_only and plan_home_mounts answer the entrypoint's questions from it.
    def read_mounts(self) -> None:
        mounts = read_mounts(self.system.read_file(MOUNTINFO) or "")
        self.plan["mounts"] = [field for mount in mounts for field in (mount.point, mount.options)]

    def read_only(self, path: str) -> bool:
        """PATH lies on a file system mounted read-only: the mount on top whose point is the longest prefix decides."""
        mounts = self.plan["mounts"]
        options, best = "", -1
        for point, found in zip(mounts[::2], mounts[1::2]):
            if (path == point or path.startswith(point.rstrip("/") + "/")) and len(point) >= best:
                options, best = found, len(point)
        return "ro" in options.split(",")

    def why_not_writable(self, path: str) -> str:
        if self.read_only(path):
            return " (read-only file system)"
        return f" for uid {self.euid} ({self.system.owner_and_mode(path)})"

    # /tmp is writable: HOME when the root file system is read-only (20-user), JupyterLab's kernels, Python.
    # Checked first, in every mode; the message quotes no setting, so it cannot quote a runaway value.
    def check_scratch(self) -> None:
        if not self.system.writable(SCRATCH):
            raise Refused(f"{SCRATCH} is not writable{self.why_not_writable(SCRATCH)}: mount a tmpfs there (--tmpfs "
                          f"{SCRATCH})")

    # The addresses Jupyter and sshd listen on: IPv4, and IPv6 where the container has it. Jupyter's
    # ServerApp.ip empty is "every address" (tornado opens 0.0.0.0 and ::), where "::" alone would be
    # IPv6 only; sshd's AddressFamily is any or inet.
    def plan_listening(self) -> None:
        inet6 = self.system.read_file(IF_INET6) or ""
        ipv6 = any(line.startswith(IPV6_LOOPBACK) for line in inet6.splitlines())
        self.plan.update(cfg_listen_ip="" if ipv6 else "0.0.0.0", cfg_sshd_family="any" if ipv6 else "inet")  # noqa: S104

    # 13: the Apptainer mode (entrypoint.d/13-apptainer.sh says what it is): the caller's home, the
    # login host for the tunnel line, the port on a node other users' servers share (startup/apptainer.py).
    def load_apptainer_config(self) -> None:
        if self.euid == 0:
            raise Refused("Apptainer runs this image as the calling user, but this start runs as uid 0 (--fakeroot?): "
                          "drop --fakeroot, nothing here needs root")
        user_site = switch(self.env, "ENABLE_USER_SITE", "0")
        self.flag("cfg_user_site", user_site)
        if user_site:
            self.note("ENABLE_USER_SITE=1: the host's PYTHONPATH and ~/.local (pip install --user) are used as they "
                      "are and may shadow the image's pinned packages")
        elif self.get("PYTHONPATH"):
            self.warn("PYTHONPATH from the host is not passed on: its packages would come before the image's pinned "
                      "ones (ENABLE_USER_SITE=1 keeps it)")
        home, mode = self.get("HOME"), self.plan["cfg_mode"]
        if not (len(home) > 1 and home.startswith("/") and self.system.is_dir(home)):
            raise Refused(f"HOME='{home}' is not a folder: Apptainer mounts your home there; run without --no-home, "
                          "or give one with --home DIR")
        if mode == "command":
            return
        if not self.system.writable(home):
            raise Refused(f"HOME={home} is not writable{self.why_not_writable(home)}: JupyterLab keeps your notebooks, "
                          "its settings and the kernels' files there; give Apptainer a writable home (--home DIR)")
        login = self.get("LOGIN_HOST")
        if login and not (len(login) <= 253 and LOGIN_HOST.fullmatch(login)):
            raise Refused("LOGIN_HOST is not a host name (letters, digits, dots and dashes, e.g. "
                          "login.cluster.example.org)")
        if not ((mode == "services" and self.on("cfg_jupyter")) or self.on("cfg_report_port")):
            return
        try:
            port, retries = apptainer.plan_port(self.get("JUPYTER_PORT") or None, self.system.port_free)
        except apptainer.Refused as refused:
            raise Refused(str(refused)) from None
        self.plan.update(cfg_jupyter_port=str(port), cfg_port_retries=str(retries))
        if self.on("cfg_report_port"):
            # batchspawner's hub gave port 0 and waits to be told the port (13-apptainer tells it);
            # jupyterhub-singleuser binds the one in JUPYTERHUB_SERVICE_URL, so that one is it (no retries).
            self.plan["cfg_port_retries"] = "0"
            url = self.get("JUPYTERHUB_SERVICE_URL")
            match = re.fullmatch(r"(https?://[^/]*):0+(/.*)?", url)
            if match:
                url = f"{match.group(1)}:{port}{match.group(2) or ''}"
            self.exports["JUPYTERHUB_SERVICE_URL"] = url

    # 05: the mode, from the container's command.
    def select_mode(self) -> None:
        args, mode = self.args, "services"
        self.plan.update(cfg_mode="services", cfg_server_args=[], cfg_command=[])
        if not args:
            self.plan["cfg_mode"] = "hub" if self.get("JUPYTERHUB_API_TOKEN") else "services"
            return
        name = args[0].rsplit("/", 1)[-1]
        if name in HUB_COMMANDS:
            mode = "hub"
        elif name in NOTEBOOK_COMMANDS:
            mode = "hub" if self.get("JUPYTERHUB_API_TOKEN") else "services"
        elif name == COMMAND_WRAPPER:
            if len(args) < 2:
                raise Refused("start.sh needs a command to run (start.sh CMD [ARGS]); without one, give no "
                              "command at all")
            self.plan.update(cfg_mode="command", cfg_command=args[1:])
            return
        else:
            self.plan.update(cfg_mode="command", cfg_command=args)
            return
        self.plan.update(cfg_mode=mode, cfg_server_args=args[1:])

    # 10: every setting, in the order a single bad one is reported.
    def load_config(self) -> None:
        for name, limit in SETTING_LIMITS:
            value = self.get(name)
            if len(value) > limit:
                raise Refused(f"{name} is {len(value)} characters long; at most {limit}: check what was passed")
        for name in ("NB_UID", "NB_GID"):
            value = self.get(name)
            if not re.fullmatch("[0-9]{1,10}", value) or int(value) > 2147483647:
                raise Refused(f"{name}='{value}' is not a numeric id (0-2147483647)")
        triplet = root_triplet(self.env)
        if int(self.get("NB_UID")) == 0 and not triplet:
            raise Refused("NB_UID=0: JupyterLab and SSH logins never run as root; pick another uid (only NB_USER=root "
                          "NB_UID=0 NB_GID=0 together run as root, for rootless engines)")
        if not triplet:
            self.check_gid()
        user = self.get("NB_USER")
        if not users.NAME.fullmatch(user):
            raise Refused(f"NB_USER='{user}' is not a valid user name")
        self.flag("cfg_jupyter", switch(self.env, "ENABLE_JUPYTER", "1"))
        self.flag("cfg_ssh", switch(self.env, "ENABLE_SSH", "1"))
        self.flag("cfg_no_auth", switch(self.env, "JUPYTER_INSECURE_NO_AUTH", "0"))

        # SELF_CHECK's modes have one owner, the self-check, which also reads SELF_CHECK when run by hand.
        status, answer = self.system.self_check_mode()
        if status == 2:
            raise Refused(answer[len("selfcheck: "):] if answer.startswith("selfcheck: ") else answer)
        if status != 0:
            raise Refused(f"SELF_CHECK: the self-check could not say which mode it sets (exit {status}): {answer}")
        self.plan["cfg_self_check"] = answer

        ssh_port = self.get("SSH_PORT") or "22"
        check_port("SSH_PORT", ssh_port)
        self.plan["SSH_PORT"] = ssh_port
        host_key_dir = self.get("SSH_HOST_KEY_DIR") or "/etc/ssh/host-keys"
        if not host_key_dir.startswith("/"):
            raise Refused(f"SSH_HOST_KEY_DIR='{host_key_dir}' must be an absolute path")
        # The host keys 40-ssh finds or makes, named by their type (15-privileges looks for them first).
        self.plan.update(cfg_host_key_dir=host_key_dir, cfg_sshd_dir=SSHD_DIR, cfg_sshd_keys_file=SSHD_KEYS_FILE,
                         cfg_sshd_env_file=SSHD_ENV_FILE,
                         cfg_host_keys=[f"{host_key_dir}/ssh_host_{kind}_key" for kind in HOST_KEY_TYPES])
        self.load_run_config()
        self.load_server_options()
        self.check_server_args()
        self.load_service_config()

    # How runs end: the stop's grace (90-supervise, the jobs) and idle kernels' shutdown (the server).
    def load_run_config(self) -> None:
        grace = self.get("STOP_GRACE_SECONDS") or str(STOP_GRACE_DEFAULT)
        if not re.fullmatch("[0-9]{1,5}", grace) or not 1 <= int(grace) <= STOP_GRACE_MAX:
            raise Refused(f"STOP_GRACE_SECONDS='{grace}' must be a number of seconds from 1 to {STOP_GRACE_MAX}")
        idle = self.get("KERNEL_IDLE_TIMEOUT") or "0"
        if not re.fullmatch("[0-9]{1,7}", idle) or int(idle) > KERNEL_IDLE_MAX:
            raise Refused(f"KERNEL_IDLE_TIMEOUT='{idle}' must be a number of seconds from 0 (never) to "
                          f"{KERNEL_IDLE_MAX}")
        self.plan.update(cfg_stop_grace=str(int(grace)), cfg_kernel_idle=str(int(idle)))
        self.exports["STOP_GRACE_SECONDS"] = str(int(grace))  # `job stop` and the jobs' own supervisors
        if self.plan["cfg_mode"] == "command":
            self.exports["JOB_FOREGROUND"] = "1"  # `docker run IMAGE job run ...`: nothing outlives the command

    def load_service_config(self) -> None:
        if self.plan["cfg_mode"] == "hub":
            self.load_hub_config()
        else:
            port = self.get("JUPYTER_PORT") or "8888"
            check_port("JUPYTER_PORT", port)
            self.plan["cfg_jupyter_port"] = port
            base_url = self.get("JUPYTER_BASE_URL") or "/"
            if not BASE_URL.fullmatch(base_url):
                raise Refused(f"JUPYTER_BASE_URL='{base_url}' must be a path like /jupyter/ (letters, digits, "
                              f". _ ~ - /)")
            self.plan["cfg_base_url"] = base_url if base_url.endswith("/") else base_url + "/"
            self.load_jupyter_auth()
        # %tensorboard's iframe, through jupyter-server-proxy under the server's own prefix.
        if not self.get("TENSORBOARD_PROXY_URL"):
            self.exports["TENSORBOARD_PROXY_URL"] = f"{self.plan['cfg_base_url']}proxy/%PORT%/"
        self.plan["cfg_ssh_keys"] = self.secret("SSH_AUTHORIZED_KEYS", "SSH_AUTHORIZED_KEYS_FILE")

        ssh_starts = self.on("cfg_ssh") and self.on("is_root") and bool(self.plan["cfg_ssh_keys"])
        if not self.on("cfg_jupyter") and not ssh_starts:
            raise Refused("ENABLE_JUPYTER=0 and no SSH to start (that needs ENABLE_SSH=1, root and a key): "
                          "nothing to run")
        self.flag("ssh_starts", ssh_starts)
        self.check_listening(ssh_starts)

    # NB_GID becomes the dev user's group: gid 0 and the image's system groups (below 1000) would hand
    # their rights out; 100 (users), 1000 and up, and gids the image has no group for are allowed.
    def check_gid(self) -> None:
        value = self.get("NB_GID")
        gid = int(value)
        if gid == 0:
            raise Refused("NB_GID=0 is root's group, whose rights everything run in the notebooks and SSH sessions "
                          "would get; use your own gid (id -g, 1000 or above) or 100 (users)")
        group = self.system.group_name(gid) if gid < 1000 and gid != 100 else None
        if group is not None:
            raise Refused(f"NB_GID={value} is the image's system group '{group}', whose rights everything run in the "
                          "notebooks and SSH sessions would get; use your own gid (id -g, 1000 or above) or "
                          "100 (users)")

    # What would otherwise fail only once the services start: two services on one port, or
    # JupyterLab (never root) on a port that only root may listen on.
    def check_listening(self, ssh_starts: bool) -> None:
        port_name, server = "JUPYTER_PORT", "JupyterLab"
        if self.plan["cfg_mode"] == "hub":
            port_name, server = "JUPYTERHUB_SERVICE_URL's port", "JupyterHub's single-user server"
        port, ssh_port = str(self.plan["cfg_jupyter_port"]), str(self.plan["SSH_PORT"])
        floor = self.system.unprivileged_port_start()
        # Listening below it takes NET_BIND_SERVICE (15-privileges); Docker sets it to 0, most other runtimes do not.
        self.plan["cfg_unprivileged_ports"] = str(1024 if floor is None else floor)
        if not self.on("cfg_jupyter"):
            return
        if ssh_starts and int(port) == int(ssh_port):
            raise Refused(f"{port_name}={port} and SSH_PORT={ssh_port}: {server} and sshd cannot listen on the same "
                          "port; change one of them")
        if floor is not None and int(port) < floor:
            raise Refused(f"{port_name}={port}: {server} runs as {self.get('NB_USER')}, never root, and here only root "
                          f"may listen below port {floor} (net.ipv4.ip_unprivileged_port_start); use {floor} or above "
                          "and publish it as any port (-p 80:8888)")

    # Extra args for the server are on its command line, which every process reads in ps.
    def check_server_args(self) -> None:
        for arg in self.server_args():
            if SERVER_AUTH_ARG.match(arg):
                raise Refused(f"the server's argument '{arg.split('=', 1)[0]}': Jupyter's token and password are set "
                              "with JUPYTER_TOKEN_FILE, JUPYTER_TOKEN or JUPYTER_PASSWORD_HASH (README, Settings), "
                              "never on the command line, where every process can read them")

    def secret(self, name: str, file_name: str) -> str:
        """The value of NAME, or the contents of the file FILE_NAME names (trailing newlines dropped)."""
        path = self.get(file_name)
        if not path:
            return self.get(name)
        if self.get(name):
            raise Refused(f"{name} and {file_name} are both set: set one")
        size = self.system.file_size(path)
        if size is not None and size > FILE_LIMITS[file_name]:
            raise Refused(f"{file_name}={path}: the file is {size} bytes; at most {FILE_LIMITS[file_name]}")
        content = self.system.read_file(path)
        if content is None:
            raise Refused(f"{file_name}={path}: no such readable file")
        content = content.replace("\0", "").rstrip("\n")
        if not content.strip():
            raise Refused(f"{file_name}={path}: the file is empty")
        return content

    # Jupyter always has auth: a token (given, from a file, or generated) and/or a hashed password,
    # unless JUPYTER_INSECURE_NO_AUTH=1 says otherwise in so many words.
    def load_jupyter_auth(self) -> None:
        token = self.secret("JUPYTER_TOKEN", "JUPYTER_TOKEN_FILE")
        shown = "JUPYTER_TOKEN_FILE" if self.get("JUPYTER_TOKEN_FILE") else "JUPYTER_TOKEN"
        if self.get("JUPYTER_TOKEN_FILE") and len(token) > 1024:
            raise Refused(f"JUPYTER_TOKEN_FILE={self.get('JUPYTER_TOKEN_FILE')}: the token is {len(token)} characters "
                          "long; at most 1024")
        if not graph(token):
            raise Refused(f"{shown}: the token contains spaces or control characters")
        # The token is the whole login and Jupyter takes any length: a chosen one must not be guessable.
        if token and len(token) < 16:
            raise Refused(f"{shown}: the token is {len(token)} characters long; at least 16 (make one with: "
                          "openssl rand -hex 24)")
        password_hash = self.get("JUPYTER_PASSWORD_HASH")
        if password_hash and not PASSWORD_HASH.fullmatch(password_hash):
            raise Refused("JUPYTER_PASSWORD_HASH is not a Jupyter password hash (argon2:... or sha1:...; make "
                          "one with: "
                          "python -c 'from jupyter_server.auth import passwd; print(passwd())')")
        hosts = self.allowed_hosts()
        generated = False
        if self.on("cfg_no_auth"):
            if token or password_hash:
                raise Refused("JUPYTER_INSECURE_NO_AUTH=1 together with a token or password: drop one of them")
            # Without auth the Host check is all that keeps a web page out (DNS rebinding).
            if not hosts:
                raise Refused("JUPYTER_INSECURE_NO_AUTH=1 needs JUPYTER_ALLOWED_HOSTS, the host names JupyterLab is "
                              "reached by (e.g. the proxy's jupyter.example.com, or localhost): without auth, "
                              "any other "
                              "name could be a web page's, through DNS rebinding")
        elif not token and not password_hash:
            token, generated = self.system.new_token(), True
        self.plan.update(cfg_token=token, cfg_password_hash=password_hash, cfg_allowed_hosts=hosts)
        self.flag("cfg_token_generated", generated)

    # JUPYTER_ALLOWED_HOSTS: host names (comma- or space-separated) for Jupyter Server's Host check,
    # in lower case as browsers send them.
    def allowed_hosts(self) -> List[str]:
        hosts: List[str] = []
        for word in split_list(self.get("JUPYTER_ALLOWED_HOSTS")):
            name = word.lower()
            if ADDRESS.fullmatch(name):
                raise Refused(f"JUPYTER_ALLOWED_HOSTS: '{name}' is an address; Jupyter lets loopback addresses "
                              "(127.0.0.1, ::1) in always and no other address: list host names")
            if len(name) > 253 or not HOST_NAME.fullmatch(name):
                raise Refused(f"JUPYTER_ALLOWED_HOSTS: '{name}' is not a host name (letters, digits, dots and dashes, "
                              "e.g. jupyter.example.com; no scheme, port or wildcard)")
            hosts.append(name)
        return hosts

    # sshd reads the keys as given, without the CRs a Windows editor leaves (40-ssh writes them so).
    def check_authorized_keys(self) -> None:
        keys = str(self.plan["cfg_ssh_keys"]).replace("\r", "")
        source = "SSH_AUTHORIZED_KEYS_FILE" if self.get("SSH_AUTHORIZED_KEYS_FILE") else "SSH_AUTHORIZED_KEYS"
        status, report = self.system.check_public_keys(keys + "\n")
        bad = re.search(r"\(stdin\):([0-9]+): not a public key", report)
        if bad:
            raise Refused(f"{source}: line {bad.group(1)} is not an SSH public key (expected e.g. 'ssh-ed25519 "
                          "AAAA... you@host')")
        if status != 0 and "is not a public key file" not in report:
            said = report.rstrip("\n").replace("\n", " ")
            raise Refused(f"{source}: ssh-keygen could not check the keys: {said}")
        if status != 0:
            raise Refused(f"{source}: no SSH public key in it, only comments and blank lines")
        count = sum(1 for line in keys.split("\n") if line.strip() and not line.strip().startswith("#"))
        self.plan.update(cfg_ssh_keys=keys, cfg_ssh_key_count=str(count))

    # 12: the hub mode's settings, from the hub's spawner; the hub's login is the only one.
    def load_hub_config(self) -> None:
        if not self.get("JUPYTERHUB_API_TOKEN") + self.get("JPY_API_TOKEN"):
            raise Refused("the hub mode (command jupyterhub-singleuser or start-singleuser) needs "
                          "JUPYTERHUB_API_TOKEN, "
                          "which JupyterHub's spawner sets: start it from a hub, or give no command for the standalone "
                          "JupyterLab")
        for name in ("JUPYTER_TOKEN", "JUPYTER_TOKEN_FILE", "JUPYTER_PASSWORD_HASH", "JUPYTER_ALLOWED_HOSTS"):
            if self.get(name):
                raise Refused(f"{name} is set, but in the hub mode the hub's login is the only one: unset {name} (it "
                              "applies to the standalone JupyterLab)")
        if self.on("cfg_no_auth"):
            raise Refused("JUPYTER_INSECURE_NO_AUTH=1 in the hub mode, where the hub's login is the only one: unset it")
        if not self.on("cfg_jupyter"):
            raise Refused("ENABLE_JUPYTER=0 in the hub mode, which exists to run the hub's single-user "
                          "server: unset it")
        url = self.get("JUPYTERHUB_SERVICE_URL")
        if not url:
            raise Refused("JUPYTERHUB_SERVICE_URL is not set: the hub mode needs it from the hub's spawner "
                          "(JupyterHub 2 "
                          "or later sets it)")
        match = HUB_URL.fullmatch(url)
        if not match:
            raise Refused(f"JUPYTERHUB_SERVICE_URL='{url}' is not a URL like http://0.0.0.0:8888/user/NAME/")
        port = match.group(4) or ("80" if match.group(1) == "http" else "443")
        self.plan["cfg_jupyter_port"] = port
        if self.apptainer and int(port) == 0:
            self.plan["cfg_report_port"] = "1"  # 13-apptainer: batchspawner's hub waits to be told the port
        elif not 1 <= int(port) <= 65535:
            raise Refused(f"JUPYTERHUB_SERVICE_URL='{url}': port {port} is not a TCP port (1-65535)")
        base_url = self.get("JUPYTERHUB_SERVICE_PREFIX") or "/"
        if not (base_url.startswith("/") and graph(base_url)):
            raise Refused(f"JUPYTERHUB_SERVICE_PREFIX='{base_url}' is not a URL path like /user/NAME/")
        self.plan.update(cfg_base_url=base_url, cfg_token="", cfg_password_hash="", cfg_allowed_hosts=[])
        self.flag("cfg_token_generated", False)
        # 12-hub takes these out of the environment: only the single-user server gets them back.
        self.plan["cfg_hub_secret_names"] = sorted(name for name in self.env if environ.HUB_SECRET.fullmatch(name))

    # 52: docker-stacks' options for the server.
    def load_server_options(self) -> None:
        mode = self.plan["cfg_mode"]
        app = self.get("DOCKER_STACKS_JUPYTER_CMD") or "lab"
        if app == "notebook":
            if mode == "services" and not self.system.has_command("jupyter-notebook"):
                raise Refused("DOCKER_STACKS_JUPYTER_CMD=notebook: the notebook package (Jupyter Notebook 7) is not in "
                              "this image; use lab or server, or add it (pip install notebook) in an image built FROM "
                              "this one")
        elif app not in ("lab", "server"):
            raise Refused(f"DOCKER_STACKS_JUPYTER_CMD='{app}' is not one of lab, server, notebook")
        self.plan["cfg_jupyter_app"] = app
        try:
            words = notebook_args.split(self.get("NOTEBOOK_ARGS"))
        except notebook_args.Unsplittable as error:
            raise Refused(str(error)) from error
        # docker-stacks' start-notebook.py and start-singleuser.py put NOTEBOOK_ARGS first, then their own.
        if mode != "command":
            self.plan["cfg_server_args"] = words + self.server_args()
        names: List[str] = []
        for name in split_list(self.get("JUPYTER_ENV_VARS_TO_UNSET")):
            if not environ.NAME.fullmatch(name):
                raise Refused(f"JUPYTER_ENV_VARS_TO_UNSET: '{name}' is not a variable name (letters, digits, _; "
                              "comma-separated)")
            if name in KEEP_SET:
                raise Refused(f"JUPYTER_ENV_VARS_TO_UNSET: {name} is needed by the services themselves and cannot be "
                              "unset")
            names.append(name)
        self.plan["cfg_unset_names"] = names
        gen_cert = switch(self.env, "GEN_CERT", "0")
        if gen_cert and mode == "hub":
            raise Refused(f"GEN_CERT={self.get('GEN_CERT')}: in the hub mode the hub decides whether its servers speak "
                          "HTTPS (JupyterHub's internal_ssl); unset GEN_CERT")
        if gen_cert and mode == "services" and not self.on("cfg_jupyter"):
            raise Refused(f"GEN_CERT={self.get('GEN_CERT')} with ENABLE_JUPYTER=0: there is no Jupyter server "
                          f"to give a "
                          "certificate; drop one of them")
        self.flag("cfg_gen_cert", gen_cert)

    # 16: docker-stacks' user settings beyond NB_USER/NB_UID/NB_GID, and the root triplet.
    def load_user_config(self) -> None:
        triplet = root_triplet(self.env)
        self.flag("cfg_triplet", triplet)
        group = self.get("NB_GROUP")
        if group and not users.NAME.fullmatch(group):
            raise Refused(f"NB_GROUP='{group}' is not a valid group name (lower-case letters, digits, _ and -)")
        umask = self.get("NB_UMASK")
        if umask and not re.fullmatch("0?[0-7]{1,3}", umask):
            raise Refused(f"NB_UMASK='{umask}' is not a umask: octal, like 022 (the default) or 002 (the group may "
                          "write)")
        self.plan.update(cfg_group=group, cfg_umask=umask)
        self.flag("cfg_grant_sudo", switch(self.env, "GRANT_SUDO", "0"))
        self.flag("cfg_chown_home", switch(self.env, "CHOWN_HOME", "0"))
        plan: List[Tuple[str, str]] = []
        if self.get("CHOWN_HOME_OPTS") + self.get("CHOWN_EXTRA") + self.get("CHOWN_EXTRA_OPTS"):
            try:
                plan = users.chown_plan(dict(self.env))
            except users.Refused as error:
                raise Refused(str(error)) from error
        for kind in ("home-opt", "extra-opt", "extra"):
            self.plan["cfg_chown_" + kind.replace("-opt", "_opts").replace("-", "_")] = [
                value for found, value in plan if found == kind]

        user = self.get("NB_USER")
        if user == "root" and not triplet:
            raise Refused("NB_USER=root: JupyterLab and SSH logins never run as root; only NB_USER=root NB_UID=0 "
                          "NB_GID=0 together do (for rootless Docker or Podman, where root in the container is your "
                          "own host account)")
        if triplet:
            self.load_root_triplet()
        elif user != self.dev_user_name():
            uid = self.system.user_uid(user)
            if uid is not None:
                raise Refused(f"NB_USER={user} is already a user of the image (uid {uid}); pick another name")

        self.note_ignored()

    def note_ignored(self) -> None:
        ignored = "is ignored: it needs a container started as root, and this one runs as uid"
        if not self.on("is_root"):
            if self.on("cfg_grant_sudo"):
                self.warn(f"GRANT_SUDO={self.get('GRANT_SUDO')} {ignored} {self.euid}")
            if self.on("cfg_chown_home"):
                self.warn(f"CHOWN_HOME={self.get('CHOWN_HOME')} {ignored} {self.euid}")
            if self.plan["cfg_chown_extra"]:
                self.warn(f"CHOWN_EXTRA {ignored} {self.euid}")
        if not self.on("cfg_chown_home") and self.plan["cfg_chown_home_opts"]:
            self.warn("CHOWN_HOME_OPTS is set but CHOWN_HOME is not: nothing is chowned (set CHOWN_HOME=yes)")
        if not self.plan["cfg_chown_extra"] and self.plan["cfg_chown_extra_opts"]:
            self.warn("CHOWN_EXTRA_OPTS is set but CHOWN_EXTRA is not: nothing is chowned")

    def dev_user_name(self) -> str:
        """The dev user's name in /etc/passwd now: the image's, or the NB_USER an earlier start renamed it to."""
        name = self.get("TFENV_IMAGE_USER")
        if self.system.user_uid(name) is not None:
            return name
        text = self.system.read_file(RENAMED_USER_FILE)
        renamed = text.split("\n", 1)[0].strip() if text else ""
        return renamed if renamed and self.system.user_uid(renamed) is not None else ""

    # The triplet runs JupyterLab (or the command) as the container's root, with HOME /home/root; sshd
    # never lets root in, so SSH stays off. Jupyter refuses root without allow_root.
    def load_root_triplet(self) -> None:
        if not self.on("is_root"):
            raise Refused(f"NB_USER=root NB_UID=0 NB_GID=0 runs JupyterLab as the container's root, but this container "
                          f"runs as uid {self.euid}: drop --user (under rootless Docker or Podman, root in "
                          f"the container "
                          "is your own host account)")
        if self.plan["cfg_mode"] != "command" and not self.on("cfg_jupyter"):
            raise Refused("ENABLE_JUPYTER=0 with NB_USER=root NB_UID=0 NB_GID=0, where SSH stays off: nothing to run")
        self.plan["cfg_ssh"] = "0"
        self.flag("ssh_starts", False)
        args = self.server_args()
        if not any(arg.startswith("--ServerApp.allow_root=") or arg == "--allow-root" for arg in args):
            self.plan["cfg_server_args"] = ["--ServerApp.allow_root=True", *args]

    # What fit_user (20-user) will change as root, so that what it needs is checked beforehand.
    # user_from: the dev user's name now (user_old_uid, user_old_gid its ids); user_rename: it becomes
    # NB_USER; user_refit: /etc/passwd gets NB_UID/NB_GID (the home folder's files follow);
    # user_new_group: NB_GID has no group yet (groupadd); user_group_rename: NB_GID's group is renamed
    # to NB_GROUP; user_join_users: the dev user is not in "users" yet (usermod). In the image as built,
    # with the default settings, all are 0: such a start writes nothing under /etc (a read-only root works).
    def plan_user(self) -> None:
        flags = ("user_rename", "user_refit", "user_new_group", "user_group_rename", "user_join_users")
        self.plan.update(dict.fromkeys(flags, "0"), user_from="root", user_old_uid="0", user_old_gid="0")
        if not self.on("is_root") or self.on("cfg_triplet"):
            return
        user_from = self.dev_user_name()
        if not user_from:
            raise Refused(f"the dev user {self.get('TFENV_IMAGE_USER')} is not in /etc/passwd, nor an earlier NB_USER "
                          f"recorded in {RENAMED_USER_FILE}: re-create the container (docker rm, then run)")
        old_uid, old_gid = self.system.user_ids(user_from)
        self.plan.update(user_from=user_from, user_old_uid=str(old_uid), user_old_gid=str(old_gid))
        user, group = self.get("NB_USER"), str(self.plan["cfg_group"])
        gid = int(self.get("NB_GID"))
        refit = old_uid != int(self.get("NB_UID")) or old_gid != gid
        self.flag("user_rename", user_from != user)
        self.flag("user_refit", refit)
        existing = self.system.group_name(gid)
        if existing is None:
            self.flag("user_new_group", refit)
            taken = self.system.group_gid(group or user) if refit else None
            if taken is not None:
                raise Refused(f"NB_GROUP: the group name '{group or user}' is the image's group {taken}; "
                              f"NB_GID={self.get('NB_GID')} needs another name (NB_GROUP=NAME)")
        elif group and existing != group:
            if gid == 100:
                raise Refused(f"NB_GROUP={group}: NB_GID=100 is the image's group 'users', which owns the home folder "
                              "and the venv and keeps its name; NB_GROUP names a group of your own NB_GID")
            if self.system.group_gid(group) is not None:
                raise Refused(f"NB_GROUP={group} is already another group of the image; pick another name")
            self.flag("user_group_rename", True)
        # In "users" once refitted: as its primary group, or as a listed member.
        users_gid, members = self.system.group_members("users")
        self.flag("user_join_users", gid != users_gid and user_from not in members)

    # Without root (and under Apptainer) nothing under /etc can change: cfg_login_name is USER and
    # LOGNAME, and cfg_nss_entry says libnss-wrapper serves it, where passwd has no entry for the uid
    # or has the image's user for it while NB_USER names another.
    def plan_login(self) -> None:
        self.plan.update(cfg_login_name=self.get("NB_USER"), cfg_nss_entry="0")
        if self.on("is_root"):
            return
        name = self.system.user_name(self.euid)
        image_user = self.get("TFENV_IMAGE_USER")
        if name is None or (not self.apptainer and name == image_user and self.get("NB_USER") != image_user):
            self.plan["cfg_nss_entry"] = "1"
        else:
            self.plan["cfg_login_name"] = name
        if self.apptainer and self.plan["cfg_mode"] != "command":
            self.note(f"Apptainer: running as {self.plan['cfg_login_name']} (uid {self.euid}) with the host's home and "
                      "network; no sshd (it needs root): reach JupyterLab through the login node with ssh -L (the line "
                      "below)")
        if self.apptainer and self.plan["cfg_mode"] == "services" and self.on("cfg_jupyter"):
            # announce's NODE LOGIN USER SHOW_TOKEN (startup/apptainer.py): where the ssh -L line points.
            self.plan["cfg_tunnel"] = [self.get("SLURMD_NODENAME") or self.system.host_name(),
                                       self.get("LOGIN_HOST") or self.get("SLURM_SUBMIT_HOST"),
                                       str(self.plan["cfg_login_name"]), str(self.plan["cfg_token_generated"])]

    # What the settings leave off, move or grant, said once every setting has passed (the steps act on it).
    def note_the_settings(self) -> None:
        mode = self.plan["cfg_mode"]
        if self.on("cfg_grant_sudo") and self.on("is_root") and not self.on("cfg_triplet"):
            self.warn(f"GRANT_SUDO={self.get('GRANT_SUDO')}: {self.get('NB_USER')} may run anything as root with sudo, "
                      "without a password, and so may everything run in JupyterLab and SSH sessions: only for users "
                      "you would give the container's root")
        if self.plan["cfg_umask"]:
            self.note(f"umask {self.plan['cfg_umask']} (NB_UMASK) for JupyterLab and the command (not SSH sessions)")
        if mode != "command" and self.plan["cfg_self_check"] == "off":
            self.note("self-check is off (SELF_CHECK=off); run 'selfcheck' in the container at any time")
        if self.on("cfg_triplet") and self.on("is_root"):
            what = "the command" if mode == "command" else "JupyterLab"
            self.warn(f"NB_USER=root NB_UID=0 NB_GID=0: {what} runs as the container's root, with HOME {ROOT_HOME} "
                      "(meant for rootless Docker or Podman, where that root is your host account); SSH stays off, "
                      "as it never logs in as root")
        old_mounts, old = self.plan["old_home_mounts"], str(self.plan["user_old_home"])
        if self.on("is_root") and self.on("home_is_mount") and (self.on("cfg_triplet") or self.on("user_rename")):
            source = "/home/" + self.get("TFENV_IMAGE_USER") if self.on("cfg_triplet") else old
            self.note(f"{self.plan['NB_HOME']} is a mount: the image's files in {source} are not copied into it")
        if self.on("user_rename") and old_mounts:  # make_home leaves the old home where they are
            self.warn(f"{' '.join(old_mounts)} is mounted in {old}, but the home folder is now {self.plan['NB_HOME']} "
                      f"(NB_USER), where JupyterLab opens: mount it there instead (-v ...:{self.plan['NB_HOME']}/"
                      f"{old_mounts[0][len(old) + 1:]})")
        if not self.on("is_root") and not self.apptainer and self.plan["NB_HOME"] != self.plan["home_folder"]:
            self.warn(f"uid {self.euid} cannot write {self.plan['home_folder']} (use --user {self.euid}:100, the "
                      f"'users' group); HOME is {self.plan['NB_HOME']}")
        if mode == "command" or not self.on("cfg_ssh") or self.apptainer:
            return
        if not self.plan["cfg_ssh_keys"]:
            self.note("SSH is off: no SSH_AUTHORIZED_KEYS or SSH_AUTHORIZED_KEYS_FILE given (login is key-only)")
        elif not self.on("is_root"):
            self.warn(f"SSH is off: sshd needs root and this container runs as uid {self.euid} (drop --user, or set "
                      "ENABLE_SSH=0)")

    # NB_HOME: the dev user's home folder as passwd has it after fit_user (20-user), and JupyterLab's root.
    # home_folder: where the user's files are (25-mounts, 26-userstate): NB_HOME, but without root a
    # home folder uid EUID cannot write, whose NB_HOME moves to a scratch one. cfg_scratch_home: HOME
    # instead of NB_HOME on a read-only file system (make_scratch_home), or the moved NB_HOME.
    # user_home: the dev user's HOME, NB_HOME or cfg_scratch_home. user_old_home: root's dev user's
    # home before a rename. The source is the folder whose files make_home copies (the root triplet's
    # image home) or moves (a rename's old home); without either, none.
    def plan_home(self) -> None:
        user = self.get("NB_USER")
        uid = self.euid if not self.on("is_root") else int(self.get("NB_UID"))
        scratch = f"{SCRATCH}/tf29-env-home-{uid}"
        old = source = ""
        if self.apptainer:
            home = folder = user_home = self.get("HOME")
        elif not self.on("is_root"):
            folder = f"/home/{user}" if self.system.is_dir(f"/home/{user}") else f"/home/{self.get('TFENV_IMAGE_USER')}"
            writable = self.system.writable(folder)
            home = folder if writable or self.read_only(folder) else scratch
            user_home = folder if writable else scratch
        elif self.on("cfg_triplet"):
            home = folder = user_home = ROOT_HOME
            source = "/home/" + self.get("TFENV_IMAGE_USER")
        else:
            old = self.system.user_home(str(self.plan["user_from"]))
            home = folder = f"/home/{user}" if self.on("user_rename") else old
            user_home = scratch if self.read_only(home) else home
            source = old if self.on("user_rename") else ""
        self.plan.update(NB_HOME=home, home_folder=folder, cfg_scratch_home=scratch, user_home=user_home,
                         user_old_home=old)
        self.plan_home_mounts(home, folder, source)

    # What fit_user and check_mounts (20, 25) ask of the mount table. home_mounts: the mount points at
    # or under home_folder, once each; home_mount_checks: those whose mount on top is read-write and
    # that 25-mounts checks, each followed by 1 where it holds nothing but mount points (Docker makes
    # those), else 0; old_home_mounts: those under SOURCE; home_is_mount: NB_HOME is one;
    # home_copy: the entries of SOURCE that make_home copies (none into a mount, none that are
    # there already, none that hold a mount, which stays); home_prune: find's arguments that skip the
    # mounts under NB_HOME, whose files keep their owners when NB_UID changes.
    def plan_home_mounts(self, home: str, folder: str, source: str) -> None:
        mounts = self.plan["mounts"]
        top: Dict[str, str] = {}
        for point, options in zip(mounts[::2], mounts[1::2]):
            top[point] = options  # dicts keep the first point's place; a later mount on it is on top
        under = [point for point in top if point == folder or point.startswith(folder.rstrip("/") + "/")]
        old_mounts = [point for point in top if source and point.startswith(source.rstrip("/") + "/")]
        checks: List[str] = []
        for point in under:
            if top[point].startswith("rw") and self.system.is_dir(point) and (self.on("is_root") or point != folder):
                bare = all(f"{point}/{name}" in under for name in self.system.entries(point))
                checks += [point, "1" if bare else "0"]
        prune = [arg for point in under if point != home for arg in ("-path", point, "-prune", "-o")]
        self.plan.update(home_mounts=under, home_mount_checks=checks, old_home_mounts=old_mounts, home_prune=prune,
                         home_copy=self.home_copy(source, home, old_mounts) if home not in top else [])
        self.flag("home_is_mount", home in top)

    def home_copy(self, source: str, home: str, old_mounts: List[str]) -> List[str]:
        def holds_mount(path: str) -> bool:
            return any(point == path or point.startswith(path + "/") for point in old_mounts)

        if not source:
            return []
        return [name for name in self.system.entries(source)
                if not self.system.lexists(f"{home}/{name}") and not holds_mount(f"{source}/{name}")]

    # The commands that run as the dev user: with root, setpriv to NB_UID/NB_GID and its groups, and
    # the user's HOME, USER and LOGNAME; the root triplet as root, with /home/root; without root, as is
    # (20-user exports HOME, USER and LOGNAME there).
    def plan_as_user(self) -> None:
        as_user: List[str] = []
        # NB_UID:NB_GID as chown is given them (root only: nothing is chowned without).
        self.plan["cfg_ids"] = f"{int(self.get('NB_UID'))}:{int(self.get('NB_GID'))}" if self.on("is_root") else ""
        if self.on("is_root") and self.on("cfg_triplet"):
            as_user = ["env", f"HOME={self.plan['user_home']}", "USER=root", "LOGNAME=root"]
        elif self.on("is_root"):
            uid, gid, user = int(self.get("NB_UID")), int(self.get("NB_GID")), self.get("NB_USER")
            as_user = ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--init-groups",
                       "env", f"HOME={self.plan['user_home']}", f"USER={user}", f"LOGNAME={user}"]
        self.plan["as_user"] = as_user

    # The server's command line (50-jupyter runs it as the dev user) and the folder it starts in, where
    # its terminals open. Traitlets refuses an option given twice, so an image option that an extra
    # argument names again is dropped; the extra arguments come last.
    def plan_server(self) -> None:
        home, extra = str(self.plan["NB_HOME"]), self.server_args()
        if self.plan["cfg_mode"] == "hub":
            # jupyterhub-singleuser reads the hub's login, port and prefix from the environment.
            own = ["jupyterhub-singleuser"]
            if not self.get("JUPYTERHUB_ROOT_DIR"):
                own.append(f"--ServerApp.root_dir={home}")
        else:
            own = self.lab_args(home)
        # No network calls from a server that often has none: no update checks, no news feed.
        own += ["--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", "--LabApp.news_url=None"]
        own += kernel_culling(int(str(self.plan["cfg_kernel_idle"])))
        named = {arg.split("=", 1)[0] for arg in extra if arg.startswith("--")}
        command = [arg for arg in own if not (arg.startswith("--") and arg.split("=", 1)[0] in named)] + extra
        folder = self.get("JUPYTERHUB_ROOT_DIR") or home
        for arg in command:
            name, _, value = arg.partition("=")
            if name in ROOT_DIR_OPTIONS:
                folder = value
        self.plan.update(cfg_server_command=command, cfg_server_folder=folder, cfg_server_notes=self.server_notes())

    # sshd's options, with the host keys (cfg_host_keys); the login is the fitted NB_USER's.
    def plan_sshd(self) -> None:
        keys = self.plan["cfg_host_keys"]
        self.plan["cfg_sshd_args"] = ["-D", "-e", "-f", str(SSHD_CONFIG), "-p", str(self.plan["SSH_PORT"]),
                                      "-o", f"AllowUsers={self.get('NB_USER')}",
                                      "-o", f"AddressFamily={self.plan['cfg_sshd_family']}",
                                      *[arg for key in keys for arg in ("-h", key)]]

    # What 50-jupyter says as the server starts (last, where `docker logs` ends): how to log in.
    def server_notes(self) -> List[str]:
        plan, port, base_url = self.plan, self.plan["cfg_jupyter_port"], self.plan["cfg_base_url"]
        if plan["cfg_mode"] == "hub":
            user = self.get("JUPYTERHUB_USER") or "its user"
            return [f"hub mode: JupyterHub's single-user server for {user} on port {port} under {base_url}; "
                    "the hub's login is the only one (JUPYTER_PORT and JUPYTER_BASE_URL do not apply)"]
        if self.on("cfg_no_auth"):
            hosts = " ".join(plan["cfg_allowed_hosts"])
            return [f"WARNING: JUPYTER_INSECURE_NO_AUTH=1: JupyterLab accepts anyone who reaches port {port} as "
                    f"{hosts}, localhost or a loopback address, with no token or password"]
        if not self.on("cfg_token_generated") or self.apptainer:
            return []  # under Apptainer the ssh -L line says how (apptainer.py announce)
        page = {"server": "", "notebook": "tree"}.get(str(plan["cfg_jupyter_app"]), "lab")  # the app's default page
        scheme = "https" if self.on("cfg_gen_cert") else "http"
        return ["JupyterLab token (generated; set JUPYTER_TOKEN or JUPYTER_TOKEN_FILE to choose one): "
                f"{scheme}://127.0.0.1:{port}{base_url}{page}?token={plan['cfg_token']}"]

    def lab_args(self, home: str) -> List[str]:
        plan = self.plan
        args = [
            "jupyter", str(plan["cfg_jupyter_app"]), f"--ServerApp.ip={plan['cfg_listen_ip']}",
            f"--ServerApp.port={plan['cfg_jupyter_port']}",
            f"--ServerApp.port_retries={plan['cfg_port_retries']}",  # 0 but for a port the plan chose under Apptainer
            "--ServerApp.open_browser=False", f"--ServerApp.root_dir={home}",
            f"--ServerApp.base_url={plan['cfg_base_url']}",
        ]
        if self.on("cfg_gen_cert"):
            args += [f"--ServerApp.certfile={plan['cfg_cert_file']}", f"--ServerApp.keyfile={plan['cfg_key_file']}"]
        # The token goes in the server's environment (50-jupyter), never argv: ps shows argv to all.
        if self.on("cfg_no_auth"):
            args += ["--IdentityProvider.token=", "--PasswordIdentityProvider.hashed_password="]
        else:
            if not plan["cfg_token"]:
                args.append("--IdentityProvider.token=")
            if plan["cfg_password_hash"]:
                args.append(f"--PasswordIdentityProvider.hashed_password={plan['cfg_password_hash']}")
        hosts = plan["cfg_allowed_hosts"]
        # Jupyter drops its DNS-rebinding check when listening on every address; this keeps it.
        if hosts:
            args += ["--ServerApp.allow_remote_access=False", "--ServerApp.local_hostnames=localhost",
                     *[f"--ServerApp.local_hostnames={host}" for host in hosts]]
        return args

    def need_for_the_user(self, need: Callable[[str, str], None], service_mode: bool) -> None:
        user, uid, gid = self.get("NB_USER"), self.get("NB_UID"), self.get("NB_GID")
        what = f"to run JupyterLab and the self-check as {user}" if service_mode else f"to run the command as {user}"
        need("SETUID", what)
        need("SETGID", what)
        need("KILL", f"to pass docker stop's signal on to {user}'s processes")
        if self.on("user_refit"):
            need("CHOWN", f"for NB_UID={uid}/NB_GID={gid}: {user}'s files follow the new ids")
        if self.on("user_new_group") or self.on("user_join_users"):
            need("CHOWN", f"for NB_GID={gid}: groupadd and usermod write /etc/gshadow")
        if self.on("user_rename"):
            need("CHOWN", f"for NB_USER={user}: usermod writes /etc/shadow, the home folder's files keep their owner")
        if self.on("user_group_rename"):
            need("CHOWN", f"for NB_GROUP={self.plan['cfg_group']}: groupmod writes /etc/gshadow")
        if self.on("cfg_chown_home") or self.plan["cfg_chown_extra"]:
            need("CHOWN", "for CHOWN_HOME/CHOWN_EXTRA")

    # The run directory (root's is the image's, TFENV_RUN_DIR), which 15-privileges makes if it is
    # missing (mode 1777, as the image's: the dev user writes there too): checked first, as there.
    def check_run_dir(self) -> None:
        run_dir = self.get("TFENV_RUN_DIR")
        if not self.system.exists(run_dir):
            parent = run_dir.rsplit("/", 1)[0] or "/"
            if not self.system.writable(parent):
                raise Refused(f"TFENV_RUN_DIR={run_dir} does not exist and cannot be made: {parent} is not writable"
                              f"{self.why_not_writable(parent)}; mount a tmpfs on {run_dir} itself (--tmpfs {run_dir}: "
                              "it keeps the image's mode 1777)")
        elif not (self.system.is_dir(run_dir) and self.system.writable(run_dir)):
            raise Refused(f"TFENV_RUN_DIR={run_dir} is not a writable folder{self.why_not_writable(run_dir)}: mount a "
                          f"tmpfs on it (--tmpfs {run_dir})")

    def writable_or_refuse(self, path: str, why: str, fix: str) -> None:
        """PATH (or, where it does not exist yet, the nearest folder above it) is writable."""
        while not self.system.exists(path) and len(path) > 1 and path.startswith("/"):
            path = path.rsplit("/", 1)[0] or "/"
        if not self.system.writable(path):
            raise Refused(f"{why}, but {path} is not writable{self.why_not_writable(path)}: {fix}")

    # Hardened runtimes (restricted pod security, --cap-drop ALL, --read-only) take away what the
    # steps as root need: the files they rewrite and the capabilities, checked here with the fix.
    def check_privileges(self) -> None:
        if not self.on("is_root"):
            return  # without root, nothing of this is attempted
        service_mode = self.plan["cfg_mode"] != "command"
        jupyter = service_mode and self.on("cfg_jupyter")
        ssh = service_mode and self.on("cfg_ssh") and bool(self.plan["cfg_ssh_keys"])
        if service_mode:
            self.check_run_dir()
        self.check_writable_paths()
        if ssh:
            self.check_ssh_paths()
        self.check_capabilities(service_mode, jupyter, ssh)

    def check_writable_paths(self) -> None:
        user, uid, gid, group = self.get("NB_USER"), self.get("NB_UID"), self.get("NB_GID"), self.plan["cfg_group"]
        built = self.get("TFENV_IMAGE_USER")
        if self.on("user_refit"):
            self.writable_or_refuse("/etc/passwd", f"NB_UID={uid}/NB_GID={gid} means rewriting /etc/passwd ({user} is "
                                    f"{self.plan['user_old_uid']}/{self.plan['user_old_gid']} as built)",
                                    "use NB_UID/NB_GID as built, or a writable root file system")
        if self.on("user_new_group") or self.on("user_join_users"):
            self.writable_or_refuse("/etc/group", f"NB_GID={gid} means rewriting /etc/group",
                                    f"use NB_GID as built ({self.plan['user_old_gid']}), or a writable root file "
                                    "system")
        if self.on("user_rename"):
            why = (f"NB_USER={user} means renaming {self.plan['user_from']} in /etc/passwd and /etc/shadow and a home "
                   f"folder /home/{user}")
            for path in ("/etc/passwd", "/etc/shadow", f"/home/{user}"):
                self.writable_or_refuse(path, why, f"use NB_USER as built ({built}), or a writable root file system")
        if self.on("user_group_rename"):
            self.writable_or_refuse("/etc/group", f"NB_GROUP={group} means renaming group {gid} in /etc/group",
                                    "leave NB_GROUP unset, or a writable root file system")
        if self.on("cfg_triplet"):
            self.writable_or_refuse(ROOT_HOME, f"NB_USER=root NB_UID=0 NB_GID=0 means a home folder {ROOT_HOME}",
                                    f"a writable root file system, or a volume on {ROOT_HOME}")
        # chown fails on a read-only file system (--read-only, a :ro mount) whatever the capabilities.
        home = ROOT_HOME if self.on("cfg_triplet") else f"/home/{user}"
        if self.on("cfg_chown_home") and self.read_only(home):
            raise Refused(f"CHOWN_HOME={self.get('CHOWN_HOME')}, but {home} is on a read-only file system: drop "
                          "CHOWN_HOME, or mount a volume there")
        for path in self.plan["cfg_chown_extra"]:
            if self.read_only(path):
                raise Refused(f"CHOWN_EXTRA: {path} is on a read-only file system (a :ro mount?): drop it from "
                              "CHOWN_EXTRA")
        if self.on("cfg_grant_sudo") and not self.on("cfg_triplet"):
            self.writable_or_refuse("/etc/sudoers.d", f"GRANT_SUDO={self.get('GRANT_SUDO')} means a rule in "
                                    "/etc/sudoers.d", "a writable root file system")

    def check_ssh_paths(self) -> None:
        for path in (SSHD_DIR, "/run/sshd"):
            self.writable_or_refuse(path, f"SSH needs {SSHD_DIR} and /run/sshd",
                                    "mount a tmpfs on /run (--tmpfs /run), or ENABLE_SSH=0")
        if not self.system.exists("/var/log/lastlog"):  # 40-ssh makes it when a base image lacks it
            self.writable_or_refuse("/var/log/lastlog", "sshd keeps its login records in /var/log/lastlog",
                                    "a writable root file system, or ENABLE_SSH=0")

    def check_capabilities(self, service_mode: bool, jupyter: bool, ssh: bool) -> None:
        user, uid = self.get("NB_USER"), self.get("NB_UID")
        effective = self.system.effective_capabilities()
        missing: Dict[str, str] = {}  # name: the first reason, in the order they are needed

        def need(name: str, reason: str) -> None:
            held = effective >> CAP_BITS[name] & 1
            # DAC_OVERRIDE allows all that DAC_READ_SEARCH does.
            if name == "DAC_READ_SEARCH":
                held |= effective >> CAP_BITS["DAC_OVERRIDE"] & 1
            if not held:
                missing.setdefault(name, reason)

        self.need_for_the_user(need, service_mode)

        if jupyter:
            need("CHOWN", f"to hand JupyterLab's runtime directory to {user}")
            need("FOWNER", f"to set the mode of JupyterLab's runtime directory, once it is {user}'s")
            need("DAC_READ_SEARCH", f"for the healthcheck, run as root, to read JupyterLab's runtime file in {user}'s "
                 "private runtime directory")
        if ssh:
            need("SYS_CHROOT", "for sshd's privilege separation")
            need("CHOWN", f"for sshd to hand a login's terminal to {user}")
            need("AUDIT_WRITE", "for sshd's login records of terminal sessions")
            ssh_port, floor = self.plan["SSH_PORT"], self.plan["cfg_unprivileged_ports"]
            if int(str(ssh_port)) < int(str(floor)):
                need("NET_BIND_SERVICE", f"for sshd to listen on SSH_PORT={ssh_port}, below {floor} "
                     "(net.ipv4.ip_unprivileged_port_start; or use SSH_PORT=2222)")
        if missing:
            # Names that share a reason are listed together: "SETUID, SETGID (to run ...)".
            names = list(missing)
            parts = [name + (", " if index + 1 < len(names) and missing[names[index + 1]] == missing[name]
                             else f" ({missing[name]}); ")
                     for index, name in enumerate(names)]
            raise Refused(f"missing capabilities: {''.join(parts)[:-2]}. Add them (--cap-add; README 'Security' lists "
                          f"the minimal set), or start without root (--user {uid}:100, no SSH)")


def make_plan(env: Mapping[str, str], args: Sequence[str], euid: int, system: Optional[System] = None,
              pid: int = 1) -> Tuple[Dict[str, Value], Dict[str, str], List[str]]:
    """The plan's variables, the variables to export, and the lines to say (warnings start "WARNING: "); or
    Refused. PID is the
    entrypoint's, which names its own run directory."""
    planner = Planner(env, args, euid, system or System(), pid)
    planner.run()
    return planner.plan, planner.exports, planner.messages


def render(plan: Mapping[str, Value], exports: Mapping[str, str]) -> str:
    """Shell assignments, one a line, every value quoted: what eval reads back as exactly these values."""
    lines = []
    for name, value in plan.items():
        quoted = shlex.quote(value) if isinstance(value, str) else "(" + " ".join(map(shlex.quote, value)) + ")"
        lines.append(f"{name}={quoted}")
    lines.extend(f"export {name}={shlex.quote(value)}" for name, value in exports.items())
    return "".join(line + "\n" for line in lines)


# The planner's own working values: what the steps need of them is planned from them.
PLANNER_ONLY = ("mounts", "cfg_server_args", "home_mounts", "cfg_scratch_home", "cfg_kernel_idle")


def for_the_shell(plan: Mapping[str, Value], messages: List[str]) -> Dict[str, Value]:
    """What the entrypoint evals: the plan without the planner's own values, and the lines to say
    (cfg_notes), which 45-command says once every setting has passed, so that a refusal is a failed
    start's only line."""
    return {**{name: value for name, value in plan.items() if name not in PLANNER_ONLY}, "cfg_notes": messages}


def main(argv: Sequence[str], pid: int = 1) -> int:
    try:
        plan, exports, messages = make_plan(os.environ, argv, os.geteuid(), pid=pid)
    except Refused as refused:
        print(f"{PREFIX}ERROR: {refused}", file=sys.stderr)
        return USAGE
    sys.stdout.buffer.write(render(for_the_shell(plan, messages), exports).encode("utf-8", "surrogateescape"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[2:], int(sys.argv[1])))
