"""The start-up plan: every setting the entrypoint reads, checked once, before anything starts.

The entrypoint runs this first (load_config) with its own PID and the container's command
as the arguments:

  /usr/bin/python3 -I -m tf29image.startup.plan PID [ARGS...]

It prints the plan as shell assignments (each value quoted with shlex.quote, argument lists as
arrays), which the entrypoint reads with one eval; or one line `tf29-env: ERROR: ...` on stderr and
exit 2. The notes (warnings start "WARNING: ") go to the shell too, which says them once the plan holds.
What must be tried to be known (a folder that can be made, a writable path) stays with the shell.

make_plan reads the settings once (settings.py) and runs the planning steps (services.py, dev_user.py,
server.py, privileges.py) in the order their records feed each other; shell_variables names the records'
values for the shell. Standard library only, run by the distro's python3 -I (3.8 or newer).
"""

import os
import shlex
import sys
from dataclasses import dataclass, replace
from typing import Dict, List, Mapping, Optional, Sequence, Tuple, Union  # python 3.8: no list[...]

from tf29image.startup import settings as settings_table
from tf29image.startup.dev_user import (
    RENAMED_USER_FILE,
    ROOT_HOME,
    Account,
    HomePlan,
    UserPlan,
    check_gid,
    check_user_name,
    plan_account,
    plan_as_user,
    plan_home,
    plan_user,
)
from tf29image.startup.privileges import Needs, check_privileges
from tf29image.startup.server import (
    SSHD_DIR,
    SSHD_ENV_FILE,
    SSHD_KEYS_FILE,
    ServerPlan,
    SshdPlan,
    host_keys,
    plan_server,
    plan_sshd,
)
from tf29image.startup.services import (
    Apptainer,
    Listening,
    Login,
    Mode,
    RunDirs,
    check_ports,
    check_scratch,
    check_something_runs,
    plan_apptainer,
    plan_listening,
    plan_login,
    plan_mode,
    plan_run_dirs,
    plan_self_check,
    plan_server_args,
    plan_ssh_keys,
)
from tf29image.startup.settings import SETTING_LIMITS, Settings
from tf29image.startup.system import Mounts, System
from tf29image.startup.values import COMMAND, HUB, SERVICES, Refused

__all__ = ["RENAMED_USER_FILE", "SETTING_LIMITS", "Plan", "Refused", "System", "main", "make_plan", "render"]

USAGE = 2
PREFIX = "tf29-env: "
Value = Union[str, List[str]]


@dataclass(frozen=True)
class Plan:
    """Every step's record, the variables to export, and the lines to say once the plan holds."""

    settings: Settings
    euid: int
    mode: Mode
    mounts: Mounts
    run: RunDirs
    listening: Listening
    self_check: str
    server_args: Tuple[str, ...]
    login: Login
    ssh_keys: str
    ssh_starts: bool
    unprivileged_ports: int
    apptainer: Apptainer
    user: UserPlan
    home: HomePlan
    as_user: Tuple[str, ...]
    server: Optional[ServerPlan]
    sshd: Optional[SshdPlan]
    account: Account
    tunnel: Tuple[str, ...]
    exports: Tuple[Tuple[str, str], ...]
    notes: Tuple[str, ...]

    @property
    def is_root(self) -> bool:
        return self.euid == 0

    @property
    def ssh(self) -> bool:
        """ENABLE_SSH, which the root triplet turns off: sshd never lets root in."""
        return self.settings.ssh and not self.settings.triplet

    @property
    def port(self) -> int:
        return self.login.port if self.apptainer.port is None else self.apptainer.port


