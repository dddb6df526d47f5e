"""Building the tf29-env image from the Dockerfile on a chosen base."""

import datetime
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import docker.errors
from docker import DockerClient

from tf29env import context, engine, imagebuild, standin
from tf29env.errors import UserError
from tf29env.paths import REPO, cache_dir
from tf29env.variants import Variant, standin_base

Log = Callable[[str], None]


@dataclass
class BuildRequest:
    variant: Variant
    base: str | None = None  # None: the variant's default; "standin": the local stand-in
    tag: str = ""
    ca_certs: list[Path] = field(default_factory=list)
    nocache: bool = False
    pull: bool = False


@dataclass(frozen=True)
class BuildResult:
    image: str
    image_id: str
    base: str
    variant: str


def resolve_base(client: DockerClient, request: BuildRequest, log: Log) -> str:
    """The base reference, made (stand-in) or pulled if the engine lacks it."""
    if request.base == "standin":
        return standin.ensure(client, log, cuda=request.variant.standin_cuda)
    base = request.base or request.variant.default_base
    if base in (standin.OS_IMAGE, standin.CUDA_IMAGE):
        return standin.ensure(client, log, cuda=base == standin.CUDA_IMAGE)
    if not engine.image_exists(client, base):
        log(f"pulling base image {base}")
        try:
            client.images.pull(base)
        except docker.errors.DockerException as exc:
            reason = str(getattr(exc, "explanation", "") or exc).splitlines()[0]
            raise UserError(
                f"base image {base} is not on this engine and cannot be pulled ({reason}); "
                "`--base standin` builds on a local stand-in base instead",
            ) from None
    return base


def git_revision() -> str:
    proc = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True, check=False)
    return proc.stdout.strip() if proc.returncode == 0 else "unknown"


def build(client: DockerClient, request: BuildRequest, log: Log) -> BuildResult:
    ca_certs = context.ca_files(request.ca_certs)
    base = resolve_base(client, request, log)
    buildargs = {
        "BASE_IMAGE": base,
        "VARIANT": request.variant.name,
        "REVISION": git_revision(),
        "CREATED": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    with tempfile.TemporaryFile(dir=cache_dir()) as fileobj:
        context.write(fileobj, ca_certs)
        fileobj.seek(0)
        log(f"building {request.tag} ({request.variant.name} variant) on {base}")
        image_id = imagebuild.build_context(
            client, fileobj, tag=request.tag, buildargs=buildargs, log=log,
            nocache=request.nocache, pull=request.pull,
        )
    return BuildResult(image=request.tag, image_id=image_id, base=base, variant=request.variant.name)


__all__ = ["BuildRequest", "BuildResult", "build", "resolve_base", "standin_base"]
