"""What several of the image's modules share: where the image's files are, a package's PEP 503 name,
whether a process lives, and the venv's installed distributions.

Imported at every start of the venv's Python (usersite.py, through its .pth file): only modules
Python has imported by then (os, re, sys), nothing at import time but these names."""

import os
import re
from typing import Dict, List, Tuple

# Where the Dockerfile copies image/ (/opt/tf29-env): this file is IMAGE_DIR/python/tf29image/common.py.
# In a checkout it is image/, so the unit tests read the same files (sshd_config) the image has.
IMAGE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The image's venv, the Dockerfile's VIRTUAL_ENV, for the distro's python3 that does not run in it.
VENV = "/opt/venv"


def canonical(name: str) -> str:
    """A distribution's name as PEP 503 normalizes it (packaging's canonicalize_name, without packaging)."""
    return re.sub(r"[-_.]+", "-", str(name)).lower()


def pid_alive(pid: int) -> bool:
    """Whether process PID exists (one of another user's counts: signal 0 is refused, not missed)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def dist_infos(folder: str) -> List[Tuple[str, str, str]]:
    """(name, version, .dist-info folder) of every distribution installed in FOLDER (a site-packages),
    read from the folders' names (what pip writes: NAME-VERSION.dist-info); none where FOLDER is not."""
    try:
        entries = sorted(os.listdir(folder))
    except OSError:
        return []
    found = []
    for entry in entries:
        if entry.endswith(".dist-info") and "-" in entry:
            name, version = entry[: -len(".dist-info")].rsplit("-", 1)
            found.append((name, version, os.path.join(folder, entry)))
    return found


def venv_pins(folder: str) -> Dict[str, str]:
    """{canonical name: version} of every distribution installed in FOLDER (the venv's site-packages)."""
    return {canonical(name): version for name, version, _ in dist_infos(folder)}
