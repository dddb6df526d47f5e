"""TensorFlow, imported once per child process, with memory growth on before any GPU is touched
(the self-check runs beside notebooks and must not take the GPU's memory from them)."""

from __future__ import annotations

import ctypes
from typing import Any, List, Optional

_tf: Optional[Any] = None


def tf() -> Any:
    global _tf
    if _tf is None:
        import tensorflow

        for gpu in tensorflow.config.list_physical_devices("GPU"):
            try:
                tensorflow.config.experimental.set_memory_growth(gpu, True)
            except (RuntimeError, ValueError):
                pass  # already initialised in this process: growth was decided then
        _tf = tensorflow
    return _tf


def gpus() -> List[Any]:
    return list(tf().config.list_physical_devices("GPU"))


def total_memory(ordinal: int) -> Optional[int]:
    """Bytes of GPU `ordinal` through the driver API (TF's GPU:i is CUDA device i of the visible ones)."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
        device = ctypes.c_int()
        size = ctypes.c_size_t()
        if lib.cuDeviceGet(ctypes.byref(device), ctypes.c_int(ordinal)) != 0:
            return None
        if lib.cuDeviceTotalMem_v2(ctypes.byref(size), device) != 0:
            return None
        return int(size.value)
    except (OSError, AttributeError):
        return None
