"""Unit tests of the image's package (image/python/tf29image), a folder per subpackage.

The image runs a module of it as `python3 -I -m tf29image.NAME`, and finds the package through its
tf29-env.pth. Here `command` and `environment` run one the same way with this host's Python, where
image/python on PYTHONPATH stands in for the .pth (which -I would ignore, so -I is left out)."""

import sys
from collections.abc import Mapping

from tf29env.core.paths import REPO

IMAGE_PYTHON = REPO / "image" / "python"


def command(module: str, *args: str) -> list[str]:
    """The command line that runs tf29image.MODULE (e.g. "startup.users") with ARGS."""
    return [sys.executable, "-m", f"tf29image.{module}", *args]


def environment(env: Mapping[str, str]) -> dict[str, str]:
    """ENV, plus what finds the image's package."""
    return {**env, "PYTHONPATH": str(IMAGE_PYTHON)}
