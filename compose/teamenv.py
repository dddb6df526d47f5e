#!/usr/bin/env python3
"""The team-wide settings of .env that compose cannot apply by itself, checked and turned into the
variables docker-compose.yml reads; `make up` runs it before anything starts and evals what it prints.

  TF29ENV_TEAM_DATA   a host folder (or a named volume of the local driver): every member's ~/data,
                      read-only. It must exist and be readable; a volume is passed on as its folder.
  TF29ENV_TLS         off | self-signed | team: JupyterLab over HTTP, over HTTPS with a certificate
                      each member makes at start (GEN_CERT), or with the team's TF29ENV_TLS_CERT and
                      TF29ENV_TLS_KEY (readable, matching each other, not expired).
  TF29ENV_HTTP_ANY    1: plain HTTP on TF29ENV_BIND_ADDRESS too; otherwise, with TLS off, the members'
                      Jupyter ports are published on 127.0.0.1 only (SSH's stay on TF29ENV_BIND_ADDRESS).
  TF29ENV_TEAM_SHARED a host folder (empty: none): every member's ~/shared, writable for the folder's group,
                      which every member joins (the image's TEAM_GID). Its group must be able to write it;
                      TF29ENV_TEAM_GID, where given, must be that group.

Bad input: one line, exit 2, nothing printed for make to start with. Standard library and the host's
docker and openssl only: it runs on the host's python3 (3.8 or newer), like member.py.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

if __package__:  # compose.teamenv, as the tests import it
    from compose import certs, member
    from compose.memlock import read_env_file
else:  # python3 compose/teamenv.py, as compose.mk runs it: this file's folder is on sys.path
    import certs  # type: ignore[import-not-found, no-redef]
    import member  # type: ignore[import-not-found, no-redef]
    from memlock import read_env_file  # type: ignore[import-not-found, no-redef]

PROJECT_DIR = Path(__file__).resolve().parent.parent
TLS_MODES = ("off", "self-signed", "team")
# Where docker-compose.yml mounts the team's certificate and key in every member.
CERT_TARGET = "/etc/tf29-env/tls/cert.pem"
KEY_TARGET = "/etc/tf29-env/tls/key.pem"
# .env's settings read here alone (not by compose), with their defaults.
SETTINGS = {"TF29ENV_TLS": "off", "TF29ENV_TLS_CERT": "", "TF29ENV_TLS_KEY": "", "TF29ENV_HTTP_ANY": "0",
            "TF29ENV_TEAM_SHARED": "", "TF29ENV_TEAM_GID": ""}
# What docker-compose.yml reads that only this script sets (make up exports them): never in .env.
DERIVED = ("TF29ENV_GEN_CERT", "TF29ENV_JUPYTER_CERT_FILE", "TF29ENV_JUPYTER_KEY_FILE", "TF29ENV_CERT_SOURCE",
           "TF29ENV_KEY_SOURCE", "TF29ENV_JUPYTER_ADDRESS", "TF29ENV_TEAM_SHARED_MOUNT", "TF29ENV_TEAM_SHARED_GID")
SHARED_TARGET = "/home/jovyan/shared"  # where every member has the team's shared folder
EMPTY_VOLUME = "team-data"  # docker-compose.yml's default TF29ENV_TEAM_DATA: the project's own empty volume
LOOPBACK = ("127.0.0.1", "::1", "[::1]", "localhost")
YES = ("1", "yes", "true", "on")


class SettingError(Exception):
    """One line for the admin, exit 2, nothing started."""


@dataclass(frozen=True)
class Derived:
    """What compose gets (variable: value) and the lines said on stderr about it."""

    variables: dict[str, str]
    notes: tuple[str, ...] = ()


def lookup(settings: Mapping[str, str], environ: Mapping[str, str], name: str) -> str:
    """As compose resolves ${NAME:-}: the environment first, then .env; empty counts as unset."""
    return (environ.get(name) or settings.get(name) or "").strip()


def host_path(value: str, project: Path) -> Path | None:
    """The host folder a compose volume source names (None for a volume name), relative ones from PROJECT."""
    if value.startswith("~"):
        return Path(value).expanduser()
    if value.startswith(("/", ".")):
        return (project / value).resolve() if value.startswith(".") else Path(value)
    return None


def volume_folder(name: str) -> str:
    """The host folder of the named volume NAME, which compose can bind as it binds any folder."""
    inspect = ["docker", "volume", "inspect", "-f", "{{.Driver}} {{len .Options}} {{.Mountpoint}}", name]
    try:
        done = subprocess.run(inspect, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SettingError(f"TF29ENV_TEAM_DATA={name}: docker volume inspect did not answer ({exc})") from None
    if done.returncode != 0:
        raise SettingError(f"TF29ENV_TEAM_DATA={name}: no such folder or Docker volume (a folder: give its "
                           "absolute path)")
    driver, options, folder = [*done.stdout.strip().split(" ", 2), "", ""][:3]
    # A volume with driver options (NFS, a device) is mounted only while a container uses it.
    if driver != "local" or options not in ("", "0"):
        raise SettingError(f"TF29ENV_TEAM_DATA={name}: a volume of driver {driver} with options is mounted only "
                           "while in use: give the folder it mounts (or the NFS mount on this host) instead")
    return folder


def team_data(value: str, project: Path) -> dict[str, str]:
    """TF29ENV_TEAM_DATA as compose gets it: an existing, readable folder."""
    if value in ("", EMPTY_VOLUME):
        return {}
    path = host_path(value, project)
    if path is None:
        return {"TF29ENV_TEAM_DATA": volume_folder(value)}
    if not path.is_dir():
        raise SettingError(f"TF29ENV_TEAM_DATA={value}: no such folder on this host")
    if not os.access(path, os.R_OK | os.X_OK):
        raise SettingError(f"TF29ENV_TEAM_DATA={value}: this user cannot read the folder (its members could not "
                           "either): chmod it, e.g. a+rX")
    return {"TF29ENV_TEAM_DATA": str(path)}


def team_shared(value: str, gid_given: str, data: str, project: Path) -> tuple[dict[str, str], tuple[str, ...]]:
    """TF29ENV_TEAM_SHARED as compose gets it: the mount and the members' TEAM_GID (both empty: none, so
    docker-compose.yml's default mounts nothing there), and a warning where new files would not keep the group."""
    if not value:
        if gid_given:
            raise SettingError(f"TF29ENV_TEAM_GID={gid_given} is set but TF29ENV_TEAM_SHARED is not: set the "
                               "shared folder too, or remove TF29ENV_TEAM_GID")
        return {"TF29ENV_TEAM_SHARED_MOUNT": "", "TF29ENV_TEAM_SHARED_GID": ""}, ()
    path = host_path(value, project) or project / value
    if not path.is_dir():
        raise SettingError(f"TF29ENV_TEAM_SHARED={value}: no such folder on this host")
    path = path.resolve()
    if ":" in str(path):  # compose's short volume syntax splits at each ':'
        raise SettingError(f"TF29ENV_TEAM_SHARED={value}: compose cannot mount a path with ':' in it; rename it")
    if data and path == Path(data).resolve():
        raise SettingError(f"TF29ENV_TEAM_SHARED and TF29ENV_TEAM_DATA are both {path}: the team's data is "
                           "read-only, the shared folder writable; give two folders")
    info = path.stat()
    gid = info.st_gid
    fix = f"chgrp GID {path} && chmod 2775 {path}"
    if gid_given:
        if not gid_given.isdigit() or not 1 <= int(gid_given) <= 2147483647:
            raise SettingError(f"TF29ENV_TEAM_GID={gid_given} is not a numeric gid (1-2147483647)")
        if int(gid_given) != gid:
            raise SettingError(f"TF29ENV_TEAM_GID={gid_given}, but TF29ENV_TEAM_SHARED={path} belongs to group "
                               f"{gid}: {fix.replace('GID', str(int(gid_given)), 1)}")
    if gid == 0:
        raise SettingError(f"TF29ENV_TEAM_SHARED={path} belongs to group 0 (root), which no member may join: "
                           f"{fix} (GID: the team's group, e.g. getent group team)")
    if info.st_mode & 0o030 != 0o030:
        raise SettingError(f"TF29ENV_TEAM_SHARED={path}: its group {gid} cannot write it (mode "
                           f"{info.st_mode & 0o7777:o}): {fix.replace('GID', str(gid), 1)}")
    notes = () if info.st_mode & 0o2000 else (
        f"tf29-env: WARNING: TF29ENV_TEAM_SHARED={path} has no setgid bit, so new files there get each member's own "
        f"group and the others cannot change them: chmod g+s {path}",)
    return {"TF29ENV_TEAM_SHARED_MOUNT": f"{path}:{SHARED_TARGET}:rw", "TF29ENV_TEAM_SHARED_GID": str(gid)}, notes


