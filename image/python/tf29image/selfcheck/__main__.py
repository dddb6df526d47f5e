"""`python -m selfcheck`: see selfcheck.cli. Problems end in one line, never a traceback."""

import os
import signal
import sys
from typing import Any

from tf29image.selfcheck.cli import main


def stop(signum: int, _frame: Any) -> None:
    # docker stop: unwind, so that the runner kills its child (in a session of its own) on the way out.
    raise SystemExit(128 + signum)


def run() -> int:
    signal.signal(signal.SIGTERM, stop)
    try:
        return main()
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `selfcheck | head`: the reader left, nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:  # noqa: BLE001 - the checks report their own failures; this is the tool itself failing
        print(f"selfcheck: internal error: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        return 1


if __name__ == "__main__":
    sys.exit(run())
