"""Facts several layers look at: is there a GPU device node, what CUDA runtime the image has."""

from __future__ import annotations

import glob
import os
from typing import List, Optional, Tuple

NO_DRIVER_FIX = ("start the container with --gpus all (Compose: a 'driver: nvidia' device reservation) on a "
                 "host with the NVIDIA driver and the NVIDIA Container Toolkit installed")


def device_nodes() -> List[str]:
    """What the NVIDIA Container Toolkit (or WSL2's /dev/dxg) puts into a container with GPUs."""
    nodes = [p for p in ["/dev/nvidiactl", "/dev/dxg"] if os.path.exists(p)]
    return nodes + sorted(glob.glob("/dev/nvidia[0-9]*"))


def declared_cuda() -> Optional[Tuple[int, ...]]:
    """CUDA_VERSION as the base image declares it (nvidia/cuda and the stand-in set it)."""
    value = os.environ.get("CUDA_VERSION", "")
    try:
        return tuple(int(p) for p in value.split(".")) if value else None
    except ValueError:
        return None
