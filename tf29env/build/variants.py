"""The two image variants, the one home of their names and bases: the --variant choices, the
Dockerfile's VARIANT build arg and the io.tf29-env.variant label (tf29env/labels.py) all spell a
variant as VARIANTS' keys."""

from dataclasses import dataclass

# The stand-in bases, which need no registry (tf29env/standin.py makes them): Debian 11, which has
# Ubuntu 20.04's glibc, and the same plus the CUDA 11 libraries TF 2.9 loads.
STANDIN_OS = "tf29-env-standin:bullseye"
STANDIN_CUDA = "tf29-env-standin:bullseye-cuda11"


@dataclass(frozen=True)
class Variant:
    name: str
    default_base: str  # what a host with registry access builds on
    standin_base: str  # what a host without one builds on (`--base standin`)


VARIANTS = {
    # TF 2.9's tested CUDA 11.2 / cuDNN 8.1 (the Dockerfile's default BASE_IMAGE).
    "gpu": Variant("gpu", "nvidia/cuda:11.2.2-cudnn8-runtime-ubuntu20.04", STANDIN_CUDA),
    # tensorflow-cpu on the same OS, for laptops and CI without GPUs.
    "cpu": Variant("cpu", "ubuntu:20.04", STANDIN_OS),
}
DEFAULT_VARIANT = "gpu"

# The repository build.py tags into unless told otherwise (--repository).
REPOSITORY = "tf29-env"
