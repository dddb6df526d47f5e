"""Layer 3, TensorFlow: version 2.9.x, what it was built with (CUDA, cuDNN, GPU architectures),
and the GPUs it sees: name, compute capability, memory, memory growth."""

from __future__ import annotations

from typing import Any

from tf29image.selfcheck.checks import BY_NAME, tfsupport
from tf29image.selfcheck.checks.common import NO_DRIVER_FIX, cpu_only, device_nodes, variant
from tf29image.selfcheck.model import FAIL, PASS, SKIP, WARN, Check

# Numbers from the layer table, looked up at import so a renamed layer fails every test, not one rare path.
SEE_DRIVER_AND_LIBS = f"see layers {BY_NAME['driver'].layer} and {BY_NAME['cuda_libs'].layer}"


def run() -> list[Check]:
    tf = tfsupport.tf()
    info = dict(tf.sysconfig.get_build_info())
    cpu_variant = variant() == "cpu"
    checks = [version(tf.__version__), build(info, cpu_variant)]
    found = cpu_only()
    if found:
        checks.append(Check("tf.gpus", SKIP, found[1]))
        return checks
    gpus = tfsupport.gpus()
    if not gpus:
        fix = NO_DRIVER_FIX if not device_nodes() else (
            f"{SEE_DRIVER_AND_LIBS}: a library TensorFlow needs did not load, or the GPU is older than compute "
            "capability 3.5 (the log of `python -c 'import tensorflow as tf; tf.config.list_physical_devices()'` "
            "names it)")
        checks.append(Check("tf.gpus", FAIL, "TensorFlow sees no GPU", fix, {"count": 0}))
        return checks
    checks.append(Check("tf.gpus", PASS, f"TensorFlow sees {len(gpus)} GPU(s)", None, {"count": len(gpus)}))
    checks.extend(gpu_check(tf, index, gpu) for index, gpu in enumerate(gpus))
    return checks


def version(text: str) -> Check:
    if text.startswith("2.9."):
        return Check("tf.version", PASS, f"TensorFlow {text}", None, {"version": text})
    return Check("tf.version", FAIL, f"TensorFlow {text}, not 2.9.x: this image is built and checked for 2.9",
                 "reinstall the image's pinned TensorFlow: pip install -r /opt/tf29-env/requirements.lock",
                 {"version": text})


def build(info: dict[str, Any], cpu_variant: bool = False) -> Check:
    archs = list(info.get("cuda_compute_capabilities") or [])
    data = {"cuda_version": info.get("cuda_version"), "cudnn_version": info.get("cudnn_version"),
            "cuda_compute_capabilities": archs, "is_cuda_build": bool(info.get("is_cuda_build"))}
    if not info.get("is_cuda_build") and cpu_variant:
        return Check("tf.build", PASS, "CPU-only TensorFlow build, as the cpu variant has", None, data)
    if not info.get("is_cuda_build"):
        return Check("tf.build", WARN, "CPU-only TensorFlow build: the GPU layers do not apply",
                     "use the gpu variant of the image for GPUs", data)
    text = (f"built with CUDA {data['cuda_version']}, cuDNN {data['cudnn_version']}, for {' '.join(archs)}")
    if str(data["cuda_version"]).startswith("11.") and str(data["cudnn_version"]).startswith("8"):
        return Check("tf.build", PASS, text, None, data)
    return Check("tf.build", FAIL, text + ": not the CUDA 11 / cuDNN 8 build this image's libraries match",
                 "reinstall the image's pinned TensorFlow: pip install -r /opt/tf29-env/requirements.lock", data)


def gpu_check(tf: Any, index: int, gpu: Any) -> Check:
    details = tf.config.experimental.get_device_details(gpu)
    name = str(details.get("device_name", "unknown GPU"))
    cc = details.get("compute_capability") or (0, 0)
    memory = tfsupport.total_memory(index)
    growth = bool(tf.config.experimental.get_memory_growth(gpu))
    data = {"index": index, "name": name, "compute_capability": f"{cc[0]}.{cc[1]}", "memory_bytes": memory,
            "memory_growth": growth}
    shown = f"{memory / 2 ** 30:.1f} GiB" if memory else "memory unknown"
    return Check(f"tf.gpu{index}", PASS, f"GPU:{index} {name}, compute capability {data['compute_capability']}, "
                 f"{shown}, memory growth {'on' if growth else 'off'}", None, data)
