"""Every setting of the team hub, read from HUB_* environment variables (hub.mk passes make
variables of the same names) and checked once, before anything starts: a bad value is one line
naming the variable (HubConfigError), exit 2. The one home of the names and defaults; docs/hub.md
lists them. Standard library only, so the host tools' venv (tests, linters) imports it too."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from compose import gpus, limits, memlock
from hub import REPO

HUB_DIR = REPO / "hub"
EXIT_CONFIG = 2
# The labels the hub puts on what it makes, here because ctl (no dockerspawner) and spawner both import settings.
HUB_LABEL = "io.tf29-env.hub"  # its network
PROFILE_LABEL = f"{HUB_LABEL}.profile"  # a server's container: its profile's name
SSH_PORT_LABEL = f"{HUB_LABEL}.ssh-port"  # the host port of its SSH, when it has one
GPUS_LABEL = f"{HUB_LABEL}.gpus"  # the GPU or MIG ids it holds, comma-separated

# The single-user servers' profiles: name -> (what the spawn form says, GPUs requested).
PROFILES: dict[str, tuple[str, int]] = {
    "cpu": ("CPU only (no GPU visible)", 0),
    "gpu1": ("1 GPU", 1),
    "gpu2": ("2 GPUs", 2),
}
# In HUB_PROFILES: one profile per MIG profile the box's slices have (mig-1g.5gb, ...), or one of them.
MIG_PROFILES = "mig"
MIG_PREFIX = "mig-"
_MIG_PROFILE = re.compile(rf"{MIG_PREFIX}[0-9]+g\.[0-9]+gb(\+[a-z]+)?")
# HUB_GPUS: the GPUs nvidia-smi -L lists, none, or a list of IDs.
GPUS_AUTO, GPUS_NONE = "auto", "none"
# HUB_GPU_POLICY: what a GPU profile gets when every GPU is taken.
GPU_EXCLUSIVE, GPU_SHARE = "exclusive", "share"
GPU_POLICIES = (GPU_EXCLUSIVE, GPU_SHARE)
SELF_CHECK_MODES = ("warn", "strict", "off")
# Docker names: what a container or volume name may hold (the prefix starts every name).
_DOCKER_NAME = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_.-]{0,39}")
_SIZE = re.compile(r"([1-9][0-9]{0,5})([kmg]?)", re.IGNORECASE)
_MAX_VALUE = 4096  # longer than any real setting: refused before it is parsed


class HubConfigError(Exception):
    """A setting that cannot work: one line for the user, exit 2, nothing started."""


@dataclass(frozen=True)
class Settings:
    address: str  # where the proxy serves users (HUB_ADDRESS)
    port: int
    image: str
    state_dir: Path
    network: str
    name_prefix: str
    internal_port: int  # the hub's own API, on the network's gateway address
    proxy_api_port: int  # the proxy's REST API, on 127.0.0.1
    ssh_address: str
    ssh_ports: range
    admin_users: tuple[str, ...]
    profiles: tuple[str, ...]
    shm_size: str
    memlock: int  # bytes, -1: unlimited; ctl replaces -1 by what the engine can grant
    cull_timeout: int
    cull_every: int
    activity_interval: int
    stop_grace: int  # seconds a stop gives the servers' jobs and busy kernels (their STOP_GRACE_SECONDS)
    kernel_idle: int  # seconds an idle kernel lives (their KERNEL_IDLE_TIMEOUT); 0: no limit
    self_check: str
    spawn_timeout: int
    gpus: str  # GPUS_AUTO, GPUS_NONE, or the IDs of HUB_GPUS joined by commas
    gpu_policy: str
    gpu_pins: tuple[tuple[str, tuple[str, ...]], ...]  # (user, their GPU IDs)
    backup_dir: Path  # where the snapshots before a new image go (HUB_BACKUP_DIR)
    backup_keep: int  # how many of those snapshots are kept (HUB_BACKUP_KEEP)

    @property
    def gpu_ids(self) -> tuple[str, ...]:
        """The IDs HUB_GPUS lists (none for auto and none)."""
        return () if self.gpus in (GPUS_AUTO, GPUS_NONE) else tuple(self.gpus.split(","))

    @property
    def public_url(self) -> str:
        return f"http://{url_host(self.address)}:{self.port}/"

    @property
    def local_url(self) -> str:
        """The proxy as this host reaches it (a wildcard address is served on loopback too)."""
        host = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(self.address, self.address)  # noqa: S104 - a comparison
        return f"http://{url_host(host)}:{self.port}/"


def url_host(address: str) -> str:
    return f"[{address}]" if ":" in address else address


# --- the files in the state folder (mode 700): one home for each path
def db_file(state: Path) -> Path:
    return state / "jupyterhub.sqlite"


def cookie_secret_file(state: Path) -> Path:
    return state / "jupyterhub_cookie_secret"


def proxy_token_file(state: Path) -> Path:
    return state / "proxy_auth_token"


def ssh_ports_file(state: Path) -> Path:
    return state / "ssh-ports.json"


def users_dir(state: Path) -> Path:
    """One folder per user (by the spawner's escaped name): their authorized_keys."""
    return state / "users"


def logs_dir(state: Path) -> Path:
    return state / "logs"


def run_dir(state: Path) -> Path:
    return state / "run"


# --- parsers: each returns the value or raises HubConfigError naming the variable
def _port(name: str, value: str) -> int:
    if not value.isdigit() or not 1 <= int(value) <= 65535:
        raise HubConfigError(f"{name}={value!r} is not a TCP port (1-65535)")
    return int(value)


def _seconds(name: str, value: str, minimum: int) -> int:
    if not value.isdigit() or int(value) < minimum:
        raise HubConfigError(f"{name}={value!r} is not a whole number of seconds >= {minimum}")
    return int(value)


def _seconds_within(name: str, value: str, minimum: int, maximum: int, note: str = "") -> int:
    if not value.isdigit() or not minimum <= int(value) <= maximum:
        raise HubConfigError(f"{name}={value!r} is not a whole number of seconds from {minimum}{note} to {maximum}")
    return int(value)


def _count(name: str, value: str, minimum: int) -> int:
    if not value.isdigit() or int(value) < minimum:
        raise HubConfigError(f"{name}={value!r} is not a whole number >= {minimum}")
    return int(value)


def _address(name: str, value: str) -> str:
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        raise HubConfigError(f"{name}={value!r} is not an IP address (e.g. 127.0.0.1, or 0.0.0.0 for all)") from None


def _port_range(name: str, value: str) -> range:
    first, sep, last = value.partition("-")
    if not sep or not first.isdigit() or not last.isdigit() or not 1024 <= int(first) <= int(last) <= 65535:
        raise HubConfigError(f"{name}={value!r} is not a port range FIRST-LAST within 1024-65535 (e.g. 2200-2299)")
    return range(int(first), int(last) + 1)


def _names(name: str, value: str) -> tuple[str, ...]:
    names = tuple(part.strip() for part in value.replace(",", " ").split())
    for user in names:
        if not re.fullmatch(r"[a-z0-9][a-z0-9._@-]{0,63}", user):
            raise HubConfigError(f"{name}: {user!r} is not a hub user name (lower case letters, digits, . _ @ -)")
    return names


def _choice(name: str, value: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise HubConfigError(f"{name}={value!r} is not one of {', '.join(choices)}")
    return value


def _profiles(name: str, value: str) -> tuple[str, ...]:
    chosen = tuple(part.strip() for part in value.replace(",", " ").split())
    known = (*PROFILES, MIG_PROFILES)
    if not chosen:
        raise HubConfigError(f"{name} is empty: name at least one of {', '.join(known)}")
    for profile in chosen:
        if profile not in known and not _MIG_PROFILE.fullmatch(profile):
            raise HubConfigError(f"{name}: {profile!r} is not one of {', '.join(known)} or {MIG_PREFIX}PROFILE "
                                 f"(a MIG profile of nvidia-smi -L, e.g. {MIG_PREFIX}1g.5gb)")
    if len(set(chosen)) != len(chosen):
        raise HubConfigError(f"{name}={value!r} names a profile twice")
    return chosen


def _size(name: str, value: str) -> str:
    if not _SIZE.fullmatch(value):
        raise HubConfigError(f"{name}={value!r} is not a size such as 1g, 512m or 1073741824")
    return value.lower()


def _gpus(name: str, value: str) -> str:
    if value in (GPUS_AUTO, GPUS_NONE):
        return value
    try:
        return ",".join(gpus.parse_ids(value, name))
    except gpus.GpuError as exc:
        raise HubConfigError(f"{exc} (or {GPUS_AUTO}, {GPUS_NONE})") from None


def _pins(name: str, value: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """USER=IDS entries, separated by spaces or semicolons: e.g. `ann=0 ben=1,2`."""
    pins: dict[str, tuple[str, ...]] = {}
    for entry in value.replace(";", " ").split():
        user, sep, ids = entry.partition("=")
        if not sep or not ids or not user:
            raise HubConfigError(f"{name}: {entry!r} is not USER=GPUS (e.g. ann=0 ben=1,2)")
        (user,) = _names(name, user)
        if user in pins:
            raise HubConfigError(f"{name} pins {user} twice")
        try:
            pins[user] = gpus.parse_ids(ids, f"{name} {user}")
        except gpus.GpuError as exc:
            raise HubConfigError(str(exc)) from None
    return tuple(pins.items())


def _docker_name(name: str, value: str) -> str:
    if not _DOCKER_NAME.fullmatch(value):
        raise HubConfigError(f"{name}={value!r} is not a Docker name (letters, digits, _ . -; at most 40)")
    return value


def load(environ: Mapping[str, str]) -> Settings:
    """The settings in ENVIRON (unset or empty: the default), all checked."""

    def get(name: str, default: str) -> str:
        value = environ.get(name, "").strip() or default
        if len(value) > _MAX_VALUE:
            raise HubConfigError(f"{name} is longer than {_MAX_VALUE} characters")
        return value

    address = _address("HUB_ADDRESS", get("HUB_ADDRESS", "127.0.0.1"))
    image = get("HUB_IMAGE", memlock.DEFAULTS["TF29ENV_IMAGE"])
    if any(char.isspace() for char in image):
        raise HubConfigError(f"HUB_IMAGE={image!r} is not an image reference")
    cull_timeout = _seconds("HUB_CULL_TIMEOUT", get("HUB_CULL_TIMEOUT", "3600"), 30)
    team_limits = limits.load()
    # The team's idle kernels' timeout, shortened to the servers' own when that is shorter (see below).
    kernel_idle_default = min(team_limits.kernel_idle, cull_timeout)
    try:
        wanted_memlock = memlock.parse_bytes(get("HUB_MEMLOCK", "-1"), "HUB_MEMLOCK")
    except memlock.MemlockError as exc:
        raise HubConfigError(str(exc)) from None
    settings = Settings(
        address=address,
        port=_port("HUB_PORT", get("HUB_PORT", "8000")),
        image=image,
        state_dir=Path(get("HUB_STATE_DIR", str(HUB_DIR / "state"))).absolute(),
        network=_docker_name("HUB_NETWORK", get("HUB_NETWORK", "tf29-hub")),
        name_prefix=_docker_name("HUB_NAME_PREFIX", get("HUB_NAME_PREFIX", "tf29-hub")),
        internal_port=_port("HUB_INTERNAL_PORT", get("HUB_INTERNAL_PORT", "8081")),
        proxy_api_port=_port("HUB_PROXY_API_PORT", get("HUB_PROXY_API_PORT", "8001")),
        ssh_address=_address("HUB_SSH_ADDRESS", get("HUB_SSH_ADDRESS", address)),
        ssh_ports=_port_range("HUB_SSH_PORTS", get("HUB_SSH_PORTS", "2200-2299")),
        admin_users=_names("HUB_ADMIN_USERS", get("HUB_ADMIN_USERS", "admin")),
        profiles=_profiles("HUB_PROFILES", get("HUB_PROFILES", ",".join((*PROFILES, MIG_PROFILES)))),
        shm_size=_size("HUB_SHM_SIZE", get("HUB_SHM_SIZE", team_limits.shm_size)),
        memlock=wanted_memlock,
        cull_timeout=cull_timeout,
        cull_every=_seconds("HUB_CULL_EVERY", get("HUB_CULL_EVERY", str(min(300, cull_timeout // 4))), 5),
        activity_interval=_seconds("HUB_ACTIVITY_INTERVAL", get("HUB_ACTIVITY_INTERVAL", "60"), 5),
        stop_grace=_seconds_within("HUB_STOP_GRACE_SECONDS", get("HUB_STOP_GRACE_SECONDS", str(team_limits.stop_grace)),
                                   1, limits.STOP_GRACE_MAX),
        kernel_idle=_seconds_within("HUB_KERNEL_IDLE_TIMEOUT", get("HUB_KERNEL_IDLE_TIMEOUT", str(kernel_idle_default)),
                                    0, limits.KERNEL_IDLE_MAX, " (no limit)"),
        self_check=_choice("HUB_SELF_CHECK", get("HUB_SELF_CHECK", "warn"), SELF_CHECK_MODES),
        spawn_timeout=_seconds("HUB_SPAWN_TIMEOUT", get("HUB_SPAWN_TIMEOUT", "180"), 30),
        gpus=_gpus("HUB_GPUS", get("HUB_GPUS", GPUS_AUTO)),
        gpu_policy=_choice("HUB_GPU_POLICY", get("HUB_GPU_POLICY", GPU_EXCLUSIVE), GPU_POLICIES),
        gpu_pins=_pins("HUB_GPU_PINS", get("HUB_GPU_PINS", "")),
        # Beside make upgrade's snapshots (BACKUP_DIR's default): one folder to back up, already ignored by git.
        backup_dir=Path(get("HUB_BACKUP_DIR", str(REPO / "backups"))).absolute(),
        backup_keep=_count("HUB_BACKUP_KEEP", get("HUB_BACKUP_KEEP", "3"), 1),
    )
    if settings.backup_dir == settings.state_dir or settings.state_dir in settings.backup_dir.parents:
        raise HubConfigError(f"HUB_BACKUP_DIR={settings.backup_dir} lies in HUB_STATE_DIR: the state's snapshot "
                             "would hold the snapshots; choose a folder outside it")
    if settings.port == settings.proxy_api_port:
        raise HubConfigError(f"HUB_PORT and HUB_PROXY_API_PORT are both {settings.port}")
    if settings.port in settings.ssh_ports:
        raise HubConfigError(f"HUB_PORT={settings.port} lies in HUB_SSH_PORTS")
    if settings.activity_interval * 2 > settings.cull_timeout:
        raise HubConfigError(f"HUB_ACTIVITY_INTERVAL={settings.activity_interval} is more than half of "
                             f"HUB_CULL_TIMEOUT={settings.cull_timeout}: active servers would be culled")
    # An idle server goes, with its kernels, after HUB_CULL_TIMEOUT: a longer kernel timeout would only let a
    # forgotten kernel in a server still in use hold its GPU memory longer than a whole idle server may.
    if settings.kernel_idle > settings.cull_timeout:
        raise HubConfigError(f"HUB_KERNEL_IDLE_TIMEOUT={settings.kernel_idle} is more than "
                             f"HUB_CULL_TIMEOUT={settings.cull_timeout}: idle kernels would outlive idle servers "
                             f"(0 turns their shutdown off)")
    return settings
