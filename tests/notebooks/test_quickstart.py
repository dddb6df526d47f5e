"""Every quickstart notebook runs headless, top to bottom, in the image under test on the CPU, as
the dev user, with tiny sizes; its printed results are what the notebook promises; a bad parameter
stops it at the parameter check with one line, before anything else runs. With the shipped sizes
(no QS_ override: a person's Run All), each sized notebook sees no GPU, takes its CPU sizes, says so
in one line and runs to its end; QS_SIZES=gpu or SIZES = "gpu" keeps the GPU sizes, and a size set
on its own (QS_<NAME>, or one number in the parameters cell) wins over either side."""

import re
import time
from collections.abc import Callable, Iterator

import pytest
from docker import DockerClient
from docker.models.containers import Container

from testkit.containers import TrackedContainer
from tests.notebooks.runner import TINY, USER, Executed, copy_in, execute, notebooks, size_pairs

pytestmark = pytest.mark.image

SIZED = ["2-mixed-precision.ipynb", "3-xla.ipynb", "4-profiler.ipynb"]
NUMBER = r"\d+\.\d\dx"
# The line a notebook prints when it takes the CPU side of its sizes by itself.
CPU_SIZES = re.compile(r'^No GPU visible to TensorFlow: CPU sizes \(the second of each pair\), so that Run All takes '
                       r'about a minute; for the GPU sizes set SIZES = "gpu" in the parameters cell, or QS_SIZES=gpu$',
                       re.M)
# Source text of the cell that picks the sizes and prints them: the partial runs below end there.
PICKS = 'print(f"batch {BATCH_SIZE}'
GPU, CPU = 0, 1

Box = tuple[TrackedContainer, Container]


@pytest.fixture(scope="module")
def box(docker_client: DockerClient, image: str) -> Iterator[Box]:
    """One container in the command mode (the dev user, no services) to run the notebooks in."""
    tracked = TrackedContainer(docker_client, image)
    try:
        container = tracked.run(command=["sleep", "infinity"], publish=())
        copy_in(container)
        yield tracked, container
    finally:
        tracked.remove_all()


def run_clean(box: Box, name: str, env: dict[str, str], *, inject: str = "", until: str = "") -> Executed:
    executed = execute(*box, name, env, inject=inject, until=until)
    shown = [line for error in executed.errors() for line in error.get("traceback", [])]
    assert executed.error is None, f"{name} stopped with {executed.error}:\n" + "\n".join(shown)[-3000:]
    assert all(executed.ran()), f"{name}: cells left unrun"
    return executed


def printed_sizes(out: str) -> dict[str, int]:
    """The sizes from the line each sized notebook prints once it has picked them."""
    found = re.findall(r"^batch \d+, .*$", out, re.M)
    assert len(found) == 1, out
    line = found[0]
    patterns = {"BATCH_SIZE": r"^batch (\d+),", "STEPS": r", (\d+) (?:timed )?steps",
                "WARMUP_STEPS": r" after (\d+) warm-up steps", "PROFILE_STEPS": r" steps 2-(\d+) traced",
                "HIDDEN": r" hidden layers of (\d+)"}
    sizes = {name: int(match[1]) for name, pattern in patterns.items() if (match := re.search(pattern, line))}
    if "PROFILE_STEPS" in sizes:
        sizes["PROFILE_STEPS"] -= 1  # printed as the last traced step, from step 2
    return sizes


def side(name: str, which: int) -> dict[str, int]:
    """The GPU or CPU side of each size pair in NAME's parameters cell; the two sides differ in each."""
    pairs = size_pairs(name)
    assert pairs and all(gpu != cpu for gpu, cpu in pairs.values()), pairs
    return {size: pair[which] for size, pair in pairs.items()}


