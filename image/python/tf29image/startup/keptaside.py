"""What a newer image may not read, it keeps aside and says so (docs/packages.md, "Settings and
kernels a new image cannot use"): JupyterLab user settings that this image's JupyterLab rejects,
and the user's kernels whose interpreter is gone. Python 3.8 or newer.

  start HOME
      Run by the entrypoint (entrypoint.d/user.sh) as the dev user, never as root, with the venv's
      python -I (its json5, jsonschema and jupyter_core, which the distro's python3 lacks), after
      userstate's start has linked ~/.jupyter into the ~/.local volume. Each settings file
      (SETTINGS/<package>/<plugin>.jupyterlab-settings) that jupyterlab_server would fail to parse,
      or whose plugin's schema rejects it, is moved (renamed, so its bytes, owner and mode stay) into
      SETTINGS-kept-aside-YYYYMMDD-HHMMSS/<package>/<plugin>.jupyterlab-settings beside the settings
      folder, one line each; a file for a plugin this JupyterLab has no schema for stays where it is.
      Each kernelspec in the user's Jupyter data folder (~/.local/share/jupyter/kernels/NAME) whose
      argv[0] is an absolute path that no longer exists is reported in one line with the command
      that rebuilds it. Never fails the start: an error is one line.
  report HOME
      The same lines, moving nothing: under Apptainer the home is the host's, whose settings other
      JupyterLabs read too.

The planning functions below take what they judge as arguments (the parser and the schema check
are passed in), so the unit tests run them with the host's jsonschema; the venv's modules are
imported only by main(), and only when there is a settings file to judge.
"""

from __future__ import annotations

import errno
import importlib
import json
import os
import shlex
import sys
import time
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

from tf29image.common import VENV

SUFFIX = ".jupyterlab-settings"  # jupyterlab_server's SETTINGS_EXTENSION
ASIDE = "-kept-aside-"
KEPT_ASIDE = "kept aside Lab settings "  # the upgrade tool greps the container's log for "tf29-env: " + this
KERNEL = "kernel "
# A package folder is "name" or "@scope/name" (npm's names): deeper trees are not a settings folder's.
MAX_DEPTH = 2
BUDGET_SECONDS = 10.0  # a huge or hung folder must not hold the start
REASON_CHARS = 160

Lines = List[str]
Loader = Callable[[str], Any]  # text -> the parsed settings (json5.loads in the image)
Checker = Callable[[Dict[str, Any], Any], Optional[str]]  # (schema, settings) -> why it is rejected


@dataclass(frozen=True)
class SettingsFile:
    package: str  # "@jupyterlab/notebook-extension"
    plugin: str  # "tracker"
    path: str

    @property
    def name(self) -> str:
        return f"{self.package}/{self.plugin}"


@dataclass(frozen=True)
class Move:
    settings: SettingsFile
    reason: str
    target: str


def short(text: str, limit: int = REASON_CHARS) -> str:
    """TEXT on one line, at most LIMIT characters."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3].rstrip() + "..."


# --- the settings -----------------------------------------------------------------------------------

def find_settings(folder: str) -> list[SettingsFile]:
    """Every SUFFIX file in FOLDER's package folders, as jupyterlab_server names them (the folder's
    path below FOLDER is the package, the file's name the plugin); links to folders are not followed."""
    found = []
    top = folder.rstrip(os.sep) or os.sep
    for parent, folders, files in os.walk(top):
        relative = os.path.relpath(parent, top)
        depth = 0 if relative == os.curdir else relative.count(os.sep) + 1
        if depth >= MAX_DEPTH:
            folders[:] = []
        folders[:] = sorted(name for name in folders if not name.startswith("."))
        if depth == 0:
            continue
        for name in sorted(files):
            if name.endswith(SUFFIX) and len(name) > len(SUFFIX):
                found.append(SettingsFile(relative.replace(os.sep, "/"), name[: -len(SUFFIX)],
                                          os.path.join(parent, name)))
    return found


