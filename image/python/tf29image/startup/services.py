"""Planning steps for what runs and where it listens: the mode, the run directory, the addresses, the
server's options, Jupyter's login (or the hub's), SSH's keys, the ports and the Apptainer mode. Each
is a function of the Settings, the System and the records earlier steps gave it, returning a frozen
record or Refused. Standard library only, run by the distro's python3 -I (3.8 or newer).
"""

import re
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple  # python 3.8: no list[...]

from tf29image.healthcheck import SERVICES as SERVICES_FILE
from tf29image.healthcheck import per_run_path
from tf29image.startup import apptainer, tls
from tf29image.startup.settings import Settings
from tf29image.startup.system import Mounts, System
from tf29image.startup.values import COMMAND, FILE_LIMITS, HUB, SERVICES, Refused

SCRATCH = "/tmp"  # noqa: S108 - checked, not written
# The container's IPv6 addresses: its loopback ::1 is there exactly when IPv6 is on (switching it off
# takes every IPv6 address away). Docker turns IPv6 on for an IPv6 network, Kubernetes on a
# dual-stack cluster; elsewhere it is off, the normal case and no warning's worth.
IF_INET6 = "/proc/net/if_inet6"
IPV6_LOOPBACK = "00000000000000000000000000000001 "
# The container's commands that name a mode (docker-stacks' start commands, as dockerstacks/start_command.py
# links them, and the hub's): a path counts by its name.
HUB_COMMANDS = ("jupyterhub-singleuser", "start-singleuser.sh", "start-singleuser.py")
NOTEBOOK_COMMANDS = ("start-notebook.sh", "start-notebook.py")
COMMAND_WRAPPER = "start.sh"
SERVER_AUTH_ARG = re.compile(r"--?[A-Za-z]*\.?(token|password|hashed_password)(=|$)")


@dataclass(frozen=True)
class Mode:
    """The services (JupyterLab and sshd), the hub's single-user server, or a command; ARGS for the server."""

    name: str  # SERVICES, HUB or COMMAND
    server_args: Tuple[str, ...] = ()  # a start command's ARGS
    command: Tuple[str, ...] = ()  # the command mode's words


def plan_mode(args: Sequence[str], hub_token: bool) -> Mode:
    """The mode, from the container's command; HUB_TOKEN: JupyterHub's spawner started this."""
    if not args:
        return Mode(HUB if hub_token else SERVICES)
    name = args[0].rsplit("/", 1)[-1]
    if name in HUB_COMMANDS:
        return Mode(HUB, tuple(args[1:]))
    if name in NOTEBOOK_COMMANDS:
        return Mode(HUB if hub_token else SERVICES, tuple(args[1:]))
    if name == COMMAND_WRAPPER:
        if len(args) < 2:
            raise Refused("start.sh needs a command to run (start.sh CMD [ARGS]); without one, give no command at all")
        return Mode(COMMAND, command=tuple(args[1:]))
    return Mode(COMMAND, command=tuple(args))


# /tmp is writable: HOME when the root file system is read-only (make_scratch_home), JupyterLab's kernels, Python.
# Checked first, in every mode; the message quotes no setting, so it cannot quote a runaway value.
def check_scratch(system: System, mounts: Mounts, euid: int) -> None:
    if not system.writable(SCRATCH):
        raise Refused(f"{SCRATCH} is not writable{mounts.why_not_writable(SCRATCH, euid, system)}: mount a tmpfs there "
                      f"(--tmpfs {SCRATCH})")


@dataclass(frozen=True)
class RunDirs:
    """The run directory (the image's, or this run's own) and Jupyter's runtime folder in it."""

    image_run_dir: str
    run_dir: str
    per_run: bool  # this run's own, under TMPDIR or /tmp, which prepare_run_dir makes and removes
    runtime_dir: str

    @property
    def services_file(self) -> str:
        return f"{self.run_dir}/{SERVICES_FILE}"

    @property
    def cert_file(self) -> str:  # GEN_CERT's certificate and key (made by make_certificate)
        return f"{self.runtime_dir}/tf29-env-cert.pem"

    @property
    def key_file(self) -> str:
        return f"{self.runtime_dir}/tf29-env-key.pem"


