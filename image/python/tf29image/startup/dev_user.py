"""Planning steps for the dev user: who it is in /etc/passwd and what fitting it to NB_USER, NB_UID and
NB_GID changes (fit_user), its home folder and the mounts in it (make_home, check_mounts), how commands run as it, and
its name without root. Each is a function of the Settings, the System and earlier records, returning a
frozen record or Refused. Standard library only, run by the distro's python3 -I (3.8 or newer).
"""

from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple  # python 3.8: no list[...]

from tf29image.startup.settings import Settings
from tf29image.startup.system import Mounts, System
from tf29image.startup.values import COMMAND, Refused

# Where an earlier start of this container recorded the name it renamed the dev user to (fit_user).
RENAMED_USER_FILE = "/etc/tf29-env/dev-user"
ROOT_HOME = "/home/root"  # the root triplet's: passwd's /root is not the dev user's kind of home
SCRATCH = "/tmp"  # noqa: S108 - a path named, not written
TEAM_GROUP = "team"  # the name of the group made for a TEAM_GID the image has none for


# NB_GID becomes the dev user's group, TEAM_GID one more: the image's system groups (below 1000) would hand
# their rights out; 100 (users), 1000 and up, and gids the image has no group for are allowed (gid 0: values).
def check_gid(settings: Settings, system: System) -> None:
    group = system_group(settings.gid, settings, system)
    if group is not None:
        raise Refused(f"NB_GID={settings.text('NB_GID')} is the image's system group '{group}', whose rights "
                      "everything run in the notebooks and SSH sessions would get; use your own gid (id -g, 1000 or "
                      "above) or 100 (users)")
    group = system_group(settings.team_gid, settings, system) if settings.team_gid else None
    if group is not None:
        raise Refused(f"TEAM_GID={settings.text('TEAM_GID')} is the image's system group '{group}', whose rights "
                      "everything run in the notebooks and SSH sessions would get; use the gid of the team's shared "
                      "folder (1000 or above)")


def system_group(gid: int, settings: Settings, system: System) -> Optional[str]:
    """The name of GID where it is one of the image's system groups (below 1000, not users)."""
    return system.group_name(gid) if not settings.triplet and gid < 1000 and gid != 100 else None


def dev_user_name(settings: Settings, system: System) -> str:
    """The dev user's name in /etc/passwd now: the image's, or the NB_USER an earlier start renamed it to."""
    if system.user_uid(settings.image_user) is not None:
        return settings.image_user
    text = system.read_file(RENAMED_USER_FILE)
    renamed = text.split("\n", 1)[0].strip() if text else ""
    return renamed if renamed and system.user_uid(renamed) is not None else ""


# The triplet runs JupyterLab (or the command) as the container's root, with HOME /home/root; sshd
# never lets root in, so SSH stays off.
def check_user_name(settings: Settings, mode_name: str, system: System, euid: int) -> None:
    if settings.triplet:
        if euid != 0:
            raise Refused(f"NB_USER=root NB_UID=0 NB_GID=0 runs JupyterLab as the container's root, but this "
                          f"container runs as uid {euid}: drop --user (under rootless Docker or Podman, root in the "
                          "container is your own host account)")
        if mode_name != COMMAND and not settings.jupyter:
            raise Refused("ENABLE_JUPYTER=0 with NB_USER=root NB_UID=0 NB_GID=0, where SSH stays off: nothing to run")
    elif settings.user != dev_user_name(settings, system):
        uid = system.user_uid(settings.user)
        if uid is not None:
            raise Refused(f"NB_USER={settings.user} is already a user of the image (uid {uid}); pick another name")


@dataclass(frozen=True)
class UserPlan:
    """What fit_user will change as root, so that what it needs is checked beforehand. FROM: the
    dev user's name now (OLD_UID, OLD_GID its ids); RENAME: it becomes NB_USER; REFIT: /etc/passwd gets
    NB_UID/NB_GID (the home folder's files follow); NEW_GROUP: NB_GID has no group yet (groupadd);
    GROUP_RENAME: NB_GID's group is renamed to NB_GROUP; JOIN_USERS: the dev user is not in "users" yet
    (usermod). TEAM_GID (0: none) is TEAM_GROUP in /etc/group, which NEW_TEAM_GROUP makes (groupadd) and
    JOIN_TEAM adds the dev user to (usermod): sshd's logins and setpriv --init-groups read the groups from
    there. In the image as built, with the default settings, none: such a start writes nothing under
    /etc (a read-only root works). Without root, or for the root triplet, nothing is planned."""

    user_from: str = "root"
    old_uid: int = 0
    old_gid: int = 0
    rename: bool = False
    refit: bool = False
    new_group: bool = False
    group_rename: bool = False
    join_users: bool = False
    team_gid: int = 0
    team_group: str = ""
    new_team_group: bool = False
    join_team: bool = False


