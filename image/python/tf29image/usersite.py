"""The user's own packages beside the image's pinned stack (docs/packages.md). Python 3.8 or newer,
standard library only at import time.

zz-tf29-env-usersite.pth imports this module in the image's venv (/opt/venv) at every start of its
Python, for every user, root included; so it does little, and only this:

1. The user site (site.getusersitepackages(): ~/.local/lib/pythonX.Y/site-packages, or under
   PYTHONUSERBASE) goes on sys.path AFTER the venv's site-packages, so that the image's packages
   win on import and the user's add to them. The venv's pyvenv.cfg says
   include-system-site-packages = false, which also turns Python's own user site off in a venv;
   turning the flag on instead would put the user site in FRONT of the venv (and the distro's
   dist-packages behind it). The site is only read where Python itself would read it: not under
   -s, -I or PYTHONNOUSERSITE, and for root only a folder root owns (no code of someone else's runs
   as root). site.ENABLE_USER_SITE is set, so that pip and Jupyter (kernels, server extensions and
   Lab extensions a user installs go under ~/.local too) treat it as the user site it is.

2. In a pip process (pip, pip3, pip3.X, `python -m pip`, IPython's %pip) that installs or
   uninstalls, pip is told three things through its own objects, once they are imported:
   - install into the user site unless told otherwise (--no-user, --target, --prefix, --root); root
     with HOME=/root (a Dockerfile's RUN, `docker exec -u root`) still installs into the venv, and
     may change a pinned package there on purpose, as before: none of the rest applies to it;
   - never change a package of the venv: every one is a constraint at its installed version, and a
     resolution that would need another version ends in ONE line naming the pin and the way to
     have it anyway (an environment of one's own) instead of pip's conflict report; a user install
     that would have to replace one (pip's "lack sys.path precedence") says the same;
   - `pip uninstall` of a venv package by the dev user is refused in one line (the group may
     write the venv, so it would break the image until the container is re-created), and the user
     site counts as part of the environment, so that the user's own packages can be uninstalled and
     upgraded (pip otherwise modifies nothing outside sys.prefix in a venv).
   pip's own isolated build environments (`pip/__pip-runner__.py`) are not guarded: a package may
   build against any setuptools or numpy it needs.
"""

from __future__ import annotations

import contextlib  # typing's own import: no cost at start
import os
import re
import site
import sys
from typing import Any, Callable, Optional, Sequence, Tuple  # typing: imported at start already

from tf29image.common import canonical, venv_pins

_DOCS = "docs/packages.md"
_OWN_ENV = "python -m venv ~/envs/NAME"
_PIP_SCRIPT = re.compile(r"^pip(3(\.\d+)?)?$")
# One of pip's causes of a failed resolution: (name, what was asked for, who asked (None: the
# user), whether the pinned version would do).
Cause = Tuple[str, str, Optional[str], bool]
_state: dict[str, bool] = {"site_added": False, "pip_guarded": False}


def activate() -> None:
    """Called by the .pth file each time site processes the venv's site-packages (twice on Python
    3.8 and 3.9, whose site.venv() processes it itself before setting ENABLE_USER_SITE to False).
    Never raises: a Python that cannot start is worse than one without the user's packages."""
    try:
        _activate()
    except Exception as error:  # noqa: BLE001 - see above
        sys.stderr.write(f"tf29-env: WARNING: the user site could not be set up ({error!r}; {_DOCS})\n")


def _activate() -> None:
    if sys.flags.no_user_site:
        return
    user_site = site.getusersitepackages()  # also sets site.USER_BASE and site.USER_SITE
    site.ENABLE_USER_SITE = True
    if not _state["site_added"] and os.path.isdir(user_site) and _trusted(user_site):
        _state["site_added"] = True
        site.addsitedir(user_site)  # appended: after the venv's site-packages; its .pth files apply
    if not _state["pip_guarded"]:
        _state["pip_guarded"] = True
        args = pip_arguments(sys.argv, _cmdline)
        if args is not None and ("install" in args or "uninstall" in args):
            _guard_pip()


def _trusted(folder: str) -> bool:
    """Root reads a user site only if root owns it: HOME may point into the dev user's folders."""
    if os.geteuid() != 0:
        return True
    try:
        return os.stat(folder).st_uid == 0
    except OSError:
        return False