def check_mixed_precision(box: Box, out: str) -> None:
    assert "mixed_float16: hidden layers compute in float16, keep weights in float32; output in float32" in out, out
    for kind in ("model.fit", "custom loop"):
        assert re.search(rf"^speedup mixed_float16 vs float32 \({kind}\): {NUMBER}$", out, re.M), out
        for policy in ("float32", "mixed_float16"):
            assert re.search(rf"^{kind} +{policy}: .* samples/s, peak memory (n/a \(CPU\)|[\d,]+ MiB)", out, re.M), out
    assert re.search(r"^mixed_float16: loss scale now \d+", out, re.M), out
    if "peak memory n/a (CPU)" in out:
        assert "These numbers mean nothing for a GPU" in out, out


def check_xla(box: Box, out: str) -> None:
    assert re.search(rf"^speedup XLA vs no XLA: {NUMBER}$", out, re.M), out
    assert "compilation failed" not in out, out


def check_profiler(box: Box, out: str) -> None:
    tracked, container = box
    written = re.findall(r"^profile written: (\S+\.xplane\.pb) ", out, re.M)
    assert written, out
    # Under the TensorBoard's default log dir, as the dev user's, where the launcher's TensorBoard reads.
    for path in written:
        assert path.startswith("/home/jovyan/work/logs/quickstart-profile/"), path
        code, owner = tracked.exec(container, ["stat", "-c", "%U %s", path])
        assert code == 0 and owner.split()[0] == USER and int(owner.split()[1]) > 0, owner
    # The image has TensorBoard's profile plugin (tensorboard-plugin-profile), so the notebook says how to open it.
    assert "pick this run, then the PROFILE tab" in out and "is not installed" not in out, out


RESULTS: dict[str, Callable[[Box, str], None]] = {
    "2-mixed-precision.ipynb": check_mixed_precision,
    "3-xla.ipynb": check_xla,
    "4-profiler.ipynb": check_profiler,
}


def test_every_notebook_is_tested() -> None:
    # 5 is also run as a job, stopped and resumed, in tests/image/test_jobs.py.
    assert notebooks() == ["1-environment.ipynb", *SIZED, "5-training-job.ipynb"]


def test_training_run_by_hand_checkpoints_under_work(box: Box) -> None:
    """Run All without `job`: the backup goes to a folder under ~/work, and a fit that completes removes it."""
    out = run_clean(box, "5-training-job.ipynb", {}, inject="EPOCHS = 3").stdout()
    assert "checkpoints: /home/jovyan/work/checkpoints/5-training-job/backup\n" in out, out
    assert re.search(r"^trained 3 epochs in this run; final loss \d+\.\d{4}$", out, re.M), out
    tracked, container = box
    code, listing = tracked.exec(container, ["find", "/home/jovyan/work/checkpoints/5-training-job", "-type", "f"])
    assert code == 0 and listing == "", listing  # Keras deleted its backup once fit completed


@pytest.mark.parametrize("inject", ["EPOCHS = 0", "EPOCH_PAUSE = -1", "BATCH_SIZE = 'big'"])
def test_training_bad_parameter_one_clear_line(box: Box, inject: str) -> None:
    executed = execute(*box, "5-training-job.ipynb", {}, inject=inject)
    assert executed.error == "ParameterError"
    (error,) = executed.errors()
    name = inject.split()[0]
    assert len(error["traceback"]) == 1 and error["traceback"][0].startswith(f"ParameterError: {name}="), error


def test_environment(box: Box) -> None:
    out = run_clean(box, "1-environment.ipynb", TINY).stdout()
    assert re.search(r"^selfcheck: \d+ PASS, .* GPU visible: (yes|no)", out, re.M), out
    assert "TensorFlow 2.9." in out, out
    # Either the GPUs with their compute capability, or the line that says there are none.
    assert re.search(r"^GPU:0 .*: compute capability \d+\.\d+$", out, re.M) or "No GPU visible" in out, out


def run_tiny(box: Box, name: str) -> str:
    out = run_clean(box, name, TINY).stdout()
    assert not CPU_SIZES.search(out), out  # every size set by its QS_<NAME>: neither side taken
    return out


