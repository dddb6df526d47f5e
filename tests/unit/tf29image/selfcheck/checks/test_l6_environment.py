"""The environment layer's env.gpu_memory_limit line: GPU_MEMORY_LIMIT_MB against each GPU's memory as
nvidia-smi reports it (None: no nvidia-smi)."""

import pytest

from tf29image.selfcheck.checks.l6_environment import gpu_memory_limit_verdict
from tf29image.selfcheck.model import PASS, WARN


@pytest.mark.parametrize(("value", "totals", "status", "what"), [
    (None, None, PASS, "no budget (GPU_MEMORY_LIMIT_MB is unset): TensorFlow may take all of each GPU's memory"),
    ("4096", None, PASS, "GPU_MEMORY_LIMIT_MB=4096: TensorFlow keeps each GPU's use under 4096 MiB (a cap TensorFlow "
     "keeps, not a hardware limit)"),
    ("4096", [81559, 81559], PASS, "GPU_MEMORY_LIMIT_MB=4096: TensorFlow keeps each GPU's use under 4096 MiB (a cap "
     "TensorFlow keeps, not a hardware limit)"),
    ("40000", [81559, 24564], WARN, "GPU_MEMORY_LIMIT_MB=40000: TensorFlow keeps each GPU's use under 40000 MiB (a "
     "cap TensorFlow keeps, not a hardware limit); above what a GPU has (GPU 1 has 24564 MiB): no budget there"),
    ("lots", None, WARN, "GPU_MEMORY_LIMIT_MB='lots' is not a number of MiB from 1 to 16777216 (e.g. 4096 for 4 GiB); "
     "unset it for no budget: TensorFlow gets no budget"),
])
def test_the_budget_line(value: str | None, totals: list[int] | None, status: str, what: str) -> None:
    check = gpu_memory_limit_verdict(value, totals)
    assert (check.id, check.status, check.what) == ("env.gpu_memory_limit", status, what)
    assert check.data == {"GPU_MEMORY_LIMIT_MB": value, "gpu_memory_mib": totals}
