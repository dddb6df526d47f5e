"""The decisions, as pure functions of what was measured (unit-tested on recorded real outputs of
real GPUs): driver version -> verdict, compute capability -> verdict, /dev/shm size -> verdict,
plus the parsers for nvidia-smi and /proc/driver/nvidia/version that feed them."""

from __future__ import annotations

import re
from typing import Sequence, Tuple

from tf29image.selfcheck.model import FAIL, PASS, WARN, Check

Version = Tuple[int, ...]

# The CUDA toolkit TF 2.9.x was built and tested with.
TF_CUDA = (11, 2)

# Linux x86_64 driver that each CUDA 11 runtime needs natively (CUDA release notes, "CUDA Toolkit
# and Corresponding Driver Versions"). The first update of a minor release is listed: later
# updates raise the minimum a little (11.2.1/11.2.2: 460.32.03), see NATIVE_UPDATE below.
NATIVE_DRIVER: dict[tuple[int, int], Version] = {
    (11, 0): (450, 36, 6),
    (11, 1): (455, 23),
    (11, 2): (460, 27, 3),
    (11, 3): (465, 19, 1),
    (11, 4): (470, 42, 1),
    (11, 5): (495, 29, 5),
    (11, 6): (510, 39, 1),
    (11, 7): (515, 43, 4),
    (11, 8): (520, 61, 5),
}
NATIVE_UPDATE: dict[tuple[int, int, int], Version] = {
    (11, 2, 1): (460, 32, 3),
    (11, 2, 2): (460, 32, 3),
}
# From this driver on, any CUDA 11.x runtime runs through minor-version compatibility: with a
# limited feature set, most visibly no JIT of PTX newer than the driver (CUDA_ERROR_UNSUPPORTED_PTX_VERSION).
MINOR_COMPAT_DRIVER: Version = (450, 80, 2)

DRIVER_FIX = ("upgrade the host's NVIDIA driver to {need} or newer (any R470/R535/R550 or later datacenter "
              "driver), then restart the container")


def parse_version(text: str) -> Version:
    """'460.32.03' -> (460, 32, 3); ValueError when it is not dotted numbers."""
    if not re.fullmatch(r"\d+(\.\d+)*", text.strip()):
        raise ValueError(f"not a version: {text!r}")
    return tuple(int(part) for part in text.strip().split("."))


def show(version: Sequence[int]) -> str:
    """(460, 32, 3) -> '460.32.03': the driver's own spelling (two-digit fields after the first)."""
    return ".".join([str(version[0])] + [f"{v:02d}" for v in version[1:]])


def cuda_int(value: int) -> tuple[int, int]:
    """cudaRuntimeGetVersion / cuDriverGetVersion style 11020 -> (11, 2)."""
    return value // 1000, (value % 1000) // 10


def needed_driver(runtime: Sequence[int]) -> Version:
    """The driver the given CUDA runtime (major, minor[, patch]) needs natively."""
    if len(runtime) >= 3 and (runtime[0], runtime[1], runtime[2]) in NATIVE_UPDATE:
        return NATIVE_UPDATE[(runtime[0], runtime[1], runtime[2])]
    key2 = (runtime[0], runtime[1])
    if key2 in NATIVE_DRIVER:
        return NATIVE_DRIVER[key2]
    return NATIVE_DRIVER[TF_CUDA]


def driver_verdict(driver: str, runtime: Sequence[int] = (11, 2, 2)) -> Check:
    """Is this host driver (e.g. '460.32.03') new enough for the image's CUDA runtime?"""
    have = parse_version(driver)
    need = needed_driver(runtime)
    rt = ".".join(str(v) for v in runtime)
    data = {"driver": driver, "runtime": rt, "native_minimum": show(need),
            "minor_compat_minimum": show(MINOR_COMPAT_DRIVER)}
    if have >= need:
        return Check("driver.version", PASS, f"driver {driver} runs CUDA {rt} natively (needs >= {show(need)})",
                     None, data)
    if have >= MINOR_COMPAT_DRIVER:
        return Check(
            "driver.version", WARN,
            f"driver {driver} is older than CUDA {rt} needs ({show(need)}): it runs only through CUDA 11 "
            "minor-version compatibility, with a limited feature set (no JIT of newer PTX, so Ampere/Hopper "
            "GPUs can fail with CUDA_ERROR_UNSUPPORTED_PTX_VERSION)",
            DRIVER_FIX.format(need=show(need)), data)
    return Check(
        "driver.version", FAIL,
        f"driver {driver} is too old for CUDA 11 (minor-version compatibility starts at "
        f"{show(MINOR_COMPAT_DRIVER)}, CUDA {rt} needs {show(need)}): TensorFlow will not use the GPU",
        DRIVER_FIX.format(need=show(need)), data)


