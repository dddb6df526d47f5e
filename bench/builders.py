"""The same builds with BuildKit (`docker buildx build`), to compare with the classic builder's
numbers (bench.builds, measured by build.py's own code): a cold build without the cache, then
warm rebuilds after a script-only change (image/entrypoint.sh), and the image BuildKit made.

The context is build.py's (bench.contexts.standard), written to a temporary directory, since
buildx reads a directory; the build args are the classic builds' (bench.builds.buildargs). The
build-only CAs travel by name only (`--build-arg FTP_PROXY`, buildx takes the value from its
environment), so the command line that goes to the log stays short and holds no certificate.
BuildKit keeps its own cache, apart from the classic builder's: the warm runs reuse the cold run's."""

import io
import os
import re
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docker import DockerClient

from bench import builds, contexts
from bench.errors import BenchError
from bench.stats import summarize
from tf29env.core import engine
from tf29env.core.log import Log
from tf29env.core.variants import Variant

TAG_PREFIX = "tf29-env:bench-buildkit-"
MISSING = "docker buildx is missing: scripts/host-setup.sh installs it"
TOUCHED = contexts.TOUCHES["entrypoint"]
TAIL_LINES = 15

# `--progress plain` lines: `#7 [ 3/14] RUN ...` (a Dockerfile step; `[stage 3/14]` in a multi-stage
# build), `#7 CACHED`, `#3 [internal] load metadata ...` (not a step). One vertex may be named
# again when its output interleaves with another's, hence the sets.
STEP_RE = re.compile(r"^#(\d+) \[(?:[\w.-]+ )?\s*\d+/\d+\] ")
CACHED_RE = re.compile(r"^#(\d+) CACHED\s*$")
ERROR_RE = re.compile(r"^(?:#\d+ )?(?:ERROR|error:|failed to solve)", re.IGNORECASE)


@dataclass(frozen=True)
class Progress:
    steps: int  # the Dockerfile's steps BuildKit ran or took from the cache, FROM included
    cached: int  # of those, the ones it reported CACHED

    def to_json(self) -> dict[str, int]:
        return {"steps": self.steps, "cached": self.cached}


def parse_progress(lines: Iterable[str]) -> Progress:
    steps: set[str] = set()
    cached: set[str] = set()
    for line in lines:
        if match := STEP_RE.match(line):
            steps.add(match[1])
        elif match := CACHED_RE.match(line):
            cached.add(match[1])
    return Progress(len(steps), len(steps & cached))


def failure_line(lines: list[str]) -> str:
    """The line that says why a build failed: BuildKit's last ERROR line, else the last line."""
    errors = [line.strip() for line in lines if ERROR_RE.match(line.strip())]
    if errors:
        return errors[-1]
    return lines[-1].strip() if lines else "(no output)"


def buildx_version(output: str) -> str:
    """`github.com/docker/buildx 0.13.1+ds1 0.13.1+ds1-3` -> `0.13.1+ds1`."""
    fields = output.split()
    return fields[1] if len(fields) > 1 else output.strip()


def buildkit_version(inspect_output: str) -> str:
    """BuildKit's version from `docker buildx inspect` (`BuildKit version: v0.8+unknown`; older
    buildx print `Buildkit:`); empty when it does not say."""
    for line in inspect_output.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() in {"buildkit", "buildkit version"}:
            return value.strip()
    return ""


def command(context_dir: Path, buildargs: Mapping[str, str], by_name: Iterable[str], *, nocache: bool,
            iidfile: Path, tag: str | None = None) -> list[str]:
    """The buildx command line. The args in `by_name` are given without a value: buildx reads
    them from its environment (see environment)."""
    argv = ["docker", "buildx", "build", "--progress", "plain", "--load", "--iidfile", str(iidfile)]
    for name, value in buildargs.items():
        argv += ["--build-arg", f"{name}={value}"]
    for name in by_name:
        argv += ["--build-arg", name]
    if nocache:
        argv.append("--no-cache")
    if tag:
        argv += ["--tag", tag]
    return [*argv, str(context_dir)]


def environment(hidden: Mapping[str, str]) -> dict[str, str]:
    return {**os.environ, **hidden}


def versions(client: DockerClient) -> dict[str, str]:
    """buildx's, BuildKit's and the engine's versions; BenchError when buildx is not there."""
    try:
        version = subprocess.run(["docker", "buildx", "version"], capture_output=True, text=True, timeout=60,
                                 check=False)
        inspect = subprocess.run(["docker", "buildx", "inspect"], capture_output=True, text=True, timeout=60,
                                 check=False)
    except FileNotFoundError:
        raise BenchError(MISSING) from None
    if version.returncode != 0:
        raise BenchError(MISSING)
    return {"buildx": buildx_version(version.stdout), "buildkit": buildkit_version(inspect.stdout),
            "engine": str(client.version().get("Version", ""))}


