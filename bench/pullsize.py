"""Pull size: the compressed bytes a node downloads, which is what users wait for, rather than the
uncompressed sizes `docker images` shows (bench.sizes).

The image and its base are pushed to a real registry (Debian's docker-registry on loopback, in a
temporary directory: testkit.registry) and their schema2 manifests are read back: each layer's
`size` there is the gzip-compressed blob the registry stores and a node pulls. No compression level
is assumed: the engine's own push compresses, exactly as a real push does.

The update size answers "I changed a script: what does a node that has the image download?". The
image is rebuilt after a comment was appended to image/entrypoint.sh (bench.contexts), with the
image itself as the cache source, pushed to the same registry, and the blobs the old manifest lacks
are counted. The image's layers come from build.py's Dockerfile build, so the rebuild shares every
layer before `COPY image/`; the measure checks that, twice (the build's own output, then the
registry's layers), since a cache miss would report most of an image as the "update". build.py
adds a final layer of its own on top (labels and SBOM, about 0.1 MB compressed), which this rebuild
lacks: a real update through build.py downloads a new one of those too."""

import io
import re
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker.errors
import requests
from docker import DockerClient

from bench import builds, contexts, layers
from bench.errors import BenchError
from testkit.registry import RegistryUnavailable, local_registry
from tf29env.core import engine
from tf29env.core.log import Log
from tf29env.core.variants import Variant
from tf29env.imagebuild import dockerbuild

MANIFEST_V2 = "application/vnd.docker.distribution.manifest.v2+json"
PUSH_TAG = "bench"
UPDATE_TAG_PREFIX = "tf29-env:bench-update-"
HTTP_TIMEOUT_S = 30
# The step whose layer holds image/entrypoint.sh, as the classic builder records `COPY image/
# /opt/tf29-env/` in the image config: the first layer a script-only rebuild may change.
TOUCHED_STEP_RE = re.compile(r"COPY dir:[0-9a-f]+ in /opt/tf29-env/?$")
# The same step as the Dockerfile writes it, which the classic builder's output shows.
TOUCHED_INSTRUCTION = "COPY image/ "
NOT_THIS_CHECKOUT = "the image was not built from this checkout's files (has the Dockerfile changed since?)"
# Push progress comes many times a second per layer; only a layer's outcome goes to the log.
PUSH_OUTCOMES = ("Pushed", "Layer already exists", "Mounted from")


@dataclass(frozen=True)
class Blob:
    digest: str
    size: int  # compressed bytes, as the registry stores and serves the layer


@dataclass(frozen=True)
class PullSplit:
    whole: int
    base: int
    layers: int
    base_layers: int

    @property
    def ours(self) -> int:
        return self.whole - self.base

    def to_json(self) -> dict[str, Any]:
        return {"whole_bytes": self.whole, "base_bytes": self.base, "ours_bytes": self.ours, "layers": self.layers,
                "base_layers": self.base_layers}


def blobs(manifest: dict[str, Any]) -> list[Blob]:
    """The layers of a schema2 manifest, base first. Anything else (a schema1 answer, which a
    registry gives when it ignores the Accept header, or a manifest list) has no compressed sizes."""
    if manifest.get("schemaVersion") != 2 or manifest.get("mediaType") != MANIFEST_V2:
        raise ValueError(f"not a schema2 image manifest: schemaVersion {manifest.get('schemaVersion')}, "
                         f"mediaType {manifest.get('mediaType')}")
    return [Blob(str(layer["digest"]), int(layer["size"])) for layer in manifest["layers"]]


def split(image: Sequence[Blob], base: Sequence[Blob]) -> PullSplit:
    """The image's compressed bytes: whole, the base's part and ours. The base's blobs must be the
    image's first ones (same digests, same order), which also proves the base is the image's base."""
    if list(image[: len(base)]) != list(base):
        raise ValueError(f"the base's {len(base)} layers are not the first layers of the image ({len(image)})")
    return PullSplit(whole=sum(blob.size for blob in image), base=sum(blob.size for blob in base),
                     layers=len(image), base_layers=len(base))


def new_blobs(old: Sequence[Blob], new: Sequence[Blob]) -> list[Blob]:
    """The blobs of `new` that `old` lacks: what a node holding `old` downloads to run `new`."""
    have = {blob.digest for blob in old}
    return [blob for blob in new if blob.digest not in have]


def update(old: Sequence[Blob], new: Sequence[Blob]) -> int:
    """Bytes a node that has `old` downloads for `new`."""
    return sum(blob.size for blob in new_blobs(old, new))


