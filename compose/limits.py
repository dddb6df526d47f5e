#!/usr/bin/env python3
"""The limits every environment gets: the size of /dev/shm, the stack ulimit, the rotation of its
log, the grace a stop gives its runs and how long a kernel may stay idle. Their one home is
docker-compose.yml's x-member and x-member-env blocks, which compose reads as they are (plain
`docker compose up` included); the team hub's spawner and `make run` read them here.

`python3 compose/limits.py docker-args [--stop-grace SECONDS]` prints them as `docker run`
arguments, one a line (the idle kernels' timeout is the team's: `make run` keeps them).
Unlike its neighbours this script needs PyYAML: the host tools' venv (.venv, which `make run`
uses) and the hub's (hub/.venv) have it.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

COMPOSE_FILE = Path(__file__).resolve().parent.parent / "docker-compose.yml"
BLOCK = "x-member"
ENV_BLOCK = "x-member-env"
# What the engine waits beyond the entrypoint's grace before it kills: the services' own stop.
STOP_MARGIN = 5
# The image's own limits (image/python/tf29image/jobs/store.py, image/python/tf29image/startup/values.py),
# checked here before a container goes.
STOP_GRACE_MAX = 3600
KERNEL_IDLE_MAX = 604800
# ${NAME:-default}: the default is what a run without that setting gets.
_DEFAULT_RE = re.compile(r"^\$\{[A-Z0-9_]+:-([^}]+)\}$")


@dataclass(frozen=True)
class Limits:
    shm_size: str  # as Docker writes sizes: 1g, 512m
    stack_bytes: int  # soft and hard
    log_driver: str
    log_options: dict[str, str]
    stop_grace: int  # seconds: STOP_GRACE_SECONDS
    stop_period: int  # seconds: compose's stop_grace_period, the engine's wait
    kernel_idle: int  # seconds: KERNEL_IDLE_TIMEOUT, 0 for never


class LimitError(ValueError):
    """A bad value, said in one line."""


def default_of(value: object) -> str:
    """The default of a ${NAME:-default} value, or the value itself."""
    text = str(value)
    found = _DEFAULT_RE.match(text)
    return found.group(1) if found else text


def seconds(text: str) -> int:
    """A compose duration in whole seconds: 35s, 2m, 1m30s, or a bare number."""
    found = re.fullmatch(r"(?:(\d+)m)?(?:(\d+)s)?|(\d+)", text)
    if not text or not found:
        raise LimitError(f"{text!r} is not a duration in seconds or minutes (35s, 2m)")
    if found.group(3):
        return int(found.group(3))
    return int(found.group(1) or 0) * 60 + int(found.group(2) or 0)


def stop_grace(text: str, name: str = "STOP_GRACE_SECONDS") -> int:
    if not text.isdigit() or not 1 <= int(text) <= STOP_GRACE_MAX:
        raise LimitError(f"{name}={text!r} must be a number of seconds from 1 to {STOP_GRACE_MAX}")
    return int(text)


def kernel_idle(text: str, name: str = "KERNEL_IDLE_TIMEOUT") -> int:
    if not text.isdigit() or int(text) > KERNEL_IDLE_MAX:
        raise LimitError(f"{name}={text!r} must be a number of seconds from 0 (never) to {KERNEL_IDLE_MAX}")
    return int(text)


def load(path: Path = COMPOSE_FILE) -> Limits:
    document = yaml.safe_load(path.read_text())
    member, env = document[BLOCK], document[ENV_BLOCK]
    logging = member["logging"]
    return Limits(shm_size=default_of(member["shm_size"]), stack_bytes=int(member["ulimits"]["stack"]),
                  log_driver=str(logging["driver"]),
                  log_options={str(key): str(value) for key, value in logging["options"].items()},
                  stop_grace=stop_grace(default_of(env["STOP_GRACE_SECONDS"])),
                  stop_period=seconds(default_of(member["stop_grace_period"])),
                  kernel_idle=kernel_idle(default_of(env["KERNEL_IDLE_TIMEOUT"])))


def docker_args(limits: Limits, grace: int | None = None) -> list[str]:
    """`docker run` arguments for one environment: the team's limits, and GRACE (the team's by default)
    both as the entrypoint's STOP_GRACE_SECONDS and, STOP_MARGIN s longer, as the engine's stop timeout."""
    grace = limits.stop_grace if grace is None else grace
    args = ["--shm-size", limits.shm_size, "--ulimit", f"stack={limits.stack_bytes}", "--log-driver",
            limits.log_driver]
    for key, value in limits.log_options.items():
        args += ["--log-opt", f"{key}={value}"]
    return [*args, "--stop-timeout", str(grace + STOP_MARGIN), "--env", f"STOP_GRACE_SECONDS={grace}"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("docker-args",), help="docker-args: the limits as `docker run` "
                        "arguments, one a line")
    parser.add_argument("--stop-grace", default="", help="STOP_GRACE_SECONDS for this run (default: the team's)")
    args = parser.parse_args(argv)
    try:
        grace = stop_grace(args.stop_grace) if args.stop_grace else None
        print("\n".join(docker_args(load(), grace)))
    except LimitError as error:
        print(f"tf29-env: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
