"""Layer 6, the container environment: was the NVIDIA runtime applied, /dev/shm size, the
memlock and stack ulimits, TF_FORCE_GPU_ALLOW_GROWTH and the CUDA JIT cache. Standard library only."""

from __future__ import annotations

import os
import resource
from typing import List

from selfcheck import decide
from selfcheck.checks.common import (
    NO_DRIVER_FIX,
    NOT_INJECTED_FIX,
    cpu_only,
    device_nodes,
    named_devices,
    not_injected,
)
from selfcheck.model import PASS, SKIP, WARN, Check

LAYER, NAME, TITLE, NEEDS_TF = 6, "environment", "Container environment", False


def run() -> List[Check]:
    gpu = bool(device_nodes())
    return [runtime_applied(), shm(), decide.memlock_verdict(resource.getrlimit(resource.RLIMIT_MEMLOCK)[0], gpu),
            decide.stack_verdict(resource.getrlimit(resource.RLIMIT_STACK)[0]),
            decide.allow_growth_verdict(os.environ.get("TF_FORCE_GPU_ALLOW_GROWTH")), cuda_cache()]


def runtime_applied() -> Check:
    """The toolkit acts on NVIDIA_VISIBLE_DEVICES only when Docker uses it (--gpus / runtime=nvidia)."""
    visible = os.environ.get("NVIDIA_VISIBLE_DEVICES")
    nodes = device_nodes()
    data = {"NVIDIA_VISIBLE_DEVICES": visible, "device_nodes": nodes,
            "proc_driver": os.path.isdir("/proc/driver/nvidia")}
    found = cpu_only()
    if found:
        return Check("env.nvidia_runtime", SKIP, found[1], None, data)
    if nodes:
        return Check("env.nvidia_runtime", PASS, f"NVIDIA runtime applied: {len(nodes)} device node(s)", None, data)
    named = named_devices()
    if named:
        return Check("env.nvidia_runtime", WARN, not_injected(named), NOT_INJECTED_FIX, data)
    if visible is None:
        return Check("env.nvidia_runtime", WARN, "NVIDIA_VISIBLE_DEVICES is unset: no driver in the container",
                     "set NVIDIA_VISIBLE_DEVICES=all (the image's default) and " + NO_DRIVER_FIX, data)
    return Check("env.nvidia_runtime", WARN, f"NVIDIA_VISIBLE_DEVICES={visible} but the NVIDIA runtime did not act: "
                 "no driver in the container (no /dev/nvidia*)", NO_DRIVER_FIX, data)


def shm() -> Check:
    stat = os.statvfs("/dev/shm")
    return decide.shm_verdict(stat.f_blocks * stat.f_frsize)


def cuda_cache() -> Check:
    """Where the driver keeps PTX compiled for this GPU, and whether it may keep enough of it."""
    path = os.environ.get("CUDA_CACHE_PATH") or os.path.join(os.path.expanduser("~"), ".nv", "ComputeCache")
    data = {"path": path, "CUDA_CACHE_MAXSIZE": os.environ.get("CUDA_CACHE_MAXSIZE"),
            "CUDA_CACHE_DISABLE": os.environ.get("CUDA_CACHE_DISABLE")}
    fix = ("set CUDA_CACHE_MAXSIZE=4294967296 (the image's default), unset CUDA_CACHE_DISABLE and mount a "
           "volume at ~/.nv so kernels JIT-compiled from PTX are kept")
    if os.environ.get("CUDA_CACHE_DISABLE") == "1":
        return Check("env.cuda_cache", WARN, "CUDA_CACHE_DISABLE=1: PTX is JIT-compiled again at every start", fix,
                     data)
    try:
        size = int(os.environ.get("CUDA_CACHE_MAXSIZE") or 256 * 1024 * 1024)
    except ValueError:
        return Check("env.cuda_cache", WARN, f"CUDA_CACHE_MAXSIZE={os.environ['CUDA_CACHE_MAXSIZE']!r} is not a "
                     "number of bytes", fix, data)
    parent = path
    while not os.path.exists(parent) and os.path.dirname(parent) != parent:
        parent = os.path.dirname(parent)
    if not os.access(parent, os.W_OK):
        return Check("env.cuda_cache", WARN, f"the CUDA JIT cache {path} is not writable", fix, data)
    if size < 1024 * 1024 * 1024:
        return Check("env.cuda_cache", WARN, f"CUDA_CACHE_MAXSIZE is {size // (1024 * 1024)} MiB: too small to keep "
                     "TensorFlow's JIT-compiled kernels on Ampere/Hopper", fix, data)
    return Check("env.cuda_cache", PASS, f"CUDA JIT cache {path}, up to {size // (1024 * 1024)} MiB", None, data)
