"""The image's labels, the one home of their keys: OCI annotations plus the versions its tags are
computed from. build.py writes them in the generated final layer (tf29env/finallayer.py), from
the built image's own facts; `build.py test` compares an image's labels with them (facts_problems).
"""

from dataclasses import dataclass
from typing import Any

from tf29env.core.facts import ImageFacts

# The OCI annotations' namespace: the SBOM's root component records the labels under it.
OCI_PREFIX = "org.opencontainers.image."
TITLE = OCI_PREFIX + "title"
DESCRIPTION = OCI_PREFIX + "description"
VERSION = OCI_PREFIX + "version"
REVISION = OCI_PREFIX + "revision"
CREATED = OCI_PREFIX + "created"
SOURCE = OCI_PREFIX + "source"
BASE = OCI_PREFIX + "base.name"
BASE_DIGEST = OCI_PREFIX + "base.digest"
VARIANT = "io.tf29-env.variant"  # a key of tf29env.core.variants.VARIANTS
TF_VERSION = "io.tf29-env.tensorflow.version"
TF_CUDA = "io.tf29-env.tensorflow.cuda"
TF_CUDNN = "io.tf29-env.tensorflow.cudnn"
CUDA_RUNTIME = "io.tf29-env.cuda.runtime"
CUDNN_RUNTIME = "io.tf29-env.cudnn.runtime"
PYTHON = "io.tf29-env.python.version"
OS = "io.tf29-env.os"
# The kept CAs' SHA-256 fingerprints (--trust-ca-cert), comma-separated; empty when none.
CA_TRUSTED = "io.tf29-env.ca.trusted"
# The path in the image of its CycloneDX SBOM, set beside it in the final layer.
SBOM = "io.tf29-env.sbom"

FIXED = {TITLE: "tf29-env", DESCRIPTION: "TensorFlow 2.9 with JupyterLab, SSH and a GPU / FP16 self-check"}
# The labels the image's probed facts decide (the rest record build inputs: revision, base, CAs).
FROM_FACTS = (VARIANT, TF_VERSION, TF_CUDA, TF_CUDNN, CUDA_RUNTIME, CUDNN_RUNTIME, PYTHON, OS)
# Every label build.py sets.
KEYS = (*FIXED, VERSION, REVISION, CREATED, SOURCE, BASE, BASE_DIGEST, *FROM_FACTS, CA_TRUSTED, SBOM)


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


def from_facts(facts: ImageFacts) -> dict[str, str]:
    """The labels an image with these facts must carry."""
    return {
        VARIANT: facts.variant,
        TF_VERSION: facts.tensorflow,
        TF_CUDA: facts.tf_cuda if facts.tf_cuda_build else "",
        TF_CUDNN: facts.tf_cudnn if facts.tf_cuda_build else "",
        CUDA_RUNTIME: facts.cuda_runtime,
        CUDNN_RUNTIME: facts.cudnn_runtime,
        PYTHON: facts.python,
        OS: f"{facts.os_id} {facts.os_version}",
    }


def expected(facts: ImageFacts, meta: BuildMeta, version: str) -> dict[str, str]:
    """label -> value for an image with these facts, built with this meta, whose full tag is version
    (every label but SBOM, which the final layer sets beside the file)."""
    return {
        **FIXED,
        VERSION: version,
        REVISION: meta.revision,
        CREATED: meta.created,
        SOURCE: meta.source,
        BASE: meta.base,
        BASE_DIGEST: meta.base_digest,
        **from_facts(facts),
        CA_TRUSTED: meta.trusted_cas,
    }


def facts_problems(facts: ImageFacts, labels: dict[str, str]) -> list[str]:
    """Where the image's labels disagree with what the image holds (or lack a label)."""
    problems = [f"label {name} is missing" for name in KEYS if name not in labels]
    for name, value in from_facts(facts).items():
        if name in labels and labels[name] != value:
            problems.append(f"label {name} is {labels[name]!r}, the image holds {value!r}")
    return problems
