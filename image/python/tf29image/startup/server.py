"""Planning steps for the programs the services start: the server's command line (start_jupyter runs it as
the dev user), the folder it opens and what it says as it starts, and sshd's keys and options (prepare_ssh).
Standard library only, run by the distro's python3 -I (3.8 or newer).
"""

import re
from dataclasses import dataclass
from typing import List, Tuple  # python 3.8: no list[...]

from tf29image.healthcheck import SSHD_CONFIG, sshd_path
from tf29image.startup.services import Listening, Login, Mode, RunDirs
from tf29image.startup.settings import Settings
from tf29image.startup.system import System
from tf29image.startup.values import HUB, Refused

# The server options that name the folder it serves (and its terminals start in).
ROOT_DIR_OPTIONS = ("--ServerApp.root_dir", "--ServerApp.notebook_dir", "--NotebookApp.notebook_dir", "--notebook-dir")
# The culler looks at half the timeout, at most every 5 minutes, so an idle kernel goes within 1.5 times it.
CULL_INTERVAL_MAX = 300
# sshd's run directory, as ssh/sshd_config names it (its PidFile's folder), and the files in it that prepare_ssh
# writes: the keys (AuthorizedKeysFile) and the environment's SetEnv line (Include).
SSHD_DIR = str(sshd_path("PidFile").parent)
SSHD_KEYS_FILE, SSHD_ENV_FILE = str(sshd_path("AuthorizedKeysFile")), str(sshd_path("Include"))
HOST_KEY_TYPES = ("ed25519", "rsa")


def kernel_culling(timeout: int) -> List[str]:
    """Jupyter Server's own culler for KERNEL_IDLE_TIMEOUT: idle kernels go, connected or not (an open tab
    holds GPU memory as much as a forgotten one), busy ones never."""
    if timeout == 0:
        return []
    return [f"--MappingKernelManager.cull_idle_timeout={timeout}",
            f"--MappingKernelManager.cull_interval={max(1, min(CULL_INTERVAL_MAX, timeout // 2))}",
            "--MappingKernelManager.cull_connected=True", "--MappingKernelManager.cull_busy=False"]


@dataclass(frozen=True)
class ServerPlan:
    """The server's command line, the folder it starts in (where its terminals open), and what start_jupyter
    says as it starts (last, where `docker logs` ends): how to log in."""

    command: Tuple[str, ...]
    folder: str
    notes: Tuple[str, ...]


def plan_server(settings: Settings, mode: Mode, server_args: Tuple[str, ...], login: Login, port: int,
                port_retries: int, run: RunDirs, listening: Listening, home: str) -> ServerPlan:
    """Traitlets refuses an option given twice, so an image option that an extra argument names again is
    dropped; the extra arguments come last. Jupyter refuses root without allow_root (the root triplet)."""
    extra = list(server_args)
    if settings.triplet and not any(arg.startswith("--ServerApp.allow_root=") or arg == "--allow-root"
                                    for arg in extra):
        extra.insert(0, "--ServerApp.allow_root=True")
    if mode.name == HUB:
        # jupyterhub-singleuser reads the hub's login, port and prefix from the environment.
        own = ["jupyterhub-singleuser"]
        if not settings.hub_root_dir:
            own.append(f"--ServerApp.root_dir={home}")
    else:
        own = lab_args(settings, login, port, port_retries, run, listening, home)
    # No network calls from a server that often has none: no update checks, no news feed.
    own += ["--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate", "--LabApp.news_url=None"]
    own += kernel_culling(settings.kernel_idle)
    named = {arg.split("=", 1)[0] for arg in extra if arg.startswith("--")}
    command = [arg for arg in own if not (arg.startswith("--") and arg.split("=", 1)[0] in named)] + extra
    folder = settings.hub_root_dir or home
    for arg in command:
        name, _, value = arg.partition("=")
        if name in ROOT_DIR_OPTIONS:
            folder = value
    return ServerPlan(tuple(command), folder, tuple(server_notes(settings, mode, login, port)))


