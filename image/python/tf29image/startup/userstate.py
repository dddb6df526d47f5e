"""The dev user's own state that outlives the container (docs/packages.md): their packages, their
environments and settings. Python 3.8 or newer, standard library only (the self-check's analysis
of requirements imports `packaging`, which only the venv's Python has).

  start HOME FOLDER
      Run by the entrypoint (entrypoint.d/user.sh) as the dev user, never as root, with the
      distro's python3 -I (-m tf29image.startup.userstate), before any service or command starts.
      HOME is the dev user's HOME, FOLDER the home folder in /etc/passwd, where volumes are mounted
      (they differ when HOME moved to /tmp on a read-only root). Where a volume is mounted at
      FOLDER/.local (the one volume that `make run`, compose, the hub and Zero to JupyterHub add for
      this), every entry of PERSISTED in HOME becomes a link into
      FOLDER/.local/state/tf29-env/home/, and the image's own dotfiles (IMAGE_DOTFILES) are kept
      there too, following the image until the user changes them. The user site
      (~/.local/lib/pythonX.Y/site-packages) is made, so that a kernel started before the first
      install finds what %pip installs. User packages installed under an older image, or for another
      Python, are reported, one line each. Prints its log lines; never fails the start.
  check
      `user-packages check`: the same report, and user packages that break the image's pins.
  reinstall [PIP OPTIONS]
      `user-packages reinstall`: reinstalls what the report names, with pip (PIP OPTIONS, such as
      --no-index --find-links DIR, go to it), and records the image's stack as the one they match.
  remove NAME
      `user-packages remove NAME`: removes the user site's copy of a package the image also has
      (pip would find the image's first).
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Callable, List, Sequence  # python 3.8: no list[...] at run time

from tf29image.common import VENV, canonical, dist_infos, venv_pins

MOUNTINFO = "/proc/self/mountinfo"

USAGE = 2
DOCS = "docs/packages.md"
# The persisted folder, relative to the home folder: the one volume every way of running the image
# mounts there (Makefile's run, docker-compose.yml, hub/spawner.py, deploy/z2jh/values.yaml, the
# README's docker run: tests/unit/tf29image/startup/test_userstate.py holds them to this). It is also Python's user
# base (~/.local), so that pip's user scheme, Jupyter's user data folder (~/.local/share/jupyter:
# kernels registered with --user) and the scripts folder (~/.local/bin) are on it as they are.
STATE = ".local"
STORE = os.path.join(STATE, "state", "tf29-env", "home")
IMAGE_COPIES = os.path.join(STATE, "state", "tf29-env", "image-home")
DIR, PRIVATE_DIR, FILE, PRIVATE_FILE = "dir", "private-dir", "file", "private-file"
# What of the home folder persists beside the volume's own .local, as links into STORE: the user's
# settings and state, never what the image ships (docs/packages.md has the table and the reasons).
PERSISTED: tuple[tuple[str, str], ...] = (
    (".jupyter", DIR),  # JupyterLab's settings and workspaces, the user's Jupyter configuration
    (".ipython", DIR),  # IPython's profiles, startup files and history
    (".config", DIR),  # XDG settings: git's config/git, matplotlib, pip's own pip.conf
    (".keras", DIR),  # keras.json, and the datasets and models Keras downloads
    (".ssh", PRIVATE_DIR),  # known_hosts, config and keys of the user's own
    ("envs", DIR),  # the user's own environments (python -m venv ~/envs/NAME)
    (".gitconfig", FILE),  # git identity and settings (git config --global)
    (".bash_history", PRIVATE_FILE),
    (".python_history", PRIVATE_FILE),
)
# The image's own dotfiles in the home folder (Debian's /etc/skel): kept in STORE as well, and
# replaced by the image's new version only while the user has not changed them.
IMAGE_DOTFILES = (".bashrc", ".profile", ".bash_logout")
STACK_FILE = "tf29-env-stack.json"
_SO = re.compile(r"\.so(\.[0-9]+)*$")
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_PYTHON_DIR = re.compile(r"^python([0-9]+\.[0-9]+)$")

Lines = List[str]


def python_version() -> str:
    return "{}.{}".format(*sys.version_info[:2])


def venv_site_packages(environ: dict[str, str]) -> str:
    return os.path.join(environ.get("VIRTUAL_ENV") or VENV, "lib", f"python{python_version()}", "site-packages")


def user_base(home: str, environ: dict[str, str]) -> str:
    """Python's user base, as site.getuserbase() computes it on Linux."""
    return environ.get("PYTHONUSERBASE") or os.path.join(home, STATE)


