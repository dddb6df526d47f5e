"""Every setting of the team hub, read from HUB_* environment variables (hub.mk passes make
variables of the same names) and checked once, before anything starts: a bad value is one line
naming the variable (HubConfigError), exit 2. The one home of the names and defaults; docs/hub.md
lists them. Standard library only, so the host tools' venv (tests, linters) imports it too."""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from compose import gpus, limits, memlock
from hub import REPO, tls

HUB_DIR = REPO / "hub"
EXIT_CONFIG = 2
# The labels the hub puts on what it makes, here because ctl (no dockerspawner) and spawner both import settings.
HUB_LABEL = "io.tf29-env.hub"  # its network
PROFILE_LABEL = f"{HUB_LABEL}.profile"  # a server's container: its profile's name
SSH_PORT_LABEL = f"{HUB_LABEL}.ssh-port"  # the host port of its SSH, when it has one
GPUS_LABEL = f"{HUB_LABEL}.gpus"  # the GPU or MIG ids it holds, comma-separated
USER_LABEL = f"{HUB_LABEL}.user"  # the hub user's name, as they signed up (the container's name escapes it)

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
# HUB_TEAM_DATA: where it appears, read-only, in every server; HUB_TEAM_SHARED: writable.
TEAM_DATA_MOUNT = "/home/jovyan/data"
TEAM_SHARED_MOUNT = "/home/jovyan/shared"
# HUB_GPU_MEMORY_MB: the key of the budget of every GPU profile not named, and the largest budget
# taken (1 TiB: more than any GPU has; a typo of a few digits is refused).
GPU_MEMORY_DEFAULT = "*"
GPU_MEMORY_MAX_MB = 1 << 20
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
    team_data: str = ""  # a host folder (absolute) or a named volume, read-only in every server; "": none
    team_shared: str = ""  # the same, writable by every server (HUB_TEAM_SHARED)
    # (profile or GPU_MEMORY_DEFAULT, MiB): the servers' GPU_MEMORY_LIMIT_MB (HUB_GPU_MEMORY_MB)
    gpu_memory: tuple[tuple[str, int], ...] = ()
    tls: str = tls.TLS_AUTO
    ssl_cert: Path | None = None  # the admin's certificate and key (HUB_SSL_CERT, HUB_SSL_KEY)
    ssl_key: Path | None = None

    @property
    def gpu_ids(self) -> tuple[str, ...]:
        """The IDs HUB_GPUS lists (none for auto and none)."""
        return () if self.gpus in (GPUS_AUTO, GPUS_NONE) else tuple(self.gpus.split(","))

    @property
    def tls_files(self) -> tuple[Path, Path] | None:
        """The certificate and key the proxy serves HTTPS with (the admin's, or the hub's own in its
        state folder); None: plain HTTP (loopback, or HUB_TLS=off)."""
        if self.ssl_cert and self.ssl_key:
            return self.ssl_cert, self.ssl_key
        if self.tls == tls.TLS_SELF_SIGNED or (self.tls == tls.TLS_AUTO and not tls.is_loopback(self.address)):
            return tls.cert_file(self.state_dir), tls.key_file(self.state_dir)
        return None

    @property
    def proxy_tls_args(self) -> tuple[str, ...]:
        """configurable-http-proxy's options that make it serve HTTPS."""
        return ("--ssl-cert", str(self.tls_files[0]), "--ssl-key", str(self.tls_files[1])) if self.tls_files else ()

    @property
    def scheme(self) -> str:
        return "https" if self.tls_files else "http"

    @property
    def public_url(self) -> str:
        return f"{self.scheme}://{url_host(self.address)}:{self.port}/"

    @property
    def local_url(self) -> str:
        """The proxy as this host reaches it (a wildcard address is served on loopback too)."""
        host = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(self.address, self.address)  # noqa: S104 - a comparison
        return f"{self.scheme}://{url_host(host)}:{self.port}/"

    def gpu_memory_mb(self, profile: str) -> int:
        """PROFILE's budget in MiB (HUB_GPU_MEMORY_MB: its own, `mig` for a mig-PROFILE, the default); 0: none."""
        budgets = dict(self.gpu_memory)
        keys = [profile, MIG_PROFILES] if profile.startswith(MIG_PREFIX) else [profile]
        return next((budgets[key] for key in (*keys, GPU_MEMORY_DEFAULT) if key in budgets), 0)


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


def _team_data(name: str, value: str) -> str:
    """A host folder (a value with a /: made absolute) or a Docker volume's name."""
    if not value:
        return ""
    if "/" in value:
        return str(Path(value).absolute())
    if not _DOCKER_NAME.fullmatch(value):
        raise HubConfigError(f"{name}={value!r} is neither a folder (a path with a /) nor a Docker volume's name")
    return value