def make_plan(env: Mapping[str, str], args: Sequence[str], euid: int, system: Optional[System] = None,
              pid: int = 1) -> Plan:
    """The plan, or Refused. PID is the entrypoint's, which names its own run directory."""
    system = system or System()
    is_root = euid == 0
    mounts = Mounts.read(system)
    check_scratch(system, mounts, euid)
    mode = plan_mode(args, hub_token=bool(env.get("JUPYTERHUB_API_TOKEN")))
    settings = settings_table.parse(dict(env), mode.name)
    run = plan_run_dirs(settings, system, euid, pid)
    listening = plan_listening(system)
    check_gid(settings, system)
    self_check = plan_self_check(system)
    server_args = plan_server_args(settings, mode, system)
    login = plan_login(settings, mode, system)
    keys = plan_ssh_keys(settings, system)
    ssh_could_start = settings.ssh and is_root and bool(keys)  # before the root triplet turns SSH off
    check_something_runs(settings, ssh_could_start)
    floor = check_ports(settings, mode, login, ssh_could_start, system)
    check_user_name(settings, mode.name, system, euid)
    chosen = plan_apptainer(settings, mode, login, mounts, system, euid) if settings.apptainer else Apptainer()
    user = plan_user(settings, system, euid)
    home = plan_home(settings, user, mounts, system, euid)
    services = mode.name != COMMAND
    ssh = settings.ssh and not settings.triplet
    if is_root:
        needs = Needs(services, services and settings.jupyter, services and ssh and bool(keys))
        check_privileges(settings, user, needs, floor, mounts, system)
    port = login.port if chosen.port is None else chosen.port
    port_retries = chosen.port_retries if chosen.port is not None else 0
    server = None
    if services and settings.jupyter:
        server = plan_server(settings, mode, server_args, login, port, port_retries, run, listening, home.home)
    ssh_starts = ssh_could_start and not settings.triplet
    sshd = plan_sshd(settings, keys, listening, system) if services and ssh_starts and not settings.apptainer else None
    account = plan_account(settings, euid, system)
    tunnel: Tuple[str, ...] = ()
    if settings.apptainer and mode.name == SERVICES and settings.jupyter:
        # announce's NODE LOGIN USER SHOW_TOKEN (startup/apptainer.py): where the ssh -L line points.
        tunnel = (settings.node_name or system.host_name(), settings.login_host or settings.submit_host, account.name,
                  flag(login.token_generated))
    exports = planned_exports(settings, mode, run, login, chosen)
    plan = Plan(settings, euid, mode, mounts, run, listening, self_check, server_args, login, keys, ssh_starts, floor,
                chosen, user, home, plan_as_user(settings, home, is_root), server, sshd, account, tunnel, exports, ())
    return replace(plan, notes=tuple(notes(plan)))


def planned_exports(settings: Settings, mode: Mode, run: RunDirs, login: Login,
                    chosen: Apptainer) -> Tuple[Tuple[str, str], ...]:
    exports = [("TFENV_RUN_DIR", run.run_dir)] if run.per_run else []
    # Jupyter's own variable (the image's ENV points it into the run directory, so that `docker exec ...
    # jupyter server list` finds the server); fixed from here on, for Jupyter, the healthcheck and SSH.
    exports.append(("JUPYTER_RUNTIME_DIR", run.runtime_dir))
    exports.append(("STOP_GRACE_SECONDS", str(settings.stop_grace)))  # `job stop` and the jobs' own supervisors
    if settings.gpu_memory_limit:  # as checked (04096 is 4096), for the import hook everywhere (gpubudget.py)
        exports.append(("GPU_MEMORY_LIMIT_MB", str(settings.gpu_memory_limit)))
    if mode.name == COMMAND:
        exports.append(("JOB_FOREGROUND", "1"))  # `docker run IMAGE job run ...`: nothing outlives the command
    if not settings.tensorboard_proxy_url:  # %tensorboard's iframe, through jupyter-server-proxy, under the prefix
        exports.append(("TENSORBOARD_PROXY_URL", f"{login.base_url}proxy/%PORT%/"))
    if chosen.hub_url:
        exports.append(("JUPYTERHUB_SERVICE_URL", chosen.hub_url))
    return tuple(exports)


def notes(plan: Plan) -> List[str]:
    """What the settings leave off, move or grant, said once every setting has passed (the steps act on it)."""
    return ignored_notes(plan) + apptainer_notes(plan) + setting_notes(plan) + home_notes(plan) + ssh_notes(plan)


def ignored_notes(plan: Plan) -> List[str]:
    settings = plan.settings
    lines: List[str] = []
    ignored = f"is ignored: it needs a container started as root, and this one runs as uid {plan.euid}"
    if not plan.is_root:
        if settings.grant_sudo:
            lines.append(f"WARNING: GRANT_SUDO={settings.text('GRANT_SUDO')} {ignored}")
        if settings.chown_home:
            lines.append(f"WARNING: CHOWN_HOME={settings.text('CHOWN_HOME')} {ignored}")
        if settings.chown_extra:
            lines.append(f"WARNING: CHOWN_EXTRA {ignored}")
    if not settings.chown_home and settings.chown_home_opts:
        lines.append("WARNING: CHOWN_HOME_OPTS is set but CHOWN_HOME is not: nothing is chowned (set CHOWN_HOME=yes)")
    if not settings.chown_extra and settings.chown_extra_opts:
        lines.append("WARNING: CHOWN_EXTRA_OPTS is set but CHOWN_EXTRA is not: nothing is chowned")
    return lines


