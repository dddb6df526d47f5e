"""The child process: `python -m selfcheck.worker 3 4 5` runs those layers in order and reports
each as one JSON line on the protocol pipe (the original stdout). Everything else the layers or
TensorFlow print goes to stderr, which the runner keeps and shows only when a layer goes wrong."""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from typing import IO, Any

from tf29image.selfcheck.checks import module
from tf29image.selfcheck.model import FAIL, Check


def emit(pipe: IO[str], event: dict[str, Any]) -> None:
    pipe.write(json.dumps(event) + "\n")
    pipe.flush()


def run_layer(number: int) -> list[Check]:
    try:
        return list(module(number).run())
    except Exception as exc:  # noqa: BLE001 - a layer that crashes is a finding, not the end of the self-check
        lines = traceback.format_exception_only(type(exc), exc)
        return [Check(f"layer{number}.error", FAIL, f"the check itself failed: {lines[-1].strip()}",
                      "report this with `selfcheck --json` output attached", {"traceback": traceback.format_exc()})]


def main(argv: list[str]) -> int:
    # Keep the real stdout for the protocol; point fd 1 at stderr so that a stray print (or a C
    # library writing to fd 1) cannot corrupt it.
    pipe = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    for number in (int(arg) for arg in argv):
        emit(pipe, {"event": "start", "layer": number})
        start = time.monotonic()
        checks = run_layer(number)
        emit(pipe, {"event": "result", "layer": number, "seconds": time.monotonic() - start,
                    "checks": [c.to_json() for c in checks]})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
