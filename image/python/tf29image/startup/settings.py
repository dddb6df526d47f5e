"""Every variable the entrypoint reads, in one table (name, default, length limit, help), parsed once
into a frozen Settings: each value checked on its own and given its type. docs/settings.md's tables
are rendered from the same table (settings_docs.py).

A bad value is Refused, with the one line that names it. Checks that combine settings with the
mode, the user's ids or the system are the planning steps' (startup/plan.py and its modules).
Standard library only, run by the distro's python3 -I (3.8 or newer).
"""

import re
from dataclasses import dataclass, field
from typing import Any, Dict, Optional, Tuple  # python 3.8: no list[...]

from tf29image.jobs.store import STOP_GRACE_DEFAULT
from tf29image.startup import environ
from tf29image.startup.values import (
    ALWAYS,
    APPTAINER,
    APPTAINER_SERVER,
    HUB_ONLY,
    ID,
    KEYS,
    LIST,
    MIB,
    MODE,
    NAME,
    OPTIONS,
    PATH,
    PORT,
    PORT_SCOPE,
    SECONDS,
    SECRET,
    STANDALONE,
    SWITCH,
    URL,
    URL_PATH,
    Context,
    HubUrl,
    Kind,
    Parser,
    Refused,
    absolute,
    allowed_hosts,
    applies,
    as_given,
    base_url,
    chown_extra,
    chown_options,
    gid,
    gpu_memory_limit,
    group_name,
    hub_url,
    jupyter_app,
    kernel_idle,
    login_host,
    names_to_unset,
    password_hash,
    port,
    server_words,
    stop_grace,
    switch,
    team_gid,
    uid,
    umask,
    url_path,
    user_name,
)

# --- the table --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Setting:
    """One variable: NAME in the environment, ATTRIBUTE of Settings ("": documented, not read by the
    planner), its DEFAULT (an empty value counts as unset), its KIND (the length limit; None: not limited),
    PARSE (checks the value, gives it its type), HELP (docs/settings.md's Meaning; "" shares the row
    above), where it applies (SCOPE), whether the image's ENV must set it (REQUIRED), and how the docs
    show its name and default where they are not `NAME` and `DEFAULT`."""

    name: str
    attribute: str
    default: str = ""
    kind: Optional[Kind] = None
    parse: Parser = as_given
    help: str = ""
    scope: str = ALWAYS
    required: bool = False
    shown_name: str = ""
    shown_default: Optional[str] = None


def doc(shown_name: str, default: str, text: str) -> Setting:
    """A row of the docs that the planner does not read: set for the image, its Python or CUDA."""
    return Setting(shown_name.strip("`"), "", help=text, shown_name=shown_name, shown_default=default)