# The run directory: runtime state the healthcheck and the self-check read too. Its one home is the
# Dockerfile's `ENV TFENV_RUN_DIR`, which every reader takes from the environment (exec probes get the
# image's ENV too). Where it cannot be written (Apptainer's read-only image; --read-only --tmpfs /run
# --user UID, whose /run is root's), the run has one of its own under TMPDIR or /tmp (a node's /tmp is
# shared under Apptainer). Root keeps the image's: sshd needs /run anyway.
def plan_run_dirs(settings: Settings, system: System, euid: int, pid: int) -> RunDirs:
    image_run_dir = run_dir = settings.run_dir
    parent = image_run_dir.rsplit("/", 1)[0] or "/"
    usable = system.exists(run_dir) and system.is_dir(run_dir) and system.writable(run_dir)
    makeable = not system.exists(run_dir) and system.writable(parent)
    per_run = settings.apptainer or (euid != 0 and not usable and not makeable)
    runtime_dir = settings.runtime_dir
    if per_run:
        run_dir = str(per_run_path(settings.tmpdir, euid, pid))
        if runtime_dir == f"{image_run_dir}/jupyter":  # the image's default follows; one set by -e stays
            runtime_dir = ""
    # Jupyter's own variable, fixed from here on, for Jupyter, the healthcheck and SSH.
    return RunDirs(image_run_dir, run_dir, per_run, runtime_dir or f"{run_dir}/jupyter")


@dataclass(frozen=True)
class Listening:
    """The addresses Jupyter and sshd listen on: IPv4, and IPv6 where the container has it. Jupyter's
    ServerApp.ip empty is "every address" (tornado opens 0.0.0.0 and ::), where "::" alone would be IPv6
    only; sshd's AddressFamily is any or inet."""

    ip: str
    sshd_family: str


def plan_listening(system: System) -> Listening:
    ipv6 = any(line.startswith(IPV6_LOOPBACK) for line in (system.read_file(IF_INET6) or "").splitlines())
    return Listening("" if ipv6 else "0.0.0.0", "any" if ipv6 else "inet")  # noqa: S104


def plan_self_check(system: System) -> str:
    """The self-check's mode: SELF_CHECK's modes have one owner, the self-check (which reads it when run by hand)."""
    status, answer = system.self_check_mode()
    if status == 2:
        raise Refused(answer[len("selfcheck: "):] if answer.startswith("selfcheck: ") else answer)
    if status != 0:
        raise Refused(f"SELF_CHECK: the self-check could not say which mode it sets (exit {status}): {answer}")
    return answer


def plan_server_args(settings: Settings, mode: Mode, system: System) -> Tuple[str, ...]:
    """docker-stacks' options for the server: its app, NOTEBOOK_ARGS first, then the start command's own (as
    start-notebook.py and start-singleuser.py put them), and GEN_CERT where there is a server to take it."""
    if settings.jupyter_app == "notebook" and mode.name == SERVICES and not system.has_command("jupyter-notebook"):
        raise Refused("DOCKER_STACKS_JUPYTER_CMD=notebook: the notebook package (Jupyter Notebook 7) is not in this "
                      "image; use lab or server, or add it (pip install notebook) in an image built FROM this one")
    if settings.gen_cert and mode.name == HUB:
        raise Refused(f"GEN_CERT={settings.text('GEN_CERT')}: in the hub mode the hub decides whether its servers "
                      "speak HTTPS (JupyterHub's internal_ssl); unset GEN_CERT")
    if settings.gen_cert and mode.name == SERVICES and not settings.jupyter:
        raise Refused(f"GEN_CERT={settings.text('GEN_CERT')} with ENABLE_JUPYTER=0: there is no Jupyter server to "
                      "give a certificate; drop one of them")
    plan_certificate(settings, mode, system)
    args = settings.notebook_args + mode.server_args if mode.name != COMMAND else ()
    # Extra args for the server are on its command line, which every process reads in ps.
    for arg in args:
        if SERVER_AUTH_ARG.match(arg):
            raise Refused(f"the server's argument '{arg.split('=', 1)[0]}': Jupyter's token and password are set "
                          "with JUPYTER_TOKEN_FILE, JUPYTER_TOKEN or JUPYTER_PASSWORD_HASH (docs/settings.md), "
                          "never on the command line, where every process can read them")
    return args


