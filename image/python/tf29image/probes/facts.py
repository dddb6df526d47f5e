"""Runs INSIDE the image (Python 3.8 or 3.9, stdlib, the image's tf29image.selfcheck and
tf29image.probes.inventory), never imported on the host: prints one JSON object about what the image
really holds, for tags, labels and the manifest: it imports TensorFlow and asks the CUDA / cuDNN
libraries themselves for their versions, so that a tag can never claim more than the image carries
(probes/inventory.py lists the packages).
"""

from __future__ import annotations

import json
import os
import platform
from typing import Any

# The self-check's library readers (the image's tf29-env.pth puts the package on sys.path), so that
# the facts behind the tags and the self-check's verdicts come from the same code.
from tf29image.probes.inventory import os_release_fields
from tf29image.selfcheck import cudalib


def cuda_runtime() -> dict[str, str]:
    """The CUDA runtime's version. cudaRuntimeGetVersion needs a driver (it answers 35 without one),
    so on a host without a GPU the version the base image declares (CUDA_VERSION) stands in,
    and `source` says which it was. Empty when there is no libcudart at all (cpu variant)."""
    lib, _ = cudalib.load("libcudart.so.11.0")
    if lib is None:
        return {"version": "", "source": ""}
    status, value = cudalib.int_out(lib, "cudaRuntimeGetVersion")
    if status == 0 and value:
        return {"version": cudalib.version_text(value, (1000, 10)), "source": "libcudart"}
    declared = os.environ.get("CUDA_VERSION", "")
    return {"version": ".".join(declared.split(".")[:2]), "source": "CUDA_VERSION" if declared else ""}


def cudnn_runtime() -> str:
    """cuDNN's own version (no driver needed)."""
    lib, _ = cudalib.load("libcudnn.so.8")
    if lib is None:
        return ""
    return cudalib.version_text(cudalib.size_t_call(lib, "cudnnGetVersion"), (1000, 100, 1))


def facts() -> dict[str, Any]:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf  # type: ignore[import-untyped]  # noqa: PLC0415 - only after the env is set

    build = dict(tf.sysconfig.get_build_info())
    release = os_release_fields()
    cudart = cuda_runtime()
    return {
        "tensorflow": tf.__version__,
        "tf_cuda_build": bool(build.get("is_cuda_build", False)),
        "tf_cuda": str(build.get("cuda_version", "")),
        "tf_cudnn": str(build.get("cudnn_version", "")),
        "python": platform.python_version(),
        "os_id": release.get("ID", ""),
        "os_version": release.get("VERSION_ID", ""),
        "os_name": release.get("PRETTY_NAME", ""),
        "cuda_runtime": cudart["version"],
        "cuda_runtime_source": cudart["source"],
        "cudnn_runtime": cudnn_runtime(),
    }


if __name__ == "__main__":
    print(json.dumps(facts()))