# What a start is given, in the order each is checked (the first bad one is the one named) and documented.
USER_SETTINGS: Tuple[Setting, ...] = (
    Setting("NB_UID", "uid", "", ID, uid, (
        'uid/gid of `jovyan`, fitted at start (root only), so files in bind mounts belong to your host '
        "account. The image's own files in the home folder follow; bind-mounted folders are never chowned "
        "(but see below). `NB_UID=0` is refused; so are `NB_GID=0` and the image's system groups (a gid below"
        ' 1000 that names a group in the image, e.g. 42 `shadow`, which reads `/etc/shadow`), whose rights '
        'the dev user would get. Allowed: 100 (`users`), any gid from 1000 up, and a gid below 1000 that the '
        'image has no group for.'), shown_default="`1000`"),
    Setting("NB_GID", "gid", "", ID, gid, shown_default="`100`"),
    Setting("NB_USER", "user", "", NAME, user_name, (
        "The dev user's name. Another name, as root, renames `jovyan`: home `/home/NAME`, where the image's "
        'files (dotfiles, `work/`, `.nv/`) move, for JupyterLab, the command and SSH logins (as NAME). A '
        'folder mounted in the new home keeps its owner (see `CHOWN_HOME`). Without root, the uid gets the '
        'name (below). A name the image has (`root`, `sshd`, ...) is refused.'), shown_default="`jovyan`"),
    Setting("NB_GROUP", "group", "", NAME, group_name, (
        'Name of the group made for a new `NB_GID` (root), or given to a gid without one (`--user UID:GID`). '
        '`users` (100) keeps its name; a name the image has is refused.'), shown_default="`NB_USER`"),
    Setting("TEAM_GID", "team_gid", "", ID, team_gid, (
        "A group the dev user joins besides `NB_GID` (root only), e.g. the group of a team's shared folder "
        "mounted in every member's container: JupyterLab, its kernels and terminals, the command, SSH sessions "
        'and `docker exec -u jovyan` all have it. A gid without a group in the image gets one named `team`. '
        'Refused as for `NB_GID`: 0 and the image\'s system groups; and without root (`--user`: use '
        "Docker's `--group-add` instead)."), shown_default="none"),
    Setting("NB_UMASK", "umask", "", MODE, umask, (
        'The umask (octal, e.g. `002`: the group may write) of JupyterLab, its kernels and terminals, and the'
        ' command. Start hooks and SSH sessions keep 022.'), shown_default="`022`"),
    Setting("CHOWN_HOME", "chown_home", "no", SWITCH, switch, (
        '`yes` (root only) hands the home folder to `NB_UID`:`NB_GID` at every start, a bind mount too; '
        '`CHOWN_HOME_OPTS=-R` does it recursively. Options: `-R`, `-h`, `-c`, `-v`, `-f` only (`-L`/`-H` '
        'would follow links out of the folder).')),
    Setting("CHOWN_HOME_OPTS", "chown_home_opts", "", OPTIONS, chown_options),
    Setting("CHOWN_EXTRA", "chown_extra", "", LIST, chown_extra, (
        'Comma-separated folders (root only) handed to `NB_UID`:`NB_GID` at every start, e.g. `/data`; '
        "options as for `CHOWN_HOME_OPTS`. A folder must exist, and neither be nor hold one of the system's "
        '(`/etc`, `/usr`, `/var`, `/root`, `/run`, `/opt/tf29-env`, ...; a link counts where it leads); '
        '`/tmp` and `/home` themselves are refused, folders in them are fine. Up to 4096 characters.')),
    Setting("CHOWN_EXTRA_OPTS", "chown_extra_opts", "", OPTIONS, chown_options),
    Setting("GRANT_SUDO", "grant_sudo", "no", SWITCH, switch, (
        '`yes` (root only) gives the dev user passwordless `sudo` (e.g. `sudo apt-get install`): everything '
        'run in JupyterLab and SSH sessions may become root. Logged as a warning at every start; a start '
        'without it takes it back. Needs setuid: not with `--security-opt no-new-privileges`.')),
    doc("`NB_USER=root` `NB_UID=0` `NB_GID=0`", "", (
        "All three together, as root: JupyterLab or the command run as the container's root, home "
        '`/home/root` (for rootless Docker and Podman, where that root is your host account, so files in bind'
        ' mounts are yours). A warning at every start; SSH stays off, as it never logs in as root. Any other '
        'use of uid or gid 0 or of `root` is refused.')),
    Setting("JUPYTER_TOKEN", "jupyter_token", "", SECRET, as_given, (
        "Jupyter's token. When neither this nor a file nor a password is given, a random token is made and "
        'its login URL printed once in `docker logs`. An empty value counts as unset. A chosen token has 16 '
        'to 1024 printable characters, no spaces (`openssl rand -hex 24` makes one).'), shown_default="generated"),
    Setting("JUPYTER_TOKEN_FILE", "jupyter_token_file", "", PATH, as_given, (
        'File holding the token (Docker/compose secrets, e.g. `/run/secrets/jupyter_token`); keeps it out of '
        '`docker inspect`.')),
    Setting("JUPYTER_PASSWORD_HASH", "password_hash", "", SECRET, password_hash, (
        "A Jupyter password hash (`python -c 'from jupyter_server.auth import passwd; print(passwd())'`): "
        'password login. Without a token, the password is the only way in.'), STANDALONE),
    Setting("JUPYTER_INSECURE_NO_AUTH", "no_auth", "0", SWITCH, switch, (
        "`1` turns Jupyter's auth off (for a trusted proxy that authenticates); logged as a warning at every "
        'start. Needs `JUPYTER_ALLOWED_HOSTS`.')),
    Setting("JUPYTER_ALLOWED_HOSTS", "allowed_hosts", "", LIST, allowed_hosts, (
        'Host names (comma- or space-separated, e.g. `jupyter.example.com`) that requests may name in their '
        "`Host` header; any other name gets 403 (Jupyter's own DNS-rebinding check). `localhost` and loopback"
        ' addresses (127.0.0.1, ::1) are always served, other addresses never: list names, without scheme, '
        'port or wildcard. Required with `JUPYTER_INSECURE_NO_AUTH=1` (`localhost` alone for a port published'
        ' to localhost); optional otherwise (unset: any name).'), STANDALONE),
    Setting("JUPYTER_PORT", "jupyter_port", "8888", PORT, port, (
        "Jupyter's port inside the container (under Apptainer, on the node: 8888 or the first free port after"
        ' it unless another one is asked for, [hpc.md](hpc.md)). Not `SSH_PORT` when SSH starts; not below '
        'the lowest port a non-root user may use (Docker: any; `--network host`: 1024), as Jupyter never runs'
        ' as root.'), PORT_SCOPE),
    Setting("JUPYTER_BASE_URL", "base_url", "/", URL_PATH, base_url,
            'Path prefix, e.g. `/jupyter/alice/` behind a reverse proxy.', STANDALONE),
    Setting("DOCKER_STACKS_JUPYTER_CMD", "jupyter_app", "lab", MODE, jupyter_app, (
        'The app the services start, as in docker-stacks: `lab` (JupyterLab), `server` (Jupyter Server; its '
        "extensions, JupyterLab's among them, still load) or `notebook` (Jupyter Notebook 7: needs the "
        '`notebook` package, which the image lacks; add it in an image built `FROM` this one). The hub mode '
        "runs JupyterHub's single-user server whatever it says.")),
    Setting("NOTEBOOK_ARGS", "notebook_args", "", LIST, server_words, (
        'Extra args for the server, e.g. `--ServerApp.base_url=/x/ '
        "--ServerApp.custom_display_url='https://h/a b'`, split as a shell would (quotes and backslashes; no "
        "variables or globs), before a start command's own ARGS; one that names an option the image sets "
        'replaces it. Also in the hub mode. No token or password options (refused, exit 2): those are '
        '`JUPYTER_TOKEN_FILE`, `JUPYTER_TOKEN`, `JUPYTER_PASSWORD_HASH`.')),
    Setting("JUPYTER_ENV_VARS_TO_UNSET", "unset_names", "", LIST, names_to_unset, (
        'Names of variables (comma-separated, e.g. `AWS_SECRET_ACCESS_KEY,DB_PASSWORD`) removed once the '
        'start hooks have run: hooks may use them; Jupyter, its kernels and terminals, SSH sessions and a '
        'command never see them. Not `PATH`, `HOME`, `TFENV_RUN_DIR` or `JUPYTER_RUNTIME_DIR`.')),
    Setting("GEN_CERT", "gen_cert", "no", SWITCH, switch, (
        "Switch: `yes` makes a self-signed certificate (ECDSA P-256, one year, for the container's host name,"
        ' localhost, 127.0.0.1 and ::1) at every start, and Jupyter speaks HTTPS only (`https://…:8888/`; '
        'browsers ask once per certificate); the token or password stays required. The key lies in the dev '
        "user's runtime folder, mode 600. Unlike docker-stacks, where any value turns it on, `no` means no. "
        'Not in the hub mode, where the hub decides (its `internal_ssl`), nor with `ENABLE_JUPYTER=0`.')),
    Setting("JUPYTER_CERT_FILE", "cert_file", "", PATH, as_given, (
        "The team's certificate (PEM, the chain after it) for Jupyter to speak HTTPS with, a path in the "
        'container (a secret or read-only bind mount, e.g. `/run/secrets/jupyter.crt`); `JUPYTER_KEY_FILE`, its '
        'unencrypted private key (PEM). Both or neither. Checked at start: readable, PEM, the key is the '
        "certificate's, not expired; copied into the dev user's runtime folder (the key mode 600), so the files "
        'may be root\'s. Not with `GEN_CERT=yes`, nor in the hub mode or with `ENABLE_JUPYTER=0`. The token or '
        'password stays required.')),
    Setting("JUPYTER_KEY_FILE", "key_file", "", PATH, as_given),
    Setting("SSH_AUTHORIZED_KEYS", "ssh_keys", "", KEYS, as_given, (
        'Public keys (authorized_keys lines) that may log in as `jovyan`: ed25519, ECDSA, FIDO (`sk-…`) or '
        'RSA (signing with SHA-2, as every client since OpenSSH 7.2 does). Every line but blank ones and `#` '
        'comments must be a key, and one at least; the start log says how many were taken. Without keys, sshd'
        ' stays off (one log line).')),
    Setting("SSH_AUTHORIZED_KEYS_FILE", "ssh_keys_file", "", PATH, as_given,
            'The same, from a file (a secret or bind mount).'),
    Setting("SSH_PORT", "ssh_port", "22", PORT, port, "sshd's port inside the container; not `JUPYTER_PORT`."),
    Setting("SSH_HOST_KEY_DIR", "host_key_dir", "/etc/ssh/host-keys", PATH, absolute, (
        'Where host keys are made at first start (mount a volume to keep them). Made when the settings are '
        'checked: a path where no folder can be made, or a read-only one without keys, is refused then.')),
    Setting("ENABLE_JUPYTER", "jupyter", "1", SWITCH, switch,
            'Switches (`1/0`, `true/false`, `yes/no`, `on/off`). SSH also needs a key and root.'),
    Setting("ENABLE_SSH", "ssh", "1", SWITCH, switch),
    Setting("ENABLE_USER_SITE", "user_site", "0", None, switch, (
        "Under Apptainer only ([hpc.md](hpc.md)): `1` keeps the host's `PYTHONPATH` and `~/.local` (`pip "
        'install --user`) usable in the image, where they may shadow its pinned packages; by default '
        '`PYTHONNOUSERSITE=1` is set and a host `PYTHONPATH` is dropped with one warning.'), APPTAINER),
    Setting("LOGIN_HOST", "login_host", "", None, login_host, (
        'Under Apptainer only: the login host the printed `ssh -N -L 8888:NODE:PORT USER@LOGIN_HOST` line '
        'names (a host name).'), APPTAINER_SERVER, shown_default="Slurm's `SLURM_SUBMIT_HOST`"),
    doc("`PYTHONUSERBASE`", "`~/.local`", (
        'Where `pip install` and `%pip install` put your packages (`lib/python3.X/site-packages`, after the '
        "image's; scripts in `bin`, on `PATH`): [packages.md](packages.md). Mount a volume on `~/.local` to "
        'keep them, with your settings and environments; `make run`, compose, the hub and Zero to JupyterHub '
        'do.')),
    doc("`PYTHONNOUSERSITE`", "",
        "`1`: no user site, only the image's packages are imported and pip installs into the venv (not kept)."),
    Setting("STOP_GRACE_SECONDS", "stop_grace", str(STOP_GRACE_DEFAULT), SECONDS, stop_grace, (
        'How long a stop gives running jobs and busy kernels, once interrupted, to write their checkpoint '
        'before the services stop and anything left is killed (1 to 3600): [jobs.md](jobs.md#the-grace). '
        "Whoever stops the container must wait longer (`docker stop`: 10 s; `--stop-timeout` or compose's "
        '`stop_grace_period` for more).')),
    Setting("KERNEL_IDLE_TIMEOUT", "kernel_idle", "0", SECONDS, kernel_idle, (
        'Seconds after which an idle kernel is shut down, with or without a browser tab, so it gives its GPU '
        'memory back (0 to 604800; `0`: never). Busy kernels are never shut down. The team setups set an '
        'hour: [jobs.md](jobs.md#idle-kernels).')),
    Setting("GPU_MEMORY_LIMIT_MB", "gpu_memory_limit", "", MIB, gpu_memory_limit, (
        'A budget, in MiB (e.g. `4096`), that TensorFlow keeps on each GPU it sees: applied when `tensorflow` '
        'is imported in a kernel, script, job or SSH session (a logical device with that `memory_limit` per '
        'GPU), so members sharing a GPU cannot take all of it. A cap TensorFlow keeps, not a hardware limit: '
        'other CUDA code ignores it (a hard one takes MIG, or NVIDIA MPS with its pinned memory limit). '
        'Memory still grows as needed below it (`TF_FORCE_GPU_ALLOW_GROWTH`); '
        '`tf.config.experimental.set_memory_growth` then fails in TensorFlow 2.9: drop that call. The '
        "self-check reports it, and warns when it is above a GPU's memory. Unset: no budget."),
        shown_default="none"),
    # The self-check owns its modes and reads SELF_CHECK itself (also when run by hand); the plan asks it.
    Setting("SELF_CHECK", "self_check", "warn", MODE, as_given, (
        '`warn`: report, never block; `strict`: exit 3 when a check fails or no GPU is visible (GPU hosts, '
        'CI); `off`: skip.')),
    doc("`NVIDIA_VISIBLE_DEVICES`", "`all`", 'Which GPUs the Container Toolkit exposes (`--gpus` sets it too).'),
    doc("`TF_FORCE_GPU_ALLOW_GROWTH`", "`true`",
        'TF takes GPU memory as needed instead of all of it, so notebooks can share a GPU.'),
    doc("`CUDA_CACHE_MAXSIZE`", "`4294967296`",
        "CUDA's JIT cache limit (4 GiB): TF 2.9 carries PTX only for Ampere and newer."),
    doc("`TENSORBOARD_LOGDIR`", "`~/work/logs`", "What the launcher's TensorBoard reads (made if missing)."),
    Setting("TENSORBOARD_PROXY_URL", "tensorboard_proxy_url", "", None, as_given, (
        "Where `%tensorboard` in a notebook frames TensorBoard: through Jupyter's proxy under the server's "
        "own prefix (the hub's in the hub mode), so it works on a remote server."),
        shown_default="`BASE_URL/proxy/%PORT%/`"),
)

