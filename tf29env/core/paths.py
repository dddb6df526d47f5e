"""Where things are on the host: the repository, the build output and the cache for downloads."""

import os
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent
REPO = PACKAGE.parent
# The scripts the build runs inside an image (stdlib only, Python 3.8+); the image carries them too.
PROBES = REPO / "image" / "python" / "tf29image" / "probes"
# What CI uploads: the files tf29env/core/records.py names (see docs/build.md).
DEFAULT_OUTPUT = REPO / "build-output"
SIZE_BASELINE = REPO / "size-baseline.json"


def cache_dir() -> Path:
    """$XDG_CACHE_HOME/tf29-env (default ~/.cache/tf29-env), created on first use."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    path = base / "tf29-env"
    path.mkdir(parents=True, exist_ok=True)
    return path
