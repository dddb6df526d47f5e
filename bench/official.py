"""TensorFlow's own gpu-jupyter Docker recipe (bench/official/Dockerfile, with where it comes from
and what it changes in its header), built on the same stand-in CUDA base as our image and measured
the way our image is: a no-cache docker build, its layers on the base, `import tensorflow`, the
versions it resolved today, `pip check`, and docker run -> first HTTP 200 from Jupyter's GET /api.

The recipe is measured as it is: what fails in it (an import, `pip check`, a server that never
answers) is recorded in the result, not raised. Only a failed build raises, as build.py's do."""

import io
import itertools
import json
import re
import tarfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from docker import DockerClient
from packaging.utils import canonicalize_name

from bench import layers, sizes, stats
from bench.builds import drop_replaced, previous_id
from bench.errors import BenchError
from bench.startup import POLL_S, jupyter_answers
from testkit.containers import TrackedContainer
from tf29env.core import engine
from tf29env.core.log import Log
from tf29env.core.paths import REPO
from tf29env.imagebuild import dockerbuild

OFFICIAL_TAG = "tf29-env:bench-official"
DOCKERFILE = REPO / "bench" / "official" / "Dockerfile"
BASE_ARG = "BASE_IMAGE"  # the fixture's FROM ${BASE_IMAGE}
DEVIATION = "# deviation:"
CONTINUATION = "#   "  # a deviation's further lines, indented under it
PRELUDE_END = "unset FTP_PROXY; fi;"  # the last words of the fixture's CA prelude
PRELUDE_CLEANUP = "&& rm -f /tmp/ca.pem /tmp/ca.conf"  # and the end of each RUN that has it
TOP_LAYERS = 5  # as bench/sizes.py shows ours
START_TIMEOUT_S = 120.0
LOG_TAIL_LINES = 15
CHECK_LINES = 20  # pip check prints one line per broken requirement; the first ones say enough
VERSIONS = ("tensorflow", "numpy", "notebook", "jupyterlab")
# Without it TF's C++ logging fills the output of an import that works.
IMPORT = ["env", "TF_CPP_MIN_LOG_LEVEL=3", "python3", "-c", "import tensorflow as tf; print(tf.__version__)"]
EXCEPTION_RE = re.compile(r"[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt): ")
PIP_LIST = ["python3", "-m", "pip", "list", "--format", "json", "--disable-pip-version-check"]
PIP_CHECK = ["python3", "-m", "pip", "check", "--disable-pip-version-check"]


def deviations(dockerfile: str) -> list[str]:
    """The fixture's `# deviation:` lines, each joined with its `#   ` continuation lines."""
    found: list[str] = []
    continuing = False
    for raw in dockerfile.splitlines():
        line = raw.strip()
        if line.startswith(DEVIATION):
            found.append(line.removeprefix(DEVIATION).strip())
            continuing = True
        elif continuing and line.startswith(CONTINUATION):
            found[-1] += " " + line.removeprefix(CONTINUATION).strip()
        else:
            continuing = False
    return found


def copied_sources(dockerfile: str) -> list[str]:
    """The context files a Dockerfile's COPY/ADD steps name (flags and the destination left out), so
    that the context holds them; continuation lines are not followed (the fixture has none)."""
    sources: list[str] = []
    for raw in dockerfile.splitlines():
        words = raw.split()
        if len(words) > 2 and words[0].upper() in ("COPY", "ADD"):
            args = [word for word in words[1:] if not word.startswith("--")]
            sources.extend(args[:-1])
    return sources


def context_tar(dockerfile: str, files: dict[str, bytes]) -> bytes:
    """A build context in memory: the Dockerfile and the files it COPYs, nothing else."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, data in {"Dockerfile": dockerfile.encode(), **files}.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def fixture_context() -> bytes:
    text = DOCKERFILE.read_text()
    return context_tar(text, {name: (DOCKERFILE.parent / name).read_bytes() for name in copied_sources(text)})


def parse_pip_list(output: str) -> dict[str, str]:
    """`pip list --format json` -> {normalized name: version}. The container's log also holds
    stderr (warnings), so the JSON is the line that parses as a list."""
    for line in output.splitlines():
        if line.startswith("["):
            packages = json.loads(line)
            return {canonicalize_name(str(p["name"])): str(p["version"]) for p in packages}
    raise BenchError(f"pip list printed no JSON: {output.strip()[-200:]}")


def versions(packages: dict[str, str]) -> dict[str, str | None]:
    return {name: packages.get(name) for name in VERSIONS}


def last_lines(output: str, count: int) -> list[str]:
    return [line for line in output.splitlines() if line.strip()][-count:]


def error_line(output: str) -> str | None:
    """A traceback's last exception line (unindented `Name: message`), with the indented lines that
    continue its message joined on: TF's import error ends `...The signature was`, then a
    tab-indented `() -> handle`."""
    lines = output.splitlines()
    starts = [index for index, line in enumerate(lines) if EXCEPTION_RE.match(line)]
    if not starts:
        return None
    rest = itertools.takewhile(lambda line: line[:1].isspace(), lines[starts[-1] + 1:])
    return " ".join([lines[starts[-1]].strip(), *(line.strip() for line in rest)]).strip()


def command_json(status: int, output: str) -> dict[str, Any]:
    """A command's exit status and its last line, or for a failure its error line when it has one."""
    tail = last_lines(output, 1)
    shown = (error_line(output) if status else None) or (tail[0].strip() if tail else "")
    return {"exit": status, "tail": shown}


