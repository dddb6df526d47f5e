"""Building the tf29-env image: the Dockerfile on a chosen base, probed for what it holds
(tf29env.core.facts), then a generated final layer with the labels computed from those facts and the
image's SBOM (tf29env.finallayer); the tags point at that.
"""

import datetime
import subprocess
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker.errors
from docker import DockerClient

from tf29env import finallayer
from tf29env.core import engine, labels
from tf29env.core.errors import EXIT_BUILD, UserError
from tf29env.core.facts import ImageFacts, probe
from tf29env.core.log import Log
from tf29env.core.paths import REPO, cache_dir
from tf29env.core.variants import REPOSITORY, STANDIN_CUDA, STANDIN_OS, Variant
from tf29env.imagebuild import cacerts, context, devcontainer, dockerbuild, standin
from tf29env.imagebuild.network import NetworkInputs
from tf29env.release import tags


@dataclass
class BuildRequest:
    variant: Variant
    base: str | None = None  # None: the variant's default; "standin": the local stand-in
    tag: str = ""  # the reference to build; "" = REPOSITORY:<full computed tag>
    ca_certs: list[Path] = field(default_factory=list)  # CAs for the build only (--ca-cert)
    nocache: bool = False
    pull: bool = False
    network: NetworkInputs = field(default_factory=NetworkInputs)
    cache_from: list[str] = field(default_factory=list)
    source: str = ""  # the repository URL for the source label; "" = git's origin
    repository: str = REPOSITORY  # where the default reference goes
    trust_ca_certs: list[Path] = field(default_factory=list)  # CAs the image keeps trusting (--trust-ca-cert)
    created: datetime.datetime | None = None  # the build's time (SOURCE_DATE_EPOCH); None: now
    trusted_files: list[Path] = field(init=False)  # the certificate files trust_ca_certs names
    ca_args: dict[str, str] = field(init=False)  # the CAs' build args (tf29env.imagebuild.cacerts.ca_buildargs)
    trusted_cas: str = field(init=False)  # the kept CAs' fingerprints, for the label

    def __post_init__(self) -> None:
        """Every input is checked here, when the request is made: before the engine is asked
        anything, so that bad input stops with one line and nothing half-starts."""
        self.network.validate()
        tags.validate_repository(self.repository)
        if self.tag:
            tags.split_reference(self.tag)
        for ref in self.cache_from:
            tags.split_reference(ref, "--cache-from")
        cacerts.check_ca_dir()
        build_only = cacerts.load_certs(cacerts.ca_files(self.ca_certs), "--ca-cert")
        self.trusted_files = cacerts.ca_files(self.trust_ca_certs, "--trust-ca-cert")
        trusted = cacerts.load_certs(self.trusted_files, "--trust-ca-cert")
        self.ca_args = cacerts.ca_buildargs(build_only, trusted)
        self.trusted_cas = ",".join(cert.fingerprint for cert in trusted)


@dataclass(frozen=True)
class BuildResult:
    image: str
    image_id: str
    base: str
    variant: str
    facts: ImageFacts
    meta: labels.BuildMeta
    version: str  # the full computed tag
    refs: list[str]  # every reference the image earns (tf29env.release.tags.compute), the full one first, then `image`
    sbom_json: str  # its CycloneDX SBOM, also in the image (labels.SBOM)
    license_files: list[str]  # the NVIDIA license files in the image (stand-in base only)
    inventory: dict[str, Any]  # what the image holds: packages and sizes (image/python/tf29image/probes/inventory.py)
    dockerfile_s: float  # the docker build proper (every layer); the rest is the probes and the final layer


def resolve_base(client: DockerClient, request: BuildRequest, log: Log) -> str:
    """The base reference, made (stand-in) or pulled if the engine lacks it."""
    if request.base == "standin":
        return standin.ensure(client, log, request.variant.standin_base)
    base = request.base or request.variant.default_base
    if base in (STANDIN_OS, STANDIN_CUDA):
        return standin.ensure(client, log, base)
    repository, tag = tags.split_reference(base, "--base")
    local = engine.image_exists(client, base)
    if not local or request.pull:
        log(f"==> pulling base image {base}")
        try:
            client.images.pull(repository, tag=tag)  # without a tag, the SDK pulls every tag
        except docker.errors.DockerException as exc:
            reason = str(getattr(exc, "explanation", "") or exc).splitlines()[0]
            if local:
                raise UserError(f"--pull: cannot pull a newer {base} ({reason}); without --pull the local one is used")\
                    from None
            raise UserError(
                f"base image {base} is not on this engine and cannot be pulled ({reason}); "
                "`--base standin` builds on a local stand-in base instead",
            ) from None
    return base


