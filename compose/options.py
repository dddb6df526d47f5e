"""Option types the host tools share; standard library only, so that `make up` parses its options
before it needs the docker SDK."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any


def positive(kind: Callable[[str], float | int], what: str) -> Callable[[str], Any]:
    """An argparse type: a number of KIND above 0, else one line naming the setting WHAT."""
    def parse(value: str) -> float | int:
        try:
            number = kind(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be a positive number, not {value!r}") from None
        if number <= 0:
            raise argparse.ArgumentTypeError(f"{what} must be a positive number, not {value!r}")
        return number
    return parse