def schema_path(settings: SettingsFile, labextension_folders: Sequence[str], schemas_dir: str,
                is_file: Callable[[str], bool] = os.path.isfile) -> str | None:
    """The schema jupyterlab_server validates SETTINGS with: a federated extension's own
    (LABEXT/<package>/schemas/<package>/<plugin>.json, the first folder that has one) before the app
    folder's (SCHEMAS/<package>/<plugin>.json); None where this JupyterLab has none."""
    for folder in labextension_folders:
        path = os.path.join(folder, settings.package, "schemas", settings.package, settings.plugin + ".json")
        if is_file(path):
            return path
    path = os.path.join(schemas_dir, settings.package, settings.plugin + ".json")
    return path if is_file(path) else None


def override_keys(documents: Iterable[Any]) -> dict[str, set[str]]:
    """Plugin id -> the top-level settings the overrides DOCUMENTS set (overrides.d/*.json,
    overrides.json, labconfig's default_setting_overrides): jupyterlab_server adds the ones a
    schema lacks to its properties, so that a user may set them too."""
    keys: dict[str, set[str]] = {}
    for document in documents:
        if not isinstance(document, dict):
            continue
        for plugin, values in document.items():
            if isinstance(values, dict):
                keys.setdefault(str(plugin), set()).update(str(key) for key in values)
    return keys


def relaxed(schema: dict[str, Any], keys: set[str]) -> dict[str, Any]:
    """SCHEMA with KEYS it lacks added as properties of any value, as jupyterlab_server's _override does."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return schema
    missing = sorted(key for key in keys if key not in properties)
    if not missing:
        return schema
    return dict(schema, properties=dict(properties, **{key: {} for key in missing}))


def rejection(raw: bytes, schema: dict[str, Any], load: Loader, check: Checker) -> str | None:
    """Why jupyterlab_server would not take RAW, a settings file's bytes, for SCHEMA's plugin: it reads
    the file as UTF-8 JSON5 (empty: {}), and validates what is not empty; None where it would."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return "not UTF-8 text"
    try:
        settings = load(text or "{}")
    except Exception as error:  # noqa: BLE001 - any parser error means the same: Lab's settings API fails on it
        return short(f"not valid JSON5 ({error})")
    if not isinstance(settings, dict):
        return "not a JSON object"
    if not settings:
        return None
    why = check(schema, settings)
    return short(f"rejected by this JupyterLab's schema ({why})") if why else None


def schema_checker(validator_class: Any) -> Checker:
    """A Checker from a jsonschema validator class (jupyterlab_server's Draft7Validator): the first
    error, as its validator.validate() raises it, with where it is when not at the top."""
    def check(schema: dict[str, Any], settings: Any) -> str | None:
        error = next(iter(validator_class(schema).iter_errors(settings)), None)
        if error is None:
            return None
        where = "/".join(str(part) for part in error.absolute_path)
        return f"{error.message} at {where}" if where else str(error.message)
    return check


def aside_folder(settings_dir: str, when: time.struct_time, taken: Callable[[str], bool]) -> str:
    """SETTINGS-kept-aside-YYYYMMDD-HHMMSS beside the settings folder; -2, -3, ... after it where a
    start in the same second made one."""
    base = settings_dir.rstrip(os.sep) + ASIDE + time.strftime("%Y%m%d-%H%M%S", when)
    folder, number = base, 1
    while taken(folder):
        number += 1
        folder = f"{base}-{number}"
    return folder


def plan_moves(rejected: Sequence[tuple[SettingsFile, str]], folder: str) -> list[Move]:
    """Where each rejected settings file goes: the same package/plugin path under FOLDER."""
    return [Move(settings, reason, os.path.join(folder, *settings.package.split("/"), settings.plugin + SUFFIX))
            for settings, reason in rejected]


def kept_aside_line(move: Move) -> str:
    return f"{KEPT_ASIDE}{move.settings.name}: {move.reason} -> {move.target}"


def ignored_line(settings: SettingsFile, reason: str) -> str:
    return (f"Lab settings {settings.name}: {reason}; this JupyterLab ignores them, and they are left in place "
            f"({settings.path}): the home folder is the host's")


