"""The NVIDIA wheels behind the stand-in's CUDA libraries (tf29env/imagebuild/standin.py): which wheel each
library came from, and the wheel's license file, which the gpu image then carries beside its SBOM.

The stand-in copies only the shared libraries out of the wheels; their license terms travel with
the image through the final layer (tf29env/finallayer.py), read here from the same cached wheels.
On the official nvidia/cuda base the libraries are dpkg's and the base carries NVIDIA's terms.
"""

import email.parser
import zipfile
from dataclasses import dataclass
from pathlib import Path

from tf29env.core.log import Log
from tf29env.core.variants import CUDA_WHEELS, STANDIN_CUDA
from tf29env.imagebuild import standin
from tf29env.supplychain.sbom import DOC_DIR, NvidiaSource

# Where the image keeps the wheels' license files (beside the SBOM).
LICENSE_DIR = f"{DOC_DIR}/licenses/nvidia"


@dataclass(frozen=True)
class WheelLicenses:
    sources: dict[str, NvidiaSource]  # soname -> where it came from
    files: dict[str, bytes]  # path in the image -> content (the wheels' license files)


def read_wheel(wheel: Path, spec: str) -> tuple[NvidiaSource, dict[str, bytes]]:
    """The License metadata of one wheel and its license file(s) (dist-info/License*), by image path."""
    name, version = spec.split("==")
    target = f"{LICENSE_DIR}/{name}-{version}"
    files: dict[str, bytes] = {}
    license_name = ""
    with zipfile.ZipFile(wheel) as archive:
        for info in archive.infolist():
            parts = info.filename.split("/")
            if len(parts) != 2 or not parts[0].endswith(".dist-info"):
                continue
            if parts[1] == "METADATA":
                meta = email.parser.BytesParser().parsebytes(archive.read(info), headersonly=True)
                license_name = str(meta.get("License") or "").strip()
            elif parts[1].upper().startswith(("LICENSE", "COPYING")):
                files[f"{target}/{parts[1]}"] = archive.read(info)
    first = sorted(files)[0] if files else ""
    return NvidiaSource(wheel=name, version=version, license_name=license_name, license_path=first), files


def for_base(base: str, log: Log) -> WheelLicenses:
    """The wheels' sources and license files when base is the stand-in CUDA base, else nothing."""
    if base != STANDIN_CUDA:
        return WheelLicenses({}, {})
    wheels = {spec: standin.cached_wheel(spec) for spec in CUDA_WHEELS}
    if any(path is None for path in wheels.values()):
        # The stand-in was made elsewhere, or the cache was cleared: fetch them again (cached after).
        wheels = dict(zip(CUDA_WHEELS, standin.download_wheels(log), strict=True))
    sources: dict[str, NvidiaSource] = {}
    files: dict[str, bytes] = {}
    for spec, wheel in wheels.items():
        assert wheel is not None
        source, wheel_files = read_wheel(wheel, spec)
        files.update(wheel_files)
        sources.update(dict.fromkeys(CUDA_WHEELS[spec], source))
    return WheelLicenses(sources, files)