# What the image's ENV, the hub's spawner, Slurm and Apptainer set: read, never to be set by hand.
RUNTIME_SETTINGS: Tuple[Setting, ...] = (
    Setting("TFENV_RUN_DIR", "run_dir", "", PATH, as_given, (
        "The image's run directory (its ENV): the services' state, read by the healthcheck and the self-check. "
        "Where it cannot be written, a start has one of its own under `TMPDIR`."), required=True),
    Setting("TFENV_IMAGE_USER", "image_user", "", None, as_given,
            "The dev user's name as built (the image's ENV).", required=True),
    Setting("JUPYTER_RUNTIME_DIR", "runtime_dir", "", PATH, as_given,
            "Jupyter's runtime folder (the image's ENV: in the run directory, where `jupyter server list` looks)."),
    Setting("TMPDIR", "tmpdir", "", None, as_given, "Where a run directory of its own goes (absolute; else `/tmp`)."),
    Setting("HOME", "home", "", None, as_given, "Under Apptainer: the caller's home, JupyterLab's folder.", APPTAINER),
    Setting("PYTHONPATH", "python_path", "", None, as_given,
            "Under Apptainer: the host's, dropped with a warning unless `ENABLE_USER_SITE=1`.", APPTAINER),
    Setting("APPTAINER_CONTAINER", "apptainer_container", "", None, as_given,
            "Set by Apptainer or Singularity: the Apptainer mode ([hpc.md](hpc.md))."),
    Setting("SINGULARITY_CONTAINER", "singularity_container", "", None, as_given),
    Setting("JUPYTERHUB_API_TOKEN", "hub_token", "", None, as_given, (
        "Set by JupyterHub's spawner (`JPY_API_TOKEN` by older ones): with no command or a start command, the hub "
        "mode; taken out of the environment but for the single-user server, with the hub's other secrets "
        "(`JUPYTERHUB_CLIENT_ID`, `JUPYTERHUB_OAUTH_*`).")),
    Setting("JPY_API_TOKEN", "jpy_token", "", None, as_given),
    Setting("JUPYTERHUB_SERVICE_URL", "hub_url", "", URL, hub_url,
            "The hub mode: where the single-user server listens (its port; 0 under Apptainer: the one chosen).",
            HUB_ONLY),
    Setting("JUPYTERHUB_SERVICE_PREFIX", "hub_prefix", "/", URL_PATH, url_path,
            "The hub mode: the server's URL path.", HUB_ONLY),
    Setting("JUPYTERHUB_ROOT_DIR", "hub_root_dir", "", None, as_given,
            "The hub mode: the folder the server opens, instead of the home folder."),
    Setting("JUPYTERHUB_USER", "hub_user", "", None, as_given, "The hub mode: the user's name, for the start log."),
    Setting("SLURMD_NODENAME", "node_name", "", None, as_given,
            "Under Apptainer: the node the printed `ssh -L` line points at (else the host name)."),
    Setting("SLURM_SUBMIT_HOST", "submit_host", "", None, as_given,
            "Under Apptainer: the login host for that line, unless `LOGIN_HOST` names one."),
)
TABLE = USER_SETTINGS + RUNTIME_SETTINGS
READ = tuple(setting for setting in TABLE if setting.attribute)
# The longest value each variable may have, in the order they are checked: before any value is, so that
# no message quotes a runaway one.
SETTING_LIMITS: Tuple[Tuple[str, int], ...] = tuple((item.name, item.kind.limit) for item in READ if item.kind)