def _gpu_memory(name: str, value: str) -> tuple[tuple[str, int], ...]:
    """MiB per GPU profile: `8192` (every GPU profile), `gpu1=8192 gpu2=16384`, or both (`4096 gpu2=16384`)."""
    budgets: dict[str, int] = {}
    for entry in value.replace(",", " ").split():
        profile, sep, mib = entry.rpartition("=")
        key = profile if sep else GPU_MEMORY_DEFAULT
        if sep and (key not in PROFILES and key != MIG_PROFILES and not _MIG_PROFILE.fullmatch(key)):
            raise HubConfigError(f"{name}: {key!r} is not a profile of HUB_PROFILES (gpu1, gpu2, mig, mig-PROFILE)")
        if sep and PROFILES.get(key, ("", 1))[1] == 0:
            raise HubConfigError(f"{name}: the {key} profile has no GPU to budget")
        if not mib.isdigit() or not 1 <= int(mib) <= GPU_MEMORY_MAX_MB:
            raise HubConfigError(f"{name}: {entry!r} is not a whole number of MiB from 1 to {GPU_MEMORY_MAX_MB} "
                                 "(e.g. 8192, or gpu1=8192 gpu2=16384)")
        if key in budgets:
            raise HubConfigError(f"{name} gives {'a default' if key == GPU_MEMORY_DEFAULT else key} twice")
        budgets[key] = int(mib)
    return tuple(budgets.items())


def _tls(values: Mapping[str, str]) -> tuple[str, Path | None, Path | None]:
    """HUB_TLS, HUB_SSL_CERT and HUB_SSL_KEY, checked against one another (their files: check_host)."""
    mode = _choice("HUB_TLS", values["HUB_TLS"] or tls.TLS_AUTO, tls.TLS_MODES)
    cert, key = values["HUB_SSL_CERT"], values["HUB_SSL_KEY"]
    if bool(cert) != bool(key):
        given, missing = ("HUB_SSL_CERT", "HUB_SSL_KEY") if cert else ("HUB_SSL_KEY", "HUB_SSL_CERT")
        raise HubConfigError(f"{given} is given without {missing}: HTTPS needs both, the certificate and its key")
    if cert and mode != tls.TLS_AUTO:
        raise HubConfigError(f"HUB_TLS={mode} and HUB_SSL_CERT are both given: choose one")
    return mode, Path(cert).absolute() if cert else None, Path(key).absolute() if key else None


def check_host(team: Settings) -> None:
    """The files the settings name, as this host has them now (ctl up, before anything starts): the
    team data folder readable, the admin's certificate and key a valid pair. HubConfigError."""
    for name, value, access, what in (("HUB_TEAM_DATA", team.team_data, os.R_OK | os.X_OK, "readable"),
                                      ("HUB_TEAM_SHARED", team.team_shared, os.R_OK | os.W_OK | os.X_OK, "writable")):
        if value.startswith("/"):
            if not Path(value).is_dir():
                raise HubConfigError(f"{name}={value} is not a folder on this host")
            if not os.access(value, access):
                raise HubConfigError(f"{name}={value} is not {what} here (its mode or owner)")
    if team.ssl_cert and team.ssl_key:
        try:
            tls.check_pair(team.ssl_cert, team.ssl_key)
        except tls.TlsError as exc:
            raise HubConfigError(str(exc)) from None


def prepare_tls(team: Settings) -> list[str]:
    """Make the hub's own certificate when it serves one and has none yet (the state folder exists):
    the lines to print, the certificate's fingerprint last, so members can check what they are shown."""
    files = team.tls_files
    if files is None:
        return []
    lines = []
    try:
        if files[0] == tls.cert_file(team.state_dir) and tls.ensure_self_signed(team.state_dir, team.address):
            lines.append(f"made the hub's self-signed certificate: {files[0]} (key: {files[1]}, mode 600)")
        lines.append(fingerprint_line(files[0]))
    except tls.TlsError as exc:
        raise HubConfigError(f"{exc} (remove {files[0]} and its key to make a new one)"
                             if files[0] == tls.cert_file(team.state_dir) else str(exc)) from None
    return lines


def fingerprint_line(cert: Path) -> str:
    return f"HTTPS certificate SHA-256 fingerprint: {tls.fingerprint(cert)}"


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
    tls_mode, ssl_cert, ssl_key = _tls({name: get(name, "") for name in ("HUB_TLS", "HUB_SSL_CERT", "HUB_SSL_KEY")})
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
        team_data=_team_data("HUB_TEAM_DATA", get("HUB_TEAM_DATA", "")),
        team_shared=_team_data("HUB_TEAM_SHARED", get("HUB_TEAM_SHARED", "")),
        gpu_memory=_gpu_memory("HUB_GPU_MEMORY_MB", get("HUB_GPU_MEMORY_MB", "")),
        tls=tls_mode,
        ssl_cert=ssl_cert,
        ssl_key=ssl_key,
    )
    if settings.backup_dir == settings.state_dir or settings.state_dir in settings.backup_dir.parents:
        raise HubConfigError(f"HUB_BACKUP_DIR={settings.backup_dir} lies in HUB_STATE_DIR: the state's snapshot "
                             "would hold the snapshots; choose a folder outside it")
    if settings.team_data and settings.team_data == settings.team_shared:
        raise HubConfigError(f"HUB_TEAM_DATA and HUB_TEAM_SHARED are both {settings.team_data}: one folder cannot be "
                             "read-only and writable")
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
