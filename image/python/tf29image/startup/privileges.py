"""What the steps run as root need, checked before anything starts: hardened runtimes (restricted pod
security, --cap-drop ALL, --read-only) take away the files they rewrite and the capabilities. Each
refusal names the fix. Standard library only, run by the distro's python3 -I (3.8 or newer).
"""

from dataclasses import dataclass
from typing import Callable, Dict  # python 3.8: no dict[...]

from tf29image.startup.dev_user import ROOT_HOME, UserPlan
from tf29image.startup.server import SSHD_DIR
from tf29image.startup.settings import Settings
from tf29image.startup.system import Mounts, System
from tf29image.startup.values import Refused

# The capabilities some step needs, with their bits in /proc/PID/status (linux/capability.h).
CAP_BITS = {"CHOWN": 0, "DAC_OVERRIDE": 1, "DAC_READ_SEARCH": 2, "FOWNER": 3, "KILL": 5, "SETGID": 6, "SETUID": 7,
            "NET_BIND_SERVICE": 10, "SYS_CHROOT": 18, "AUDIT_WRITE": 29}


@dataclass(frozen=True)
class Needs:
    """What the start will run as root: the services (or a command), Jupyter, sshd."""

    services: bool
    jupyter: bool
    ssh: bool


class Checker:
    """Writability with the reason and the fix in the refusal (the mount table says "read-only")."""

    def __init__(self, mounts: Mounts, system: System) -> None:
        self.mounts, self.system = mounts, system

    def why(self, path: str) -> str:
        return self.mounts.why_not_writable(path, 0, self.system)

    def writable_or_refuse(self, path: str, why: str, fix: str) -> None:
        """PATH (or, where it does not exist yet, the nearest folder above it) is writable."""
        while not self.system.exists(path) and len(path) > 1 and path.startswith("/"):
            path = path.rsplit("/", 1)[0] or "/"
        if not self.system.writable(path):
            raise Refused(f"{why}, but {path} is not writable{self.why(path)}: {fix}")


def check_privileges(settings: Settings, user: UserPlan, needs: Needs, floor: int, mounts: Mounts,
                     system: System) -> None:
    """Root's steps can do what they must (without root, nothing of this is attempted)."""
    checker = Checker(mounts, system)
    if needs.services:
        check_run_dir(settings.run_dir, checker)
    check_writable_paths(settings, user, checker)
    if needs.ssh:
        for path in (SSHD_DIR, "/run/sshd"):
            checker.writable_or_refuse(path, f"SSH needs {SSHD_DIR} and /run/sshd",
                                       "mount a tmpfs on /run (--tmpfs /run), or ENABLE_SSH=0")
        if not system.exists("/var/log/lastlog"):  # prepare_ssh makes it when a base image lacks it
            checker.writable_or_refuse("/var/log/lastlog", "sshd keeps its login records in /var/log/lastlog",
                                       "a writable root file system, or ENABLE_SSH=0")
    check_capabilities(settings, user, needs, floor, system.effective_capabilities())


# The run directory (root's is the image's, TFENV_RUN_DIR), which prepare_run_dir makes if it is missing
# (mode 1777, as the image's: the dev user writes there too): checked first, as there.
def check_run_dir(run_dir: str, checker: Checker) -> None:
    system = checker.system
    if not system.exists(run_dir):
        parent = run_dir.rsplit("/", 1)[0] or "/"
        if not system.writable(parent):
            raise Refused(f"TFENV_RUN_DIR={run_dir} does not exist and cannot be made: {parent} is not writable"
                          f"{checker.why(parent)}; mount a tmpfs on {run_dir} itself (--tmpfs {run_dir}: it keeps the "
                          "image's mode 1777)")
    elif not (system.is_dir(run_dir) and system.writable(run_dir)):
        raise Refused(f"TFENV_RUN_DIR={run_dir} is not a writable folder{checker.why(run_dir)}: mount a tmpfs on it "
                      f"(--tmpfs {run_dir})")


