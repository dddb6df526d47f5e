"""Layer 2, the CUDA user-space libraries that TensorFlow 2.9 dlopens, loaded by soname with
ctypes exactly as TF does, each with its version from its own API. No GPU needed (only the CUDA
runtime's version getter needs the driver: without one it is read from the image's CUDA_VERSION).
Then what XLA and the profiler need (xla_tools): libdevice, ptxas, CUPTI."""

from __future__ import annotations

import ctypes
from typing import Any, Callable, Dict, Optional, Tuple

from tf29image.selfcheck import cudalib
from tf29image.selfcheck.checks import xla_tools
from tf29image.selfcheck.checks.common import cpu_only, declared_cuda
from tf29image.selfcheck.model import FAIL, PASS, SKIP, Check

MISSING_FIX = ("TensorFlow 2.9 needs the CUDA 11 / cuDNN 8 libraries on the loader path: use the image as built "
               "(nvidia/cuda:11.2.2-cudnn8 base or the stand-in), and do not replace LD_LIBRARY_PATH")
CUDNN_SUBLIBS = ["ops_infer", "ops_train", "cnn_infer", "cnn_train", "adv_infer", "adv_train"]
CUDART_NO_DRIVER = 35  # cudaErrorInsufficientDriver: this runtime reports its version only with a driver

Getter = Tuple[Optional[str], Dict[str, Any]]  # (version or None, extra facts for the report)


def cudart(lib: ctypes.CDLL) -> Getter:
    status, value = cudalib.int_out(lib, "cudaRuntimeGetVersion")
    if status == 0 and value:
        return cudalib.version_text(value, (1000, 10)), {}
    declared = declared_cuda()
    data: dict[str, Any] = {"runtime_get_version_error": status,
            "declared": ".".join(map(str, declared)) if declared else None}
    return None, data


def properties(func: str) -> Callable[[ctypes.CDLL], Getter]:
    """cublasGetProperty / cusparseGetProperty(MAJOR_VERSION=0, MINOR_VERSION=1, PATCH_LEVEL=2)."""
    def get(lib: ctypes.CDLL) -> Getter:
        parts = [cudalib.int_out(lib, func, which) for which in (0, 1, 2)]
        if any(status != 0 for status, _ in parts):
            return None, {"error": [status for status, _ in parts]}
        return ".".join(str(v) for _, v in parts), {}
    return get


def encoded(func: str, digits: tuple[int, ...], size_t: bool = False) -> Callable[[ctypes.CDLL], Getter]:
    def get(lib: ctypes.CDLL) -> Getter:
        if size_t:
            return cudalib.version_text(cudalib.size_t_call(lib, func), digits), {}
        status, value = cudalib.int_out(lib, func)
        return (cudalib.version_text(value, digits), {}) if status == 0 else (None, {"error": status})
    return get


# soname, its version getter, the major version TF 2.9 needs
LIBRARIES = [
    ("libcudart.so.11.0", cudart, 11),
    ("libcublas.so.11", properties("cublasGetProperty"), 11),
    ("libcublasLt.so.11", encoded("cublasLtGetVersion", (10000, 100, 1), size_t=True), 11),
    ("libcufft.so.10", encoded("cufftGetVersion", (1000, 100, 1)), 10),
    ("libcurand.so.10", encoded("curandGetVersion", (1000, 100, 1)), 10),
    ("libcusolver.so.11", encoded("cusolverGetVersion", (1000, 100, 1)), 11),
    ("libcusparse.so.11", properties("cusparseGetProperty"), 11),
    ("libcudnn.so.8", encoded("cudnnGetVersion", (1000, 100, 1), size_t=True), 8),
]


def run() -> list[Check]:
    found = cpu_only()
    if found:
        return [Check(f"lib.{found[0]}", SKIP, found[1])]
    checks = [library(*entry) for entry in LIBRARIES]
    checks.append(cudnn_sublibraries())
    checks.extend(xla_tools.run())  # libdevice, ptxas, CUPTI: for XLA and the profiler
    return checks


def library(soname: str, getter: Callable[[ctypes.CDLL], Getter], major: int) -> Check:
    short = soname.split(".so")[0][3:]
    lib, where = cudalib.load(soname)
    if lib is None:
        return Check(f"lib.{short}", FAIL, f"{soname} cannot be loaded: {where}", MISSING_FIX, {"soname": soname})
    version, extra = getter(lib)
    data: dict[str, Any] = {"soname": soname, "path": where, "version": version}
    data.update(extra)
    if version is None and short == "cudart":
        declared = extra.get("declared")
        return Check(f"lib.{short}", PASS, f"{soname} loads ({where}); CUDA runtime {declared or '11.x'} as the image "
                     "declares it (cudaRuntimeGetVersion reports only with a driver)", None, data)
    if version is None:
        return Check(f"lib.{short}", FAIL, f"{soname} loads ({where}) but its version call failed: {extra}",
                     MISSING_FIX, data)
    numbers = [int(p) for p in version.split(".")]
    if numbers[0] != major or (short == "cudnn" and numbers[1] < 1):
        need = "8.1 or newer 8.x" if short == "cudnn" else f"{major}.x"
        return Check(f"lib.{short}", FAIL, f"{soname} is version {version}; TensorFlow 2.9 needs {need}",
                     MISSING_FIX, data)
    return Check(f"lib.{short}", PASS, f"{soname} {version} ({where})", None, data)


def cudnn_sublibraries() -> Check:
    """cuDNN 8 loads these lazily at the first convolution/RNN: a missing one fails only then."""
    missing = []
    for sub in CUDNN_SUBLIBS:
        lib, error = cudalib.load(f"libcudnn_{sub}.so.8")
        if lib is None:
            missing.append(f"libcudnn_{sub}.so.8 ({error})")
    data = {"sublibraries": [f"libcudnn_{s}.so.8" for s in CUDNN_SUBLIBS], "missing": missing}
    if missing:
        return Check("lib.cudnn_sublibs", FAIL, "cuDNN sub-libraries missing: " + "; ".join(missing), MISSING_FIX, data)
    return Check("lib.cudnn_sublibs", PASS, f"all {len(CUDNN_SUBLIBS)} cuDNN 8 sub-libraries load", None, data)
