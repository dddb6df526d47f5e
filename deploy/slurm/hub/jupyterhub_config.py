"""JupyterHub on Slurm (docs/hpc.md): the hub runs on a login node as root, users log in with their
cluster account (PAM), and each user's server is a Slurm job, submitted as that user with sudo by
batchspawner's SlurmSpawner, that runs the tf29-env SIF under Apptainer on a compute node:
`apptainer run [--nv] SIF jupyterhub-singleuser`. The image's hub mode under Apptainer picks a free
port on the node and tells the hub (batchspawner's API), as batchspawner-singleuser would.

The spawn form offers one profile per partition (PROFILES below: CPU, and GPU partitions with
their --gres); a profile can also be named through the REST API ({"profile": "gpu"}).

Settings (environment variables of the hub's process):
  TF29_HUB_SIF        the SIF's path on the compute nodes (default /shared/tf29-env.sif)
  TF29_HUB_PROFILES   the profiles as JSON, replacing PROFILES (same keys)
  TF29_HUB_STATE_DIR  the hub's database and cookie secret (default /var/lib/tf29-hub)
  TF29_HUB_BIND_URL   the URL users open (default http://0.0.0.0:8000)
  TF29_HUB_CONNECT    the name compute nodes reach the hub's API by (default: this host's name)
  TF29_HUB_KERNEL_IDLE_TIMEOUT  the servers' KERNEL_IDLE_TIMEOUT: seconds an idle kernel keeps its
                      memory (and GPU) before it is shut down; 0 never (default 3600)
  TF29_HUB_STOP_GRACE_SECONDS   the servers' STOP_GRACE_SECONDS: what a stop gives running jobs and busy
                      kernels to checkpoint (default 30); Slurm signals the server this long and 30 s
                      more before its time limit
  HUB_TEAM_DATA       a folder the login node and the compute nodes share (e.g. /shared/datasets): the
                      team's data, read-only at ~/data in every server (the team hub's setting, hub/)
  HUB_GPU_MEMORY_MB   the MiB TensorFlow may take of each GPU in a GPU profile's servers (their
                      GPU_MEMORY_LIMIT_MB): `8192` for every GPU profile, `gpu=8192` for one, or both
A bad setting (slurmhub.py checks them) is one line, and the hub does not start.
"""

import html
import importlib.util
import os
import shlex
import socket
import sys
import sysconfig
from pathlib import Path
from types import ModuleType
from typing import Any

import batchspawner  # registers /hub/api/batchspawner, where the servers report their port
from tornado import web
from traitlets import Unicode

c = get_config()  # type: ignore[name-defined]  # noqa: F821 - JupyterHub's config loader provides it
HERE = Path(__file__).resolve().parent


def load_beside(name: str) -> ModuleType:
    """A module from this folder: the config loader runs this file by path, with no package around it."""
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


slurmhub = load_beside("slurmhub")

# One profile per partition: what the job asks Slurm for. "gres" empty: no GPU, no --nv.
PROFILES: dict[str, dict[str, str]] = {
    "cpu": {"title": "CPU only (partition cpu)", "partition": "cpu", "gres": "", "runtime": "08:00:00",
            "memory": "16G", "nprocs": "4"},
    "gpu": {"title": "1 GPU (partition gpu)", "partition": "gpu", "gres": "gpu:1", "runtime": "08:00:00",
            "memory": "32G", "nprocs": "8"},
}
SIF = os.environ.get("TF29_HUB_SIF", "/shared/tf29-env.sif")
STATE = os.environ.get("TF29_HUB_STATE_DIR", "/var/lib/tf29-hub")

try:
    if os.environ.get("TF29_HUB_PROFILES"):
        PROFILES = slurmhub.profiles("TF29_HUB_PROFILES", os.environ["TF29_HUB_PROFILES"], PROFILES["gpu"])
    SETTINGS = slurmhub.load(os.environ, PROFILES)
    # jupyter.sbatch's lines for TEAM_DATA and GPU_MEMORY_LIMIT_MB, run by every server's job as by its own.
    TEAM_LINES = slurmhub.team_lines((HERE.parent / "jupyter.sbatch").read_text())
except (slurmhub.SettingError, OSError) as exc:
    raise SystemExit(f"tf29-hub: {exc}") from None
DEFAULT_PROFILE = next(iter(PROFILES))
# Slurm's TERM this long before the time limit: the grace, then 30 s for the services to stop.
SIGNAL_BEFORE_LIMIT = SETTINGS.stop_grace + 30