def server_notes(settings: Settings, mode: Mode, login: Login, port: int) -> List[str]:
    if mode.name == HUB:
        user = settings.hub_user or "its user"
        return [f"hub mode: JupyterHub's single-user server for {user} on port {port} under {login.base_url}; "
                "the hub's login is the only one (JUPYTER_PORT and JUPYTER_BASE_URL do not apply)"]
    if settings.no_auth:
        return [f"WARNING: JUPYTER_INSECURE_NO_AUTH=1: JupyterLab accepts anyone who reaches port {port} as "
                f"{' '.join(login.allowed_hosts)}, localhost or a loopback address, with no token or password"]
    if not login.token_generated or settings.apptainer:
        return []  # under Apptainer the ssh -L line says how (apptainer.py announce)
    page = {"server": "", "notebook": "tree"}.get(settings.jupyter_app, "lab")  # the app's default page
    scheme = "https" if settings.gen_cert or settings.cert_file else "http"
    return ["JupyterLab token (generated; set JUPYTER_TOKEN or JUPYTER_TOKEN_FILE to choose one): "
            f"{scheme}://127.0.0.1:{port}{login.base_url}{page}?token={login.token}"]


def lab_args(settings: Settings, login: Login, port: int, port_retries: int, run: RunDirs, listening: Listening,
             home: str) -> List[str]:
    args = [
        "jupyter", settings.jupyter_app, f"--ServerApp.ip={listening.ip}", f"--ServerApp.port={port}",
        f"--ServerApp.port_retries={port_retries}",  # 0 but for a port the plan chose under Apptainer
        "--ServerApp.open_browser=False", f"--ServerApp.root_dir={home}", f"--ServerApp.base_url={login.base_url}",
    ]
    if settings.gen_cert or settings.cert_file:  # made by make_certificate, or copied by copy_certificate
        args += [f"--ServerApp.certfile={run.cert_file}", f"--ServerApp.keyfile={run.key_file}"]
    # The token goes in the server's environment (start_jupyter), never argv: ps shows argv to all.
    if settings.no_auth:
        args += ["--IdentityProvider.token=", "--PasswordIdentityProvider.hashed_password="]
    else:
        if not login.token:
            args.append("--IdentityProvider.token=")
        if login.password_hash:
            args.append(f"--PasswordIdentityProvider.hashed_password={login.password_hash}")
    # Jupyter drops its DNS-rebinding check when listening on every address; this keeps it.
    if login.allowed_hosts:
        args += ["--ServerApp.allow_remote_access=False", "--ServerApp.local_hostnames=localhost",
                 *[f"--ServerApp.local_hostnames={host}" for host in login.allowed_hosts]]
    return args


def host_keys(settings: Settings) -> Tuple[str, ...]:
    """The host keys prepare_ssh finds or makes, named by their type (check_host_key_dir looks for them first)."""
    return tuple(f"{settings.host_key_dir}/ssh_host_{kind}_key" for kind in HOST_KEY_TYPES)


@dataclass(frozen=True)
class SshdPlan:
    """The keys as sshd reads them (without the CRs a Windows editor leaves; prepare_ssh writes them so), how
    many there are, and sshd's options, with the host keys; the login is the fitted NB_USER's."""

    keys: str
    key_count: int
    args: Tuple[str, ...]


def plan_sshd(settings: Settings, keys: str, listening: Listening, system: System) -> SshdPlan:
    keys = keys.replace("\r", "")
    source = "SSH_AUTHORIZED_KEYS_FILE" if settings.ssh_keys_file else "SSH_AUTHORIZED_KEYS"
    status, report = system.check_public_keys(keys + "\n")
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
    args = ("-D", "-e", "-f", str(SSHD_CONFIG), "-p", str(settings.ssh_port), "-o", f"AllowUsers={settings.user}",
            "-o", f"AddressFamily={listening.sshd_family}",
            *[arg for key in host_keys(settings) for arg in ("-h", key)])
    return SshdPlan(keys, count, args)