# ---- parsers of the driver's own reports ---------------------------------------------------

_PROC_RE = re.compile(r"NVRM version:.*?\s(\d+\.\d+(?:\.\d+)?)\s")


def parse_proc_version(text: str) -> str | None:
    """The driver version from /proc/driver/nvidia/version (proprietary and open kernel modules)."""
    match = _PROC_RE.search(text + " ")
    return match.group(1) if match else None


def parse_smi_query(text: str) -> dict[str, object]:
    """`nvidia-smi -q` (or -a): driver version, CUDA version and the product name of each GPU."""
    driver = re.search(r"^Driver Version\s*:\s*(\S+)", text, re.M)
    cuda = re.search(r"^CUDA Version\s*:\s*(\S+)", text, re.M)
    names = re.findall(r"^\s+Product Name\s*:\s*(.+?)\s*$", text, re.M)
    return {"driver": driver.group(1) if driver else None, "cuda": cuda.group(1) if cuda else None,
            "gpus": names}


# ---- compute capability -----------------------------------------------------------------------

def parse_arch_list(archs: Sequence[str]) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """['sm_35', ..., 'compute_80'] -> (SASS targets, PTX targets) as (major, minor)."""
    sass: list[tuple[int, int]] = []
    ptx: list[tuple[int, int]] = []
    for arch in archs:
        match = re.fullmatch(r"(sm|compute)_(\d+)(\d)", arch.strip())
        if match:
            (sass if match.group(1) == "sm" else ptx).append((int(match.group(2)), int(match.group(3))))
    return sass, ptx


def has_sass_for(cc: tuple[int, int], sass: Sequence[tuple[int, int]]) -> bool:
    """SASS for sm_XY runs on devices of the same major version and minor >= Y."""
    return any(major == cc[0] and minor <= cc[1] for major, minor in sass)


def gpu_verdicts(name: str, cc: tuple[int, int], archs: Sequence[str]) -> list[Check]:
    """Per GPU: Tensor Cores / mixed precision advice, and whether TF must JIT its kernels."""
    sass, ptx = parse_arch_list(archs)
    ccs = f"{cc[0]}.{cc[1]}"
    data = {"gpu": name, "compute_capability": ccs}
    checks: list[Check] = []
    if cc >= (7, 0):
        checks.append(Check("perf.tensor_cores", PASS,
                            f"{name} (compute capability {ccs}) has Tensor Cores: use the mixed_float16 policy "
                            "for speed", None, data))
    else:
        checks.append(Check("perf.tensor_cores", WARN,
                            f"{name} (compute capability {ccs}) has no Tensor Cores: mixed_float16 may be slower "
                            "than float32 here (Keras's own rule: compute capability >= 7.0)",
                            "keep the default float32 policy on this GPU; use mixed_float16 on a "
                            "V100/T4/A100/H100-class GPU",
                            data))
    if has_sass_for(cc, sass):
        return checks
    if any(p <= cc for p in ptx):
        newest = "compute_{}{}".format(*max(ptx))
        checks.append(Check(
            "perf.ptx_jit", WARN,
            f"TensorFlow 2.9 has no kernels built for compute capability {ccs} (SASS only up to "
            "sm_{}{}".format(*max(sass)) + f"): the driver JIT-compiles its {newest} PTX on first use, which takes "
            "minutes (TensorFlow itself warns it can take 30 minutes or longer)",
            "keep CUDA_CACHE_MAXSIZE=4294967296 (set in this image) and mount a volume at ~/.nv/ComputeCache "
            "(-v tf29-nv-cache:/home/jovyan/.nv) so the compiled kernels survive the container",
            data))
    else:
        checks.append(Check(
            "perf.ptx_jit", FAIL,
            f"TensorFlow 2.9 has neither kernels nor PTX for compute capability {ccs} (built for "
            f"{', '.join(archs)}): it cannot run on this GPU",
            "use a GPU of compute capability 3.5 or newer", data))
    return checks


# ---- environment -----------------------------------------------------------------------------

MIB = 1024 * 1024
DOCKER_DEFAULT_SHM = 64 * MIB
SHM = "/dev/shm"  # noqa: S108 - the shared-memory mount, not a temporary file


