"""Every quickstart notebook runs headless, top to bottom, in the image under test on the CPU, as
the dev user, with tiny sizes; its printed results are what the notebook promises; a bad parameter
stops it at the parameter check with one line, before anything else runs."""

import re
from collections.abc import Iterator

import pytest
from docker import DockerClient
from docker.models.containers import Container

from testkit.containers import TrackedContainer
from tests.notebooks.runner import TINY, USER, Executed, copy_in, execute, notebooks

pytestmark = pytest.mark.image

SIZED = ["2-mixed-precision.ipynb", "3-xla.ipynb", "4-profiler.ipynb"]
NUMBER = r"\d+\.\d\dx"


@pytest.fixture(scope="module")
def box(docker_client: DockerClient, image: str) -> Iterator[tuple[TrackedContainer, Container]]:
    """One container in the command mode (the dev user, no services) to run the notebooks in."""
    tracked = TrackedContainer(docker_client, image)
    try:
        container = tracked.run(command=["sleep", "infinity"], environment={"SELF_CHECK": "off"}, publish=())
        copy_in(container)
        yield tracked, container
    finally:
        tracked.remove_all()


def run_clean(box: tuple[TrackedContainer, Container], name: str) -> Executed:
    executed = execute(*box, name, TINY)
    shown = [line for error in executed.errors() for line in error.get("traceback", [])]
    assert executed.error is None, f"{name} stopped with {executed.error}:\n" + "\n".join(shown)[-3000:]
    assert all(executed.ran()), f"{name}: cells left unrun"
    return executed


def test_every_notebook_is_tested() -> None:
    assert notebooks() == ["1-environment.ipynb", *SIZED]


def test_environment(box: tuple[TrackedContainer, Container]) -> None:
    out = run_clean(box, "1-environment.ipynb").stdout()
    assert re.search(r"^selfcheck: \d+ PASS, .* GPU visible: (yes|no)", out, re.M), out
    assert "TensorFlow 2.9." in out, out
    # Either the GPUs with their compute capability, or the line that says there are none.
    assert re.search(r"^GPU:0 .*: compute capability \d+\.\d+$", out, re.M) or "No GPU visible" in out, out


def test_mixed_precision(box: tuple[TrackedContainer, Container]) -> None:
    out = run_clean(box, "2-mixed-precision.ipynb").stdout()
    assert "mixed_float16: hidden layers compute in float16, keep weights in float32; output in float32" in out, out
    for kind in ("model.fit", "custom loop"):
        assert re.search(rf"^speedup mixed_float16 vs float32 \({kind}\): {NUMBER}$", out, re.M), out
        for policy in ("float32", "mixed_float16"):
            assert re.search(rf"^{kind} +{policy}: .* samples/s, peak memory (n/a \(CPU\)|[\d,]+ MiB)", out, re.M), out
    assert re.search(r"^mixed_float16: loss scale now \d+", out, re.M), out
    if "peak memory n/a (CPU)" in out:
        assert "These numbers mean nothing for a GPU" in out, out


def test_xla(box: tuple[TrackedContainer, Container]) -> None:
    out = run_clean(box, "3-xla.ipynb").stdout()
    assert re.search(rf"^speedup XLA vs no XLA: {NUMBER}$", out, re.M), out
    assert "compilation failed" not in out, out


def test_profiler(box: tuple[TrackedContainer, Container]) -> None:
    tracked, container = box
    out = run_clean(box, "4-profiler.ipynb").stdout()
    written = re.findall(r"^profile written: (\S+\.xplane\.pb) ", out, re.M)
    assert written, out
    # Under the TensorBoard's default log dir, as the dev user's, where the launcher's TensorBoard reads.
    for path in written:
        assert path.startswith("/home/jovyan/work/logs/quickstart-profile/"), path
        code, owner = tracked.exec(container, ["stat", "-c", "%U %s", path])
        assert code == 0 and owner.split()[0] == USER and int(owner.split()[1]) > 0, owner
    # The image has TensorBoard's profile plugin (tensorboard-plugin-profile), so the notebook says how to open it.
    assert "pick this run, then the PROFILE tab" in out and "is not installed" not in out, out


@pytest.mark.parametrize("name", SIZED)
@pytest.mark.parametrize(("override", "message"), [
    ({"QS_BATCH_SIZE": "0"}, "BATCH_SIZE must be a whole number of at least 1, not 0"),
    ({"QS_STEPS": "ten"}, "QS_STEPS='ten' is not a whole number"),
])
def test_bad_parameter_one_clear_line(box: tuple[TrackedContainer, Container], name: str,
                                      override: dict[str, str], message: str) -> None:
    executed = execute(*box, name, {**TINY, **override})
    assert executed.error == "ParameterError"
    errors = executed.errors()
    assert len(errors) == 1 and len(errors[0]["traceback"]) == 1, errors  # one line, no stack
    assert errors[0]["traceback"][0].startswith(f"ParameterError: {message}"), errors
    ran = executed.ran()
    stopped_at = next(index for index, cell in enumerate(executed.cells) if cell.get("outputs") and any(
        output.get("output_type") == "error" for output in cell["outputs"]))
    assert not any(ran[stopped_at + 1:]), "cells after the parameter check ran"
    assert "tensorflow" not in "".join(executed.cells[stopped_at]["source"]).lower()  # before TF is imported
