"""The layers, one module each, in the order they run and print. Each module defines LAYER,
NAME, TITLE, NEEDS_TF and run() -> List[Check]; NEEDS_TF modules run in the TensorFlow child."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Dict, List

MODULES = [
    "selfcheck.checks.l1_driver",
    "selfcheck.checks.l2_cudalibs",
    "selfcheck.checks.l3_tensorflow",
    "selfcheck.checks.l4_mixed_precision",
    "selfcheck.checks.l5_performance",
    "selfcheck.checks.l6_environment",
]


class LayerInfo:
    """What the runner needs to know about a layer without importing its module's dependencies."""

    def __init__(self, layer: int, name: str, title: str, needs_tf: bool, timeout: float) -> None:
        self.layer, self.name, self.title, self.needs_tf, self.timeout = layer, name, title, needs_tf, timeout


# Timeouts: each far above a normal run (idle CPU: layer 3 ~1.5 s, layer 4 ~1.5 s), far below
# "hung"; the run's total time limit (cli.py) caps them further.
LAYERS: List[LayerInfo] = [
    LayerInfo(1, "driver", "NVIDIA driver", False, 10.0),
    LayerInfo(2, "cuda_libs", "CUDA libraries", False, 10.0),
    LayerInfo(3, "tensorflow", "TensorFlow", True, 25.0),
    LayerInfo(4, "mixed_precision", "Mixed precision", True, 25.0),
    LayerInfo(5, "performance", "FP32 vs FP16 performance", True, 25.0),
    LayerInfo(6, "environment", "Container environment", False, 5.0),
]
BY_NUMBER: Dict[int, LayerInfo] = {info.layer: info for info in LAYERS}


def module(layer: int) -> ModuleType:
    return importlib.import_module(MODULES[layer - 1])