def apptainer_notes(plan: Plan) -> List[str]:
    settings = plan.settings
    lines: List[str] = []
    if not settings.apptainer:
        return lines
    if settings.user_site:
        lines.append("ENABLE_USER_SITE=1: the host's PYTHONPATH and ~/.local (pip install --user) are used as they "
                     "are and may shadow the image's pinned packages")
    elif settings.python_path:
        lines.append("WARNING: PYTHONPATH from the host is not passed on: its packages would come before the image's "
                     "pinned ones (ENABLE_USER_SITE=1 keeps it)")
    if plan.mode.name != COMMAND:
        lines.append(f"Apptainer: running as {plan.account.name} (uid {plan.euid}) with the host's home and network; "
                     "no sshd (it needs root): reach JupyterLab through the login node with ssh -L (the line below)")
    return lines


def setting_notes(plan: Plan) -> List[str]:
    settings = plan.settings
    lines: List[str] = []
    if settings.grant_sudo and plan.is_root and not settings.triplet:
        lines.append(f"WARNING: GRANT_SUDO={settings.text('GRANT_SUDO')}: {settings.user} may run anything as root "
                     "with sudo, without a password, and so may everything run in JupyterLab and SSH sessions: only "
                     "for users you would give the container's root")
    if settings.umask:
        lines.append(f"umask {settings.umask} (NB_UMASK) for JupyterLab and the command (not SSH sessions)")
    if plan.mode.name != COMMAND and plan.self_check == "off":
        lines.append("self-check is off (SELF_CHECK=off); run 'selfcheck' in the container at any time")
    if settings.triplet and plan.is_root:
        what = "the command" if plan.mode.name == COMMAND else "JupyterLab"
        lines.append(f"WARNING: NB_USER=root NB_UID=0 NB_GID=0: {what} runs as the container's root, with HOME "
                     f"{ROOT_HOME} (meant for rootless Docker or Podman, where that root is your host account); SSH "
                     "stays off, as it never logs in as root")
    return lines


def home_notes(plan: Plan) -> List[str]:
    settings, home = plan.settings, plan.home
    lines: List[str] = []
    if plan.is_root and home.is_mount and (settings.triplet or plan.user.rename):
        source = "/home/" + settings.image_user if settings.triplet else home.old_home
        lines.append(f"{home.home} is a mount: the image's files in {source} are not copied into it")
    if plan.user.rename and home.old_mounts:  # make_home leaves the old home where they are
        old, first = home.old_home, home.old_mounts[0][len(home.old_home) + 1:]
        lines.append(f"WARNING: {' '.join(home.old_mounts)} is mounted in {old}, but the home folder is now "
                     f"{home.home} (NB_USER), where JupyterLab opens: mount it there instead (-v ...:{home.home}/"
                     f"{first})")
    if not plan.is_root and not settings.apptainer and home.home != home.folder:
        lines.append(f"WARNING: uid {plan.euid} cannot write {home.folder} (use --user {plan.euid}:100, the 'users' "
                     f"group); HOME is {home.home}")
    return lines


def ssh_notes(plan: Plan) -> List[str]:
    if plan.mode.name == COMMAND or not plan.ssh or plan.settings.apptainer:
        return []
    if not plan.ssh_keys:
        return ["SSH is off: no SSH_AUTHORIZED_KEYS or SSH_AUTHORIZED_KEYS_FILE given (login is key-only)"]
    if not plan.is_root:
        return [f"WARNING: SSH is off: sshd needs root and this container runs as uid {plan.euid} (drop --user, or "
                "set ENABLE_SSH=0)"]
    return []


# --- the seam: what the entrypoint evals ---------------------------------------------------------------

def flag(value: bool) -> str:
    """A yes or no as the shell tests it: [[ ${name} == 1 ]]."""
    return "1" if value else "0"


