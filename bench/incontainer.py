"""Timings inside a container: `selfcheck --json` (its own per-layer seconds and our wall clock)
and `import tensorflow`, first in a fresh container (cold) and again in the same one (warm).

Each run gets a fresh idle container (entrypoint bypassed, no network), so the start-up self-check
and JupyterLab do not compete; commands run as the dev user, as the entrypoint runs them.
"Cold" means a fresh container's first run: the host's page cache is not dropped (a shared machine)."""

import json
import time
from dataclasses import dataclass, field
from typing import Any

from docker import DockerClient
from docker.models.containers import Container

from bench.errors import BenchError
from testkit.containers import TrackedContainer

USER = "jovyan"
SELFCHECK = ["/usr/local/bin/selfcheck", "--json", "--mode", "warn", "--output", "/tmp/bench-selfcheck.json"]  # noqa: S108 - in the container
IMPORT = ("import time; t = time.perf_counter(); import tensorflow; "
          "print(round(time.perf_counter() - t, 3))")


@dataclass(frozen=True)
class SelfcheckRun:
    wall_s: float  # docker exec of `selfcheck --json`, start to exit, as seen from the host
    report_s: float  # the report's own "seconds" (all layers, without the interpreter's start)
    layers: dict[str, float] = field(default_factory=dict)  # "3 tensorflow" -> seconds
    statuses: dict[str, str] = field(default_factory=dict)  # "3 tensorflow" -> PASS/WARN/FAIL/SKIP


@dataclass(frozen=True)
class ImportRun:
    cold_s: float  # in-process seconds of `import tensorflow`, first run in a fresh container
    warm_s: float  # the same again in the same container
    cold_wall_s: float  # the whole `python -c` exec (interpreter start included), first run
    warm_wall_s: float


def timed_exec(container: Container, argv: list[str], env: dict[str, str] | None = None) -> tuple[float, str]:
    start = time.monotonic()
    code, (stdout, stderr) = container.exec_run(argv, user=USER, demux=True,
                                                environment={"TF_CPP_MIN_LOG_LEVEL": "3", **(env or {})})
    seconds = time.monotonic() - start
    if code != 0:
        tail = (stderr or stdout or b"").decode(errors="replace").strip()[-300:]
        raise BenchError(f"`{' '.join(argv[:2])}` exited {code} in the container: {tail}")
    return seconds, (stdout or b"").decode(errors="replace")


def parse_report(text: str) -> dict[str, Any]:
    """The JSON document `selfcheck --json` prints (schema tf29-env/selfcheck/v1)."""
    start = text.find("{")
    if start < 0:
        raise BenchError(f"selfcheck --json printed no JSON: {text.strip()[-200:]}")
    report: dict[str, Any] = json.loads(text[start:])
    if report.get("schema") != "tf29-env/selfcheck/v1":
        raise BenchError(f"selfcheck --json: unknown schema {report.get('schema')!r}")
    return report


def selfcheck_run(wall_s: float, report: dict[str, Any]) -> SelfcheckRun:
    layers = {f"{layer['layer']} {layer['name']}": float(layer["seconds"]) for layer in report["layers"]}
    statuses = {f"{layer['layer']} {layer['name']}": str(layer["status"]) for layer in report["layers"]}
    return SelfcheckRun(wall_s, float(report["seconds"]), layers, statuses)


def idle(tracked: TrackedContainer) -> Container:
    return tracked.run(publish=(), entrypoint=["sleep", "infinity"], network_mode="none")


def selfcheck_once(client: DockerClient, image: str) -> SelfcheckRun:
    tracked = TrackedContainer(client, image)
    try:
        wall, output = timed_exec(idle(tracked), SELFCHECK)
        return selfcheck_run(wall, parse_report(output))
    finally:
        tracked.remove_all()


def import_once(client: DockerClient, image: str) -> ImportRun:
    tracked = TrackedContainer(client, image)
    try:
        container = idle(tracked)
        argv = ["/opt/venv/bin/python", "-c", IMPORT]
        cold_wall, cold = timed_exec(container, argv)
        warm_wall, warm = timed_exec(container, argv)
        return ImportRun(float(cold.split()[-1]), float(warm.split()[-1]), cold_wall, warm_wall)
    finally:
        tracked.remove_all()


def import_without_bytecode(client: DockerClient, image: str) -> float:
    """`import tensorflow` after deleting the venv's __pycache__ folders (in this container only),
    with PYTHONDONTWRITEBYTECODE=1: what every fresh container would pay if the image shipped no .pyc."""
    tracked = TrackedContainer(client, image)
    try:
        container = idle(tracked)
        code, output = container.exec_run(["find", "/opt/venv", "-type", "d", "-name", "__pycache__", "-prune",
                                           "-exec", "rm", "-rf", "{}", "+"])
        if code != 0:
            raise BenchError(f"removing the bytecode failed: {output.decode(errors='replace')[-200:]}")
        _, output_text = timed_exec(container, ["/opt/venv/bin/python", "-c", IMPORT], {"PYTHONDONTWRITEBYTECODE": "1"})
        return float(output_text.split()[-1])
    finally:
        tracked.remove_all()