def layer_steps(config: dict[str, Any]) -> list[str]:
    """The Dockerfile step of each layer, base first, from an image config: the history entries
    that made a layer (not empty_layer) pair with rootfs.diff_ids one to one. A zero-byte RUN still
    makes a layer, which is why `docker history` sizes cannot tell them apart and the config can."""
    steps = [layers.step(str(entry.get("created_by", ""))) for entry in config.get("history", [])
             if not entry.get("empty_layer")]
    diff_ids = config.get("rootfs", {}).get("diff_ids", [])
    if len(steps) != len(diff_ids):
        raise ValueError(f"the image config has {len(steps)} layer steps for {len(diff_ids)} layers")
    return steps


def first_new(old: Sequence[Blob], new: Sequence[Blob]) -> int:
    """The index in `new` of its first blob that `old` lacks (len(new) when there is none)."""
    have = {blob.digest for blob in old}
    return next((index for index, blob in enumerate(new) if blob.digest not in have), len(new))


def repository(label: str) -> str:
    """A registry repository name for a label (lowercase letters, digits and dashes)."""
    name = re.sub(r"[^a-z0-9]+", "-", label.lower()).strip("-")
    if not name:
        raise ValueError(f"label {label!r} makes no repository name")
    return f"tf29-env-bench/{name}"


def push(client: DockerClient, target: str, log: Log) -> None:
    """Push `target` (REGISTRY/NAME:TAG) with the engine; a push error is one line."""
    repository_name, tag = target.rsplit(":", 1)
    try:
        for chunk in client.images.push(repository_name, tag=tag, stream=True, decode=True):
            if "error" in chunk:
                raise BenchError(f"push of {target} failed: {str(chunk['error']).strip().splitlines()[0]}")
            status = str(chunk.get("status", ""))
            if status.startswith(PUSH_OUTCOMES):
                log(f"push {target}: {chunk.get('id', '')} {status}")
    except docker.errors.APIError as exc:
        raise BenchError(f"push of {target} failed: {exc.explanation or exc}") from None


def registry_json(registry: str, path: str, accept: str = "application/json") -> dict[str, Any]:
    response = requests.get(f"http://{registry}/v2/{path}", headers={"Accept": accept}, timeout=HTTP_TIMEOUT_S)
    if response.status_code != 200:
        raise BenchError(f"registry {registry}: GET /v2/{path} answered {response.status_code}")
    document: dict[str, Any] = response.json()
    return document


def manifest(registry: str, name: str) -> dict[str, Any]:
    return registry_json(registry, f"{name}/manifests/{PUSH_TAG}", MANIFEST_V2)


def config(registry: str, name: str) -> dict[str, Any]:
    """The image config (its history and rootfs) of the image pushed as NAME:bench."""
    return registry_json(registry, f"{name}/blobs/{manifest(registry, name)['config']['digest']}")


def push_layers(client: DockerClient, registry: str, ref: str, name: str, *, log: Log = lambda _: None) -> list[Blob]:
    """Push the local image `ref` as REGISTRY/NAME:bench; its layers as the registry stores them,
    base first. The registry's name is untagged locally again, even when the push fails. `ref`
    must be a name, not a bare image id: removing the registry's name is removing a tag, and an
    image left without tags would go with it."""
    if ref.startswith("sha256:"):
        raise ValueError(f"{ref}: give the image's name, not its id")
    target = f"{registry}/{name}:{PUSH_TAG}"
    engine.tag(client, ref, target)
    try:
        push(client, target, log)
        return blobs(manifest(registry, name))
    finally:
        client.api.remove_image(target)


def build_update(client: DockerClient, tag: str, image: str, base: str, variant: Variant, cas: dict[str, str],
                 log: Log) -> list[str]:
    """Rebuild `image` with the classic builder as `tag` after one script-only change; the
    build's output lines.

    `image` itself is the cache source (as CI passes --cache-from): the engine's own cache
    takes the newest image that matches a step, which can be another build of the same steps with
    other bytes in its pip layer, and the update would then be measured against the wrong layers.
    With cache_from only `image`'s own layers match."""
    lines: list[str] = []

    def keep(line: str) -> None:
        lines.append(line)
        log(line)

    tar = contexts.touched(contexts.standard(), "entrypoint", f"pullsize {time.time_ns()}")
    dockerbuild.build_context(client, io.BytesIO(tar), tag=tag, log=keep, cache_from=[image],
                             buildargs=builds.buildargs(base, variant, cas))
    return lines


