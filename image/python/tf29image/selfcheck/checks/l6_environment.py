"""Layer 6, the container environment: was the NVIDIA runtime applied, /dev/shm size, the
memlock and stack ulimits, TF_FORCE_GPU_ALLOW_GROWTH, GPU_MEMORY_LIMIT_MB, the CUDA JIT cache, idle
kernels' shutdown, and the user's own packages against the image's pins. Standard library only (the
last imports the venv's `packaging`, through startup/userstate.py, only when there are user packages)."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys

from tf29image import gpubudget
from tf29image.common import IMAGE_DIR
from tf29image.selfcheck import decide
from tf29image.selfcheck.checks.common import (
    NO_DRIVER_FIX,
    NOT_INJECTED_FIX,
    cpu_only,
    device_nodes,
    named_devices,
    not_injected,
)
from tf29image.selfcheck.model import PASS, SKIP, WARN, Check


def run() -> list[Check]:
    gpu = bool(device_nodes())
    return [runtime_applied(), shm(), decide.memlock_verdict(resource.getrlimit(resource.RLIMIT_MEMLOCK)[0], gpu),
            decide.stack_verdict(resource.getrlimit(resource.RLIMIT_STACK)[0]),
            decide.allow_growth_verdict(os.environ.get("TF_FORCE_GPU_ALLOW_GROWTH")),
            gpu_memory_limit_verdict(os.environ.get(gpubudget.ENV), gpu_totals() if gpu else None), cuda_cache(),
            kernel_idle(),
            user_packages()]


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
    stat = os.statvfs(decide.SHM)
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


def kernel_idle() -> Check:
    """KERNEL_IDLE_TIMEOUT, as the entrypoint passed it to the server (checked there: 0 to a week)."""
    value = os.environ.get("KERNEL_IDLE_TIMEOUT") or "0"
    data = {"KERNEL_IDLE_TIMEOUT": value}
    if not value.isdigit() or int(value) == 0:
        return Check("env.kernel_idle", PASS, "idle kernels are kept until shut down (KERNEL_IDLE_TIMEOUT is off): "
                     "each keeps its GPU memory while it lives", None, data)
    return Check("env.kernel_idle", PASS, f"kernels idle for {value} s are shut down (KERNEL_IDLE_TIMEOUT), "
                 "busy ones never: their GPU memory goes back", None, data)


def gpu_totals() -> list[int] | None:
    """Each GPU's memory in MiB, as nvidia-smi says (None: no nvidia-smi, or it failed)."""
    path = shutil.which("nvidia-smi")
    if not path:
        return None
    try:
        done = subprocess.run([path, "--query-gpu=memory.total", "--format=csv,noheader,nounits"],
                              capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    words = done.stdout.split()
    return [int(word) for word in words] if done.returncode == 0 and all(w.isdigit() for w in words) else None


def gpu_memory_limit_verdict(value: str | None, totals: list[int] | None) -> Check:
    """GPU_MEMORY_LIMIT_MB as the import hook will apply it (tf29image/gpubudget.py), against each GPU's memory
    (TOTALS in MiB, None where unknown): a budget above a GPU's memory limits nothing there."""
    data = {"GPU_MEMORY_LIMIT_MB": value, "gpu_memory_mib": totals}
    try:
        limit = gpubudget.parse_limit(value)
    except ValueError as error:
        return Check("env.gpu_memory_limit", WARN, f"{error}: TensorFlow gets no budget",
                     "set GPU_MEMORY_LIMIT_MB to a number of MiB, or unset it", data)
    if not limit:
        return Check("env.gpu_memory_limit", PASS, "no budget (GPU_MEMORY_LIMIT_MB is unset): TensorFlow may take "
                     "all of each GPU's memory", None, data)
    said = (f"GPU_MEMORY_LIMIT_MB={limit}: TensorFlow keeps each GPU's use under {limit} MiB (a cap TensorFlow "
            "keeps, not a hardware limit)")
    above = [f"GPU {index} has {total} MiB" for index, total in enumerate(totals or []) if limit > total]
    if above:
        return Check("env.gpu_memory_limit", WARN, f"{said}; above what a GPU has ({', '.join(above)}): no budget "
                     "there", f"set GPU_MEMORY_LIMIT_MB to at most {min(totals or [limit])}", data)
    return Check("env.gpu_memory_limit", PASS, said, None, data)


# Where the image's own package is (the image's tf29-env.pth puts it on sys.path): never a shadow of a pin.
IMAGE_FILES = os.path.join(IMAGE_DIR, "python")


def user_packages() -> Check:
    """The packages the user installed with pip (~/.local, docs/packages.md): one that shadows a
    pinned package, breaks one (needs another version), sits in the user site beside the image's
    copy, or was compiled under an older image or for another Python; or that they are not kept."""
    try:
        from tf29image.startup import userstate  # noqa: PLC0415 - only in the image, and only this check needs it
    except ImportError:
        return Check("env.user_packages", SKIP, "not in the tf29-env image: no user site to check")
    environ = dict(os.environ)
    home = os.path.expanduser("~")
    if sys.flags.no_user_site or environ.get("PYTHONNOUSERSITE"):
        return Check("env.user_packages", PASS, "the user site is off (PYTHONNOUSERSITE): only the image's "
                     "packages are imported", None, {"user_site": None})
    packages, found = userstate.findings(home, environ, sys.path, skip=[IMAGE_FILES])
    site = userstate.shown(packages.site, home)
    kept = userstate.persisted(os.path.realpath(packages.site), userstate.own_mounts())
    data = {"user_site": packages.site, "kept": kept, "packages": [f"{d.name}=={d.version}" for d in packages.dists],
            "findings": [{"kind": f.kind, "what": f.what, "fix": f.fix} for f in found]}
    if found:
        more = f" (and {len(found) - 1} more: user-packages check)" if len(found) > 1 else ""
        return Check("env.user_packages", WARN, found[0].what + more, found[0].fix, data)
    count = len(packages.dists)
    if count and not kept:
        return Check("env.user_packages", WARN, f"{count} user package(s) in {site} are lost when the container is "
                     "re-created: ~/.local is not on a volume", "mount a volume on ~/.local (docs/packages.md)", data)
    where = "kept on a volume" if kept else "kept until the container is re-created (~/.local is not a volume)"
    if not count:
        return Check("env.user_packages", PASS, f"no user packages yet: pip installs them in {site}, after the "
                     f"image's, {where}", None, data)
    return Check("env.user_packages", PASS, f"{count} user package(s) in {site}, after the image's and {where}; "
                 "none shadows or breaks a pinned package", None, data)
