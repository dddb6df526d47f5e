"""The build's last step: the image's SBOM, made from the built image, added to it in a thin layer
of its own (a generated `FROM <id>` Dockerfile: COPY and LABEL, no RUN), with the license files
of the NVIDIA wheels the stand-in's CUDA libraries came from. The label labels.SBOM names the
SBOM's path, so that a scanner or a person finds it in the image without knowing this project.

The layer is built after the labelled image, not by the main Dockerfile, because the SBOM describes
that image: it cannot be part of what it describes. It takes seconds: one probe container (most of
it hashing the CUDA libraries), the SBOM, and a COPY.
"""

import io
import tarfile
import time
from collections.abc import Iterable
from dataclasses import dataclass

from docker import DockerClient

from tf29env import engine
from tf29env.build import dockerbuild
from tf29env.log import Log
from tf29env.release import labels
from tf29env.supplychain import nvidia, sbom

DOC_DIR = "/usr/share/doc/tf29-env"
SBOM_PATH = f"{DOC_DIR}/sbom.cdx.json"
# The context folder copied to DOC_DIR.
CONTEXT_DOC = "doc"


@dataclass(frozen=True)
class SbomLayer:
    image_id: str  # the image with the SBOM layer: what the tags then point at
    sbom_json: str  # the SBOM, as stored in the image
    license_files: list[str]  # paths in the image of the NVIDIA license files it now carries


def dockerfile(image_id: str) -> str:
    return (f"FROM {image_id}\n"
            f"COPY {CONTEXT_DOC}/ {DOC_DIR}/\n"
            f'LABEL {labels.SBOM}="{SBOM_PATH}"\n')


def context_tar(image_id: str, files: dict[str, bytes]) -> io.BytesIO:
    """The build context: the Dockerfile and files (image path under DOC_DIR -> content), root-owned,
    read-only for everyone else, with a fixed mtime."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        entries = [(CONTEXT_DOC + path.removeprefix(DOC_DIR), data) for path, data in sorted(files.items())]
        for name, content in [("Dockerfile", dockerfile(image_id).encode()), *entries]:
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(content), 0o644, 0
            tar.addfile(info, io.BytesIO(content))
    buffer.seek(0)
    return buffer


def add(client: DockerClient, image_id: str, *, base: str, name: str, version: str, refs: Iterable[str],
        log: Log) -> SbomLayer:
    """Probe image_id, make and validate its SBOM, and build the SBOM layer on top of it."""
    started = time.monotonic()
    wheels = nvidia.for_base(base, log)
    data = sbom.probe(client, image_id)
    image_labels = labels.of_image(engine.inspect(client, image_id))
    bom = sbom.make_bom(data, name=name, version=version, refs=refs, image_labels=image_labels,
                        nvidia_sources=wheels.sources)
    text = sbom.to_json(bom)
    files = {SBOM_PATH: text.encode(), **wheels.files}
    new_id = dockerbuild.build_context(client, context_tar(image_id, files), tag=None, buildargs={},
                                      log=lambda _line: None)
    log(f"==> SBOM: {len(data['python'])} Python, {len(data['dpkg'])} dpkg, {len(data['libraries'])} NVIDIA "
        f"components; in the image at {SBOM_PATH} ({time.monotonic() - started:.1f}s)")
    return SbomLayer(image_id=new_id, sbom_json=text, license_files=sorted(wheels.files))