@dataclass(frozen=True)
class Settings:
    """The environment as the planner uses it: each variable of TABLE, checked and typed."""

    uid: int
    gid: int
    user: str
    group: str  # "": NB_USER's name where a group is made
    team_gid: int  # TEAM_GID; 0: none
    umask: str  # "": the default, 022
    chown_home: bool
    chown_home_opts: Tuple[str, ...]
    chown_extra: Tuple[str, ...]
    chown_extra_opts: Tuple[str, ...]
    grant_sudo: bool
    jupyter_token: str = field(repr=False)
    jupyter_token_file: str
    password_hash: str = field(repr=False)
    no_auth: bool
    allowed_hosts: Tuple[str, ...]
    jupyter_port: int
    base_url: str  # ends in /
    jupyter_app: str
    notebook_args: Tuple[str, ...]
    unset_names: Tuple[str, ...]
    gen_cert: bool
    cert_file: str
    key_file: str
    ssh_keys: str
    ssh_keys_file: str
    ssh_port: int
    host_key_dir: str
    jupyter: bool
    ssh: bool
    user_site: bool
    login_host: str
    stop_grace: int
    kernel_idle: int
    gpu_memory_limit: int  # MiB; 0: no budget
    self_check: str
    tensorboard_proxy_url: str
    run_dir: str
    image_user: str
    runtime_dir: str
    tmpdir: str
    home: str
    python_path: str
    apptainer_container: str
    singularity_container: str
    hub_token: str = field(repr=False)
    jpy_token: str = field(repr=False)
    hub_url: Optional[HubUrl]
    hub_prefix: str
    hub_root_dir: str
    hub_user: str
    node_name: str
    submit_host: str
    # NB_USER=root NB_UID=0 NB_GID=0, all three: the rootless engines' way to run as the container's root.
    triplet: bool
    # The hub's secrets in the environment (take_hub_secrets unsets them: only the single-user server gets them).
    hub_secret_names: Tuple[str, ...]
    # The values as given, to quote them (GRANT_SUDO=on); unset and empty ones are not here.
    given: Tuple[Tuple[str, str], ...] = field(repr=False)

    def text(self, name: str) -> str:
        """NAME's value as given, "" where unset."""
        return dict(self.given).get(name, "")

    @property
    def apptainer(self) -> bool:
        return bool(self.apptainer_container or self.singularity_container)