BATCH_SCRIPT = """#!/bin/bash
#SBATCH --output={{homedir}}/tf29-hub-%j.log
#SBATCH --job-name=tf29-hub-{{username}}
#SBATCH --chdir={{homedir}}
#SBATCH --export={{keepvars}}
#SBATCH --partition={{partition}}
#SBATCH --time={{runtime}}
#SBATCH --mem={{memory}}
#SBATCH --cpus-per-task={{nprocs}}
#SBATCH --signal=B:TERM@{{signal_before_limit}}
{% if gres %}#SBATCH --gres={{gres}}
{% endif %}
set -euo pipefail
umask 077
die() {
  printf 'tf29-hub: ERROR: %s\\n' "$*" >&2
  exit 2
}
# The hub's HUB_TEAM_DATA and this profile's budget (HUB_GPU_MEMORY_MB); "": none.
TEAM_DATA={{team_data}}
GPU_MEMORY_LIMIT_MB={{gpu_memory_mb}}
args=()
{% raw %}""" + TEAM_LINES + """{% endraw %}exec apptainer run {% if gres %}--nv {% endif %}"${args[@]}" {{sif}} {{cmd}}
"""


class TF29SlurmSpawner(batchspawner.SlurmSpawner):  # type: ignore[misc]
    """SlurmSpawner with the profiles as its template variables and the SIF as the single-user
    command: batchspawner-singleuser is not needed, the image's hub mode reports its port itself."""

    req_sif = Unicode(SIF, help="The SIF on the compute nodes").tag(config=True)

    def profile_name(self) -> str:
        name = str((self.user_options or {}).get("profile") or DEFAULT_PROFILE)
        if name not in PROFILES:
            raise web.HTTPError(400, f"unknown profile {name!r}: choose one of {', '.join(PROFILES)}")
        return name

    def profile(self) -> dict[str, str]:
        return PROFILES[self.profile_name()]

    def get_req_subvars(self) -> dict[str, Any]:
        subvars = dict(super().get_req_subvars())
        subvars.update({key: value for key, value in self.profile().items() if key != "title"})
        subvars["signal_before_limit"] = SIGNAL_BEFORE_LIMIT
        subvars["team_data"] = shlex.quote(SETTINGS.team_data)
        subvars["gpu_memory_mb"] = SETTINGS.gpu_memory.get(self.profile_name(), "")
        return subvars

    async def start(self) -> Any:
        self.profile()  # an unknown profile is refused before anything is submitted
        return await super().start()


def title(name: str) -> str:
    """What the spawn form says of a profile: its title, and its GPU memory budget."""
    budget = SETTINGS.gpu_memory.get(name)
    return PROFILES[name]["title"] + (f" (TensorFlow takes at most {budget} MiB of each GPU)" if budget else "")


def options_form(spawner: TF29SlurmSpawner) -> str:
    options = "".join(f'<option value="{html.escape(name)}">{html.escape(title(name))}</option>' for name in PROFILES)
    return f'<label for="profile">Profile</label><select name="profile" id="profile">{options}</select>'


def options_from_form(formdata: dict[str, list[str]]) -> dict[str, str]:
    return {"profile": formdata.get("profile", [DEFAULT_PROFILE])[0]}


c.JupyterHub.spawner_class = TF29SlurmSpawner
c.TF29SlurmSpawner.batch_script = BATCH_SCRIPT
c.TF29SlurmSpawner.batchspawner_singleuser_cmd = ""
# Passed on to the job by name (batchspawner's keepvars: --export), and by Apptainer into the image.
c.TF29SlurmSpawner.environment = {"KERNEL_IDLE_TIMEOUT": str(SETTINGS.kernel_idle),
                                  "STOP_GRACE_SECONDS": str(SETTINGS.stop_grace)}
c.TF29SlurmSpawner.options_form = options_form
c.TF29SlurmSpawner.options_from_form = options_from_form
# A queued job may wait for a node; the server inside starts in seconds once it runs.
c.TF29SlurmSpawner.start_timeout = 600
c.TF29SlurmSpawner.http_timeout = 180

# The cluster's accounts: whoever may log in to the login node may use the hub.
c.JupyterHub.authenticator_class = "pam"
c.Authenticator.allow_all = True
c.PAMAuthenticator.open_sessions = False

c.JupyterHub.bind_url = os.environ.get("TF29_HUB_BIND_URL", "http://0.0.0.0:8000")
# The API listens where the compute nodes reach it, by the login node's name.
c.JupyterHub.hub_ip = "0.0.0.0"  # noqa: S104 - the compute nodes are on the cluster's network
c.JupyterHub.hub_connect_ip = os.environ.get("TF29_HUB_CONNECT", socket.gethostname())
c.JupyterHub.db_url = f"sqlite:///{STATE}/jupyterhub.sqlite"
# A JupyterHub pin with a new schema upgrades the database at start, after copying it beside itself
# (jupyterhub.sqlite.<date-time>, docs/hpc.md); a current one is left alone.
c.JupyterHub.upgrade_db = True
# The upgrade runs `alembic` by name: this venv's, also when the hub is started by its full path.
VENV_SCRIPTS = sysconfig.get_path("scripts")
if VENV_SCRIPTS not in os.environ.get("PATH", "").split(os.pathsep):
    os.environ["PATH"] = os.pathsep.join(filter(None, [VENV_SCRIPTS, os.environ.get("PATH")]))
c.JupyterHub.cookie_secret_file = f"{STATE}/jupyterhub_cookie_secret"
c.ConfigurableHTTPProxy.pid_file = f"{STATE}/proxy.pid"
