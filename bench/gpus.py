"""What `make gpus` costs on a busy team box (docs/team.md, compose/holders.py): MEMBERS containers
with compose's labels, each holding a GPU by its real host PID in the stand-in nvidia-smi's CSV
(testkit/gpuengine.py's, the real format), and `python -m compose.holders` timed RUNS times as
`make gpus` runs it. The containers run `sleep` from IMAGE on this engine (no GPU needed).

`PYTHONPATH=image/python python -m bench.gpus --image IMAGE [--members 8] [--runs 5]` (testkit's
stand-in nvidia-smi reads the image's tf29image, as pytest's pythonpath gives it) prints a Markdown table; timings are
reported (median, min-max), never asserted (bench/README.md).
"""

from __future__ import annotations

import argparse
import os
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from docker import DockerClient
from docker.models.containers import Container

from bench.errors import BenchError
from bench.stats import Summary, summarize
from compose import holders
from testkit import gpuengine
from tf29env.core import engine
from tf29env.core.paths import REPO

UUIDS = (gpuengine.GPU0_UUID, gpuengine.GPU1_UUID)


def start_members(client: DockerClient, image: str, members: int, project: str) -> list[Container]:
    started = []
    for index in range(members):
        labels = {holders.SERVICE_LABEL: f"member{index}", holders.PROJECT_LABEL: project}
        started.append(client.containers.run(image, ["infinity"], entrypoint=["sleep"], labels=labels, detach=True,
                                             name=f"{project}-member{index}-1"))
    return started


def host_pid(container: Container) -> int:
    container.reload()
    pid = int(container.attrs["State"]["Pid"])
    if pid <= 0:
        raise BenchError(f"{container.name} has no process: {container.attrs['State']}")
    return pid


def measure(client: DockerClient, image: str, members: int, runs: int) -> tuple[Summary, int]:
    project = f"benchgpus{secrets.token_hex(3)}"
    started: list[Container] = []
    with tempfile.TemporaryDirectory(prefix="bench-gpus-") as folder:
        tools = gpuengine.write_tools(Path(folder))
        try:
            started = start_members(client, image, members, project)
            apps = "".join(f"{UUIDS[index % 2]}, {host_pid(member)}, 2048\n" for index, member in enumerate(started))
            gpuengine.set_query(tools, "compute-apps", apps)
            env = {**os.environ, "PATH": f"{tools}:{os.environ['PATH']}"}
            times, lines = [], 0
            for _ in range(runs):
                begin = time.monotonic()
                done = subprocess.run([sys.executable, "-m", "compose.holders"], cwd=REPO, env=env,
                                      capture_output=True, text=True, timeout=120, check=False)
                times.append(time.monotonic() - begin)
                named = [line for line in done.stdout.splitlines() if "member" in line]
                if done.returncode != 0 or len(named) != members:
                    raise BenchError(f"compose.holders named {len(named)} of {members} members: "
                                     f"{(done.stdout + done.stderr)[-500:]}")
                lines = len(done.stdout.splitlines())
            return summarize(times), lines
        finally:
            for container in started:
                container.remove(force=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.gpus", description=__doc__.splitlines()[0])
    parser.add_argument("--image", required=True, help="the image whose `sleep` the members run")
    parser.add_argument("--members", type=int, default=8, help="members holding a GPU (default 8)")
    parser.add_argument("--runs", type=int, default=5, help="runs of make gpus' module (default 5)")
    args = parser.parse_args(argv)
    if args.members < 1 or args.runs < 1:
        print("bench.gpus: --members and --runs must be 1 or more", file=sys.stderr)
        return 2
    client = engine.connect()
    if not engine.image_exists(client, args.image):
        print(f"bench.gpus: no image {args.image} on the engine", file=sys.stderr)
        return 2
    try:
        took, lines = measure(client, args.image, args.members, args.runs)
    except BenchError as error:
        print(f"bench.gpus: {error}", file=sys.stderr)
        return 4
    print(f"`make gpus` with {args.members} members holding GPUs ({lines} lines printed)\n\n"
          f"| Measure | Value |\n|---|---|\n| `python -m compose.holders` | {took.cell()} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
