"""What jobs cost and what a stop costs with one running (docs/jobs.md), on an image build.py made:

- *stop with a job*: `docker stop` (Docker's default 10 s) -> the container has exited, while the
  quickstart training notebook runs as a job mid-`fit`; beside it the same stop with nothing running.
  The first is the interrupt, the checkpoint and the services' stop; the job must then read `stopped`.
- *job overhead*: a short script run as `job run --foreground` against the same script run with
  `python` directly, both by `docker exec` in one running container; the difference is what a job adds
  (its folder, the input copy, provenance with nvidia-smi, the supervisor's start).

`python -m bench.jobs --image tf29-env:latest-gpu [--runs N]` prints a Markdown table; timings are
reported (median, min-max), never asserted (bench/README.md).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence

from docker import DockerClient
from docker.models.containers import Container

from bench.errors import BenchError
from bench.stats import Summary, summarize
from testkit.containers import TrackedContainer
from testkit.wait import wait_until
from tf29env.core import engine

TRAINING = "/home/jovyan/quickstart/5-training-job.ipynb"
SHORT = "/tmp/short.py"  # noqa: S108 - inside a throwaway container
SHORT_SCRIPT = "import json, sys; print(json.dumps(sys.argv))"
USER = "jovyan"
TIMEOUT_S = 300.0


def started(tracked: TrackedContainer) -> Container:
    container = tracked.run(publish=(), environment={"SELF_CHECK": "off", "JUPYTER_TOKEN": "bench-token-abcdef0123"})
    tracked.wait_healthy(container, timeout=TIMEOUT_S)
    return container


def stop_seconds(container: Container) -> float:
    begin = time.monotonic()
    container.stop()
    container.wait(timeout=TIMEOUT_S)
    return time.monotonic() - begin


def job_state(tracked: TrackedContainer, container: Container) -> str:
    code, out = tracked.exec(container, ["job", "list", "--json"], user=USER)
    if code != 0:
        raise BenchError(f"job list failed: {out[-300:]}")
    return str(json.loads(out)[-1]["state"])


def stop_with_job(tracked: TrackedContainer) -> float:
    container = started(tracked)
    code, out = tracked.exec(container, ["job", "run", TRAINING, "-p", "EPOCHS", "1000", "-p", "STEPS_PER_EPOCH", "5"],
                             user=USER)
    if code != 0:
        raise BenchError(f"job run failed: {out[-300:]}")
    ident = out.split("\t", 1)[0]
    wait_until(lambda: "Epoch 3/" in tracked.exec(container, ["job", "log", ident], user=USER)[1],
               timeout=TIMEOUT_S, what="the job's third epoch")
    seconds = stop_seconds(container)
    container.start()
    tracked.wait_healthy(container, timeout=TIMEOUT_S)
    state = job_state(tracked, container)
    if state != "stopped":
        raise BenchError(f"after docker stop the job reads {state!r}, not 'stopped'")
    container.remove(force=True)
    return seconds


def stop_without_job(tracked: TrackedContainer) -> float:
    container = started(tracked)
    seconds = stop_seconds(container)
    container.remove(force=True)
    return seconds


def timed_exec(tracked: TrackedContainer, container: Container, command: list[str]) -> float:
    begin = time.monotonic()
    code, out = tracked.exec(container, command, user=USER)
    if code != 0:
        raise BenchError(f"{' '.join(command)} failed: {out[-300:]}")
    return time.monotonic() - begin


def repeat(runs: int, measure: Callable[[], float]) -> Summary:
    return summarize([measure() for _ in range(runs)])


def measure(client: DockerClient, image: str, runs: int) -> dict[str, Summary]:
    tracked = TrackedContainer(client, image)
    try:
        found = {"stop_with_job": repeat(runs, lambda: stop_with_job(tracked)),
                 "stop_without_job": repeat(runs, lambda: stop_without_job(tracked))}
        container = started(tracked)
        tracked.exec(container, ["sh", "-c", f"echo '{SHORT_SCRIPT}' > {SHORT}"], user=USER)
        found["script_direct"] = repeat(runs, lambda: timed_exec(tracked, container, ["python", SHORT]))
        found["script_as_job"] = repeat(runs, lambda: timed_exec(tracked, container,
                                                                 ["job", "run", "--foreground", SHORT]))
        return found
    finally:
        tracked.remove_all()


def table(image: str, found: dict[str, Summary]) -> str:
    overhead = found["script_as_job"].median - found["script_direct"].median
    rows = [
        ("docker stop -> exited, a job mid-fit (then reads `stopped`)", found["stop_with_job"].cell()),
        ("docker stop -> exited, nothing running", found["stop_without_job"].cell()),
        ("a short script, `python` by docker exec", found["script_direct"].cell()),
        ("the same as `job run --foreground`", found["script_as_job"].cell()),
        ("what a job adds (difference of the medians)", f"{overhead:.2f} s"),
    ]
    return "\n".join([f"Jobs on `{image}`", "", "| Measure | Time |", "|---|---|",
                      *[f"| {name} | {value} |" for name, value in rows]]) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.jobs", description=__doc__.splitlines()[0])
    parser.add_argument("--image", required=True, help="an image build.py built, e.g. tf29-env:latest-gpu")
    parser.add_argument("--runs", type=int, default=3, help="runs per timing (default 3)")
    args = parser.parse_args(argv)
    if args.runs < 1:
        print("bench.jobs: --runs must be 1 or more", file=sys.stderr)
        return 2
    client = engine.connect()
    if not engine.image_exists(client, args.image):
        print(f"bench.jobs: no image {args.image} on the engine", file=sys.stderr)
        return 2
    try:
        print(table(args.image, measure(client, args.image, args.runs)), end="")
    except BenchError as error:
        print(f"bench.jobs: {error}", file=sys.stderr)
        return 4
    return 0


if __name__ == "__main__":
    sys.exit(main())
