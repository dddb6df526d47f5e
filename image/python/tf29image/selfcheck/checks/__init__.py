"""The layers, one module each, in the order they run and print. LAYERS is the one home of each
layer's number, name, title, timeout and module; the module defines run() -> list[Check]. Layers
that need TensorFlow run in the TensorFlow child."""

from __future__ import annotations

import importlib
from types import ModuleType


class LayerInfo:
    """What the runner needs to know about a layer without importing its module's dependencies."""

    def __init__(self, layer: int, name: str, title: str, needs_tf: bool, timeout: float, module: str) -> None:
        self.layer, self.name, self.title, self.needs_tf, self.timeout = layer, name, title, needs_tf, timeout
        self.module = module  # in this package


# Timeouts: each far above a normal run (idle CPU: layer 3 ~1.5 s, layer 4 ~1.5 s), far below
# "hung"; the run's total time limit (cli.py) caps them further.
LAYERS: list[LayerInfo] = [
    LayerInfo(1, "driver", "NVIDIA driver", False, 10.0, "l1_driver"),
    LayerInfo(2, "cuda_libs", "CUDA libraries", False, 10.0, "l2_cudalibs"),
    LayerInfo(3, "tensorflow", "TensorFlow", True, 25.0, "l3_tensorflow"),
    LayerInfo(4, "mixed_precision", "Mixed precision", True, 25.0, "l4_mixed_precision"),
    LayerInfo(5, "performance", "FP32 vs FP16 performance", True, 25.0, "l5_performance"),
    LayerInfo(6, "environment", "Container environment", False, 5.0, "l6_environment"),
]
BY_NUMBER: dict[int, LayerInfo] = {info.layer: info for info in LAYERS}
BY_NAME: dict[str, LayerInfo] = {info.name: info for info in LAYERS}


def module(layer: int) -> ModuleType:
    return importlib.import_module(f"{__name__}.{BY_NUMBER[layer].module}")
