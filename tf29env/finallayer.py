"""The build's last step: a generated `FROM <id>` Dockerfile (COPY and LABEL, no RUN) that adds the
image's labels, its SBOM and the license files of the NVIDIA wheels the stand-in's CUDA libraries
came from. The label labels.SBOM names the SBOM's path, so that a scanner or a person finds it in
the image without knowing this project.

The labels and the SBOM describe what the Dockerfile built, so they cannot be part of that build:
they go on top of it, which keeps every Dockerfile layer cached when only they change.
"""

import datetime
import io
import tarfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from docker import DockerClient

from tf29env.core import labels
from tf29env.core.errors import EXIT_BUILD, UserError
from tf29env.core.facts import inventory
from tf29env.core.log import Log
from tf29env.core.variants import CUDA_SONAMES
from tf29env.imagebuild import dockerbuild
from tf29env.supplychain import nvidia, sbom
from tf29env.supplychain.sbom import DOC_DIR, SBOM_PATH

# The context folder copied to DOC_DIR.
CONTEXT_DOC = "doc"


@dataclass(frozen=True)
class FinalLayer:
    image_id: str  # the image with the final layer: what the tags then point at
    sbom_json: str  # the SBOM, as stored in the image
    license_files: list[str]  # paths in the image of the NVIDIA license files it now carries
    inventory: dict[str, Any]  # the inventory probe's report on the image (image/python/tf29image/probes/inventory.py)


def quoted(value: str) -> str:
    """value as a double-quoted Dockerfile word: no variable expansion, quotes and backslashes kept."""
    if any(ord(char) < 32 for char in value):
        raise UserError(f"a label value holds a control character: {value!r}", EXIT_BUILD)
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$") + '"'


def dockerfile(image_id: str, image_labels: dict[str, str]) -> str:
    shown = " \\\n      ".join(f"{key}={quoted(value)}" for key, value in sorted(image_labels.items()))
    return f"FROM {image_id}\nCOPY {CONTEXT_DOC}/ {DOC_DIR}/\nLABEL {shown}\n"


def context_tar(dockerfile_text: str, files: dict[str, bytes]) -> io.BytesIO:
    """The build context: the Dockerfile and files (image path under DOC_DIR -> content), root-owned,
    read-only for everyone else, with a fixed mtime."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        entries = [(CONTEXT_DOC + path.removeprefix(DOC_DIR), data) for path, data in sorted(files.items())]
        for name, content in [("Dockerfile", dockerfile_text.encode()), *entries]:
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(content), 0o644, 0
            tar.addfile(info, io.BytesIO(content))
    buffer.seek(0)
    return buffer


def add(client: DockerClient, image_id: str, *, image_labels: dict[str, str], name: str, refs: Iterable[str],
        log: Log, reproducible_at: datetime.datetime | None = None) -> FinalLayer:
    """Probe image_id, make and validate its SBOM, and build the final layer on top of it. With
    reproducible_at, the SBOM's time is that and its serial comes from what it describes: the same
    inputs make the same layer, which the engine then takes from its cache."""
    started = time.monotonic()
    wheels = nvidia.for_base(image_labels[labels.BASE], log)
    data = inventory(client, image_id, CUDA_SONAMES)
    bom = sbom.make_bom(data, name=name, version=image_labels[labels.VERSION], refs=refs,
                        image_labels=image_labels, nvidia_sources=wheels.sources)
    if reproducible_at is not None:
        sbom.make_reproducible(bom, reproducible_at, f"{image_id} {sorted(image_labels.items())}")
    text = sbom.to_json(bom)
    files = {SBOM_PATH: text.encode(), **wheels.files}
    generated = dockerfile(image_id, {**image_labels, labels.SBOM: SBOM_PATH})
    new_id = dockerbuild.build_context(client, context_tar(generated, files), tag=None, buildargs={},
                                       log=lambda _line: None)
    log(f"==> SBOM: {len(data['python'])} Python, {len(data['dpkg'])} dpkg, {len(data['libraries'])} NVIDIA "
        f"components; labels and SBOM ({SBOM_PATH}) in the final layer ({time.monotonic() - started:.1f}s)")
    return FinalLayer(image_id=new_id, sbom_json=text, license_files=sorted(wheels.files), inventory=data)
