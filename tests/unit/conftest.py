"""Unit tests import the image-side self-check package (image/selfcheck) as `selfcheck`, the way
the image's wrapper does with PYTHONPATH=/opt/tf29-env."""

import sys
from pathlib import Path

IMAGE_DIR = Path(__file__).resolve().parents[2] / "image"
if str(IMAGE_DIR) not in sys.path:
    sys.path.insert(0, str(IMAGE_DIR))
