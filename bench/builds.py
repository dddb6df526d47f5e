"""Build timings: a cold build through build.py's own code (tf29env.pipeline.build, no cache),
then warm single-pass rebuilds of changed copies of its context (bench.contexts)."""

import io
import time
from dataclasses import dataclass
from pathlib import Path

from docker import DockerClient

from bench import contexts
from tf29env.core import engine
from tf29env.core.log import Log
from tf29env.core.variants import Variant
from tf29env.imagebuild import cacerts, dockerbuild
from tf29env.imagebuild.network import NetworkInputs
from tf29env.pipeline import BuildRequest, BuildResult, build


def ca_args(ca_certs: list[Path]) -> dict[str, str]:
    """The build args that hand --ca-cert's CAs to the RUN steps for the build only, as build.py does."""
    return cacerts.ca_buildargs(cacerts.load_certs(cacerts.ca_files(ca_certs), "--ca-cert"), [])


def buildargs(base: str, variant: Variant, cas: dict[str, str]) -> dict[str, str]:
    """The build args build.py passes to the Dockerfile: the cache keys are the same."""
    return {"BASE_IMAGE": base, "VARIANT": variant.name, **NetworkInputs().buildargs(), **cas}


@dataclass(frozen=True)
class ColdBuild:
    result: BuildResult
    docker_build_s: float  # the Dockerfile: every layer built, nothing from the cache
    tool_s: float  # all of build(): the Dockerfile, the probes, the final layer (labels, SBOM)


def previous_id(client: DockerClient, tag: str) -> str:
    return str(engine.inspect(client, tag)["Id"]) if engine.image_exists(client, tag) else ""


def drop_replaced(client: DockerClient, old_id: str, new_id: str) -> None:
    """build() moves the tag to a new image (its created label differs): the old one is ours to remove."""
    if old_id and old_id != new_id:
        engine.remove_dangling(client, old_id)


def cold(client: DockerClient, variant: Variant, ca_certs: list[Path], tag: str, log: Log) -> ColdBuild:
    old_id = previous_id(client, tag)
    request = BuildRequest(variant=variant, base="standin", tag=tag, ca_certs=ca_certs, nocache=True)
    start = time.monotonic()
    result = build(client, request, log)
    end = time.monotonic()
    drop_replaced(client, old_id, result.image_id)
    return ColdBuild(result, result.dockerfile_s, end - start)


def tool_rebuild(client: DockerClient, variant: Variant, ca_certs: list[Path], tag: str, log: Log) -> float:
    """build.py's whole build with nothing changed: its fixed cost (cache hits, probe, labels)."""
    old_id = previous_id(client, tag)
    start = time.monotonic()
    result = build(client, BuildRequest(variant=variant, base="standin", tag=tag, ca_certs=ca_certs), log)
    seconds = time.monotonic() - start
    drop_replaced(client, old_id, result.image_id)
    return seconds


def single_pass(client: DockerClient, tar: bytes, base: str, variant: Variant, cas: dict[str, str], log: Log,
                tag: str | None = None) -> tuple[str, float]:
    """One docker build of a context tar (cache allowed); its image id and seconds."""
    start = time.monotonic()
    image_id = dockerbuild.build_context(client, io.BytesIO(tar), tag=tag,
                                        buildargs=buildargs(base, variant, cas), log=log)
    return image_id, time.monotonic() - start


@dataclass(frozen=True)
class WarmBuild:
    seconds: float
    steps: int
    cached: int  # steps the engine took from its cache ("Using cache")


def warm(client: DockerClient, original: bytes, case: str, base: str, variant: Variant, cas: dict[str, str],
         log: Log) -> WarmBuild:
    """Rebuild after touching one file (a marker unique to this run, so no earlier run's layers
    match); the image goes afterwards. The cache hits are counted to show the rebuild was warm."""
    counts = {"steps": 0, "cached": 0}

    def counting_log(line: str) -> None:
        if dockerbuild.STEP_RE.match(line):
            counts["steps"] += 1
        elif "Using cache" in line:
            counts["cached"] += 1
        log(line)

    tar = contexts.touched(original, case, f"{case} {time.time_ns()}")
    image_id, seconds = single_pass(client, tar, base, variant, cas, counting_log)
    engine.remove_dangling(client, image_id)
    return WarmBuild(seconds, counts["steps"], counts["cached"])