def is_apptainer(env: Dict[str, str]) -> bool:
    return bool(env.get("APPTAINER_CONTAINER", "") + env.get("SINGULARITY_CONTAINER", ""))


def root_triplet(env: Dict[str, str]) -> bool:
    return (env.get("NB_USER") == "root" and re.fullmatch("0+", env.get("NB_UID", "")) is not None
            and re.fullmatch("0+", env.get("NB_GID", "")) is not None)


def parse(env: Dict[str, str], mode: str) -> Settings:
    """The settings, or Refused naming the first bad one: the image's own first, then every length, then
    each value in TABLE's order, where it applies in MODE."""
    for item in READ:
        if item.required and not env.get(item.name):
            raise Refused(f"{item.name} is not set: the image's ENV sets it; do not override it with an empty value")
    for name, limit in SETTING_LIMITS:
        value = env.get(name, "")
        if len(value) > limit:
            raise Refused(f"{name} is {len(value)} characters long; at most {limit}: check what was passed")
    context = Context(mode, is_apptainer(env), root_triplet(env))
    values: Dict[str, Any] = {}
    for item in READ:
        used = applies(item.scope, context)
        values[item.attribute] = item.parse(item.name, (env.get(item.name) if used else None) or item.default,
                                            context)
    given = tuple((item.name, env[item.name]) for item in READ if env.get(item.name))
    secrets = tuple(sorted(name for name in env if environ.HUB_SECRET.fullmatch(name)))
    return Settings(**values, triplet=context.triplet, hub_secret_names=secrets, given=given)
