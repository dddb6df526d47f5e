#!/usr/bin/env python3
"""The locked-memory limit the team's containers get (TF29ENV_MEMLOCK), checked against what the
engine can grant before compose starts anything; `make up` runs it and passes on what it prints.

An engine can give a container no more locked memory than its own hard limit unless it may raise
limits (CAP_SYS_RESOURCE). Rootless and nested engines may not, and runc then refuses to start
every container ("error setting rlimit type 8: operation not permitted"). The limit the engine
can grant is the hard limit a container gets when it asks for none, so one throwaway container
of the team's image reads it. Then:
  - the engine grants the setting: it is printed as is;
  - the setting is -1 (unlimited, the shipped default): the engine's limit is printed instead,
    with one log line, so that a newcomer's first `make up` works;
  - an explicit number above the engine's limit: one line naming TF29ENV_MEMLOCK and the value
    to use, exit 2, and nothing is started.
Standard library only: it runs on the host's python3 (3.8 or newer), like member.py.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parent.parent
VARIABLE = "TF29ENV_MEMLOCK"
# docker-compose.yml's defaults for the two settings read here.
DEFAULTS = {VARIABLE: "-1", "TF29ENV_IMAGE": "tf29-env:latest-gpu"}
UNLIMITED = -1
PROBE = "ulimit -H -l"  # in KiB, or "unlimited"


class MemlockError(Exception):
    """One line for the user, exit 2, nothing started."""


def read_env_file(path: Path) -> dict[str, str]:
    """NAME=value lines of a compose .env file (comments and blank lines skipped, quotes removed)."""
    if not path.is_file():
        return {}
    settings = {}
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, _, value = line.partition("=")
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        settings[name.strip()] = value
    return settings


def setting(name: str, environ: Mapping[str, str], env_file: Mapping[str, str]) -> str:
    """As compose resolves ${NAME:-default}: the environment first, then .env, then the default."""
    return environ.get(name) or env_file.get(name) or DEFAULTS[name]


def parse_bytes(value: str, what: str = VARIABLE) -> int:
    """A memlock limit in bytes: -1 (unlimited) or a whole number >= 0."""
    try:
        number = int(value.strip())
    except ValueError:
        raise MemlockError(f"{what}={value!r} is not a number of bytes (or -1 for unlimited)") from None
    if number < UNLIMITED:
        raise MemlockError(f"{what}={value!r} is not a number of bytes (or -1 for unlimited)")
    return number


def parse_probe(output: str) -> int:
    """What `ulimit -H -l` printed, in bytes (-1 for unlimited)."""
    text = output.strip()
    if text == "unlimited":
        return UNLIMITED
    if not text.isdigit():
        raise MemlockError(f"could not read the engine's locked-memory limit: `{PROBE}` printed {text!r}")
    return int(text) * 1024


def decide(wanted: int, granted: int) -> tuple[int, str | None]:
    """The limit to start with, and a log line when it is not the one asked for."""
    if granted == UNLIMITED or (wanted != UNLIMITED and wanted <= granted):
        return wanted, None
    if wanted == UNLIMITED:
        return granted, (f"tf29-env: this Docker engine can grant at most {granted} bytes of locked memory, "
                         f"not unlimited: starting with {VARIABLE}={granted} (set it in .env to keep this quiet)")
    raise MemlockError(f"{VARIABLE}={wanted} is more locked memory than this Docker engine can grant "
                       f"(runc would refuse to start the containers): set {VARIABLE}={granted} in .env")


def engine_limit(image: str) -> int:
    """The hard memlock limit a container of IMAGE gets when it asks for none."""
    cmd = ["docker", "run", "--rm", "--network", "none", "--entrypoint", "/bin/sh", image, "-c", PROBE]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise MemlockError(f"could not run a probe container of {image}: {exc}") from None
    if proc.returncode != 0:
        lines = proc.stderr.strip().splitlines() or ["no output"]
        # docker's own lines ("Unable to find image", "See 'docker run --help'") frame the one that says why.
        reason = next((line for line in lines if "error" in line.lower()), lines[-1])
        raise MemlockError(f"could not run a probe container of TF29ENV_IMAGE={image}: {reason}")
    return parse_probe(proc.stdout)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project-dir", type=Path, default=PROJECT_DIR, help="folder of docker-compose.yml and .env")
    args = parser.parse_args(argv)
    try:
        env_file = read_env_file(args.project_dir / ".env")
        wanted = parse_bytes(setting(VARIABLE, os.environ, env_file))
        limit, note = decide(wanted, engine_limit(setting("TF29ENV_IMAGE", os.environ, env_file)))
    except MemlockError as exc:
        print(f"tf29-env: ERROR: {exc}", file=sys.stderr)
        return 2
    if note:
        print(note, file=sys.stderr)
    print(limit)
    return 0


if __name__ == "__main__":
    sys.exit(main())
