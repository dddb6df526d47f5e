"""The checks of the settings' values (startup/settings.py's table names one per variable): each takes
the variable's name, its value (or default) and the Context, and gives the typed value or Refused
with the one line that names it. Standard library only, run by the distro's python3 -I (3.8 or newer).
"""

import re
from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Tuple  # python 3.8: no list[...]

from tf29image import gpubudget
from tf29image.dockerstacks import notebook_args
from tf29image.jobs.store import STOP_GRACE_MAX
from tf29image.startup import environ, users


class Refused(Exception):
    """A setting that cannot be used; str() is the one line that says why."""


# The mode, from the container's command (plan_mode): the services, the hub's single-user server, or a command.
SERVICES, HUB, COMMAND = "services", "hub", "command"


@dataclass(frozen=True)
class Context:
    """What decides whether a setting applies: the mode, Apptainer, and the root triplet (NB_USER=root
    NB_UID=0 NB_GID=0, which makes uid 0 and the name root allowed)."""

    mode: str
    apptainer: bool
    triplet: bool


@dataclass(frozen=True)
class Kind:
    """What a value is, for its length limit (far above any real value: a runaway one, a file pasted into
    a variable, fails later and obscurely, "Argument list too long" at exec, or makes the error line quote
    all of itself) and for the sentence in docs/settings.md that lists the limits."""

    limit: int
    noun: str


ID, SWITCH, MODE = Kind(10, "ids"), Kind(16, "switches"), Kind(16, "modes")
PORT, SECONDS, MIB = Kind(16, "ports"), Kind(16, "numbers of seconds"), Kind(16, "numbers of MiB")
NAME = Kind(32, "`NB_USER` and `NB_GROUP`")
PATH, URL_PATH, OPTIONS = Kind(1024, "paths"), Kind(1024, "URL paths"), Kind(1024, "chown's options")
SECRET = Kind(1024, "secrets (tokens, password hashes)")
URL, LIST, KEYS = Kind(2048, "the hub's URL"), Kind(4096, "lists"), Kind(65536, "SSH keys")
KINDS = (ID, SWITCH, MODE, PORT, SECONDS, MIB, NAME, PATH, URL_PATH, OPTIONS, SECRET, URL, LIST, KEYS)
# The largest file each *_FILE variable may name, in bytes, checked before it is read: a wrong file (a
# log, an archive) is refused instead of read into memory and the environment. 2 MiB of keys is a large
# team's file (10,000 ed25519 keys are about 1 MB).
FILE_LIMITS = {"JUPYTER_TOKEN_FILE": 4096, "SSH_AUTHORIZED_KEYS_FILE": 2097152, "JUPYTER_CERT_FILE": 1048576,
               "JUPYTER_KEY_FILE": 1048576}

# Where a setting applies; elsewhere it is not checked and keeps its default.
ALWAYS, STANDALONE, HUB_ONLY = "always", "not in the hub mode", "in the hub mode"
PORT_SCOPE = "not in the hub mode, but under Apptainer"  # JUPYTER_PORT: the node's port, the hub's too
APPTAINER, APPTAINER_SERVER = "under Apptainer", "under Apptainer, for a server"


def applies(scope: str, context: Context) -> bool:
    return {ALWAYS: True, STANDALONE: context.mode != HUB, HUB_ONLY: context.mode == HUB,
            PORT_SCOPE: context.mode != HUB or context.apptainer, APPTAINER: context.apptainer,
            APPTAINER_SERVER: context.apptainer and context.mode != COMMAND}[scope]


# --- the checks, one per kind of value: (NAME, VALUE or the default, Context) -> the typed value ---

Parser = Callable[[str, str, Context], Any]
KEEP_SET = ("PATH", "HOME", "TFENV_RUN_DIR", "JUPYTER_RUNTIME_DIR")  # needed by the entrypoint or the services
LOGIN_HOST = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
PASSWORD_HASH = re.compile(r"(argon2:\$argon2(id|i|d)\$|sha1:|sha256:)\S+")
HUB_URL = re.compile(r"(https?)://([A-Za-z0-9._-]*|\[[0-9A-Fa-f:.]+\])(:([0-9]{1,5}))?(/\S*)?")
BASE_URL = re.compile(r"/[A-Za-z0-9._~/-]*")
ADDRESS = re.compile(r"[0-9.]+|\[?[0-9a-f:.]*:[0-9a-f:.]*\]?")
HOST_NAME = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*")
LIST_SEPARATORS = re.compile(r"[, \t\n]+")
KERNEL_IDLE_MAX = 604800  # a week