def members_without_shared(project: Path) -> list[str]:
    """The members of docker-compose.yml whose volumes lack the team's shared folder (written before it was)."""
    try:
        lines = (project / "docker-compose.yml").read_text().splitlines()
    except OSError:
        return []  # compose says what is wrong with the file itself
    return [name for name in member.entry_names(lines, "services")
            if member.TEAM_SHARED_LINE not in member.entry_lines(lines, "services", name)]


def check_pair(cert: Path, key: Path) -> None:
    """The certificate and key can be read, belong together, and the certificate has not expired."""
    try:
        certs.check_pair(cert, key, "TF29ENV_TLS_CERT", "TF29ENV_TLS_KEY")
    except certs.PairError as exc:
        raise SettingError(str(exc)) from None


def tls(settings: Mapping[str, str], environ: Mapping[str, str], project: Path) -> dict[str, str]:
    mode = lookup(settings, environ, "TF29ENV_TLS") or "off"
    if mode not in TLS_MODES:
        raise SettingError(f"TF29ENV_TLS={mode} is not one of: {', '.join(TLS_MODES)}")
    cert, key = (lookup(settings, environ, name) for name in ("TF29ENV_TLS_CERT", "TF29ENV_TLS_KEY"))
    if mode != "team":
        if cert or key:
            raise SettingError(f"TF29ENV_TLS_CERT/TF29ENV_TLS_KEY are set but TF29ENV_TLS={mode}: set "
                               "TF29ENV_TLS=team to use them, or remove them")
        return {"TF29ENV_GEN_CERT": "yes" if mode == "self-signed" else "no",
                "TF29ENV_JUPYTER_CERT_FILE": "", "TF29ENV_JUPYTER_KEY_FILE": ""}
    if not cert or not key:
        raise SettingError("TF29ENV_TLS=team needs TF29ENV_TLS_CERT and TF29ENV_TLS_KEY (the team's PEM files)")
    cert_path, key_path = (host_path(value, project) or project / value for value in (cert, key))
    check_pair(cert_path, key_path)
    return {"TF29ENV_GEN_CERT": "no", "TF29ENV_CERT_SOURCE": str(cert_path), "TF29ENV_KEY_SOURCE": str(key_path),
            "TF29ENV_JUPYTER_CERT_FILE": CERT_TARGET, "TF29ENV_JUPYTER_KEY_FILE": KEY_TARGET}