def user_site(base: str, version: str | None = None) -> str:
    return os.path.join(base, "lib", f"python{version or python_version()}", "site-packages")


# --- mounts ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Mount:
    point: str
    fstype: str
    options: str = ""  # the per-mount options (rw or ro first); the planner hands them to the entrypoint


def read_mounts(text: str) -> list[Mount]:
    """/proc/self/mountinfo's mounts, in its order (a later one on the same point is on top)."""
    mounts = []
    for line in text.splitlines():
        fields = line.split(" ")
        if len(fields) < 7 or "-" not in fields[6:]:
            continue
        separator = fields.index("-", 6)
        point = re.sub(r"\\([0-7]{3})", lambda match: chr(int(match.group(1), 8)), fields[4])
        mounts.append(Mount(point, fields[separator + 1] if separator + 1 < len(fields) else "", fields[5]))
    return mounts


def own_mounts() -> list[Mount]:
    try:
        with open(MOUNTINFO, encoding="utf-8", errors="surrogateescape") as handle:
            return read_mounts(handle.read())
    except OSError:
        return []


def is_mount_point(path: str, mounts: Sequence[Mount]) -> bool:
    return any(mount.point == path for mount in mounts)


def persisted(path: str, mounts: Sequence[Mount]) -> bool:
    """Whether what is written at PATH outlives the container: the mount it lies on is one of its
    own (a volume, a bind mount, Apptainer's home), not the container's root or a tmpfs."""
    best: Mount | None = None
    for mount in mounts:
        prefix = mount.point.rstrip("/") + "/"
        if (path == mount.point or path.startswith(prefix)) and (best is None or len(mount.point) >= len(best.point)):
            best = mount
    return best is not None and best.point != "/" and best.fstype not in ("tmpfs", "ramfs")


# --- the home folder's links ------------------------------------------------------------------------

def make_entry(path: str, kind: str) -> None:
    if kind in (DIR, PRIVATE_DIR):
        os.makedirs(path, exist_ok=True)
        if kind == PRIVATE_DIR:
            os.chmod(path, 0o700)
    elif not os.path.lexists(path):
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600 if kind == PRIVATE_FILE else 0o644)
        os.close(fd)


def merge_missing(source: str, target: str) -> None:
    """Copy what SOURCE holds and TARGET lacks into TARGET; nothing in TARGET is overwritten."""
    for entry in os.listdir(source):
        here, there = os.path.join(source, entry), os.path.join(target, entry)
        if os.path.isdir(here) and not os.path.islink(here):
            if not os.path.lexists(there):
                shutil.copytree(here, there, symlinks=True)
            elif os.path.isdir(there) and not os.path.islink(there):
                merge_missing(here, there)
        elif not os.path.lexists(there):
            shutil.copy2(here, there, follow_symlinks=False)


def remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    else:
        os.unlink(path)


def link_entry(home: str, name: str, kind: str) -> Lines:
    """HOME/NAME becomes a link into the store. What is already there (the image's, a start hook's)
    is merged into the store where the store lacks it; the store's own files always win."""
    relative = os.path.join(STORE, name)
    stored, path = os.path.join(home, relative), os.path.join(home, name)
    os.makedirs(os.path.dirname(stored), exist_ok=True)
    if os.path.islink(path):
        if os.readlink(path) == relative:
            make_entry(stored, kind)
            return []
        return [f"~/{name} is a link of your own ({os.readlink(path)}): left as it is, and not kept in ~/{STORE}"]
    lines: Lines = []
    if os.path.lexists(path):
        if not os.path.lexists(stored):
            shutil.move(path, stored)
        elif os.path.isdir(path) and os.path.isdir(stored):
            merge_missing(path, stored)
            remove(path)
        else:
            lines.append(f"~/{name} from the image is not used: yours, kept in ~/{relative}, is")
            remove(path)
    make_entry(stored, kind)
    os.symlink(relative, path)
    return lines


