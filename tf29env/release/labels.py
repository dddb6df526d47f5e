"""The image's labels: OCI annotations plus the versions its tags are computed from.

They are passed as build args to the Dockerfile's last block ("# Labels last"), whose ARG names are
LABEL_ARGS' values; `expected` is what `build.py test` compares the built image's labels with.
"""

from dataclasses import dataclass
from typing import Any

from tf29env.facts import ImageFacts

# The keys read back from built images (by build.py, bench and the tests).
VARIANT = "io.tf29-env.variant"  # a key of tf29env.variants.VARIANTS
BASE = "org.opencontainers.image.base.name"
BASE_DIGEST = "org.opencontainers.image.base.digest"
# The CAs the image trusts beyond its distro's, kept on request (--trust-ca-cert): their SHA-256
# fingerprints, comma-separated; empty when none (--ca-cert's build-only CAs leave no trace).
CA_TRUSTED = "io.tf29-env.ca.trusted"
# The path in the image of its CycloneDX SBOM (set by the SBOM layer, tf29env/sbomlayer.py, not
# by the Dockerfile: the SBOM describes the image the Dockerfile made).
SBOM = "io.tf29-env.sbom"

# label -> the Dockerfile ARG that sets it (prefixed, so that no base image ENV can shadow them).
LABEL_ARGS = {
    "org.opencontainers.image.version": "VERSION",
    "org.opencontainers.image.revision": "REVISION",
    "org.opencontainers.image.created": "CREATED",
    "org.opencontainers.image.source": "SOURCE",
    BASE: "BASE_IMAGE",
    BASE_DIGEST: "BASE_DIGEST",
    "io.tf29-env.tensorflow.version": "LABEL_TF_VERSION",
    "io.tf29-env.tensorflow.cuda": "LABEL_TF_CUDA",
    "io.tf29-env.tensorflow.cudnn": "LABEL_TF_CUDNN",
    "io.tf29-env.cuda.runtime": "LABEL_CUDA_RUNTIME",
    "io.tf29-env.cudnn.runtime": "LABEL_CUDNN_RUNTIME",
    "io.tf29-env.python.version": "LABEL_PYTHON",
    "io.tf29-env.os": "LABEL_OS",
    CA_TRUSTED: "LABEL_CA_TRUSTED",
}
FIXED_LABELS = ("org.opencontainers.image.title", "org.opencontainers.image.description", VARIANT)


def of_image(attrs: dict[str, Any]) -> dict[str, str]:
    """An image's labels, from its `docker inspect` attributes ({} for an image without any)."""
    return {str(key): str(value) for key, value in (attrs["Config"].get("Labels") or {}).items()}


@dataclass(frozen=True)
class BuildMeta:
    """What the build knows besides the image's own facts."""

    revision: str  # git SHA, "<sha>-dirty" or "unknown"
    created: str  # RFC 3339, UTC
    source: str  # the repository URL ("" when unknown)
    base: str  # the base image reference
    base_digest: str  # its repo digest, or its image id for a local-only base
    trusted_cas: str = ""  # CA_TRUSTED's value: the kept CAs' fingerprints, comma-separated


def expected(facts: ImageFacts, meta: BuildMeta, version: str) -> dict[str, str]:
    """label -> value for an image with these facts, built with this meta, whose full tag is version."""
    return {
        "org.opencontainers.image.version": version,
        "org.opencontainers.image.revision": meta.revision,
        "org.opencontainers.image.created": meta.created,
        "org.opencontainers.image.source": meta.source,
        BASE: meta.base,
        BASE_DIGEST: meta.base_digest,
        "io.tf29-env.tensorflow.version": facts.tensorflow,
        "io.tf29-env.tensorflow.cuda": facts.tf_cuda if facts.tf_cuda_build else "",
        "io.tf29-env.tensorflow.cudnn": facts.tf_cudnn if facts.tf_cuda_build else "",
        "io.tf29-env.cuda.runtime": facts.cuda_runtime,
        "io.tf29-env.cudnn.runtime": facts.cudnn_runtime,
        "io.tf29-env.python.version": facts.python,
        "io.tf29-env.os": f"{facts.os_id} {facts.os_version}",
        CA_TRUSTED: meta.trusted_cas,
    }


def buildargs(values: dict[str, str]) -> dict[str, str]:
    return {LABEL_ARGS[label]: value for label, value in values.items()}


def facts_problems(facts: ImageFacts, labels: dict[str, str]) -> list[str]:
    """Where the image's labels disagree with what the image holds (or lack a label)."""
    problems = [f"label {name} is missing" for name in (*LABEL_ARGS, *FIXED_LABELS) if name not in labels]
    if labels.get(VARIANT) not in (None, facts.variant):
        problems.append(f"label {VARIANT} is {labels[VARIANT]!r}, the image is {facts.variant}")
    meta = BuildMeta("", "", "", "", "")
    for name, value in expected(facts, meta, "").items():
        # CA_TRUSTED records a build input, like the revision, not a fact the probe reads.
        if name.startswith("io.tf29-env.") and name != CA_TRUSTED and name in labels and labels[name] != value:
            problems.append(f"label {name} is {labels[name]!r}, the image holds {value!r}")
    return problems