def _cmdline() -> list[str]:
    try:
        with open("/proc/self/cmdline", "rb") as handle:
            return [part.decode("utf-8", "surrogateescape") for part in handle.read().split(b"\0") if part]
    except OSError:
        return []


def pip_arguments(argv: Sequence[str], cmdline: Callable[[], list[str]]) -> list[str] | None:
    """pip's arguments when this process is pip, else None. ARGV is sys.argv as site sees it (a
    script's path, or '-m' while the module is still unknown); CMDLINE() gives the interpreter's
    own command line, read only for `-m`."""
    if not argv:
        return None
    if argv[0] != "-m":
        return list(argv[1:]) if _PIP_SCRIPT.match(os.path.basename(argv[0])) else None
    return _module_arguments(cmdline())


def _module_arguments(words: Sequence[str]) -> list[str] | None:
    """pip's arguments from the interpreter's command line WORDS when it runs `-m pip`, else None."""
    index = 1
    while index < len(words):
        word = words[index]
        if word in ("-", "--") or not word.startswith("-"):
            return None  # a script, stdin or the end of the options: no -m
        if word.startswith("--"):
            index += 2 if word == "--check-hash-based-pycs" else 1
            continue
        advance = 1
        for position, flag in enumerate(word[1:], start=2):
            rest = word[position:]
            if flag == "m":
                if rest:
                    return list(words[index + 1:]) if rest == "pip" else None
                module = words[index + 1] if index + 1 < len(words) else ""
                return list(words[index + 2:]) if module == "pip" else None
            if flag == "c":
                return None
            if flag in "WX":
                advance = 1 if rest else 2
                break
        index += advance
    return None


def user_mode(euid: int, home: str) -> bool:
    """Whether pip installs into the user site by default: for everyone but root working as root
    (HOME=/root or /), which keeps installing into the venv, e.g. in a Dockerfile built FROM this one."""
    if sys.flags.no_user_site:
        return False
    return not (euid == 0 and os.path.realpath(home or "/") in ("/root", "/"))


def venv_site_packages() -> str:
    import sysconfig  # noqa: PLC0415 - only pip processes and the self-check need it

    return sysconfig.get_paths()["purelib"]


def pin_line(name: str, pinned: str) -> str:
    return (f"this image pins {name}=={pinned} (part of its TensorFlow 2.9 stack), so nothing was installed. "
            f"To use another {name}, install it in an environment of your own: {_OWN_ENV} ({_DOCS})")


def conflict_message(causes: Sequence[Cause], pins: dict[str, str]) -> str | None:
    """ONE line for a resolution that failed on a pinned package, or None. CAUSES: (name, wanted,
    parent or None, satisfied by the pin) for each of pip's causes."""
    ours = [cause for cause in causes if canonical(cause[0]) in pins]
    if not ours:
        return None
    unmet = [cause for cause in ours if not cause[3]] or ours
    name, wanted, parent, _ = unmet[0]
    who = f"{parent} needs {wanted}" if parent else f"you asked for {wanted}"
    return f"{who}, but {pin_line(canonical(name), pins[canonical(name)])}"