def test_mixed_precision(box: Box) -> None:
    check_mixed_precision(box, run_tiny(box, "2-mixed-precision.ipynb"))


def test_xla(box: Box) -> None:
    check_xla(box, run_tiny(box, "3-xla.ipynb"))


def test_profiler(box: Box) -> None:
    check_profiler(box, run_tiny(box, "4-profiler.ipynb"))


@pytest.mark.parametrize("name", SIZED)
def test_run_all_with_the_shipped_sizes_takes_the_cpu_sizes(box: Box, name: str) -> None:
    """A person's Run All on a machine without a GPU: no QS_ variable at all."""
    start = time.monotonic()
    out = run_clean(box, name, {}).stdout()
    print(f"{name}: Run All with the shipped sizes, no GPU: {time.monotonic() - start:.0f} s")
    assert len(CPU_SIZES.findall(out)) == 1, out
    assert printed_sizes(out) == side(name, CPU), out
    RESULTS[name](box, out)


@pytest.mark.parametrize("name", SIZED)
@pytest.mark.parametrize(("env", "inject"), [({"QS_SIZES": "gpu"}, ""), ({}, 'SIZES = "gpu"')],
                         ids=["QS_SIZES", "parameters-cell"])
def test_gpu_sizes_on_request(box: Box, name: str, env: dict[str, str], inject: str) -> None:
    # Up to the cell that picks the sizes: the GPU sizes would take many minutes here.
    out = run_clean(box, name, env, inject=inject, until=PICKS).stdout()
    assert not CPU_SIZES.search(out), out
    assert printed_sizes(out) == side(name, GPU), out


@pytest.mark.parametrize("name", SIZED)
def test_a_size_set_on_its_own_wins(box: Box, name: str) -> None:
    # QS_HIDDEN, and one number in place of BATCH_SIZE's pair (as a user's edit or papermill sets it).
    out = run_clean(box, name, {"QS_HIDDEN": "24"}, inject="BATCH_SIZE = 40", until=PICKS).stdout()
    assert len(CPU_SIZES.findall(out)) == 1, out  # the other sizes still take the CPU side
    assert printed_sizes(out) == {**side(name, CPU), "HIDDEN": 24, "BATCH_SIZE": 40}, out


@pytest.mark.parametrize("name", SIZED)
@pytest.mark.parametrize(("env", "inject", "message"), [
    ({**TINY, "QS_BATCH_SIZE": "0"}, "", "BATCH_SIZE must be a whole number of at least 1, not 0"),
    ({**TINY, "QS_STEPS": "ten"}, "", "QS_STEPS='ten' is not a whole number"),
    ({**TINY, "QS_SIZES": "big"}, "", "SIZES must be \"auto\", \"gpu\" or \"cpu\", not 'big'"),
    # One side of a pair in the parameters cell (no QS_HIDDEN, which would take its place).
    ({key: value for key, value in TINY.items() if key != "QS_HIDDEN"}, "HIDDEN = 4096, 0",
     "HIDDEN must be a whole number of at least 1, not 0"),
], ids=["QS_BATCH_SIZE", "QS_STEPS", "QS_SIZES", "pair"])
def test_bad_parameter_one_clear_line(box: Box, name: str, env: dict[str, str], inject: str, message: str) -> None:
    executed = execute(*box, name, env, inject=inject)
    assert executed.error == "ParameterError"
    errors = executed.errors()
    assert len(errors) == 1 and len(errors[0]["traceback"]) == 1, errors  # one line, no stack
    assert errors[0]["traceback"][0].startswith(f"ParameterError: {message}"), errors
    ran = executed.ran()
    stopped_at = next(index for index, cell in enumerate(executed.cells) if cell.get("outputs") and any(
        output.get("output_type") == "error" for output in cell["outputs"]))
    assert not any(ran[stopped_at + 1:]), "cells after the parameter check ran"
    assert "tensorflow" not in "".join(executed.cells[stopped_at]["source"]).lower()  # before TF is imported
