"""Layer 1, the driver: device nodes, libcuda.so.1 (cuDriverGetVersion, cuInit), the driver
version against what the image's CUDA runtime needs, and nvidia-smi when the toolkit mounted it.
Standard library only."""

from __future__ import annotations

import ctypes
import shutil
import subprocess

from tf29image.selfcheck import cudalib, decide
from tf29image.selfcheck.checks.common import (
    NO_DRIVER_FIX,
    NOT_INJECTED_FIX,
    cpu_only,
    declared_cuda,
    device_nodes,
    named_devices,
    not_injected,
)
from tf29image.selfcheck.model import FAIL, PASS, SKIP, WARN, Check

NEEDS_DRIVER = "needs the NVIDIA driver (see driver.present)"

CUINIT_FIXES = {
    "CUDA_ERROR_NO_DEVICE": "no GPU was passed in: check --gpus / NVIDIA_VISIBLE_DEVICES and that nvidia-smi on "
                            "the host lists the GPU",
    "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH": "libcuda and the host's kernel module differ in version (driver updated "
                                         "without a reboot): reboot the host or reload the nvidia module",
    "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE": "a CUDA forward-compatibility libcuda is in use on a GPU that does "
                                                 "not support it: remove it from the loader path",
}


def run() -> list[Check]:
    found = cpu_only()
    if found:
        return [Check(f"driver.{found[0]}", SKIP, found[1])]
    nodes = device_nodes()
    lib, where = cudalib.load("libcuda.so.1")
    if not nodes and lib is None:
        named = named_devices()
        data = {"device_nodes": nodes, "libcuda_error": where}
        if named:
            absent = Check("driver.present", FAIL, not_injected(named), NOT_INJECTED_FIX,
                           {**data, "NVIDIA_VISIBLE_DEVICES": named})
        else:
            absent = Check("driver.present", FAIL, "no NVIDIA driver in the container (no /dev/nvidiactl or "
                           "/dev/dxg, libcuda.so.1 not loadable)", NO_DRIVER_FIX, data)
        return [
            absent,
            Check("driver.version", SKIP, "driver version not checked: " + NEEDS_DRIVER),
            Check("driver.nvidia_smi", SKIP, "nvidia-smi not run: " + NEEDS_DRIVER),
        ]
    checks = [present(nodes, lib, where)]
    driver_cuda: int | None = None
    if lib is not None:
        init_check, driver_cuda = init(lib)
        checks.append(init_check)
    smi_check, smi_driver = nvidia_smi()
    checks.append(version(proc_driver() or smi_driver, driver_cuda))
    checks.append(smi_check)
    return checks


def present(nodes: list[str], lib: ctypes.CDLL | None, where: str) -> Check:
    data = {"device_nodes": nodes, "libcuda": where if lib is not None else None}
    if lib is None:
        return Check("driver.present", FAIL, f"GPU device nodes {', '.join(nodes)} but libcuda.so.1 is not "
                     f"loadable ({where})", "add 'compute' to NVIDIA_DRIVER_CAPABILITIES (the image sets "
                     "compute,utility) and restart with --gpus all", data)
    if not nodes:
        return Check("driver.present", WARN, f"libcuda.so.1 loads ({where}) but there are no GPU device nodes",
                     NO_DRIVER_FIX, data)
    return Check("driver.present", PASS, f"driver present: {', '.join(nodes)}; libcuda at {where}", None, data)


def init(lib: ctypes.CDLL) -> tuple[Check, int | None]:
    status, value = cudalib.int_out(lib, "cuDriverGetVersion")
    driver_cuda = value if status == 0 else None
    cuda_text = cudalib.version_text(value, (1000, 10)) if driver_cuda else "unknown"
    status = int(lib.cuInit(ctypes.c_uint(0)))
    data = {"driver_cuda": cuda_text, "cuinit": status}
    if status != 0:
        name = cudalib.driver_error_name(lib, status)
        data["cuinit_error"] = name
        return Check("driver.cuinit", FAIL, f"driver supports CUDA {cuda_text} but cuInit failed: {name}",
                     CUINIT_FIXES.get(name, "run nvidia-smi on the host; if it fails too, reinstall the driver"),
                     data), driver_cuda
    status, count = cudalib.int_out(lib, "cuDeviceGetCount")
    data["devices"] = count
    return Check("driver.cuinit", PASS if count else FAIL,
                 f"driver supports CUDA {cuda_text}; cuInit ok, {count} GPU(s)",
                 None if count else CUINIT_FIXES["CUDA_ERROR_NO_DEVICE"], data), driver_cuda


def proc_driver() -> str | None:
    try:
        with open("/proc/driver/nvidia/version") as handle:
            return decide.parse_proc_version(handle.read())
    except OSError:
        return None


def version(driver: str | None, driver_cuda: int | None) -> Check:
    if driver is None:
        return Check("driver.version", WARN, "driver version unknown (no /proc/driver/nvidia/version, no "
                     "nvidia-smi)", "add 'utility' to NVIDIA_DRIVER_CAPABILITIES (the image sets compute,utility)")
    runtime = runtime_version()
    check = decide.driver_verdict(driver, runtime)
    if driver_cuda:
        check.data["driver_cuda"] = cudalib.version_text(driver_cuda, (1000, 10))
    return check


def runtime_version() -> tuple[int, ...]:
    """The image's CUDA runtime: measured major.minor (needs the driver), patch from CUDA_VERSION."""
    lib, _ = cudalib.load("libcudart.so.11.0")
    declared = declared_cuda()
    if lib is not None:
        status, value = cudalib.int_out(lib, "cudaRuntimeGetVersion")
        if status == 0 and value:
            measured = decide.cuda_int(value)
            if declared and tuple(declared[:2]) == measured:
                return declared
            return measured
    return declared or (11, 2, 2)


def nvidia_smi() -> tuple[Check, str | None]:
    path = shutil.which("nvidia-smi")
    if path is None:
        return Check("driver.nvidia_smi", SKIP, "nvidia-smi is not in the container (the toolkit mounts it for "
                     "the 'utility' capability)"), None
    try:
        done = subprocess.run([path, "-q"], capture_output=True, text=True, timeout=8, check=False)
    except subprocess.TimeoutExpired:
        return Check("driver.nvidia_smi", FAIL, "nvidia-smi -q hung for 8 s: the driver is not answering",
                     "check the host: nvidia-smi there, dmesg for Xid errors; a GPU reset or reboot may be "
                     "needed"), None
    if done.returncode != 0:
        tail = (done.stdout + done.stderr).strip().splitlines()[-1:] or [""]
        return Check("driver.nvidia_smi", FAIL, f"nvidia-smi failed (exit {done.returncode}): {tail[0]}",
                     "run nvidia-smi on the host; if it fails there too, reinstall or reload the driver"), None
    info = decide.parse_smi_query(done.stdout)
    gpus = info["gpus"]
    assert isinstance(gpus, list)
    return Check("driver.nvidia_smi", PASS, f"nvidia-smi: driver {info['driver']}, CUDA {info['cuda']}, "
                 f"{len(gpus)} GPU(s): {', '.join(gpus)}", None, info), str(info["driver"] or "") or None
