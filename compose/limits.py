#!/usr/bin/env python3
"""The limits every environment gets: the size of /dev/shm, the stack ulimit and the rotation of
its log. Their one home is docker-compose.yml's x-member block, which compose reads as it is
(plain `docker compose up` included); the team hub's spawner and `make run` read them here.

`python3 compose/limits.py docker-args` prints them as `docker run` arguments, one a line.
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
# ${NAME:-default}: the default is what a run without that setting gets.
_DEFAULT_RE = re.compile(r"^\$\{[A-Z0-9_]+:-([^}]+)\}$")


@dataclass(frozen=True)
class Limits:
    shm_size: str  # as Docker writes sizes: 1g, 512m
    stack_bytes: int  # soft and hard
    log_driver: str
    log_options: dict[str, str]


def load(path: Path = COMPOSE_FILE) -> Limits:
    member = yaml.safe_load(path.read_text())[BLOCK]
    shm = str(member["shm_size"])
    default = _DEFAULT_RE.match(shm)
    logging = member["logging"]
    return Limits(shm_size=default.group(1) if default else shm, stack_bytes=int(member["ulimits"]["stack"]),
                  log_driver=str(logging["driver"]),
                  log_options={str(key): str(value) for key, value in logging["options"].items()})


def docker_args(limits: Limits) -> list[str]:
    args = ["--shm-size", limits.shm_size, "--ulimit", f"stack={limits.stack_bytes}", "--log-driver",
            limits.log_driver]
    for key, value in limits.log_options.items():
        args += ["--log-opt", f"{key}={value}"]
    return args


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("docker-args",), help="docker-args: the limits as `docker run` "
                        "arguments, one a line")
    parser.parse_args(argv)
    print("\n".join(docker_args(load())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