def plan_certificate(settings: Settings, mode: Mode, system: System) -> None:
    """JUPYTER_CERT_FILE and JUPYTER_KEY_FILE: both or neither, not with GEN_CERT, and a pair Jupyter can
    serve (tls.py). Checked as the planner's user, which root is: the entrypoint copies them for the dev user."""
    cert, key = settings.cert_file, settings.key_file
    if not cert and not key:
        return
    if not (cert and key):
        names = ("JUPYTER_CERT_FILE", "JUPYTER_KEY_FILE")
        given, missing = names if cert else names[::-1]
        raise Refused(f"{given} is set but {missing} is not: give both (the certificate and its private key, PEM) "
                      "or neither")
    if settings.gen_cert:
        raise Refused(f"GEN_CERT={settings.text('GEN_CERT')} and JUPYTER_CERT_FILE are both set: GEN_CERT makes a "
                      "self-signed certificate, JUPYTER_CERT_FILE gives one; drop one of them")
    if mode.name == HUB:
        raise Refused("JUPYTER_CERT_FILE is set, but in the hub mode the hub decides whether its servers speak HTTPS "
                      "(JupyterHub's internal_ssl); unset JUPYTER_CERT_FILE and JUPYTER_KEY_FILE")
    if mode.name == SERVICES and not settings.jupyter:
        raise Refused("JUPYTER_CERT_FILE with ENABLE_JUPYTER=0: there is no Jupyter server to give a certificate; "
                      "drop one of them")
    texts = []
    for name, path in (("JUPYTER_CERT_FILE", cert), ("JUPYTER_KEY_FILE", key)):
        if not path.startswith("/"):
            raise Refused(f"{name}='{path}' must be an absolute path in the container")
        texts.append(read_file_setting(name, path, system, " (mount it, e.g. as a secret)"))
    problem = tls.pem_problem(texts[0], texts[1], cert, key) or system.certificate_problem(cert, key)
    if problem:
        raise Refused(problem)


def read_file_setting(name: str, path: str, system: System, hint: str = "") -> str:
    """The text of the file a *_FILE setting names, within its size limit (FILE_LIMITS)."""
    found = system.file_size(path)
    if found is not None and found > FILE_LIMITS[name]:
        raise Refused(f"{name}={path}: the file is {found} bytes; at most {FILE_LIMITS[name]}")
    text = system.read_file(path)
    if text is None:
        raise Refused(f"{name}={path}: no such readable file{hint}")
    return text


def read_secret(name: str, value: str, file_name: str, path: str, system: System) -> str:
    """VALUE, or the contents of the file PATH (FILE_NAME's; trailing newlines dropped)."""
    if not path:
        return value
    if value:
        raise Refused(f"{name} and {file_name} are both set: set one")
    content = read_file_setting(file_name, path, system).replace("\0", "").rstrip("\n")
    if not content.strip():
        raise Refused(f"{file_name}={path}: the file is empty")
    return content


