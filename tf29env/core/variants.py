"""The two image variants, the one home of their names and bases: the --variant choices, the
Dockerfile's VARIANT build arg and the io.tf29-env.variant label (tf29env/core/labels.py) all spell a
variant as VARIANTS' keys."""

from dataclasses import dataclass

# The stand-in bases, which need no registry (tf29env/imagebuild/standin.py makes them): Debian 11, which has
# Ubuntu 20.04's glibc, and the same plus the CUDA 11 libraries TF 2.9 loads.
STANDIN_OS = "tf29-env-standin:bullseye"
STANDIN_CUDA = "tf29-env-standin:bullseye-cuda11"


@dataclass(frozen=True)
class Variant:
    name: str
    default_base: str  # what a host with registry access builds on
    standin_base: str  # what a host without one builds on (`--base standin`)


# The names, for code that means one variant in particular (the tensorflow vs tensorflow-cpu build).
GPU = "gpu"
CPU = "cpu"

VARIANTS = {
    # TF 2.9's tested CUDA 11.2 / cuDNN 8.1 (the Dockerfile's default BASE_IMAGE).
    GPU: Variant(GPU, "nvidia/cuda:11.2.2-cudnn8-runtime-ubuntu20.04", STANDIN_CUDA),
    # tensorflow-cpu on the same OS, for laptops and CI without GPUs.
    CPU: Variant(CPU, "ubuntu:20.04", STANDIN_OS),
}
DEFAULT_VARIANT = GPU

# The repository build.py tags into unless told otherwise (--repository).
REPOSITORY = "tf29-env"

# The libraries TF 2.9 dlopens, by the NVIDIA wheel the stand-in takes them from. TF takes a cuDNN of
# its major (8) and a higher minor than it was built with (8.1); CUDA 11 minor-version compatibility
# covers the 11.8 runtime.
CUDA_WHEELS: dict[str, tuple[str, ...]] = {
    "nvidia-cuda-runtime-cu11==11.8.89": ("libcudart.so.11.0",),
    "nvidia-cublas-cu11==11.11.3.6": ("libcublas.so.11", "libcublasLt.so.11"),
    "nvidia-cufft-cu11==10.9.0.58": ("libcufft.so.10",),
    "nvidia-curand-cu11==10.3.0.86": ("libcurand.so.10",),
    "nvidia-cusolver-cu11==11.4.1.48": ("libcusolver.so.11",),
    "nvidia-cusparse-cu11==11.7.5.86": ("libcusparse.so.11",),
    "nvidia-cudnn-cu11==8.9.6.50": (
        "libcudnn.so.8",
        "libcudnn_ops_infer.so.8",
        "libcudnn_ops_train.so.8",
        "libcudnn_cnn_infer.so.8",
        "libcudnn_cnn_train.so.8",
        "libcudnn_adv_infer.so.8",
        "libcudnn_adv_train.so.8",
    ),
}
# The same, one list: what the SBOM lists and hashes.
CUDA_SONAMES = tuple(soname for sonames in CUDA_WHEELS.values() for soname in sonames)
