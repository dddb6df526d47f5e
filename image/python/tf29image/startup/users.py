"""The dev user's files for the entrypoint (entrypoint.d/user.sh) and the planner (startup/values.py); the
entrypoint runs this with the distro's python3 -I:

  nss OUT_DIR UID GID USER GROUP HOME
      (USER and GROUP as planned: the planner has checked the names, startup/values.py)
      An arbitrary uid (`docker run --user 12345`, OpenShift, Kubernetes runAsUser) has no passwd
      entry, and whoami, getpass, git and ssh-keygen fail without one. Root could add it to
      /etc/passwd; a non-root start cannot, and a read-only root file system forbids it to anyone.
      So the entry goes into copies of /etc/passwd and /etc/group in OUT_DIR (under /tmp, which is
      writable in every supported mode), which libnss-wrapper serves to every process started with
      LD_PRELOAD=libnss_wrapper.so NSS_WRAPPER_PASSWD/GROUP pointing at them. Nothing under /etc is
      written, and no file there is made writable for the purpose: a group-writable /etc/passwd, as
      some images use, lets whoever can write it give root a password and `su` (sudo and su, being
      setuid, ignore LD_PRELOAD, so the copies change nothing for them).

The planner (startup/values.py) checks CHOWN_HOME_OPTS, CHOWN_EXTRA and CHOWN_EXTRA_OPTS with chown_options
and chown_extra_paths.

A bad value: one line `NAME: what is wrong` on stderr, exit 2 (the entrypoint prefixes its own).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Sequence  # python 3.8: no list[...] at run time

USAGE = 2

# chown's options that only say how much to change and how much to tell: -R (recursive; with no -H
# or -L it never follows a link inside the tree), -h (a link itself, not its target), -c/-v/-f (what
# is reported). -L/-H would follow links out of the folder (a link to /etc in a user's folder hands
# /etc to the user), --from/--reference change what is chowned to what, so they and all else are refused.
SAFE_CHOWN_FLAGS = "Rhcvf"
SAFE_CHOWN_LONG = ("--recursive", "--no-dereference", "--changes", "--verbose", "--silent", "--quiet")

# Folders that CHOWN_EXTRA may not hand to the dev user, nor any folder in them or above them: the
# system's (its programs, its configuration, root's home), and the entrypoint's own, which root runs
# at every start. /opt/venv is not among them: it is the dev user's group's already.
SYSTEM_TREES = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/root",
                "/run", "/sbin", "/sys", "/usr", "/var", "/opt/tf29-env")
# Shared folders that may hold others' files: refused themselves, while a folder in them is fine.
SHARED_FOLDERS = ("/tmp", "/home")  # noqa: S108 - paths compared, no file made
# Unix names: NB_USER and NB_GROUP (the planner, startup/values.py, checks them with this one).
NAME = re.compile(r"[a-z_][a-z0-9_-]{0,31}")


class Refused(Exception):
    """A setting's value that cannot be used; str() is the one line that says why."""


def entries(text: str) -> list[list[str]]:
    """The colon-separated lines of a passwd or group file, comments and blank lines dropped."""
    return [line.split(":") for line in text.splitlines() if line.strip() and not line.startswith("#")]


def with_user(passwd: str, uid: int, gid: int, user: str, home: str) -> str:
    """/etc/passwd's contents with USER as uid:gid: any entry named USER or holding the uid goes
    first (the image's jovyan when USER is jovyan, or the uid's old name), so that both lookups,
    by name and by uid, find the new entry."""
    kept = [fields for fields in entries(passwd) if len(fields) >= 7 and fields[0] != user and fields[2] != str(uid)]
    kept.append([user, "x", str(uid), str(gid), user, home, "/bin/bash"])
    return "".join(":".join(fields) + "\n" for fields in kept)


def with_group(group: str, gid: int, name: str) -> str:
    """/etc/group's contents with a group NAME for gid, unless the gid has one already. A NAME that
    another gid has is refused: two groups of one name make every lookup by name ambiguous."""
    parsed = [fields for fields in entries(group) if len(fields) >= 4]
    if any(fields[2] == str(gid) for fields in parsed):
        return "".join(":".join(fields) + "\n" for fields in parsed)
    for fields in parsed:
        if fields[0] == name:
            raise Refused(f"NB_GROUP: the group name '{name}' is the image's group {fields[2]}; gid {gid} needs "
                          "another name (NB_GROUP=NAME)")
    parsed.append([name, "x", str(gid), ""])
    return "".join(":".join(fields) + "\n" for fields in parsed)


def write_nss_files(out_dir: Path, etc: Path, uid: int, gid: int, user: str, group: str, home: str) -> None:
    passwd = with_user((etc / "passwd").read_text(), uid, gid, user, home)
    groups = with_group((etc / "group").read_text(), gid, group)
    for name, text in (("passwd", passwd), ("group", groups)):
        # Beside the target, then renamed over it: a process starting meanwhile reads a whole file.
        partial = out_dir / f".{name}.partial"
        partial.write_text(text)
        partial.replace(out_dir / name)


def chown_options(name: str, value: str) -> list[str]:
    """The options in VALUE (split on white space), each one chown option of the safe set."""
    options = value.split()
    for option in options:
        if option in SAFE_CHOWN_LONG:
            continue
        if re.fullmatch(f"-[{SAFE_CHOWN_FLAGS}]+", option):
            continue
        raise Refused(f"{name}: '{option}' is not allowed; only -R (--recursive), -h, -c, -v and -f: other options "
                      "follow links out of the folder (-L, -H) or change what is changed (--from, --reference)")
    return options


def inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def chown_extra_paths(value: str) -> list[str]:
    """The folders of CHOWN_EXTRA (comma-separated absolute paths), each existing and outside the
    system, checked where it really leads (a link to /etc is /etc)."""
    paths: list[str] = []
    for raw in value.split(","):
        path = raw.strip()
        if not path:
            continue
        if not path.startswith("/") or "\n" in path:
            raise Refused(f"CHOWN_EXTRA: '{path}' is not an absolute path (e.g. /data)")
        if ".." in path.split("/"):
            raise Refused(f"CHOWN_EXTRA: '{path}' holds '..'; name the folder itself")
        real = os.path.realpath(path)
        shown = path if real == path.rstrip("/") or path == "/" else f"{path} (that is {real})"
        for tree in SYSTEM_TREES:
            if inside(real, tree) or inside(tree, real):
                raise Refused(f"CHOWN_EXTRA: {shown} is or holds the system's {tree}, which the dev user must not "
                              "own: name a folder of your own (a volume, /data, /opt/venv)")
        if real in SHARED_FOLDERS:
            raise Refused(f"CHOWN_EXTRA: {shown} holds others' files too; name a folder in it")
        if not os.path.lexists(path):
            raise Refused(f"CHOWN_EXTRA: {path} does not exist")
        paths.append(path)
    return paths


def main(argv: Sequence[str]) -> int:
    try:
        if len(argv) == 7 and argv[0] == "nss":
            out_dir, uid, gid, user, group, home = argv[1:]
            write_nss_files(Path(out_dir), Path("/etc"), int(uid), int(gid), user, group, home)
            return 0
    except Refused as refused:
        print(refused, file=sys.stderr)
        return USAGE
    print("usage: users.py nss OUT_DIR UID GID USER GROUP HOME", file=sys.stderr)
    return USAGE


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
