"""Layer 5, GPU only: FP32 vs FP16 matmul speed on each GPU model (sizes multiples of 8 for the
Tensor Cores, warm-up, synchronised timing, median), TF32 as well on compute capability 8.x+,
and per GPU the verdicts: Tensor Cores or not, and whether TF 2.9 must JIT its kernels from PTX."""

from __future__ import annotations

import statistics
import time
from typing import Any

from tf29image.selfcheck import decide
from tf29image.selfcheck.checks import BY_NAME, tfsupport
from tf29image.selfcheck.checks.common import cpu_only
from tf29image.selfcheck.model import SKIP, Check

N = 4096  # 137 GFLOP per product: ~10 ms on a V100 in FP32, well above launch overheads
SAMPLES = 5
SAMPLE_SECONDS = 0.15
# Numbers from the layer table, looked up at import so a renamed layer fails every test, not one rare path.
SEE_DRIVER_AND_TF = f"see layers {BY_NAME['driver'].layer} and {BY_NAME['tensorflow'].layer}"


def run() -> list[Check]:
    found = cpu_only()
    if found:
        return [Check(f"perf.{found[0]}", SKIP, found[1])]
    tf = tfsupport.tf()
    gpus = tfsupport.gpus()
    if not gpus:
        return [Check("perf.matmul", SKIP, "no GPU visible to TensorFlow: the FP32/FP16 benchmark needs one "
                      f"({SEE_DRIVER_AND_TF})")]
    archs = list(tf.sysconfig.get_build_info().get("cuda_compute_capabilities") or [])
    checks: list[Check] = []
    measured = set()
    for index, gpu in enumerate(gpus):
        details = tf.config.experimental.get_device_details(gpu)
        name = str(details.get("device_name", f"GPU:{index}"))
        cc = tuple(details.get("compute_capability") or (0, 0))
        checks.extend(decide.gpu_verdicts(f"GPU:{index} {name}", (cc[0], cc[1]), archs))
        if (name, cc) not in measured:  # one benchmark per GPU model is enough
            measured.add((name, cc))
            checks.append(benchmark(tf, index, f"GPU:{index} {name}", (cc[0], cc[1])))
    return checks


def benchmark(tf: Any, index: int, name: str, cc: tuple[int, int]) -> Check:
    np = tfsupport.numpy()
    # Inputs made on the host and copied: no TF kernel (which might need a PTX JIT) is timed.
    host = np.random.RandomState(0).standard_normal((N, N)).astype(np.float32)
    with tf.device(f"/GPU:{index}"):
        a32 = tf.identity(tf.constant(host))
        a16 = tf.identity(tf.constant(host.astype(np.float16)))
        tf32: float | None = None
        if cc >= (8, 0):
            tf32 = decide.tflops(N, seconds_per_matmul(tf, a32))
            tf.config.experimental.enable_tensor_float_32_execution(False)
        try:
            fp32 = decide.tflops(N, seconds_per_matmul(tf, a32))
        finally:
            tf.config.experimental.enable_tensor_float_32_execution(True)
        fp16 = decide.tflops(N, seconds_per_matmul(tf, a16))
    return decide.speed_verdict(name, cc, fp32, fp16, tf32)


def seconds_per_matmul(tf: Any, a: Any) -> float:
    """Median time of one a @ a: a batch of products per sample, synchronised once at its end by
    reading back one element, so the read-back is spread over the batch."""
    def batch(count: int) -> float:
        start = time.perf_counter()
        out = a
        for _ in range(count):
            out = tf.linalg.matmul(a, a)
        float(out[0, 0].numpy())
        return time.perf_counter() - start

    batch(2)  # warm-up: cuBLAS handles, algorithm choice
    one = batch(1)
    count = max(1, min(50, int(SAMPLE_SECONDS / max(one, 1e-6))))
    return statistics.median(batch(count) / count for _ in range(SAMPLES))
