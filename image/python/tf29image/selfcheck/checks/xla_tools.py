"""Layer 2's checks of what XLA and the profiler need beyond the CUDA libraries, all without a GPU:
CUDA's libdevice (XLA links it into every GPU kernel that uses a math routine), ptxas (XLA turns its
PTX into GPU code with it) and CUPTI (the profiler's source of GPU kernel events). Each is looked
for the way TensorFlow 2.9 looks for it. A missing one is a WARN, not a FAIL: training without
jit_compile or the profiler does not need it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from typing import Any, Mapping, Sequence

from tf29image.selfcheck import cudalib
from tf29image.selfcheck.model import PASS, WARN, Check

# Where XLA in TF 2.9 looks for a CUDA folder, after XLA_FLAGS' --xla_gpu_cuda_data_dir: the CUDA
# root the pip wheels were built with, then the conventional /usr/local/cuda.
TF_CUDA_ROOTS = ("/usr/local/cuda-11.2", "/usr/local/cuda")
LIBDEVICE = os.path.join("nvvm", "libdevice", "libdevice.10.bc")
XLA_DIR_FLAG = "--xla_gpu_cuda_data_dir"
# TF 2.9 warns that ptxas before 11.1 miscompiles XLA code; it is built with CUDA 11's tools.
PTXAS_MIN = (11, 1)
PTXAS_TIMEOUT_S = 5.0
# TF 2.9 dlopens CUPTI by the CUDA version it was built with, then by the bare name.
CUPTI_SONAMES = ("libcupti.so.11.2", "libcupti.so")

LIBDEVICE_FIX = ("put CUDA 11's nvvm/libdevice/libdevice.10.bc under /usr/local/cuda (e.g. from the "
                 "nvidia-cuda-nvcc-cu11 wheel), or point XLA at a CUDA folder that has it: "
                 "XLA_FLAGS=--xla_gpu_cuda_data_dir=DIR")
PTXAS_FIX = ("put CUDA 11's ptxas (11.1 or newer 11.x) in /usr/local/cuda/bin or on PATH (e.g. from the "
             "nvidia-cuda-nvcc-cu11 wheel); without it XLA leaves PTX to the driver's slower JIT")
CUPTI_FIX = ("put CUDA 11's CUPTI on the loader path as libcupti.so.11.2 or libcupti.so (e.g. from the "
             "nvidia-cuda-cupti-cu11 wheel, linked under that name); without it TensorFlow's profiler logs "
             "'CUPTI could not be loaded' and its traces have no GPU kernels")


def cuda_roots(env: Mapping[str, str] | None = None, defaults: Sequence[str] = TF_CUDA_ROOTS) -> list[str]:
    """The CUDA folders XLA tries, in its order: XLA_FLAGS' --xla_gpu_cuda_data_dir first, if set."""
    flags = (os.environ if env is None else env).get("XLA_FLAGS", "")
    roots = [match.group(1) for match in re.finditer(re.escape(XLA_DIR_FLAG) + r"=(\S+)", flags)][-1:]
    return roots + [root for root in defaults if root not in roots]


def libdevice(roots: Sequence[str]) -> Check:
    """XLA takes the first root that has an nvvm/libdevice folder, and needs libdevice.10.bc in it."""
    data: dict[str, Any] = {"searched": list(roots)}
    for root in roots:
        folder = os.path.dirname(os.path.join(root, LIBDEVICE))
        if not os.path.isdir(folder):
            continue
        path = os.path.join(root, LIBDEVICE)
        data["path"] = path
        if os.access(path, os.R_OK):
            return Check("lib.libdevice", PASS, f"libdevice for XLA: {path}", None, data)
        return Check("lib.libdevice", WARN, f"XLA uses {folder}, which has no readable libdevice.10.bc: "
                     "jit_compile=True fails on a GPU ('libdevice not found')", LIBDEVICE_FIX, data)
    return Check("lib.libdevice", WARN, f"no {LIBDEVICE} where XLA looks ({', '.join(roots)}): jit_compile=True "
                 "fails on a GPU ('libdevice not found')", LIBDEVICE_FIX, data)


def find_ptxas(roots: Sequence[str], path: str | None = None) -> str | None:
    """ROOT/bin/ptxas for the first root that has one, else ptxas on PATH, as TF 2.9 does."""
    for root in roots:
        candidate = os.path.join(root, "bin", "ptxas")
        if os.path.isfile(candidate):
            return candidate
    return shutil.which("ptxas", path=path)


def parse_ptxas_version(text: str) -> tuple[int, int, int] | None:
    """'Cuda compilation tools, release 11.8, V11.8.89' -> (11, 8, 89)."""
    match = re.search(r"\bV(\d+)\.(\d+)\.(\d+)", text)
    return (int(match.group(1)), int(match.group(2)), int(match.group(3))) if match else None


def ptxas(roots: Sequence[str], path: str | None = None) -> Check:
    found = find_ptxas(roots, path)
    if found is None:
        return Check("lib.ptxas", WARN, f"no ptxas in {', '.join(r + '/bin' for r in roots)} or on PATH",
                     PTXAS_FIX, {"searched": list(roots)})
    try:
        proc = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=PTXAS_TIMEOUT_S,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        return Check("lib.ptxas", WARN, f"{found} --version does not run: {error}", PTXAS_FIX, {"path": found})
    version = parse_ptxas_version(proc.stdout)
    data = {"path": found, "version": ".".join(map(str, version)) if version else None}
    if proc.returncode != 0 or version is None:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        return Check("lib.ptxas", WARN, f"{found} --version fails (exit {proc.returncode}): {tail[0]}",
                     PTXAS_FIX, data)
    if version[0] != PTXAS_MIN[0] or version[:2] < PTXAS_MIN:
        return Check("lib.ptxas", WARN, f"{found} is ptxas {data['version']}; TensorFlow 2.9's XLA needs CUDA 11's, "
                     "11.1 or newer", PTXAS_FIX, data)
    return Check("lib.ptxas", PASS, f"ptxas {data['version']} ({found})", None, data)


def cupti(sonames: Sequence[str] = CUPTI_SONAMES) -> Check:
    errors = []
    for soname in sonames:
        lib, where = cudalib.load(soname)
        if lib is not None:
            return Check("lib.cupti", PASS, f"CUPTI loads as {soname} ({where}): the profiler sees GPU kernels",
                         None, {"loaded": soname, "path": where})
        errors.append(where)
    return Check("lib.cupti", WARN, f"CUPTI does not load as {' or '.join(sonames)}", CUPTI_FIX,
                 {"tried": list(sonames), "errors": errors})


def run() -> list[Check]:
    roots = cuda_roots()
    return [libdevice(roots), ptxas(roots), cupti()]