def jupyter_address(bind: str, https: bool, http_any: bool) -> tuple[str, str | None]:
    """Where the members' Jupyter ports are published, and a line when that is not BIND."""
    if https or http_any or bind in LOOPBACK or bind.startswith("127."):
        return bind, None
    return "127.0.0.1", (f"tf29-env: JupyterLab speaks plain HTTP (TF29ENV_TLS=off), so its ports are on 127.0.0.1 "
                         f"only, not {bind}: TF29ENV_TLS=self-signed or team serves it there over HTTPS "
                         "(TF29ENV_HTTP_ANY=1: plain HTTP there)")


def derive(settings: Mapping[str, str], environ: Mapping[str, str], project: Path) -> Derived:
    variables = {**team_data(lookup(settings, environ, "TF29ENV_TEAM_DATA"), project),
                 **tls(settings, environ, project)}
    shared, notes = team_shared(lookup(settings, environ, "TF29ENV_TEAM_SHARED"),
                                lookup(settings, environ, "TF29ENV_TEAM_GID"), variables.get("TF29ENV_TEAM_DATA", ""),
                                project)
    missing = members_without_shared(project) if shared["TF29ENV_TEAM_SHARED_MOUNT"] else []
    if missing:
        raise SettingError(f"TF29ENV_TEAM_SHARED is set, but the volumes of {', '.join(missing)} in "
                           f"docker-compose.yml lack the line '{member.TEAM_SHARED_LINE.strip()}': add it to each")
    variables.update(shared)
    https = variables["TF29ENV_GEN_CERT"] == "yes" or bool(variables["TF29ENV_JUPYTER_CERT_FILE"])
    http_any = lookup(settings, environ, "TF29ENV_HTTP_ANY").lower() in YES
    bind = lookup(settings, environ, "TF29ENV_BIND_ADDRESS") or "0.0.0.0"  # noqa: S104 - compose's default
    address, note = jupyter_address(bind, https, http_any)
    variables["TF29ENV_JUPYTER_ADDRESS"] = address
    return Derived(variables, (*notes, *((note,) if note else ())))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project-dir", type=Path, default=PROJECT_DIR, help="folder of docker-compose.yml and .env")
    args = parser.parse_args(argv)
    try:
        derived = derive(read_env_file(args.project_dir / ".env"), os.environ, args.project_dir.resolve())
    except SettingError as exc:
        print(f"tf29-env: ERROR: {exc}", file=sys.stderr)
        return 2
    for note in derived.notes:
        print(note, file=sys.stderr)
    print("\n".join(f"export {name}={shlex.quote(value)}" for name, value in derived.variables.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