# --- the kernels ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Kernel:
    name: str  # the kernelspec's folder name
    display_name: str
    argv0: str


def read_kernel(name: str, text: str) -> Kernel | None:
    """A kernel.json's name, display name and interpreter; None for one Jupyter could not start either."""
    try:
        spec = json.loads(text)
    except ValueError:
        return None
    argv = spec.get("argv") if isinstance(spec, dict) else None
    if not isinstance(argv, list) or not argv or not isinstance(argv[0], str):
        return None
    display = spec.get("display_name")
    return Kernel(name, display if isinstance(display, str) and display else name, argv[0])


def is_gone(path: str) -> bool:
    """Whether PATH (an absolute path) does not exist, following links; a folder the user may not
    search is not proof that it is gone."""
    try:
        os.stat(path)
    except OSError as error:
        return error.errno in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP)
    return False


def in_shell(path: str, home: str) -> str:
    """PATH for a shell line, ~/... where it is in HOME (quoted, ~ would not expand)."""
    if home and path.startswith(home.rstrip("/") + "/"):
        return "~/" + shlex.quote(path[len(home.rstrip("/")) + 1:])
    return shlex.quote(path)


VENV_KEPT, VENV_GONE, NO_VENV = "venv", "venv-gone", "no-venv"
# Prefixes whose bin/ is the system's, never an environment of the user's to make again.
SYSTEM_PREFIXES = ("/", "/usr", "/usr/local", VENV)


def environment_of(argv0: str, is_venv: Callable[[str], bool], exists: Callable[[str], bool]) -> tuple[str, str]:
    """The folder above argv[0]'s bin/, and what it is: VENV_KEPT (python -m venv made it: its
    pyvenv.cfg is there), VENV_GONE (the whole folder is gone) or NO_VENV (anything else: the
    image's venv, the system's Python)."""
    bin_dir = os.path.dirname(argv0)
    env = os.path.dirname(bin_dir)
    if os.path.basename(bin_dir) != "bin" or env in SYSTEM_PREFIXES:
        return env, NO_VENV
    if is_venv(env):
        return env, VENV_KEPT
    return env, NO_VENV if exists(env) else VENV_GONE


def rebuild_command(kernel: Kernel, env: str, kind: str, home: str) -> str | None:
    """The command that makes KERNEL again in this image, as docs/packages.md makes an environment's
    kernel: its environment ENV made again where it was one (KIND, from environment_of), else the
    kernel registered with the image's Python; None where argv[0] is not a Python (what made it
    must make it again)."""
    if not os.path.basename(kernel.argv0).startswith("python"):
        return None
    register = (f"-m ipykernel install --user --name {shlex.quote(kernel.name)} "
                f"--display-name {shlex.quote(kernel.display_name)}")
    if kind == NO_VENV:
        return f"python {register}"
    shown = in_shell(env, home)
    # Renamed, not cleared: the old folder still lists the packages to install again.
    keep = f"mv {shown} {in_shell(env + '.old', home)} && " if kind == VENV_KEPT else ""
    return f"{keep}python -m venv {shown} && {shown}/bin/pip install ipykernel && {shown}/bin/python {register}"


def kernel_line(kernel: Kernel, command: str | None) -> str:
    start = f"{KERNEL}{kernel.name} ({kernel.display_name}) points at {kernel.argv0}, which is gone: "
    if command is None:
        return f"{start}reinstall what made it, or remove it with: jupyter kernelspec remove {shlex.quote(kernel.name)}"
    return start + f"rebuild it with: {command}"


def gone_kernels(kernels_dir: str, home: str) -> Lines:
    """One line for each kernelspec in KERNELS_DIR whose absolute argv[0] is gone."""
    try:
        names = sorted(os.listdir(kernels_dir))
    except OSError:
        return []
    lines = []
    for name in names:
        try:
            with open(os.path.join(kernels_dir, name, "kernel.json"), encoding="utf-8") as handle:
                kernel = read_kernel(name, handle.read())
        except (OSError, UnicodeDecodeError):
            continue
        if kernel is None or not os.path.isabs(kernel.argv0) or not is_gone(kernel.argv0):
            continue
        env, kind = environment_of(kernel.argv0, lambda folder: os.path.isfile(os.path.join(folder, "pyvenv.cfg")),
                                   os.path.lexists)
        lines.append(kernel_line(kernel, rebuild_command(kernel, env, kind, home)))
    return lines


