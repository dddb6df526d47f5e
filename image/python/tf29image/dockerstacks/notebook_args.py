"""NOTEBOOK_ARGS, docker-stacks' extra arguments for the Jupyter server, split into words as
docker-stacks splits them (Python's shlex, POSIX shell rules: quotes group, backslashes escape, no
variables or globs), for the planner (startup/plan.py): each word on stdout ended by
a NUL, which no word can hold. A value that cannot be split (a quote left open, a trailing
backslash) is one line on stderr, exit 2. What the words may say (no token or password) is the
entrypoint's to check, with the other extra args.

Standard library only, run by the distro's python3 -I (3.8 or newer).
"""

import os
import shlex
import sys
from typing import List, Mapping, Optional  # python 3.8: list[...] in an annotation fails at import

VARIABLE = "NOTEBOOK_ARGS"


class Unsplittable(Exception):
    """The value is not a shell-quoted list of words."""


def split(value: str) -> List[str]:
    try:
        return shlex.split(value)
    except ValueError as exc:  # shlex's own words: "No closing quotation", "No escaped character"
        raise Unsplittable(f"{VARIABLE} cannot be split into arguments as a shell would ({exc}): "
                           "check its quotes and backslashes") from exc


def main(environ: Optional[Mapping[str, str]] = None) -> int:
    env = os.environ if environ is None else environ
    try:
        words = split(env.get(VARIABLE, ""))
    except Unsplittable as exc:
        print(exc, file=sys.stderr)
        return 2
    sys.stdout.write("".join(word + "\0" for word in words))
    return 0


if __name__ == "__main__":
    sys.exit(main())
