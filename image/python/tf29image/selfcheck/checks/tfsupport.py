"""TensorFlow, imported once per child process, with memory growth on before any GPU is touched
(the self-check runs beside notebooks and must not take the GPU's memory from them)."""

from __future__ import annotations

import contextlib
import ctypes
import importlib
from typing import Any

_tf: Any | None = None


def tf() -> Any:
    global _tf  # noqa: PLW0603 - one TensorFlow per process, set up once
    if _tf is None:
        tensorflow = importlib.import_module("tensorflow")  # imported here: only layers 3-5 need it
        for gpu in tensorflow.config.list_physical_devices("GPU"):
            # RuntimeError: already initialised in this process, growth was decided then.
            with contextlib.suppress(RuntimeError, ValueError):
                tensorflow.config.experimental.set_memory_growth(gpu, True)
        _tf = tensorflow
    return _tf


def gpus() -> list[Any]:
    return list(tf().config.list_physical_devices("GPU"))


def numpy() -> Any:
    return importlib.import_module("numpy")


def total_memory(ordinal: int) -> int | None:
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