def shm_verdict(size_bytes: int) -> Check:
    """The shared-memory mount: Docker's 64 MiB default is too small for tf.data / Keras multiprocessing workers."""
    data = {"bytes": size_bytes}
    mib = size_bytes / MIB
    if size_bytes <= DOCKER_DEFAULT_SHM:
        return Check("env.shm", WARN,
                     f"{SHM} is {mib:.0f} MiB (Docker's default is 64 MiB): too small for multiprocessing "
                     "data loaders and NCCL, which fail with bus errors or 'No space left on device'",
                     "start the container with --shm-size=1g (or more), or --ipc=host", data)
    return Check("env.shm", PASS, f"{SHM} is {mib:.0f} MiB", None, data)


def memlock_verdict(soft: int, gpu: bool) -> Check:
    """RLIMIT_MEMLOCK: pinned host memory for GPUDirect RDMA / NCCL over InfiniBand needs it unlimited."""
    data = {"soft_bytes": soft}
    if soft < 0:
        return Check("env.memlock", PASS, "memlock ulimit is unlimited", None, data)
    text = f"memlock ulimit is {soft // 1024} KiB"
    if not gpu:
        return Check("env.memlock", PASS, text + " (matters only for multi-GPU RDMA; no GPU here)", None, data)
    return Check("env.memlock", WARN, text + ": NCCL / GPUDirect RDMA cannot pin enough host memory",
                 "start the container with --ulimit memlock=-1", data)


def stack_verdict(soft: int) -> Check:
    data = {"soft_bytes": soft}
    if 0 <= soft < 8 * MIB:
        return Check("env.stack", WARN, f"stack ulimit is {soft // 1024} KiB, below the usual 8 MiB: deep graphs "
                     "and XLA compilation can crash with a segmentation fault",
                     "start the container with --ulimit stack=67108864 (64 MiB, as NVIDIA's containers advise)",
                     data)
    shown = "unlimited" if soft < 0 else f"{soft // MIB} MiB"
    return Check("env.stack", PASS, f"stack ulimit is {shown}", None, data)


def allow_growth_verdict(value: str | None) -> Check:
    """TF reads TF_FORCE_GPU_ALLOW_GROWTH itself and accepts exactly 'true' or 'false'."""
    data = {"value": value}
    fix = "set TF_FORCE_GPU_ALLOW_GROWTH=true (the image's default) so several notebooks can share a GPU"
    if value == "true":
        return Check("env.allow_growth", PASS, "TF_FORCE_GPU_ALLOW_GROWTH=true: TensorFlow takes GPU memory as "
                     "it needs it", None, data)
    if value is None or value == "false":
        return Check("env.allow_growth", WARN,
                     f"TF_FORCE_GPU_ALLOW_GROWTH is {'unset' if value is None else 'false'}: the first TensorFlow "
                     "process takes almost all GPU memory and the next notebook fails with out-of-memory", fix, data)
    return Check("env.allow_growth", WARN,
                 f"TF_FORCE_GPU_ALLOW_GROWTH={value!r} is ignored by TensorFlow (it accepts only 'true' or "
                 "'false')", fix, data)


# ---- measured speed -----------------------------------------------------------------------------

def tflops(n: int, seconds: float) -> float:
    """An n x n x n matmul is 2 n^3 floating-point operations."""
    return 2.0 * n ** 3 / seconds / 1e12


def speed_verdict(name: str, cc: tuple[int, int], fp32: float, fp16: float, tf32: float | None = None) -> Check:
    """FP16 vs strict-FP32 matmul TFLOP/s (and TF32, on compute capability 8.x+) -> advice."""
    speedup = fp16 / fp32 if fp32 > 0 else 0.0
    data = {"gpu": name, "fp32_tflops": round(fp32, 2), "fp16_tflops": round(fp16, 2), "speedup": round(speedup, 2),
            "tf32_tflops": round(tf32, 2) if tf32 is not None else None}
    text = f"{name}: FP32 {fp32:.1f} TFLOP/s, FP16 {fp16:.1f} TFLOP/s ({speedup:.1f}x)"
    if tf32 is not None:
        text += f"; TF32 (TensorFlow's default FP32 on this GPU) {tf32:.1f} TFLOP/s"
    if cc >= (7, 0) and speedup < 1.5:
        return Check("perf.matmul", WARN, text + ": FP16 is barely faster although the GPU has Tensor Cores",
                     "check for other processes on the GPU (nvidia-smi), power/clock limits, or a shared/MIG slice",
                     data)
    if cc < (7, 0) and speedup < 1.0:
        return Check("perf.matmul", WARN, text + ": FP16 is slower than FP32 here", "keep the float32 policy", data)
    return Check("perf.matmul", PASS, text, None, data)