def as_given(name: str, value: str, context: Context) -> str:
    return value


def switch(name: str, value: str, context: Context) -> bool:
    if value.lower() in ("1", "true", "yes", "on"):
        return True
    if value.lower() in ("0", "false", "no", "off"):
        return False
    raise Refused(f"{name}='{value}' is not a switch: use 1/0, true/false, yes/no or on/off")


def port(name: str, value: str, context: Context) -> int:
    if not re.fullmatch(r"[0-9]{1,5}", value) or not 1 <= int(value) <= 65535:
        raise Refused(f"{name}='{value}' is not a TCP port (1-65535)")
    return int(value)


def numeric_id(name: str, value: str) -> int:
    if not re.fullmatch("[0-9]{1,10}", value) or int(value) > 2147483647:
        raise Refused(f"{name}='{value}' is not a numeric id (0-2147483647)")
    return int(value)


def uid(name: str, value: str, context: Context) -> int:
    if numeric_id(name, value) == 0 and not context.triplet:
        raise Refused("NB_UID=0: JupyterLab and SSH logins never run as root; pick another uid (only NB_USER=root "
                      "NB_UID=0 NB_GID=0 together run as root, for rootless engines)")
    return int(value)


# NB_GID becomes the dev user's group: gid 0 would hand root's rights out (the image's other system
# groups are the user step's to refuse: it asks the image which there are).
def gid(name: str, value: str, context: Context) -> int:
    if numeric_id(name, value) == 0 and not context.triplet:
        raise Refused("NB_GID=0 is root's group, whose rights everything run in the notebooks and SSH sessions "
                      "would get; use your own gid (id -g, 1000 or above) or 100 (users)")
    return int(value)


# TEAM_GID: a group the dev user joins besides NB_GID (a team's shared folder); "" is none (0). As for
# NB_GID, gid 0 would hand root's rights out; the image's other system groups are the user step's to refuse.
def team_gid(name: str, value: str, context: Context) -> int:
    if not value:
        return 0
    if numeric_id(name, value) == 0:
        raise Refused(f"TEAM_GID={value} is root's group, whose rights everything run in the notebooks and SSH "
                      "sessions would get; use the gid of the team's shared folder (stat -c %g DIR)")
    return int(value)


def user_name(name: str, value: str, context: Context) -> str:
    if not users.NAME.fullmatch(value):
        raise Refused(f"NB_USER='{value}' is not a valid user name")
    if value == "root" and not context.triplet:
        raise Refused("NB_USER=root: JupyterLab and SSH logins never run as root; only NB_USER=root NB_UID=0 "
                      "NB_GID=0 together do (for rootless Docker or Podman, where root in the container is your "
                      "own host account)")
    return value


def group_name(name: str, value: str, context: Context) -> str:
    if value and not users.NAME.fullmatch(value):
        raise Refused(f"NB_GROUP='{value}' is not a valid group name (lower-case letters, digits, _ and -)")
    return value


def umask(name: str, value: str, context: Context) -> str:
    if value and not re.fullmatch("0?[0-7]{1,3}", value):
        raise Refused(f"NB_UMASK='{value}' is not a umask: octal, like 022 (the default) or 002 (the group may "
                      "write)")
    return value


def chown_options(name: str, value: str, context: Context) -> Tuple[str, ...]:
    try:
        return tuple(users.chown_options(name, value))
    except users.Refused as error:
        raise Refused(str(error)) from error


def chown_extra(name: str, value: str, context: Context) -> Tuple[str, ...]:
    """Existing folders outside the system's, where they really lead (users.py reads the file system)."""
    try:
        return tuple(users.chown_extra_paths(value))
    except users.Refused as error:
        raise Refused(str(error)) from error


def password_hash(name: str, value: str, context: Context) -> str:
    if value and not PASSWORD_HASH.fullmatch(value):
        raise Refused("JUPYTER_PASSWORD_HASH is not a Jupyter password hash (argon2:... or sha1:...; make one with: "
                      "python -c 'from jupyter_server.auth import passwd; print(passwd())')")
    return value


def split_list(value: str) -> List[str]:
    return [word for word in LIST_SEPARATORS.split(value) if word]


