#!/usr/bin/env python3
"""Build, test and publish the tf29-env image. `python build.py --help` lists the commands."""

import sys

from tf29env.core.errors import EXIT_INPUT

try:
    from tf29env.cli import main
except ModuleNotFoundError as exc:
    # The tool's dependencies live in the project's venv, not in the system Python.
    print(f"error: {sys.executable} lacks the module {exc.name!r}: run `make venv`, then "
          "`.venv/bin/python build.py ...`", file=sys.stderr)
    sys.exit(EXIT_INPUT)

if __name__ == "__main__":
    sys.exit(main())