def check_writable_paths(settings: Settings, user: UserPlan, checker: Checker) -> None:
    name, uid, gid, group = settings.user, settings.text("NB_UID"), settings.text("NB_GID"), settings.group
    if user.refit:
        checker.writable_or_refuse("/etc/passwd", f"NB_UID={uid}/NB_GID={gid} means rewriting /etc/passwd ({name} is "
                                   f"{user.old_uid}/{user.old_gid} as built)",
                                   "use NB_UID/NB_GID as built, or a writable root file system")
    if user.new_group or user.join_users:
        checker.writable_or_refuse("/etc/group", f"NB_GID={gid} means rewriting /etc/group",
                                   f"use NB_GID as built ({user.old_gid}), or a writable root file system")
    if user.join_team:
        checker.writable_or_refuse("/etc/group", f"TEAM_GID={settings.text('TEAM_GID')} means adding {name} to group "
                                   f"{user.team_group} in /etc/group", "a writable root file system, or use "
                                   f"--group-add {user.team_gid} (without root) instead")
    if user.rename:
        why = (f"NB_USER={name} means renaming {user.user_from} in /etc/passwd and /etc/shadow and a home folder "
               f"/home/{name}")
        for path in ("/etc/passwd", "/etc/shadow", f"/home/{name}"):
            checker.writable_or_refuse(path, why, f"use NB_USER as built ({settings.image_user}), or a writable root "
                                       "file system")
    if user.group_rename:
        checker.writable_or_refuse("/etc/group", f"NB_GROUP={group} means renaming group {gid} in /etc/group",
                                   "leave NB_GROUP unset, or a writable root file system")
    if settings.triplet:
        checker.writable_or_refuse(ROOT_HOME, f"NB_USER=root NB_UID=0 NB_GID=0 means a home folder {ROOT_HOME}",
                                   f"a writable root file system, or a volume on {ROOT_HOME}")
    # chown fails on a read-only file system (--read-only, a :ro mount) whatever the capabilities.
    home = ROOT_HOME if settings.triplet else f"/home/{name}"
    if settings.chown_home and checker.mounts.read_only(home):
        raise Refused(f"CHOWN_HOME={settings.text('CHOWN_HOME')}, but {home} is on a read-only file system: drop "
                      "CHOWN_HOME, or mount a volume there")
    for path in settings.chown_extra:
        if checker.mounts.read_only(path):
            raise Refused(f"CHOWN_EXTRA: {path} is on a read-only file system (a :ro mount?): drop it from CHOWN_EXTRA")
    if settings.grant_sudo and not settings.triplet:
        checker.writable_or_refuse("/etc/sudoers.d", f"GRANT_SUDO={settings.text('GRANT_SUDO')} means a rule in "
                                   "/etc/sudoers.d", "a writable root file system")


def need_for_the_user(settings: Settings, user: UserPlan, services: bool, need: Callable[[str, str], None]) -> None:
    name, uid, gid = settings.user, settings.text("NB_UID"), settings.text("NB_GID")
    what = f"to run JupyterLab and the self-check as {name}" if services else f"to run the command as {name}"
    need("SETUID", what)
    need("SETGID", what)
    need("KILL", f"to pass docker stop's signal on to {name}'s processes")
    if user.refit:
        need("CHOWN", f"for NB_UID={uid}/NB_GID={gid}: {name}'s files follow the new ids")
    if user.new_group or user.join_users:
        need("CHOWN", f"for NB_GID={gid}: groupadd and usermod write /etc/gshadow")
    if user.join_team:
        need("CHOWN", f"for TEAM_GID={settings.text('TEAM_GID')}: groupadd and usermod write /etc/gshadow")
    if user.rename:
        need("CHOWN", f"for NB_USER={name}: usermod writes /etc/shadow, the home folder's files keep their owner")
    if user.group_rename:
        need("CHOWN", f"for NB_GROUP={settings.group}: groupmod writes /etc/gshadow")
    if settings.chown_home or settings.chown_extra:
        need("CHOWN", "for CHOWN_HOME/CHOWN_EXTRA")


def check_capabilities(settings: Settings, user: UserPlan, needs: Needs, floor: int, effective: int) -> None:
    name = settings.user
    missing: Dict[str, str] = {}  # name: the first reason, in the order they are needed

    def need(capability: str, reason: str) -> None:
        held = effective >> CAP_BITS[capability] & 1
        if capability == "DAC_READ_SEARCH":  # DAC_OVERRIDE allows all that DAC_READ_SEARCH does.
            held |= effective >> CAP_BITS["DAC_OVERRIDE"] & 1
        if not held:
            missing.setdefault(capability, reason)

    need_for_the_user(settings, user, needs.services, need)
    if needs.jupyter:
        need("CHOWN", f"to hand JupyterLab's runtime directory to {name}")
        need("FOWNER", f"to set the mode of JupyterLab's runtime directory, once it is {name}'s")
        need("DAC_READ_SEARCH", f"for the healthcheck, run as root, to read JupyterLab's runtime file in {name}'s "
             "private runtime directory")
    if needs.ssh:
        need("SYS_CHROOT", "for sshd's privilege separation")
        need("CHOWN", f"for sshd to hand a login's terminal to {name}")
        need("AUDIT_WRITE", "for sshd's login records of terminal sessions")
        if settings.ssh_port < floor:
            need("NET_BIND_SERVICE", f"for sshd to listen on SSH_PORT={settings.text('SSH_PORT') or 22}, below {floor} "
                 "(net.ipv4.ip_unprivileged_port_start; or use SSH_PORT=2222)")
    if missing:
        # Names that share a reason are listed together: "SETUID, SETGID (to run ...)".
        names = list(missing)
        parts = [item + (", " if index + 1 < len(names) and missing[names[index + 1]] == missing[item]
                         else f" ({missing[item]}); ")
                 for index, item in enumerate(names)]
        raise Refused(f"missing capabilities: {''.join(parts)[:-2]}. Add them (--cap-add; docs/security.md lists "
                      f"the minimal set), or start without root (--user {settings.text('NB_UID')}:100, no SSH)")
