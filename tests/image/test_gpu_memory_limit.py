"""GPU_MEMORY_LIMIT_MB in a real container (issue 42): the budget reaches a notebook's kernel, a script, a job
and an SSH session, and in each the import hook (tf29image/gpubudget.py) runs once `tensorflow` is imported;
the self-check's environment layer says it; a bad value stops the start. There is no GPU here, so the hook has
nothing to limit and says so with the budget it would apply: the cap itself is a device check's."""

from collections.abc import Iterator

import pytest
from docker.models.containers import Container

from testkit import ssh
from testkit.containers import LOOPBACK, TrackedContainer
from testkit.jobs import HOME, USER, job, job_id, wait_state
from testkit.kernel import LabKernel
from testkit.ssh import KeyPair

TOKEN = "tok-gpu-budget-4f1c9a7e"
BUDGET = "3072"
# What every process with the budget prints: the variable as it got it, and what the hook did with it.
PROBE = ("import os, tensorflow, tf29image.gpubudget as g; "
         "print('budget', os.environ.get('GPU_MEMORY_LIMIT_MB'), '|', g.describe(g.applied))")
APPLIED = (f"budget {BUDGET} | GPU_MEMORY_LIMIT_MB={BUDGET}: each GPU's TensorFlow memory capped at {BUDGET} MiB "
           "(no GPU visible, nothing to limit)")
# Whether the hook waits on sys.meta_path, without importing TensorFlow.
HOOKED = "import sys, tf29image.gpubudget as g; print(any(isinstance(f, g.TensorFlowHook) for f in sys.meta_path))"


@pytest.fixture(scope="module")
def box(module_tracked: TrackedContainer, keypair: KeyPair) -> Iterator[Container]:
    container = module_tracked.run(environment={"GPU_MEMORY_LIMIT_MB": BUDGET, "JUPYTER_TOKEN": TOKEN,
                                                "SSH_AUTHORIZED_KEYS": keypair.public_text})
    module_tracked.wait_healthy(container)
    code, out = module_tracked.exec(container, ["sh", "-c", f"printf '%s\\n' \"$1\" > {HOME}/work/probe.py", "sh",
                                                PROBE], user=USER)
    assert code == 0, out
    yield container


def test_a_notebook_kernel_applies_it(module_tracked: TrackedContainer, box: Container) -> None:
    kernel = LabKernel(f"http://{LOOPBACK}:{module_tracked.port(box, 8888)}/", TOKEN)
    try:
        status, shown = kernel.execute(PROBE, timeout=240)
    finally:
        kernel.close()
    assert status == "ok" and APPLIED in shown.splitlines(), shown  # TensorFlow's own log lines come with it


def test_a_script_in_an_ssh_session_applies_it(module_tracked: TrackedContainer, box: Container,
                                               keypair: KeyPair) -> None:
    code, out = ssh.run_as(module_tracked.port(box, 22), USER, keypair, f"python {HOME}/work/probe.py")
    assert code == 0 and APPLIED in out.splitlines(), out


def test_a_job_started_over_ssh_applies_it(module_tracked: TrackedContainer, box: Container,
                                           keypair: KeyPair) -> None:
    code, out = ssh.run_as(module_tracked.port(box, 22), USER, keypair, f"job run {HOME}/work/probe.py")
    assert code == 0, out
    ident = job_id(out)
    wait_state(module_tracked, box, ident, "done", timeout=240)
    code, log = job(module_tracked, box, "log", ident)
    assert code == 0 and APPLIED in log, log


def test_the_hook_waits_only_where_there_is_a_budget(module_tracked: TrackedContainer, box: Container) -> None:
    """Without the variable nothing is added to Python's start (a script that never imports TensorFlow)."""
    code, out = module_tracked.exec(box, ["python", "-c", HOOKED], user=USER)
    assert (code, out.strip()) == (0, "True"), out
    code, out = module_tracked.exec(box, ["env", "-u", "GPU_MEMORY_LIMIT_MB", "python", "-c", HOOKED], user=USER)
    assert (code, out.strip()) == (0, "False"), out


def test_the_self_check_says_the_budget(module_tracked: TrackedContainer, box: Container) -> None:
    code, out = module_tracked.exec(box, ["selfcheck", "--layers", "6"], user=USER, demux=False, stderr=False)
    assert code == 0, out
    assert (f"PASS env.gpu_memory_limit: GPU_MEMORY_LIMIT_MB={BUDGET}: TensorFlow keeps each GPU's use under "
            f"{BUDGET} MiB (a cap TensorFlow keeps, not a hardware limit)") in out, out


@pytest.mark.parametrize("value", ["4G", "0"])
def test_a_bad_budget_stops_the_start(tracked: TrackedContainer, value: str) -> None:
    container = tracked.run(environment={"GPU_MEMORY_LIMIT_MB": value})
    assert tracked.wait_exit(container, timeout=30) == 2
    lines = tracked.logs(container).strip().splitlines()
    assert lines == [f"tf29-env: ERROR: GPU_MEMORY_LIMIT_MB='{value}' is not a number of MiB from 1 to 16777216 "
                     "(e.g. 4096 for 4 GiB); unset it for no budget"], lines
