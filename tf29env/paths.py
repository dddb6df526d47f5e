"""Where things are on the host: the repository and the cache for downloads and scratch files."""

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def cache_dir() -> Path:
    """$XDG_CACHE_HOME/tf29-env (default ~/.cache/tf29-env), created on first use."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    path = base / "tf29-env"
    path.mkdir(parents=True, exist_ok=True)
    return path