def plan_user(settings: Settings, system: System, euid: int) -> UserPlan:
    if euid != 0 and settings.team_gid:
        raise Refused(f"TEAM_GID={settings.text('TEAM_GID')} needs a container started as root, which adds "
                      f"{settings.user} to the group in /etc/group, and this one runs as uid {euid}: drop --user, or "
                      f"unset TEAM_GID and pass the group with --group-add {settings.team_gid}")
    if euid != 0 or settings.triplet:
        return UserPlan()
    user_from = dev_user_name(settings, system)
    if not user_from:
        raise Refused(f"the dev user {settings.image_user} is not in /etc/passwd, nor an earlier NB_USER recorded in "
                      f"{RENAMED_USER_FILE}: re-create the container (docker rm, then run)")
    old_uid, old_gid = system.user_ids(user_from)
    user, group, gid = settings.user, settings.group, settings.gid
    refit = old_uid != settings.uid or old_gid != gid
    new_group = group_rename = False
    existing = system.group_name(gid)
    if existing is None:
        new_group = refit
        taken = system.group_gid(group or user) if refit else None
        if taken is not None:
            raise Refused(f"NB_GROUP: the group name '{group or user}' is the image's group {taken}; "
                          f"NB_GID={settings.text('NB_GID')} needs another name (NB_GROUP=NAME)")
    elif group and existing != group:
        if gid == 100:
            raise Refused(f"NB_GROUP={group}: NB_GID=100 is the image's group 'users', which owns the home folder "
                          "and the venv and keeps its name; NB_GROUP names a group of your own NB_GID")
        if system.group_gid(group) is not None:
            raise Refused(f"NB_GROUP={group} is already another group of the image; pick another name")
        group_rename = True
    # In "users" once refitted: as its primary group, or as a listed member.
    users_gid, members = system.group_members("users")
    made = (group or user) if new_group else ""
    return UserPlan(user_from, old_uid, old_gid, user_from != user, refit, new_group, group_rename,
                    gid != users_gid and user_from not in members, *plan_team(settings, user_from, made, system))


def plan_team(settings: Settings, user_from: str, made: str, system: System) -> Tuple[int, str, bool, bool]:
    """TEAM_GID's gid, group name, whether groupadd makes it and whether the dev user joins it: not when
    it is NB_GID, the dev user's own group, nor when an earlier start of this container added it."""
    gid = settings.team_gid
    if not gid or gid == settings.gid:
        return gid, "", False, False
    existing = system.group_name(gid)
    if existing is not None:
        _, members = system.group_members(existing)
        return gid, existing, False, user_from not in members and settings.user not in members
    # TEAM_GROUP, unless the image or the group fit_user makes for NB_GID has that name.
    name = TEAM_GROUP if system.group_gid(TEAM_GROUP) is None and made != TEAM_GROUP else f"{TEAM_GROUP}-{gid}"
    return gid, name, True, True


@dataclass(frozen=True)
class HomePlan:
    """NB_HOME (HOME): the dev user's home folder as passwd has it after fit_user, and JupyterLab's root.
    FOLDER: where the user's files are (check_mounts, prepare_user_state): HOME, but without root a home folder the
    uid cannot write, whose HOME moves to a SCRATCH one. SCRATCH: HOME instead on a read-only file system
    (make_scratch_home), or the moved HOME. USER_HOME: the dev user's HOME, HOME or SCRATCH. OLD_HOME:
    root's dev user's home before a rename.
    What fit_user and check_mounts ask of the mount table: MOUNTS, the mount points at or under
    FOLDER, once each; MOUNT_CHECKS, those whose mount on top is read-write and that check_mounts checks,
    each with whether it holds nothing but mount points (Docker makes those); OLD_MOUNTS, those under the
    source (the folder whose files make_home copies, the root triplet's image home, or moves, a rename's
    old home); IS_MOUNT: HOME is one; COPY: the source's entries make_home copies (none into a mount,
    none there already, none that hold a mount, which stays); PRUNE: the mounts under HOME, which find
    skips (their files keep their owners when NB_UID changes)."""

    home: str
    folder: str
    scratch: str
    user_home: str
    old_home: str
    mounts: Tuple[str, ...]
    mount_checks: Tuple[Tuple[str, bool], ...]
    old_mounts: Tuple[str, ...]
    is_mount: bool
    copy: Tuple[str, ...]
    prune: Tuple[str, ...]


