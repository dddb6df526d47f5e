"""The shape of the log callback every long step takes (builds, the stand-in, pulls, pushes,
checks): one line at a time, printed by whoever called the step."""

from collections.abc import Callable

Log = Callable[[str], None]