# --- the act ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class LabPaths:
    """Where this JupyterLab, run as the dev user, reads settings and schemas from."""

    settings_dir: str  # the user's: JUPYTERLAB_SETTINGS_DIR, or JUPYTER_CONFIG_DIR/lab/user-settings
    schemas_dir: str  # the app folder's schemas
    app_settings_dir: str  # the app folder's settings (overrides.d)
    labextension_folders: tuple[str, ...]  # jupyter_path("labextensions"), in order
    config_dirs: tuple[str, ...]  # jupyter_config_path(), for labconfig's default_setting_overrides


def read_documents(paths: Iterable[str], load: Loader) -> list[Any]:
    """The JSON documents at PATHS that exist and parse (.json5 ones with LOAD); jupyterlab_server
    skips the others too."""
    documents = []
    for path in paths:
        try:
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
            documents.append(load(text) if path.endswith(".json5") else json.loads(text))
        except Exception:  # noqa: BLE001, S112 - a broken overrides file relaxes nothing, as in the server
            continue
    return documents


def override_files(lab: LabPaths) -> list[str]:
    """The overrides files jupyterlab_server merges, lowest priority first."""
    overrides_d = os.path.join(lab.app_settings_dir, "overrides.d")
    try:
        entries = sorted(os.path.join(overrides_d, name) for name in os.listdir(overrides_d)
                         if name.endswith((".json", ".json5")))
    except OSError:
        entries = []
    entries += [os.path.join(lab.app_settings_dir, name) for name in ("overrides.json", "overrides.json5")]
    for folder in reversed(lab.config_dirs):
        labconfig = os.path.join(folder, "labconfig")
        entries.append(os.path.join(labconfig, "default_setting_overrides.json"))
        with_d = os.path.join(labconfig, "default_setting_overrides.d")
        try:
            entries += sorted(os.path.join(with_d, name) for name in os.listdir(with_d) if name.endswith(".json"))
        except OSError:
            continue
    return entries


def judge(lab: LabPaths, files: Sequence[SettingsFile], load: Loader, check: Checker,
          deadline: float) -> tuple[list[tuple[SettingsFile, str]], Lines]:
    """The rejected files among FILES with why, and the lines about what could not be judged."""
    keys = override_keys(read_documents(override_files(lab), load))
    rejected, lines = [], []
    for index, settings in enumerate(files):
        if time.monotonic() > deadline:
            lines.append(f"WARNING: Lab settings: {len(files) - index} files in {lab.settings_dir} were not checked "
                         f"within {BUDGET_SECONDS:.0f} s; they are left as they are")
            break
        path = schema_path(settings, lab.labextension_folders, lab.schemas_dir)
        if path is None:
            continue  # an extension this JupyterLab lacks: its settings wait for it
        try:
            with open(path, encoding="utf-8") as handle:
                schema = json.load(handle)
            with open(settings.path, "rb") as handle:
                raw = handle.read()
        except (OSError, ValueError):
            continue  # the image's own schema is broken, or the file vanished: nothing the user can fix
        if not isinstance(schema, dict):
            continue
        schema = relaxed(schema, keys.get(f"{settings.package}:{settings.plugin}", set()))
        try:
            why = rejection(raw, schema, load, check)
        except Exception:  # noqa: BLE001, S112 - a schema jsonschema cannot use: the server fails on it, not the user's file
            continue
        if why:
            rejected.append((settings, why))
    return rejected, lines


