"""Unit tests import the image-side self-check package (image/selfcheck) as `selfcheck`, the way
the image's wrapper does with PYTHONPATH=/opt/tf29-env, and the team setup's host scripts
(compose/*.py) by their names, as `python3 compose/NAME.py` runs them."""

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
for directory in (REPO / "image", REPO / "compose"):
    if str(directory) not in sys.path:
        sys.path.insert(0, str(directory))