def first_rebuilt(lines: Sequence[str]) -> str:
    """The first step after FROM that the classic builder did not take from its cache (no
    "Using cache" under its `Step N/M : ` line), as the Dockerfile writes it; "" when none."""
    steps: list[tuple[str, bool]] = []
    for line in lines:
        if dockerbuild.STEP_RE.match(line):
            steps.append((line.split(" : ", 1)[1].strip(), False))
        elif "Using cache" in line and steps:
            steps[-1] = (steps[-1][0], True)
    # FROM (and an ARG before it) never say "Using cache": the cache starts after FROM.
    after = next((index + 1 for index, (step, _) in enumerate(steps) if step.startswith("FROM ")), 0)
    return next((step for step, cached in steps[after:] if not cached), "")


def check_rebuilt(image: str, rebuilt: str) -> None:
    """Before pushing (minutes when a large layer changed): the rebuild must start at COPY image/."""
    if not rebuilt.startswith(TOUCHED_INSTRUCTION):
        raise BenchError(f"{image}: its script-only rebuild ran `{rebuilt[:80] or '(no step)'}` afresh, where "
                         f"`{TOUCHED_INSTRUCTION.strip()}` should come first: {NOT_THIS_CHECKOUT}")


def check_update(image: str, steps: Sequence[str], first: int) -> None:
    """On the registry's side: the first layer the rebuild does not share is the COPY of image/."""
    if first >= len(steps) or not TOUCHED_STEP_RE.search(steps[first]):
        found = steps[first][:80] if first < len(steps) else "(none: nothing changed)"
        raise BenchError(f"{image}: the first new layer of its script-only rebuild is `{found}`, not the COPY of "
                         f"image/: {NOT_THIS_CHECKOUT}")


def measure_update(client: DockerClient, registry: str, name: str, image: str, old: list[Blob], base: str,
                   variant: Variant, cas: dict[str, str], log: Log) -> dict[str, Any]:
    """What a node holding `image` (whose blobs are `old`) downloads after a script-only change:
    the rebuild is tagged UPDATE_TAG_PREFIX + variant while it is measured, then removed."""
    tag = f"{UPDATE_TAG_PREFIX}{variant.name}"
    try:
        check_rebuilt(image, first_rebuilt(build_update(client, tag, image, base, variant, cas, log)))
        new = push_layers(client, registry, tag, f"{name}-update", log=log)
        steps = layer_steps(config(registry, f"{name}-update"))
    finally:
        if engine.image_exists(client, tag):
            client.api.remove_image(tag)
    first = first_new(old, new)
    check_update(image, steps, first)
    changed = {blob.digest for blob in new_blobs(old, new)}
    return {"update_bytes": update(old, new), "update_layers": len(changed),
            "update_steps": [step[:120] for step, blob in zip(steps, new, strict=True) if blob.digest in changed]}


def measure(client: DockerClient, images: dict[str, tuple[str, str]], log: Log,
            updates: dict[str, Variant] | None = None, cas: dict[str, str] | None = None) -> dict[str, dict[str, Any]]:
    """Compressed sizes, per label -> (image ref, base ref): whole, the base's part, ours, and the
    layer counts. For each label in `updates` (label -> the image's variant), also the bytes and
    layers of a script-only update (built on the same base with the build-only CAs `cas`).

    One registry serves every label, in a temporary directory; the registry, its blobs and every
    tag made here are gone when this returns, on error too. Pushing gzips every layer on the
    engine: minutes for a 5 GB image."""
    results: dict[str, dict[str, Any]] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="bench-pullsize-") as root, local_registry(Path(root)) as registry:
            for label, (image, base) in images.items():
                name = repository(label)
                # The base first: the image's push then finds the base's blobs already there.
                log(f"pullsize {label}: pushing {base}, then {image}, to {registry}")
                base_blobs = push_layers(client, registry, base, f"{name}-base", log=log)
                image_blobs = push_layers(client, registry, image, name, log=log)
                try:
                    whole = split(image_blobs, base_blobs)
                except ValueError as exc:
                    raise BenchError(f"{image} on {base}: {exc}") from None
                results[label] = {"image": image, "base": base, **whole.to_json()}
                if updates and label in updates:
                    log(f"pullsize {label}: rebuilding {image} after a script-only change, pushing it")
                    results[label].update(measure_update(client, registry, name, image, image_blobs, base,
                                                         updates[label], cas or {}, log))
    except RegistryUnavailable as exc:
        raise BenchError(str(exc)) from None
    return results