@dataclass(frozen=True)
class Login:
    """Where the server listens and how one logs in: a token (given, from a file, or generated) and/or a
    hashed password, or none with JUPYTER_INSECURE_NO_AUTH=1; in the hub mode, the hub's login only."""

    port: int
    base_url: str
    token: str = ""
    token_generated: bool = False
    password_hash: str = ""
    allowed_hosts: Tuple[str, ...] = ()
    report_port: bool = False  # report_port_to_hub tells batchspawner's hub the port it waits for


def plan_login(settings: Settings, mode: Mode, system: System) -> Login:
    if mode.name == HUB:
        return plan_hub_login(settings)
    token = read_secret("JUPYTER_TOKEN", settings.jupyter_token, "JUPYTER_TOKEN_FILE", settings.jupyter_token_file,
                        system)
    shown = "JUPYTER_TOKEN_FILE" if settings.jupyter_token_file else "JUPYTER_TOKEN"
    if settings.jupyter_token_file and len(token) > 1024:
        raise Refused(f"JUPYTER_TOKEN_FILE={settings.jupyter_token_file}: the token is {len(token)} characters long; "
                      "at most 1024")
    if not all(char.isprintable() and not char.isspace() for char in token):
        raise Refused(f"{shown}: the token contains spaces or control characters")
    # The token is the whole login and Jupyter takes any length: a chosen one must not be guessable.
    if token and len(token) < 16:
        raise Refused(f"{shown}: the token is {len(token)} characters long; at least 16 (make one with: "
                      "openssl rand -hex 24)")
    generated = False
    if settings.no_auth:
        if token or settings.password_hash:
            raise Refused("JUPYTER_INSECURE_NO_AUTH=1 together with a token or password: drop one of them")
        # Without auth the Host check is all that keeps a web page out (DNS rebinding).
        if not settings.allowed_hosts:
            raise Refused("JUPYTER_INSECURE_NO_AUTH=1 needs JUPYTER_ALLOWED_HOSTS, the host names JupyterLab is "
                          "reached by (e.g. the proxy's jupyter.example.com, or localhost): without auth, any other "
                          "name could be a web page's, through DNS rebinding")
    elif not token and not settings.password_hash:
        token, generated = system.new_token(), True
    return Login(settings.jupyter_port, settings.base_url, token, generated, settings.password_hash,
                 settings.allowed_hosts)


# 12: the hub mode's settings, from the hub's spawner; the hub's login is the only one.
def plan_hub_login(settings: Settings) -> Login:
    if not settings.hub_token + settings.jpy_token:
        raise Refused("the hub mode (command jupyterhub-singleuser or start-singleuser) needs JUPYTERHUB_API_TOKEN, "
                      "which JupyterHub's spawner sets: start it from a hub, or give no command for the standalone "
                      "JupyterLab")
    for name in ("JUPYTER_TOKEN", "JUPYTER_TOKEN_FILE", "JUPYTER_PASSWORD_HASH", "JUPYTER_ALLOWED_HOSTS"):
        if settings.text(name):
            raise Refused(f"{name} is set, but in the hub mode the hub's login is the only one: unset {name} (it "
                          "applies to the standalone JupyterLab)")
    if settings.no_auth:
        raise Refused("JUPYTER_INSECURE_NO_AUTH=1 in the hub mode, where the hub's login is the only one: unset it")
    if not settings.jupyter:
        raise Refused("ENABLE_JUPYTER=0 in the hub mode, which exists to run the hub's single-user server: unset it")
    if settings.hub_url is None:
        raise Refused("JUPYTERHUB_SERVICE_URL is not set: the hub mode needs it from the hub's spawner (JupyterHub 2 "
                      "or later sets it)")
    port = settings.hub_url.port
    return Login(port, settings.hub_prefix, report_port=port == 0)  # 0: Apptainer's (values.hub_url)


def plan_ssh_keys(settings: Settings, system: System) -> str:
    return read_secret("SSH_AUTHORIZED_KEYS", settings.ssh_keys, "SSH_AUTHORIZED_KEYS_FILE", settings.ssh_keys_file,
                       system)


