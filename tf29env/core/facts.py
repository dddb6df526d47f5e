"""What a built image really holds (TF, Python, OS, CUDA and cuDNN versions; its packages), read by
running the scripts in image/python/tf29image/probes/ in it.

Tags and labels are computed from these facts, never from what the build was asked for.
"""

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from docker import DockerClient

from tf29env.core import engine
from tf29env.core.errors import EXIT_BUILD, UserError
from tf29env.core.paths import PROBES
from tf29env.core.variants import CPU, GPU

FACTS_PROBE = PROBES / "facts.py"
INVENTORY_PROBE = PROBES / "inventory.py"


@dataclass(frozen=True)
class ImageFacts:
    tensorflow: str  # tf.__version__, e.g. 2.9.3
    tf_cuda_build: bool  # tf.sysconfig.get_build_info()["is_cuda_build"]
    tf_cuda: str  # the CUDA version TF was built for, e.g. 11.2 ("" for tensorflow-cpu)
    tf_cudnn: str  # the cuDNN major TF was built for, e.g. 8
    python: str  # e.g. 3.9.2
    os_id: str  # /etc/os-release ID: debian, ubuntu
    os_version: str  # /etc/os-release VERSION_ID: 11, 20.04
    os_name: str
    cuda_runtime: str  # the image's CUDA runtime, major.minor ("" without libcudart)
    cuda_runtime_source: str  # "libcudart" (asked the library) or "CUDA_VERSION" (no driver to ask)
    cudnn_runtime: str  # the image's libcudnn, e.g. 8.9.6 ("" without one)

    @property
    def variant(self) -> str:
        return GPU if self.tf_cuda_build else CPU

    @property
    def python_minor(self) -> str:
        return ".".join(self.python.split(".")[:2])

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ImageFacts":
        return cls(**{name: data[name] for name in cls.__dataclass_fields__})


def run_probe(client: DockerClient, image: str, script: Path, args: Sequence[str] = (),
              python: str = engine.IMAGE_PYTHON) -> dict[str, Any]:
    """Run one of image/python/tf29image/probes/ in a throwaway container of image (no network) and parse
    its JSON line."""
    output = engine.run_python(client, image, script.read_text(), list(args), python=python)
    lines = [line for line in output.splitlines() if line.startswith("{")]
    if not lines:
        raise UserError(f"{image}: {script.name} printed no JSON: {output.strip()[-300:]}", EXIT_BUILD)
    data: dict[str, Any] = json.loads(lines[-1])
    return data


def probe(client: DockerClient, image: str) -> ImageFacts:
    return ImageFacts.from_dict(run_probe(client, image, FACTS_PROBE))


def inventory(client: DockerClient, image: str, sonames: Sequence[str] = (),
              python: str = engine.IMAGE_PYTHON) -> dict[str, Any]:
    """What image holds, as its python sees it: Python distributions (licenses, requirements, bytes),
    pip freeze, dpkg packages (bytes, dependencies), the OS release, and the libraries named by
    sonames, hashed (image/python/tf29image/probes/inventory.py)."""
    return run_probe(client, image, INVENTORY_PROBE, sonames, python)


def dist_bytes(dist: dict[str, Any]) -> int:
    """All the bytes of one distribution in an inventory: code and data, bytecode, C++ headers."""
    return int(dist["bytes"]) + int(dist["pyc_bytes"]) + int(dist["header_bytes"])
