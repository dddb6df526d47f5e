"""How the long build reports itself: a live status line on a terminal, plain lines elsewhere.

On a TTY each `Step N/M` stays on screen and one line below it keeps changing (the step's latest
output, pip's downloads among it, and the elapsed time). In CI (CI=true) or when the stream is no
terminal, every line is printed as it comes, prefixed with the elapsed seconds.
"""

import os
import shutil
import sys
import time
from typing import TextIO

from tf29env.imagebuild.dockerbuild import STEP_RE

# The tool's own messages start with this and stay on screen, like the build's steps.
NOTE = "==> "


def interactive(stream: TextIO) -> bool:
    return stream.isatty() and os.environ.get("CI", "").lower() not in ("true", "1", "yes")


class Progress:
    """A Log callable; close() ends the status line."""

    def __init__(self, stream: TextIO | None = None, *, live: bool | None = None) -> None:
        self.stream = stream or sys.stdout
        self.live = interactive(self.stream) if live is None else live
        self.start = time.monotonic()
        self.status_shown = False

    def elapsed(self) -> str:
        seconds = int(time.monotonic() - self.start)
        return f"{seconds // 60:02d}:{seconds % 60:02d}"

    def __call__(self, line: str) -> None:
        if not self.live:
            print(f"[{self.elapsed()}] {line}", file=self.stream, flush=True)
            return
        width = shutil.get_terminal_size((100, 20)).columns
        if STEP_RE.match(line) or line.startswith(NOTE):
            self._clear()
            print(f"[{self.elapsed()}] {line}"[: width - 1], file=self.stream, flush=True)
            return
        text = f"  {self.elapsed()}  {line.strip()}"
        self.stream.write("\r\x1b[K" + text[: width - 1])
        self.stream.flush()
        self.status_shown = True

    def _clear(self) -> None:
        if self.status_shown:
            self.stream.write("\r\x1b[K")
            self.status_shown = False

    def close(self) -> None:
        self._clear()
        self.stream.flush()