def sync_image_dotfile(home: str, name: str) -> Lines:
    """The image's dotfile NAME, a plain file in a fresh container, goes into the store: as it is
    the first time; later the image's new version replaces the stored one only if the user never
    changed it (the stored copy is still the image's last version); then HOME/NAME links to it."""
    path = os.path.join(home, name)
    if os.path.islink(path) or not os.path.isfile(path):
        return []
    stored = os.path.join(home, STORE, name)
    last = os.path.join(home, IMAGE_COPIES, name)
    image = read_bytes(path)
    mode = os.stat(path).st_mode & 0o777
    lines: Lines = []
    if not os.path.isfile(stored):
        write_bytes(stored, image, mode)
    else:
        yours, before = read_bytes(stored), read_bytes(last) if os.path.isfile(last) else None
        if yours != image:
            if before is not None and yours == before:
                write_bytes(stored, image, mode)
                lines.append(f"~/{name}: the image's new version replaces the old one (you had not changed it)")
            elif before != image:
                lines.append(f"~/{name}: yours is kept; the image's new version is in ~/{IMAGE_COPIES}/{name}")
    write_bytes(last, image, mode)
    os.unlink(path)
    os.symlink(os.path.join(STORE, name), path)
    return lines


def read_bytes(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def write_bytes(path: str, data: bytes, mode: int) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    temporary = path + ".tf29-env-new"
    with open(temporary, "wb") as handle:
        handle.write(data)
    os.chmod(temporary, mode)
    os.replace(temporary, path)


# --- user packages ---------------------------------------------------------------------------------

@dataclass
class Dist:
    name: str
    version: str
    info: str  # the .dist-info folder
    compiled: bool = False
    requires: list[str] = field(default_factory=list)


def dists_in(folder: str, details: bool = True) -> list[Dist]:
    """The distributions installed in FOLDER (a site-packages), from their .dist-info folders."""
    found = []
    for name, version, info in dist_infos(folder):
        dist = Dist(name, version, info)
        if details:
            dist.requires = read_requires(os.path.join(info, "METADATA"))
            dist.compiled = has_compiled_code(os.path.join(info, "RECORD"))
            dist.name = read_name(os.path.join(info, "METADATA")) or name
        found.append(dist)
    return found


def read_headers(path: str) -> list[tuple[str, str]]:
    headers = []
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if not line.strip():
                    break
                if ":" in line and not line[0].isspace():
                    key, _, value = line.partition(":")
                    headers.append((key.strip().lower(), value.strip()))
    except OSError:
        pass
    return headers


def read_requires(metadata: str) -> list[str]:
    return [value for key, value in read_headers(metadata) if key == "requires-dist"]


def read_name(metadata: str) -> str | None:
    return next((value for key, value in read_headers(metadata) if key == "name"), None)


def has_compiled_code(record: str) -> bool:
    try:
        with open(record, encoding="utf-8", errors="replace", newline="") as handle:
            return any(row and _SO.search(row[0]) for row in csv.reader(handle))
    except OSError:
        return False


def requirement_name(requirement: str) -> str | None:
    match = _NAME.match(requirement)
    return canonical(match.group(1)) if match else None


def read_stack(path: str) -> dict[str, str] | None:
    try:
        with open(path, encoding="utf-8") as handle:
            pins = json.load(handle).get("pins")
    except (OSError, ValueError, AttributeError):
        return None
    return {str(name): str(version) for name, version in pins.items()} if isinstance(pins, dict) else None


def write_stack(path: str, pins: dict[str, str]) -> None:
    data = json.dumps({"python": python_version(), "pins": pins}, indent=1, sort_keys=True) + "\n"
    write_bytes(path, data.encode(), 0o644)


@dataclass
class Stale:
    dist: Dist
    why: str  # what changed, e.g. "numpy 1.23.5 -> 1.24.0", or the Python it was installed for
    python: str | None = None  # another Python's site: the version, e.g. "3.8"


def stale_dists(dists: Sequence[Dist], before: dict[str, str] | None, pins: dict[str, str]) -> list[Stale]:
    """Compiled user packages that require a package whose version changed since BEFORE (the stack
    they were installed under): their compiled code was built against the old one."""
    if before is None:
        return []
    changed = {name: (before.get(name), pins.get(name)) for name in set(before) | set(pins)
               if before.get(name) != pins.get(name)}
    found = []
    for dist in dists:
        if not dist.compiled:
            continue
        names = sorted({name for name in map(requirement_name, dist.requires) if name in changed})
        if names:
            why = ", ".join(f"{name} {changed[name][0] or 'none'} -> {changed[name][1] or 'none'}" for name in names)
            found.append(Stale(dist, why))
    return found


def other_pythons(base: str, current: Sequence[Dist]) -> list[Stale]:
    """Packages in the user sites of other Python versions (an image on another base) that the
    current Python's user site lacks."""
    have = {canonical(dist.name) for dist in current}
    found = []
    try:
        entries = sorted(os.listdir(os.path.join(base, "lib")))
    except OSError:
        return []
    for entry in entries:
        match = _PYTHON_DIR.match(entry)
        if not match or match.group(1) == python_version():
            continue
        for dist in dists_in(user_site(base, match.group(1)), details=False):
            if canonical(dist.name) not in have:
                found.append(Stale(dist, f"Python {match.group(1)}", python=match.group(1)))
    return found


def report_lines(stale: Sequence[Stale], shown_site: str) -> Lines:
    lines = []
    for item in stale:
        dist = item.dist
        if item.python:
            lines.append(f"WARNING: user package {dist.name} {dist.version} was installed for Python {item.python} "
                         f"(~/{STATE}/lib/python{item.python}); this image runs Python {python_version()}: "
                         "`user-packages reinstall` installs it for this one")
        else:
            lines.append(f"WARNING: user package {dist.name} {dist.version} in {shown_site} is compiled and was "
                         f"installed under an older image ({item.why}); if it fails, `user-packages reinstall` "
                         "rebuilds it")
    return lines


@dataclass
class Packages:
    """What the user site holds, measured against the image's stack."""

    site: str
    dists: list[Dist]
    pins: dict[str, str]
    stale: list[Stale]
    stack_file: str
    recorded: dict[str, str] | None


def survey(home: str, environ: dict[str, str]) -> Packages:
    base = user_base(home, environ)
    site = user_site(base)
    dists = dists_in(site)
    pins = venv_pins(venv_site_packages(environ))
    stack_file = os.path.join(os.path.dirname(site), STACK_FILE)
    recorded = read_stack(stack_file)
    return Packages(site, dists, pins, stale_dists(dists, recorded, pins) + other_pythons(base, dists),
                    stack_file, recorded)


def shown(path: str, home: str) -> str:
    return "~" + path[len(home):] if path == home or path.startswith(home.rstrip("/") + "/") else path


# --- start ------------------------------------------------------------------------------------------

def start(home: str, folder: str, environ: dict[str, str], mounts: Sequence[Mount]) -> Lines:
    if environ.get("PYTHONNOUSERSITE"):
        return []  # no user site in this run (the Apptainer mode's default): nothing of it to keep
    lines: Lines = []
    volume = os.path.join(folder, STATE)
    on_volume = is_mount_point(volume, mounts)
    local = os.path.join(home, STATE)
    if on_volume and home != folder and not os.path.lexists(local):
        os.symlink(volume, local)  # HOME moved to /tmp: its .local is still the volume
    base = user_base(home, environ)
    site = user_site(base)
    try:
        os.makedirs(site, exist_ok=True)
    except OSError as error:
        lines.append(f"WARNING: the user site {site} cannot be made ({error.strerror}): pip installs fail until it can")
    if on_volume:
        if os.access(volume, os.W_OK):
            lines.append(f"~/{STATE} is a volume: your packages ({shown(site, home)}), environments (~/envs) "
                         f"and settings (~/.jupyter, ~/.gitconfig, ...) outlive the container ({DOCS})")
            for name, kind in PERSISTED:
                lines += guarded(link_entry, home, name, kind)
            for name in IMAGE_DOTFILES:
                lines += guarded(sync_image_dotfile, home, name)
    elif persisted(os.path.realpath(local), mounts):
        lines.append(f"the home folder is kept (a mount): your packages ({shown(site, home)}) and settings "
                     "outlive the container")
    else:
        lines.append(f"~/{STATE} is not a volume: what pip installs and the settings you change last until the "
                     f"container is re-created; mount one there to keep them ({DOCS})")
    packages = survey(home, environ)
    lines += report_lines(packages.stale, shown(site, home))
    if not any(item.python is None for item in packages.stale) and packages.recorded != packages.pins:
        with contextlib.suppress(OSError):  # a read-only site: nothing to record, nothing lost
            write_stack(packages.stack_file, packages.pins)
    return lines


def guarded(step: Callable[..., Lines], home: str, *args: str) -> Lines:
    """One step of the links: its failure is one warning line, never a failed start."""
    try:
        return step(home, *args)
    except OSError as error:
        what = getattr(error, "filename", None) or args[0]
        return [f"WARNING: ~/{args[0]} could not be kept in ~/{STORE} ({error.strerror or error}: {what})"]


# --- what breaks the pins ----------------------------------------------------------------------------

@dataclass
class Finding:
    kind: str  # shadowed, broken, hidden, stale or moved
    what: str
    fix: str


OWN_ENV = f"install it in an environment of your own: python -m venv ~/envs/NAME ({DOCS})"


def module_names(folder: str) -> dict[str, str]:
    """The top-level modules FOLDER provides that an import finds there: regular packages (with an
    __init__), modules and extension modules, by name -> the path (a folder without __init__ is a
    namespace portion, which any regular module elsewhere on sys.path wins over)."""
    found: dict[str, str] = {}
    try:
        entries = os.listdir(folder)
    except OSError:
        return found
    for entry in entries:
        path = os.path.join(folder, entry)
        if os.path.isdir(path):
            if (entry.isidentifier() and any(os.path.exists(os.path.join(path, "__init__" + suffix))
                                            for suffix in (".py", ".pyc"))) or _init_so(path):
                found[entry] = path
        elif entry.endswith((".py", ".pyc")) or _SO.search(entry):
            name = entry.split(".", 1)[0]
            if name.isidentifier():
                found.setdefault(name, path)
    return found


def _init_so(folder: str) -> bool:
    try:
        return any(entry.startswith("__init__.") and _SO.search(entry) for entry in os.listdir(folder))
    except OSError:
        return False


def shadowing(sys_path: Sequence[str], venv_site: str, skip: Sequence[str]) -> list[tuple[str, str]]:
    """(module, where) for each top-level module of the venv that a sys.path entry BEFORE the venv's
    site-packages (PYTHONPATH, a user's sys.path.insert) provides too: that one is imported instead
    of the image's. The standard library's folders and SKIP (the image's own package folder) are not
    counted, nor the current folder ('')."""
    venv = os.path.realpath(venv_site)
    entries = [os.path.realpath(entry) for entry in sys_path if entry]
    if venv not in entries:
        return []
    ours = module_names(venv)
    stdlib = os.path.realpath(os.path.join(sys.base_prefix, "lib"))
    skipped = {os.path.realpath(entry) for entry in skip}
    found = []
    for entry in entries[: entries.index(venv)]:
        if entry in skipped or entry == stdlib or entry.startswith(stdlib + os.sep):
            continue
        for name, path in sorted(module_names(entry).items()):
            if name in ours:
                found.append((name, path))
    return found


def pin_of_module(module: str, venv_site: str, pins: dict[str, str]) -> str:
    """'NAME VERSION' of the venv distribution that provides MODULE, as far as its metadata says."""
    if canonical(module) in pins:
        return f"{canonical(module)} {pins[canonical(module)]}"
    for dist in dists_in(venv_site, details=False):
        try:
            with open(os.path.join(dist.info, "top_level.txt"), encoding="utf-8") as handle:
                if module in handle.read().split():
                    return f"{canonical(dist.name)} {dist.version}"
        except OSError:
            continue
    return module


def conflicts(dists: Sequence[Dist], pins: dict[str, str]) -> list[Finding]:
    """User packages that break the image's pins: one whose requirements the pinned versions do not
    meet, and a user site copy of a pinned package (hidden behind the image's, confusing pip and
    importlib.metadata). Needs `packaging`, the venv's."""
    if not dists:
        return []
    from packaging.requirements import InvalidRequirement, Requirement  # noqa: PLC0415 - the venv's, needed here alone

    found = []
    for dist in dists:
        name = canonical(dist.name)
        if name in pins:
            found.append(Finding("hidden", f"the user site holds a second {name} ({dist.version}); the image's "
                                 f"{pins[name]} is the one imported", f"user-packages remove {name}"))
        for line in dist.requires:
            try:
                requirement = Requirement(line)
            except InvalidRequirement:
                continue
            if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
                continue
            wanted = canonical(requirement.name)
            if wanted in pins and not requirement.specifier.contains(pins[wanted], prereleases=True):
                found.append(Finding(
                    "broken", f"user package {dist.name} {dist.version} needs {requirement.name}"
                    f"{requirement.specifier}, but the image pins {wanted} {pins[wanted]}",
                    f"pip uninstall {dist.name}, or {OWN_ENV}"))
    return found


def findings(home: str, environ: dict[str, str], sys_path: Sequence[str],
             skip: Sequence[str] = ()) -> tuple[Packages, list[Finding]]:
    """Everything about the user's packages that the self-check and `user-packages check` report,
    worst first."""
    packages = survey(home, environ)
    venv_site = venv_site_packages(environ)
    found = [Finding("shadowed", f"{path} comes before the image's {pin_of_module(module, venv_site, packages.pins)} "
                     "on sys.path, so the pinned package is not the one imported",
                     f"take {os.path.dirname(path)} off PYTHONPATH (or sys.path); for another version, {OWN_ENV}")
             for module, path in shadowing(sys_path, venv_site, skip)]
    found += conflicts(packages.dists, packages.pins)
    site = shown(packages.site, home)
    for item in packages.stale:
        if item.python:
            found.append(Finding("moved", f"user package {item.dist.name} {item.dist.version} was installed for "
                                 f"Python {item.python}, and this image runs {python_version()}",
                                 "user-packages reinstall"))
        else:
            found.append(Finding("stale", f"user package {item.dist.name} {item.dist.version} in {site} is compiled "
                                 f"and was installed under an older image ({item.why})", "user-packages reinstall"))
    return packages, found


# --- user-packages ----------------------------------------------------------------------------------

def reinstall(packages: Packages, pip_options: Sequence[str], run: Callable[[list[str]], int]) -> int:
    rebuilt = [f"{item.dist.name}=={item.dist.version}" for item in packages.stale if item.python is None]
    moved = [f"{item.dist.name}=={item.dist.version}" for item in packages.stale if item.python is not None]
    if not rebuilt and not moved:
        print("user-packages: nothing to reinstall: every user package matches this image")
        write_stack(packages.stack_file, packages.pins)
        return 0
    pip = [venv_python(), "-m", "pip", "install", "--user"]
    if rebuilt:
        status = run([*pip, "--force-reinstall", "--no-deps", "--no-cache-dir", *pip_options, *rebuilt])
        if status != 0:
            return status
    if moved:
        status = run([*pip, *pip_options, *moved])
        if status != 0:
            return status
    write_stack(packages.stack_file, packages.pins)
    return 0


def venv_python() -> str:
    return os.path.join(os.environ.get("VIRTUAL_ENV") or VENV, "bin", "python")


def remove_copy(packages: Packages, name: str) -> int:
    if not any(canonical(dist.name) == canonical(name) for dist in packages.dists):
        print(f"user-packages: {name} is not in the user site {packages.site}", file=sys.stderr)
        return USAGE
    environ = dict(os.environ, PYTHONPATH=packages.site)  # the user's copy first, so pip finds it
    return subprocess.run([venv_python(), "-m", "pip", "uninstall", "--yes", name], env=environ, check=False).returncode


def python_path() -> list[str]:
    """sys.path as the venv's Python has it in this environment (this process runs with -I)."""
    done = subprocess.run([venv_python(), "-c", "import json, sys; print(json.dumps(sys.path))"],
                          capture_output=True, text=True, check=False)
    try:
        return [str(entry) for entry in json.loads(done.stdout.strip().splitlines()[-1])]
    except (ValueError, IndexError):
        return []


def run_pip(command: list[str]) -> int:
    print("user-packages: " + " ".join(command), flush=True)
    return subprocess.run(command, check=False).returncode


def main(argv: Sequence[str]) -> int:
    if len(argv) == 3 and argv[0] == "start":
        for line in start(argv[1], argv[2], dict(os.environ), own_mounts()):
            print(line)
        return 0
    home = os.path.expanduser("~")
    if argv[:1] == ["check"] and len(argv) == 1:
        packages, found = findings(home, dict(os.environ), python_path())
        for finding in found:
            print(f"user-packages: {finding.what} -> fix: {finding.fix}")
        if not found:
            print(f"user-packages: {len(packages.dists)} user packages in {shown(packages.site, home)}; none breaks "
                  "or shadows the image's pinned packages")
        return 1 if found else 0
    if argv[:1] == ["reinstall"]:
        return reinstall(survey(home, dict(os.environ)), list(argv[1:]), run_pip)
    if argv[:1] == ["remove"] and len(argv) == 2:
        return remove_copy(survey(home, dict(os.environ)), argv[1])
    print("usage: user-packages check | reinstall [PIP OPTIONS] | remove NAME (docs/packages.md)", file=sys.stderr)
    return USAGE


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