def keep_aside(moves: Sequence[Move]) -> Lines:
    """Renames each file (same file system: bytes, owner, mode and times stay); never overwrites."""
    lines = []
    for move in moves:
        try:
            os.makedirs(os.path.dirname(move.target), exist_ok=True)
            if os.path.lexists(move.target):
                raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), move.target)
            os.rename(move.settings.path, move.target)
        except OSError as error:
            lines.append(f"WARNING: Lab settings {move.settings.name}: {move.reason}; it could not be kept aside in "
                         f"{move.target} ({error.strerror or error}), so it is left in {move.settings.path}")
            continue
        lines.append(kept_aside_line(move))
    return lines


def check_settings(lab: LabPaths, load: Callable[[], tuple[Loader, Checker]], move: bool,
                   now: time.struct_time, deadline: float) -> Lines:
    """The settings step: LOAD gives the parser and the checker, called only when a file is there."""
    files = find_settings(lab.settings_dir)
    if not files:
        return []
    parse, check = load()
    rejected, lines = judge(lab, files, parse, check, deadline)
    if not rejected:
        return lines
    if not move:
        return lines + [ignored_line(settings, why) for settings, why in rejected]
    # Beside the folder where it really is: a rename never crosses file systems.
    base = os.path.realpath(lab.settings_dir) if os.path.islink(lab.settings_dir.rstrip(os.sep)) else lab.settings_dir
    return lines + keep_aside(plan_moves(rejected, aside_folder(base, now, os.path.lexists)))


def venv_parsers() -> tuple[Loader, Checker]:
    """The venv's json5 and jsonschema, as jupyterlab_server uses them (imported here alone: the
    unit tests' host has no json5, and mypy checks the image's code without the venv's packages)."""
    json5 = importlib.import_module("json5")
    jsonschema = importlib.import_module("jsonschema")
    return json5.loads, schema_checker(jsonschema.Draft7Validator)


def lab_paths(environ: dict[str, str]) -> tuple[LabPaths, str]:
    """This JupyterLab's folders as jupyter_core gives them to the dev user's server, and the user's
    Jupyter data folder (kernels). The server's venv Python reads the user site (usersite.pth); this
    one runs under -I, so the flag is set as the server has it while jupyter_core computes its paths."""
    import site  # noqa: PLC0415 - only for the flag below

    paths = importlib.import_module("jupyter_core.paths")
    saved = site.ENABLE_USER_SITE
    site.ENABLE_USER_SITE = not environ.get("PYTHONNOUSERSITE")
    try:
        labextensions = tuple(paths.jupyter_path("labextensions"))
        config_dirs = tuple(paths.jupyter_config_path())
        config_dir = str(paths.jupyter_config_dir())
        data_dir = str(paths.jupyter_data_dir())
    finally:
        site.ENABLE_USER_SITE = saved
    app_dir = environ.get("JUPYTERLAB_DIR") or os.path.join(sys.prefix, "share", "jupyter", "lab")
    settings_dir = os.path.abspath(environ.get("JUPYTERLAB_SETTINGS_DIR")
                                   or os.path.join(config_dir, "lab", "user-settings"))
    return LabPaths(settings_dir, os.path.join(app_dir, "schemas"), os.path.join(app_dir, "settings"),
                    labextensions, config_dirs), data_dir


def run(home: str, move: bool, environ: dict[str, str]) -> Lines:
    lines: Lines = []
    try:
        lab, data_dir = lab_paths(environ)
        lines += check_settings(lab, venv_parsers, move, time.localtime(), time.monotonic() + BUDGET_SECONDS)
    except Exception as error:  # noqa: BLE001 - never a failed start: one line, and the start goes on
        lines.append(f"WARNING: Lab settings were not checked for what this JupyterLab rejects ({short(repr(error))})")
        return lines
    try:
        lines += gone_kernels(os.path.join(data_dir, "kernels"), home)
    except Exception as error:  # noqa: BLE001 - as above
        lines.append(f"WARNING: kernels were not checked for a missing interpreter ({short(repr(error))})")
    return lines


def main(argv: Sequence[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("start", "report"):
        print("usage: python -I -m tf29image.startup.keptaside start|report HOME", file=sys.stderr)
        return 2
    warnings.simplefilter("ignore")  # jupyter_core's notice about platformdirs is no line of the start's
    for line in run(argv[1], argv[0] == "start", dict(os.environ)):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
