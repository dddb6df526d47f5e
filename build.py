#!/usr/bin/env python3
"""Build, test and publish the tf29-env image. `python3 build.py --help` lists the commands.

Run by any python3 (3.8 or newer), it runs itself again in the project's .venv, which has the tool's
dependencies, making it first as `make venv` does where it is missing."""

import os
import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parent
VENV = PROJECT / ".venv"
REEXEC = "TF29ENV_BUILD_PY_VENV"  # set for the second run, so that a venv that is not one cannot loop


def in_venv() -> bool:
    return Path(sys.prefix).resolve() == VENV.resolve()


def make_venv() -> None:
    """The Makefile's recipe (its target `venv`), so that there is one: .venv/.done marks it complete."""
    print("build.py: making the project's .venv with the host tools (make venv), once", file=sys.stderr)
    try:
        done = subprocess.run(["make", "-s", "-C", str(PROJECT), "venv"], stdout=sys.stderr, check=False)
    except FileNotFoundError:
        sys.exit("build.py: error: make is not installed: run scripts/host-setup.sh, which installs it")
    if done.returncode != 0:
        sys.exit(f"build.py: error: `make venv` failed (exit {done.returncode}); its output is above")


def run_in_venv() -> None:
    """Replace this process by the venv's Python running this file with the same arguments."""
    if os.environ.get(REEXEC) == str(VENV):  # the venv's Python did not take it as its venv: never loop
        sys.exit(f"build.py: error: {sys.executable} is not the Python of {VENV}: remove it and run `make venv`")
    if not (VENV / ".done").is_file():
        make_venv()
    python = VENV / "bin" / "python"
    os.environ[REEXEC] = str(VENV)
    os.execv(str(python), [str(python), str(Path(__file__).resolve()), *sys.argv[1:]])  # noqa: S606 - no shell


if __name__ == "__main__":
    if not in_venv():
        run_in_venv()
    os.environ.pop(REEXEC, None)  # what this run starts may run build.py again, from any Python
    try:
        from tf29env.cli import main
    except ModuleNotFoundError as exc:
        from tf29env.core.errors import EXIT_INPUT  # standard library only

        print(f"build.py: error: {sys.executable} lacks the module {exc.name!r}: remove {VENV} and run "
              "`make venv` again", file=sys.stderr)
        sys.exit(EXIT_INPUT)
    sys.exit(main())