def base_digest(client: DockerClient, base: str) -> str:
    """The base's registry digest when it came from a registry, else its local image id."""
    attrs = engine.inspect(client, base)
    repo_digests = attrs.get("RepoDigests") or []
    return str(repo_digests[0].split("@", 1)[1]) if repo_digests else str(attrs["Id"])


def git(*args: str) -> str:
    proc = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, check=False)
    return proc.stdout.strip() if proc.returncode == 0 else ""


def last_image_commit(field: str) -> str:
    """FIELD (git log's --format, e.g. %H, %ct) of the last commit that changed what goes into the image
    (context.CONTEXT_PATHS); empty outside a git checkout."""
    return git("log", "-1", f"--format={field}", "HEAD", "--", *context.CONTEXT_PATHS)


def git_revision() -> str:
    """The last commit that changed what goes into the image, with -dirty when those files differ
    from it: a commit of tests or docs alone leaves the image, and its id, as it was."""
    sha = last_image_commit("%H")
    if not sha:
        return "unknown"
    return f"{sha}-dirty" if git("status", "--porcelain", "--", *context.CONTEXT_PATHS) else sha


def source_date(environ: Mapping[str, str]) -> datetime.datetime | None:
    """SOURCE_DATE_EPOCH (reproducible-builds.org): the created label and the SBOM's time and serial
    follow it, so that a rebuild of the same inputs is the same image, from the engine's cache."""
    value = environ.get("SOURCE_DATE_EPOCH", "")
    if not value:
        return None
    if not value.isdigit() or int(value) > 253402300799:
        raise UserError(f"SOURCE_DATE_EPOCH={value[:40]!r} is not a time in seconds since 1970 (e.g. git log -1 "
                        "--format=%ct)")
    return datetime.datetime.fromtimestamp(int(value), datetime.UTC)


def build(client: DockerClient, request: BuildRequest, log: Log) -> BuildResult:
    """Build the Dockerfile, probe the result, and add the final layer (labels, SBOM); tag it as
    request.tag (or its full computed tag)."""
    base = resolve_base(client, request, log)
    created = request.created or datetime.datetime.now(datetime.UTC)
    meta = labels.BuildMeta(
        revision=git_revision(), created=created.strftime("%Y-%m-%dT%H:%M:%SZ"),
        source=request.source or git("config", "--get", "remote.origin.url"),
        base=base, base_digest=base_digest(client, base), trusted_cas=request.trusted_cas,
    )
    buildargs = {"BASE_IMAGE": base, "VARIANT": request.variant.name, **request.network.buildargs(),
                 **request.ca_args}
    log(f"==> building the {request.variant.name} variant on {base}")
    started = time.monotonic()
    with tempfile.TemporaryFile(dir=cache_dir()) as fileobj:
        context.write(fileobj, request.trusted_files)
        fileobj.seek(0)
        # --pull was done by resolve_base: the builder's own pull would fail on a local-only base.
        built = dockerbuild.build_context(client, fileobj, tag=None, buildargs=buildargs, log=log,
                                          nocache=request.nocache, pull=False, cache_from=request.cache_from)
    dockerfile_s = time.monotonic() - started
    # A broken dev container label would fail only in a user's editor, later: refuse the build now.
    devcontainer.check(engine.inspect(client, built), built)
    log("==> reading what the image holds (TensorFlow, Python, OS, CUDA, cuDNN)")
    facts = probe(client, built)
    if facts.variant != request.variant.name:
        raise UserError(f"the {request.variant.name} build holds a TensorFlow that is "
                        f"{'a CUDA' if facts.tf_cuda_build else 'a CPU-only'} build", EXIT_BUILD)
    version = tags.full_tag(facts)
    image = request.tag or f"{request.repository}:{version}"
    refs = [f"{request.repository}:{tag}" for tag in tags.compute(facts, revision=meta.revision, created=created)]
    refs = refs if image in refs else [*refs, image]
    log(f"==> labelling it as {version}; making its SBOM; both in a final layer of their own")
    layer = finallayer.add(client, built, image_labels=labels.expected(facts, meta, version),
                           name=request.repository, refs=refs, log=log, reproducible_at=request.created)
    engine.tag(client, layer.image_id, image)
    return BuildResult(image=image, image_id=layer.image_id, base=base, variant=request.variant.name, facts=facts,
                       meta=meta, version=version, refs=refs, sbom_json=layer.sbom_json,
                       license_files=layer.license_files, inventory=layer.inventory, dockerfile_s=dockerfile_s)