def plan_home(settings: Settings, user: UserPlan, mounts: Mounts, system: System, euid: int) -> HomePlan:
    is_root = euid == 0
    uid = settings.uid if is_root else euid
    scratch = f"{SCRATCH}/tf29-env-home-{uid}"
    old = source = ""
    if settings.apptainer:
        home = folder = user_home = settings.home
    elif not is_root:
        name = settings.user
        folder = f"/home/{name}" if system.is_dir(f"/home/{name}") else f"/home/{settings.image_user}"
        writable = system.writable(folder)
        home = folder if writable or mounts.read_only(folder) else scratch
        user_home = folder if writable else scratch
    elif settings.triplet:
        home = folder = user_home = ROOT_HOME
        source = "/home/" + settings.image_user
    else:
        old = system.user_home(user.user_from)
        home = folder = f"/home/{settings.user}" if user.rename else old
        user_home = scratch if mounts.read_only(home) else home
        source = old if user.rename else ""

    top: Dict[str, str] = {}
    for point, options in mounts.table:
        top[point] = options  # dicts keep the first point's place; a later mount on it is on top
    under = [point for point in top if point == folder or point.startswith(folder.rstrip("/") + "/")]
    old_mounts = [point for point in top if source and point.startswith(source.rstrip("/") + "/")]
    checks: List[Tuple[str, bool]] = []
    for point in under:
        if top[point].startswith("rw") and system.is_dir(point) and (is_root or point != folder):
            checks.append((point, all(f"{point}/{name}" in under for name in system.entries(point))))

    def holds_mount(path: str) -> bool:
        return any(point == path or point.startswith(path + "/") for point in old_mounts)

    copy = [name for name in system.entries(source) if not system.lexists(f"{home}/{name}")
            and not holds_mount(f"{source}/{name}")] if source and home not in top else []
    prune = [arg for point in under if point != home for arg in ("-path", point, "-prune", "-o")]
    return HomePlan(home, folder, scratch, user_home, old, tuple(under), tuple(checks), tuple(old_mounts),
                    home in top, tuple(copy), tuple(prune))


# The commands that run as the dev user: with root, setpriv to NB_UID/NB_GID and its groups, and the
# user's HOME, USER and LOGNAME; the root triplet as root, with /home/root; without root, as is (fit_user
# exports HOME, USER and LOGNAME there).
def plan_as_user(settings: Settings, home: HomePlan, is_root: bool) -> Tuple[str, ...]:
    if is_root and settings.triplet:
        return ("env", f"HOME={home.user_home}", "USER=root", "LOGNAME=root")
    if is_root:
        return ("setpriv", f"--reuid={settings.uid}", f"--regid={settings.gid}", "--init-groups",
                "env", f"HOME={home.user_home}", f"USER={settings.user}", f"LOGNAME={settings.user}")
    return ()


@dataclass(frozen=True)
class Account:
    """USER and LOGNAME (NAME), and whether libnss-wrapper serves a passwd entry (NSS_ENTRY): without root
    (and under Apptainer) nothing under /etc can change, so where passwd has no entry for the uid, or has
    the image's user for it while NB_USER names another, the entry is served."""

    name: str
    nss_entry: bool = False


def plan_account(settings: Settings, euid: int, system: System) -> Account:
    if euid == 0:
        return Account(settings.user)
    name = system.user_name(euid)
    image_user = settings.image_user
    if name is None or (not settings.apptainer and name == image_user and settings.user != image_user):
        return Account(settings.user, nss_entry=True)
    return Account(name)