def recipe_step(step: str) -> str:
    """A layer's step without our CA prelude, which opens every downloading RUN and would otherwise
    be all that the first 120 characters show, nor the cleanup that closes it."""
    before, found, after = step.partition(PRELUDE_END)
    if not (found and before.startswith("RUN ")):
        return step
    return "RUN " + after.strip().removesuffix(PRELUDE_CLEANUP).strip()


def size_json(split: layers.LayerSplit, engine_size: int, image: str) -> dict[str, Any]:
    """The layer figures, checked against the engine's own size as bench/sizes.py does."""
    sizes.check_total(split, engine_size, image)
    return {"total_bytes": split.total, "base_bytes": split.base, "added_bytes": split.ours_bytes,
            "split_by": split.found_by,
            "largest_layers": [{"bytes": layer.size, "step": recipe_step(layer.step)[:120]}
                               for layer in layers.largest(split, TOP_LAYERS)]}


@dataclass(frozen=True)
class NoAnswer:
    """A start in which Jupyter never answered: the container exited first, or START_TIMEOUT_S passed."""

    exited: bool
    logs: str


def startup_json(seconds: Sequence[float], failure: NoAnswer | None) -> dict[str, Any]:
    """The start-up summary, or null and the container's last log lines when Jupyter never answered."""
    if failure is not None:
        return {"jupyter_s": None, "exited": failure.exited, "log_tail": last_lines(failure.logs, LOG_TAIL_LINES)}
    return {"jupyter_s": stats.summarize(seconds).to_json()}


def build(client: DockerClient, base: str, cas: dict[str, str], log: Log) -> tuple[str, float]:
    """One no-cache docker build of the fixture, as bench/builds.py's single pass; id and seconds.
    A failed step raises imagebuild's UserError (exit 4) with the step's last lines."""
    tar = fixture_context()
    old_id = previous_id(client, OFFICIAL_TAG)
    start = time.monotonic()
    image_id = dockerbuild.build_context(client, io.BytesIO(tar), tag=OFFICIAL_TAG,
                                        buildargs={BASE_ARG: base, **cas}, log=log, nocache=True)
    seconds = time.monotonic() - start
    drop_replaced(client, old_id, image_id)  # the previous bench-official image, now untagged
    return image_id, seconds


def image_sizes(client: DockerClient, image: str, base: str) -> dict[str, Any]:
    return size_json(sizes.history_split(client, image, base), int(engine.inspect(client, image)["Size"]), image)


def timed_command(client: DockerClient, image: str, argv: list[str]) -> tuple[int, str, float]:
    """A command in a throwaway container (no network); its status, output and wall seconds
    (container create and start included)."""
    start = time.monotonic()
    status, output = engine.run_command(client, image, argv)
    return status, output, time.monotonic() - start


def start_once(client: DockerClient, image: str) -> float | NoAnswer:
    """docker run with the image's own CMD -> first 200 from GET /api (which needs no token)."""
    tracked = TrackedContainer(client, image)
    try:
        begin = time.monotonic()
        container = tracked.run(publish=(8888,))
        port = tracked.port(container, 8888)
        while time.monotonic() - begin < START_TIMEOUT_S:
            if jupyter_answers(port):
                return time.monotonic() - begin
            container.reload()
            if container.status == "exited":
                return NoAnswer(exited=True, logs=tracked.logs(container))
            time.sleep(POLL_S)
        return NoAnswer(exited=False, logs=tracked.logs(container))
    finally:
        tracked.remove_all()


def startup(client: DockerClient, image: str, runs: int, log: Log) -> dict[str, Any]:
    seconds: list[float] = []
    for run in range(1, runs + 1):
        answer = start_once(client, image)
        if isinstance(answer, NoAnswer):  # the same image fails the same way again: no more runs
            why = "its container exited" if answer.exited else f"not within {START_TIMEOUT_S:.0f} s"
            log(f"official: start {run}/{runs}: Jupyter never answered ({why})")
            return startup_json(seconds, answer)
        log(f"official: start {run}/{runs}: Jupyter answered after {answer:.2f} s")
        seconds.append(answer)
    return startup_json(seconds, None)


def measure(client: DockerClient, base: str, cas: dict[str, str], runs: int, log: Log) -> dict[str, Any]:
    """Build the recipe with no cache on BASE as OFFICIAL_TAG (left on the engine) and measure it."""
    log(f"official: TensorFlow's gpu-jupyter recipe, docker build with no cache on {base}")
    _, cold_s = build(client, base, cas, log)
    result: dict[str, Any] = {"image": OFFICIAL_TAG, "base": base, "cold_build_s": round(cold_s, 1),
                              **image_sizes(client, OFFICIAL_TAG, base)}
    status, output, seconds = timed_command(client, OFFICIAL_TAG, IMPORT)
    result["import_tensorflow"] = {**command_json(status, output), "seconds": round(seconds, 3)}
    status, output, _ = timed_command(client, OFFICIAL_TAG, PIP_LIST)
    if status != 0:
        raise BenchError(f"{OFFICIAL_TAG}: pip list exited {status}: {output.strip()[-200:]}")
    result["versions"] = versions(parse_pip_list(output))
    status, output, _ = timed_command(client, OFFICIAL_TAG, PIP_CHECK)
    problems = [line for line in output.splitlines() if line.strip()][:CHECK_LINES]
    result["pip_check"] = {**command_json(status, output), "lines": problems}
    result["startup"] = startup(client, OFFICIAL_TAG, runs, log)
    result["deviations"] = deviations(DOCKERFILE.read_text())
    return result
