#!/usr/bin/python3 -I
"""docker-stacks' start commands as files: /usr/local/bin/start-notebook.sh, start-notebook.py,
start-singleuser.sh, start-singleuser.py and start.sh all link here. Given as the container's
command they never run: the entrypoint knows them by name (startup/plan.py: select_mode says what each
means). They run when something names the file itself: `--entrypoint start-notebook.py`, a
Kubernetes `command:`, a hub config or script calling /usr/local/bin/start-singleuser.sh, `docker
exec CONTAINER start.sh CMD`. Each then hands its name and arguments to the entrypoint, which does
what it does for them as a command, so there is one meaning for each name:

- as PID 1 (the file is the container's entrypoint): under tini, as the image's ENTRYPOINT runs it,
  so that signals are forwarded and zombies reaped;
- otherwise (under tini already, in a shell, through docker exec): the entrypoint directly.

The services of a container start once: while its entrypoint supervises them, start-notebook.* and
start-singleuser.* are refused with one line (they would fight over the ports and the run
directory); start.sh CMD, which runs CMD once with the user set up, works as in docker-stacks.

Standard library only, run by the distro's python3 -I; `python3 start-notebook.py` works too. Either
Python imports the tf29image package through the image's tf29-env.pth; a run without -I puts this
file's folder (dockerstacks/, no module named as any other) first on sys.path.
"""

import os
import sys
from typing import List, Optional  # python 3.8: list[...] in an annotation fails at import

# The healthcheck is the one home of how the entrypoint's path and its running process are found.
from tf29image.healthcheck import ENTRYPOINT, entrypoint_running

TINI = "/usr/bin/tini"
SERVICE_COMMANDS = ("start-notebook.sh", "start-notebook.py", "start-singleuser.sh", "start-singleuser.py")
COMMANDS = (*SERVICE_COMMANDS, "start.sh")


class Refused(Exception):
    """One line for the user; exit 2."""


def command_line(invoked_as: str, args: List[str], pid: int, services_running: bool) -> List[str]:
    """What to exec for the start command INVOKED_AS (a path or a name) with ARGS, run as PID."""
    name = os.path.basename(invoked_as)
    if name not in COMMANDS:
        raise Refused(f"{invoked_as}: not one of docker-stacks' start commands ({', '.join(COMMANDS)})")
    if name in SERVICE_COMMANDS and services_running:
        raise Refused(f"{name}: this container's services already run under its entrypoint; {name} starts "
                      f"them when it is the container's command (docker run IMAGE {name} [ARGS]). "
                      "To run a command as the dev user here: start.sh CMD")
    command = [ENTRYPOINT, name, *args]
    return [TINI, "--", *command] if pid == 1 else command


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv if argv is None else argv
    try:
        command = command_line(argv[0], argv[1:], os.getpid(), entrypoint_running())
    except Refused as refused:
        print(f"tf29-env: ERROR: {refused}", file=sys.stderr)
        return 2
    os.execv(command[0], command)  # noqa: S606 -- the command is the entrypoint, with the caller's arguments
    return 1  # not reached: execv replaces this process or raises


if __name__ == "__main__":
    sys.exit(main())
