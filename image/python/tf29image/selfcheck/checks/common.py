"""Facts several layers look at: is there a GPU device node, what CUDA runtime the image has."""

from __future__ import annotations

import glob
import os

NO_DRIVER_FIX = ("start the container with --gpus all (Compose: a 'driver: nvidia' device reservation) on a "
                 "host with the NVIDIA driver and the NVIDIA Container Toolkit installed")
# GPUs were asked for by name but nothing arrived: the engine passed the request on to no toolkit.
NOT_INJECTED_FIX = ("install the NVIDIA Container Toolkit on the host and register it with the engine "
                    "(nvidia-ctk runtime configure --runtime=docker, then restart dockerd; Kubernetes: the node's "
                    "nvidia runtime or RuntimeClass); `docker run --rm --gpus all IMAGE nvidia-smi` must then list "
                    "the GPUs")


LOCK_FILE = "/opt/tf29-env/requirements.lock"
CPU_VARIANT = ("the cpu variant of this image (tensorflow-cpu) does not use GPUs: nothing to check here; "
               "use the gpu variant on a GPU host")
# NVIDIA_VISIBLE_DEVICES values with which the NVIDIA Container Toolkit gives the container no GPU: a
# start without GPUs on purpose (a hub's CPU-only profile on a GPU node), not a broken one.
NO_GPU_REQUESTED = ("void", "none", "")


def variant(lock_file: str = LOCK_FILE) -> str | None:
    """'cpu' or 'gpu' from the image's lock file (the Dockerfile writes tensorflow-cpu== there for
    the cpu variant); None outside the image (a bare GPU host running layers 1, 2 and 6)."""
    try:
        with open(lock_file) as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    if any(line.startswith("tensorflow-cpu==") for line in lines):
        return "cpu"
    return "gpu" if any(line.startswith("tensorflow==") for line in lines) else None


def cpu_only() -> tuple[str, str] | None:
    """Why this container is not meant to have a GPU, as (the suffix of the SKIP check's id, its
    message): the cpu variant, or NVIDIA_VISIBLE_DEVICES asking for none. None: it is meant to."""
    if variant() == "cpu":
        return "cpu_variant", CPU_VARIANT
    visible = os.environ.get("NVIDIA_VISIBLE_DEVICES")
    if visible is not None and visible.strip().lower() in NO_GPU_REQUESTED:
        return "cpu_only", (f"NVIDIA_VISIBLE_DEVICES={visible or '(empty)'} starts this container without GPUs on "
                            "purpose (a CPU-only start, e.g. a hub's CPU profile): nothing to check here; for GPUs, "
                            "start it with NVIDIA_VISIBLE_DEVICES=all (the image's default) and --gpus")
    return None


def named_devices() -> str | None:
    """NVIDIA_VISIBLE_DEVICES when it names devices (indexes, UUIDs: what --gpus, compose's
    reservations and the team hub set), not the image's default `all` nor a no-GPU value; else None."""
    visible = (os.environ.get("NVIDIA_VISIBLE_DEVICES") or "").strip()
    if visible.lower() in (*NO_GPU_REQUESTED, "all"):
        return None
    return visible


def not_injected(visible: str) -> str:
    return (f"NVIDIA_VISIBLE_DEVICES={visible} names GPUs but no NVIDIA driver was injected (no /dev/nvidiactl, "
            "libcuda.so.1 not loadable): the NVIDIA Container Toolkit or its runtime is missing where this "
            "container was started")


def device_nodes() -> list[str]:
    """What the NVIDIA Container Toolkit (or WSL2's /dev/dxg) puts into a container with GPUs."""
    nodes = [p for p in ["/dev/nvidiactl", "/dev/dxg"] if os.path.exists(p)]
    return nodes + sorted(glob.glob("/dev/nvidia[0-9]*"))


def declared_cuda() -> tuple[int, ...] | None:
    """CUDA_VERSION as the base image declares it (nvidia/cuda and the stand-in set it)."""
    value = os.environ.get("CUDA_VERSION", "")
    try:
        return tuple(int(p) for p in value.split(".")) if value else None
    except ValueError:
        return None