@dataclass(frozen=True)
class Built:
    image_id: str
    seconds: float
    progress: Progress


def run_build(argv: list[str], env: dict[str, str], iidfile: Path, log: Log) -> Built:
    """Run one buildx build, its output streamed to the log; the image id, seconds and steps."""
    log("$ " + " ".join(argv))
    lines: list[str] = []
    start = time.monotonic()
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                          errors="replace") as proc:
        assert proc.stdout is not None  # stdout=PIPE makes it
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            log(lines[-1])
        code = proc.wait()
    seconds = time.monotonic() - start
    if code != 0:
        raise BenchError(f"docker buildx build failed (exit {code}): {failure_line(lines[-TAIL_LINES:])}")
    return Built(iidfile.read_text().strip(), seconds, parse_progress(lines))


def write_context(tar: bytes, target: Path) -> None:
    """Extract a context tar (bench.contexts) into target, as buildx wants a directory."""
    with tarfile.open(fileobj=io.BytesIO(tar), mode="r") as archive:
        archive.extractall(target, filter="data")


@dataclass(frozen=True)
class Buildx:
    """Builds of one context directory with one set of build args."""

    context_dir: Path
    iidfile: Path
    buildargs: dict[str, str]  # plain: they go on the command line
    cas: dict[str, str]  # the build-only CAs: by name, values in the environment
    log: Log

    def build(self, *, nocache: bool, tag: str | None = None) -> Built:
        argv = command(self.context_dir, self.buildargs, self.cas, nocache=nocache, iidfile=self.iidfile, tag=tag)
        return run_build(argv, environment(self.cas), self.iidfile, self.log)


def warm_rebuilds(buildx: Buildx, runs: int, made: list[str]) -> list[Built]:
    """`runs` rebuilds, each after appending a comment with a marker unique to the run to
    image/entrypoint.sh, so that no earlier run's layers from COPY image/ on can match. The images
    (untagged) are added to `made` as they come, for the caller to remove."""
    touched = buildx.context_dir / TOUCHED
    original = touched.read_bytes()
    warm: list[Built] = []
    for run in range(runs):
        touched.write_bytes(contexts.append_comment(f"buildkit {time.time_ns()}")(original))
        buildx.log(f"==> BuildKit warm rebuild {run + 1}/{runs} after touching {TOUCHED}")
        warm.append(buildx.build(nocache=False))
        made.append(warm[-1].image_id)
    return warm


def buildkit(client: DockerClient, variant: Variant, cas: dict[str, str], runs: int, log: Log) -> dict[str, Any]:
    """BuildKit's cold build (no cache, timed) of build.py's context on the variant's stand-in
    base, tagged TAG_PREFIX + variant, then `runs` warm rebuilds after touching image/entrypoint.sh.
    Every image made here is removed at the end, on error too."""
    if runs < 1:
        raise ValueError(f"runs {runs}: at least one warm rebuild is needed")
    found = versions(client)
    tag = f"{TAG_PREFIX}{variant.name}"
    made: list[str] = []
    try:
        with tempfile.TemporaryDirectory(prefix="bench-buildkit-") as directory:
            buildx = Buildx(Path(directory, "context"), Path(directory, "iid"),
                            builds.buildargs(variant.standin_base, variant, {}), cas, log)
            write_context(contexts.standard(), buildx.context_dir)
            log(f"==> BuildKit cold build of {tag} (--no-cache)")
            cold = buildx.build(nocache=True, tag=tag)
            made.append(cold.image_id)
            image = engine.inspect(client, tag)
            warm = warm_rebuilds(buildx, runs, made)
    finally:
        remove(client, tag, made)
    return {
        "image": tag, "versions": found, "cold_s": round(cold.seconds, 1), "cold_steps": cold.progress.to_json(),
        "warm_s": summarize([built.seconds for built in warm]).to_json(),
        "warm_steps": warm[-1].progress.to_json(),
        # BuildKit writes its own layers: their sizes need not match the classic builder's.
        "image_bytes": int(image["Size"]), "layers": len(image["RootFS"]["Layers"]),
    }


def remove(client: DockerClient, tag: str, image_ids: list[str]) -> None:
    """Untag tag and remove the images this measure made (the warm ones have no tag)."""
    if engine.image_exists(client, tag):
        client.api.remove_image(tag)
    for image_id in reversed(image_ids):
        engine.remove_dangling(client, image_id)