# Host names (comma- or space-separated) for Jupyter Server's Host check, in lower case as browsers send them.
def allowed_hosts(name: str, value: str, context: Context) -> Tuple[str, ...]:
    hosts: List[str] = []
    for word in split_list(value):
        host = word.lower()
        if ADDRESS.fullmatch(host):
            raise Refused(f"JUPYTER_ALLOWED_HOSTS: '{host}' is an address; Jupyter lets loopback addresses "
                          "(127.0.0.1, ::1) in always and no other address: list host names")
        if len(host) > 253 or not HOST_NAME.fullmatch(host):
            raise Refused(f"JUPYTER_ALLOWED_HOSTS: '{host}' is not a host name (letters, digits, dots and dashes, "
                          "e.g. jupyter.example.com; no scheme, port or wildcard)")
        hosts.append(host)
    return tuple(hosts)


def base_url(name: str, value: str, context: Context) -> str:
    if not BASE_URL.fullmatch(value):
        raise Refused(f"JUPYTER_BASE_URL='{value}' must be a path like /jupyter/ (letters, digits, . _ ~ - /)")
    return value if value.endswith("/") else value + "/"


def jupyter_app(name: str, value: str, context: Context) -> str:
    if value not in ("lab", "server", "notebook"):
        raise Refused(f"DOCKER_STACKS_JUPYTER_CMD='{value}' is not one of lab, server, notebook")
    return value


def server_words(name: str, value: str, context: Context) -> Tuple[str, ...]:
    try:
        return tuple(notebook_args.split(value))
    except notebook_args.Unsplittable as error:
        raise Refused(str(error)) from error


def names_to_unset(name: str, value: str, context: Context) -> Tuple[str, ...]:
    names: List[str] = []
    for word in split_list(value):
        if not environ.NAME.fullmatch(word):
            raise Refused(f"JUPYTER_ENV_VARS_TO_UNSET: '{word}' is not a variable name (letters, digits, _; "
                          "comma-separated)")
        if word in KEEP_SET:
            raise Refused(f"JUPYTER_ENV_VARS_TO_UNSET: {word} is needed by the services themselves and cannot be "
                          "unset")
        names.append(word)
    return tuple(names)


def absolute(name: str, value: str, context: Context) -> str:
    if not value.startswith("/"):
        raise Refused(f"{name}='{value}' must be an absolute path")
    return value


def login_host(name: str, value: str, context: Context) -> str:
    if value and not (len(value) <= 253 and LOGIN_HOST.fullmatch(value)):
        raise Refused("LOGIN_HOST is not a host name (letters, digits, dots and dashes, e.g. "
                      "login.cluster.example.org)")
    return value


def stop_grace(name: str, value: str, context: Context) -> int:
    if not re.fullmatch("[0-9]{1,5}", value) or not 1 <= int(value) <= STOP_GRACE_MAX:
        raise Refused(f"STOP_GRACE_SECONDS='{value}' must be a number of seconds from 1 to {STOP_GRACE_MAX}")
    return int(value)


def kernel_idle(name: str, value: str, context: Context) -> int:
    if not re.fullmatch("[0-9]{1,7}", value) or int(value) > KERNEL_IDLE_MAX:
        raise Refused(f"KERNEL_IDLE_TIMEOUT='{value}' must be a number of seconds from 0 (never) to {KERNEL_IDLE_MAX}")
    return int(value)


def gpu_memory_limit(name: str, value: str, context: Context) -> int:
    """A budget TensorFlow keeps on each GPU (0: none), checked as the import hook checks it."""
    try:
        return gpubudget.parse_limit(value)
    except ValueError as error:
        raise Refused(str(error)) from None


@dataclass(frozen=True)
class HubUrl:
    url: str
    port: int  # 0 only under Apptainer, where batchspawner's hub waits to be told the port
    port_text: str  # as the URL writes it, for messages


def hub_url(name: str, value: str, context: Context) -> Optional[HubUrl]:
    if not value:
        return None  # the hub mode's step says it is missing, once it knows the hub started this
    match = HUB_URL.fullmatch(value)
    if not match:
        raise Refused(f"JUPYTERHUB_SERVICE_URL='{value}' is not a URL like http://0.0.0.0:8888/user/NAME/")
    number = match.group(4) or ("80" if match.group(1) == "http" else "443")
    if not (context.apptainer and int(number) == 0) and not 1 <= int(number) <= 65535:
        raise Refused(f"JUPYTERHUB_SERVICE_URL='{value}': port {number} is not a TCP port (1-65535)")
    return HubUrl(value, int(number), number)


def url_path(name: str, value: str, context: Context) -> str:
    if not (value.startswith("/") and all(char.isprintable() and not char.isspace() for char in value)):
        raise Refused(f"JUPYTERHUB_SERVICE_PREFIX='{value}' is not a URL path like /user/NAME/")
    return value
