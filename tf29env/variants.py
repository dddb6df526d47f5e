"""The two image variants and their bases."""

from dataclasses import dataclass

from tf29env import standin


@dataclass(frozen=True)
class Variant:
    name: str
    default_base: str  # what a host with registry access builds on
    standin_cuda: bool  # whether its stand-in base carries the CUDA libraries


VARIANTS = {
    # TF 2.9's tested CUDA 11.2 / cuDNN 8.1 (the Dockerfile's default BASE_IMAGE).
    "gpu": Variant("gpu", "nvidia/cuda:11.2.2-cudnn8-runtime-ubuntu20.04", True),
    # tensorflow-cpu on the same OS, for laptops and CI without GPUs.
    "cpu": Variant("cpu", "ubuntu:20.04", False),
}

REPOSITORY = "tf29-env"


def standin_base(variant: Variant) -> str:
    return standin.CUDA_IMAGE if variant.standin_cuda else standin.OS_IMAGE


def default_tag(variant: Variant) -> str:
    return f"{REPOSITORY}:latest-{variant.name}"