def check_something_runs(settings: Settings, ssh_could_start: bool) -> None:
    if not settings.jupyter and not ssh_could_start:
        raise Refused("ENABLE_JUPYTER=0 and no SSH to start (that needs ENABLE_SSH=1, root and a key): nothing to run")


# What would otherwise fail only once the services start: two services on one port, or JupyterLab
# (never root) on a port that only root may listen on. The answer: the lowest port anyone may use.
def check_ports(settings: Settings, mode: Mode, login: Login, ssh_could_start: bool, system: System) -> int:
    port_name, server, shown = "JUPYTER_PORT", "JupyterLab", settings.text("JUPYTER_PORT") or str(login.port)
    if mode.name == HUB and settings.hub_url:
        port_name, server = "JUPYTERHUB_SERVICE_URL's port", "JupyterHub's single-user server"
        shown = settings.hub_url.port_text
    floor = system.unprivileged_port_start()
    # Listening below it takes NET_BIND_SERVICE (privileges.py); Docker sets it to 0, most other runtimes do not.
    if settings.jupyter and ssh_could_start and login.port == settings.ssh_port:
        raise Refused(f"{port_name}={shown} and SSH_PORT={settings.text('SSH_PORT') or settings.ssh_port}: {server} "
                      "and sshd cannot listen on the same port; change one of them")
    if settings.jupyter and floor is not None and login.port < floor:
        raise Refused(f"{port_name}={shown}: {server} runs as {settings.user}, never root, and here only root may "
                      f"listen below port {floor} (net.ipv4.ip_unprivileged_port_start); use {floor} or above and "
                      "publish it as any port (-p 80:8888)")
    return 1024 if floor is None else floor


@dataclass(frozen=True)
class Apptainer:
    """The Apptainer mode (apptainer.py says what it is): the host's Python kept or not,
    and the port on a node whose other users' servers share it (startup/apptainer.py)."""

    port: Optional[int] = None  # None: the port planned before stands
    port_retries: int = 0
    hub_url: str = ""  # JUPYTERHUB_SERVICE_URL with the port chosen, for batchspawner's hub's port 0


def plan_apptainer(settings: Settings, mode: Mode, login: Login, mounts: Mounts, system: System,
                   euid: int) -> Apptainer:
    if euid == 0:
        raise Refused("Apptainer runs this image as the calling user, but this start runs as uid 0 (--fakeroot?): "
                      "drop --fakeroot, nothing here needs root")
    home = settings.home
    if not (len(home) > 1 and home.startswith("/") and system.is_dir(home)):
        raise Refused(f"HOME='{home}' is not a folder: Apptainer mounts your home there; run without --no-home, "
                      "or give one with --home DIR")
    if mode.name == COMMAND:
        return Apptainer()
    if not system.writable(home):
        raise Refused(f"HOME={home} is not writable{mounts.why_not_writable(home, euid, system)}: JupyterLab keeps "
                      "your notebooks, its settings and the kernels' files there; give Apptainer a writable home "
                      "(--home DIR)")
    if not ((mode.name == SERVICES and settings.jupyter) or login.report_port):
        return Apptainer()
    asked = str(settings.jupyter_port) if settings.text("JUPYTER_PORT") else None
    try:
        port, retries = apptainer.plan_port(asked, system.port_free)
    except apptainer.Refused as refused:
        raise Refused(str(refused)) from None
    if not login.report_port or settings.hub_url is None:
        return Apptainer(port, retries)
    # batchspawner's hub gave port 0 and waits to be told the port (report_port_to_hub tells it);
    # jupyterhub-singleuser binds the one in JUPYTERHUB_SERVICE_URL, so that one is it (no retries).
    url = settings.hub_url.url
    match = re.fullmatch(r"(https?://[^/]*):0+(/.*)?", url)
    if match:
        url = f"{match.group(1)}:{port}{match.group(2) or ''}"
    return Apptainer(port, 0, url)