def _guard_pip() -> None:
    import importlib  # noqa: PLC0415 - only pip processes need it

    # pip's internals, as pinned in the image (tests/image/test_user_packages.py runs them): Any to
    # the type checker, which knows another pip.
    try:
        install_command: Any = importlib.import_module("pip._internal.commands.install")
        exceptions: Any = importlib.import_module("pip._internal.exceptions")
        metadata: Any = importlib.import_module("pip._internal.metadata.base")
        req_uninstall: Any = importlib.import_module("pip._internal.req.req_uninstall")
        factory: Any = importlib.import_module("pip._internal.resolution.resolvelib.factory")
        normalize_path = importlib.import_module("pip._internal.utils.misc").normalize_path
    except Exception as error:  # noqa: BLE001 - pip moved: say so, and let pip run as it is
        sys.stderr.write(f"tf29-env: WARNING: the pin guard cannot hook this pip ({error}); "
                         f"the image's packages are not protected in this run ({_DOCS})\n")
        return
    InstallationError = exceptions.InstallationError
    home = os.environ.get("HOME", "")
    user = user_mode(os.geteuid(), home)
    pins = venv_pins(venv_site_packages())
    venv = os.path.realpath(venv_site_packages())

    original_run = install_command.InstallCommand.run

    def run(self: Any, options: Any, args: Any) -> Any:
        elsewhere = options.target_dir or options.prefix_path or options.root_path
        if user and not elsewhere:
            if options.use_user_site is None:
                options.use_user_site = True
            options.constraints = [*(options.constraints or []), _constraints_file(pins)]
        return original_run(self, options, args)

    install_command.InstallCommand.run = run
    if not sys.flags.no_user_site:
        # pip refuses --user in a venv without the global site; this one has a user site (above).
        install_command.virtualenv_no_global = lambda: False

    original_error = factory.Factory.get_installation_error

    def get_installation_error(self: Any, e: Any, constraints: Any) -> Any:
        message = conflict_message([_describe(cause, pins) for cause in e.causes], pins)
        return InstallationError(message) if message else original_error(self, e, constraints)

    factory.Factory.get_installation_error = get_installation_error

    original_to_uninstall = factory.Factory.get_dist_to_uninstall

    def get_dist_to_uninstall(self: Any, candidate: Any) -> Any:
        try:
            return original_to_uninstall(self, candidate)
        except InstallationError:
            name = canonical(candidate.project_name)
            if name not in pins:
                raise
            raise InstallationError(f"{candidate.name} {candidate.version} would replace the image's package, "
                                    f"but {pin_line(name, pins[name])}") from None

    factory.Factory.get_dist_to_uninstall = get_dist_to_uninstall

    original_from_dist = req_uninstall.UninstallPathSet.from_dist.__func__

    def from_dist(cls: Any, dist: Any) -> Any:
        location = os.path.realpath(str(dist.location or ""))
        if user and (location == venv or location.startswith(venv + os.sep)):
            name = canonical(dist.canonical_name)
            raise InstallationError(
                f"{dist.raw_name} {dist.version} is part of the image's pinned stack ({venv}), not one of your "
                f"packages: pip uninstall removes only what you installed (pip list --user). For a stack "
                f"without {name}, use an environment of your own: {_OWN_ENV} ({_DOCS})")
        return original_from_dist(cls, dist)

    req_uninstall.UninstallPathSet.from_dist = classmethod(from_dist)

    if not sys.flags.no_user_site:
        _user_site_is_local(metadata, req_uninstall, normalize_path(site.getusersitepackages()))


def _user_site_is_local(metadata: Any, req_uninstall: Any, user_site: str) -> None:
    """In a venv pip modifies only what is under sys.prefix ("Not uninstalling X ..., outside
    environment /opt/venv"): the user site is this environment's too, so that pip uninstall and
    upgrades of the user's packages work."""
    original_is_local = metadata.is_local

    def is_local(path: str) -> bool:
        return original_is_local(path) or path == user_site or path.startswith(user_site + os.sep)

    metadata.is_local = is_local
    original_permitted = req_uninstall.UninstallPathSet._permitted

    def permitted(self: Any, path: str) -> bool:
        return bool(original_permitted(self, path)) or path.startswith(user_site + os.sep)

    req_uninstall.UninstallPathSet._permitted = permitted


def _describe(cause: Any, pins: dict[str, str]) -> Cause:
    """(name, wanted, parent, satisfied by the pin) from one of pip's ResolutionImpossible causes."""
    requirement, parent = cause.requirement, cause.parent
    name = str(requirement.project_name)
    wanted = requirement.format_for_error()
    satisfied = False
    pinned = pins.get(canonical(name))
    specifier = getattr(getattr(getattr(requirement, "_ireq", None), "req", None), "specifier", None)
    if pinned is not None and specifier is not None:
        try:
            satisfied = bool(specifier.contains(pinned, prereleases=True))
        except Exception:  # noqa: BLE001 - an odd version: report it as unmet
            satisfied = False
    return name, wanted, (f"{parent.name} {parent.version}" if parent is not None else None), satisfied


def _constraints_file(pins: dict[str, str]) -> str:
    """The venv's packages at their versions, as a constraints file that lives as long as this process."""
    import atexit  # noqa: PLC0415 - only pip installs need them
    import tempfile  # noqa: PLC0415

    handle, path = tempfile.mkstemp(prefix="tf29-env-pins-", suffix=".txt")
    with os.fdopen(handle, "w", encoding="utf-8") as constraints:
        constraints.writelines(f"{name}=={version}\n" for name, version in sorted(pins.items()))
    atexit.register(_remove, path)
    return path


def _remove(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