def shell_variables(plan: Plan) -> Dict[str, Value]:
    """The plan as the entrypoint's variables (load_config declares them), with the notes (cfg_notes), which
    main() says once every setting has passed, so that a refusal is a failed start's only line."""
    settings, run, login, user, home = plan.settings, plan.run, plan.login, plan.user, plan.home
    variables: Dict[str, Value] = {
        "is_root": flag(plan.is_root), "cfg_report_port": flag(login.report_port),
        "cfg_user_site": flag(settings.user_site),
        "cfg_server_notes": list(plan.server.notes if plan.server else ()), "cfg_tunnel": list(plan.tunnel),
        "cfg_sshd_args": list(plan.sshd.args if plan.sshd else ()),
        "apptainer_mode": flag(settings.apptainer), "run_dir_per_run": flag(run.per_run),
        "IMAGE_RUN_DIR": run.image_run_dir, "RUN_DIR": run.run_dir, "SERVICES_FILE": run.services_file,
        "IMAGE_USER": settings.image_user, "cfg_cert_file": run.cert_file, "cfg_key_file": run.key_file,
        "cfg_mode": plan.mode.name, "cfg_command": list(plan.mode.command),
        "cfg_jupyter": flag(settings.jupyter),
        "cfg_self_check": plan.self_check, "SSH_PORT": str(settings.ssh_port),
        "cfg_stop_grace": str(settings.stop_grace),
        "cfg_host_key_dir": settings.host_key_dir, "cfg_host_keys": list(host_keys(settings)),
        "cfg_sshd_dir": SSHD_DIR, "cfg_sshd_keys_file": SSHD_KEYS_FILE, "cfg_sshd_env_file": SSHD_ENV_FILE,
        "cfg_unset_names": list(settings.unset_names), "cfg_gen_cert": flag(settings.gen_cert),
        "cfg_cert_source": settings.cert_file, "cfg_key_source": settings.key_file,
        "cfg_jupyter_port": str(plan.port), "cfg_token": login.token,
        "cfg_ssh_keys": plan.sshd.keys if plan.sshd else plan.ssh_keys, "ssh_starts": flag(plan.ssh_starts),
        "cfg_triplet": flag(settings.triplet), "cfg_user": settings.user, "cfg_group": settings.group,
        "cfg_umask": settings.umask,
        "cfg_grant_sudo": flag(settings.grant_sudo), "cfg_chown_home": flag(settings.chown_home),
        "cfg_chown_home_opts": list(settings.chown_home_opts), "cfg_chown_extra_opts": list(settings.chown_extra_opts),
        "cfg_chown_extra": list(settings.chown_extra),
        "user_from": user.user_from, "user_old_uid": str(user.old_uid), "user_old_gid": str(user.old_gid),
        "user_rename": flag(user.rename), "user_refit": flag(user.refit), "user_new_group": flag(user.new_group),
        "user_group_rename": flag(user.group_rename), "user_join_users": flag(user.join_users),
        "user_join_team": flag(user.join_team), "user_new_team_group": flag(user.new_team_group),
        "user_team_gid": str(user.team_gid), "user_team_group": user.team_group,
        "NB_HOME": home.home, "home_folder": home.folder, "user_home": home.user_home, "user_old_home": home.old_home,
        "home_mount_checks": [value for point, bare in home.mount_checks for value in (point, flag(bare))],
        "old_home_mounts": list(home.old_mounts), "home_prune": list(home.prune), "home_copy": list(home.copy),
        "home_is_mount": flag(home.is_mount),
        # NB_UID:NB_GID as chown is given them (root only: nothing is chowned without).
        "cfg_ids": f"{settings.uid}:{settings.gid}" if plan.is_root else "", "as_user": list(plan.as_user),
        "cfg_login_name": plan.account.name, "cfg_nss_entry": flag(plan.account.nss_entry),
        "cfg_notes": list(plan.notes),
    }
    if plan.mode.name == HUB:  # take_hub_secrets unsets them: only the single-user server gets them
        variables["cfg_hub_secret_names"] = list(settings.hub_secret_names)
    if plan.server:
        variables.update(cfg_server_command=list(plan.server.command), cfg_server_folder=plan.server.folder)
    if plan.sshd:
        variables["cfg_ssh_key_count"] = str(plan.sshd.key_count)
    return variables


def render(variables: Mapping[str, Value], exports: Mapping[str, str]) -> str:
    """Shell assignments, one a line, every value quoted: what eval reads back as exactly these values."""
    lines = []
    for name, value in variables.items():
        quoted = shlex.quote(value) if isinstance(value, str) else "(" + " ".join(map(shlex.quote, value)) + ")"
        lines.append(f"{name}={quoted}")
    lines.extend(f"export {name}={shlex.quote(value)}" for name, value in exports.items())
    return "".join(line + "\n" for line in lines)


def main(argv: Sequence[str], pid: int = 1) -> int:
    try:
        plan = make_plan(os.environ, argv, os.geteuid(), System(), pid=pid)
    except Refused as refused:
        print(f"{PREFIX}ERROR: {refused}", file=sys.stderr)
        return USAGE
    sys.stdout.buffer.write(render(shell_variables(plan), dict(plan.exports)).encode("utf-8", "surrogateescape"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[2:], int(sys.argv[1])))
