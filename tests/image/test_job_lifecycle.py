"""`job` where the container itself ends: a one-shot `docker run IMAGE job run` exits with the run's
exit code, and `docker stop` in the middle of a `fit` ends in a checkpoint that `job resume`, after
the next start, continues from, training only the epochs left."""

import json
import re
import time
from pathlib import Path

import pytest

from testkit.containers import LOOPBACK, TrackedContainer
from testkit.jobs import HOME, TRAINING, job, job_id, notebook, read, record, wait_log, wait_state
from testkit.kernel import LabKernel

pytestmark = pytest.mark.image

TOKEN = "job-lifecycle-token-7c41"
FAILING = notebook("print('before the failure')", "raise ValueError(f'bad value {X}')", parameters="X = 1")


def test_a_failing_cell_in_a_one_shot_run_is_one_line_and_its_exit_code(tracked: TrackedContainer,
                                                                       tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "fail.ipynb").write_text(FAILING)
    for path in (work, work / "fail.ipynb"):
        path.chmod(0o777 if path.is_dir() else 0o666)  # the container's jovyan (1000) writes the jobs folder
    container = tracked.run(command=["job", "run", f"{HOME}/work/fail.ipynb", "-p", "X", "7"], publish=(),
                            volumes={str(work): {"bind": f"{HOME}/work", "mode": "rw"}})
    assert tracked.wait_exit(container, timeout=300) == 1
    logs = tracked.logs(container)
    assert "before the failure" in logs  # streamed as it ran, in the foreground
    line = "cell In [4] (raise ValueError(f'bad value {X}')) raised ValueError: bad value 7"
    assert f": failed (exit code 1): {line}" in logs, logs[-2000:]
    (folder,) = (work / "jobs").iterdir()
    meta = json.loads((folder / "job.json").read_text())
    assert (meta["state"], meta["exit_code"], meta["message"]) == ("failed", 1, line)
    assert json.loads((folder / "output.ipynb").read_text())["cells"]  # the output notebook, with the error


def test_docker_stop_mid_fit_checkpoints_and_resume_runs_the_remaining_epochs(tracked: TrackedContainer) -> None:
    """Docker's default 10 s stop, the image's default grace: the job and a busy kernel are interrupted,
    the job reads `stopped`; after a start, `job resume` trains only the epochs not yet done."""
    epochs = 20
    container = tracked.run(environment={"JUPYTER_TOKEN": TOKEN})
    tracked.wait_healthy(container)
    code, out = job(tracked, container, "run", TRAINING, "-p", "EPOCHS", str(epochs), "-p", "STEPS_PER_EPOCH", "5",
                    "-p", "EPOCH_PAUSE", "0.5")
    assert code == 0, out
    ident = job_id(out)
    kernel = LabKernel(f"http://{LOOPBACK}:{tracked.port(container, 8888)}/", TOKEN)
    kernel.send("import pathlib, time\ntry:\n    time.sleep(600)\nexcept KeyboardInterrupt:\n"
                f"    pathlib.Path('{HOME}/work/kernel-interrupted').write_text('saved')\n    raise\n")
    wait_log(tracked, container, ident, f"Epoch 4/{epochs}", timeout=240)
    began = time.monotonic()
    container.stop()  # docker stop: SIGTERM, SIGKILL after 10 s
    stopped_in = time.monotonic() - began
    kernel.socket.close()
    assert tracked.wait_exit(container) == 0, f"not a clean exit after {stopped_in:.1f} s"
    assert "stopping (signal received)" in tracked.logs(container)

    container.start()
    tracked.wait_healthy(container)
    found = record(tracked, container, ident)
    assert (found["state"], found["exit_code"]) == ("stopped", 130), found
    assert read(tracked, container, f"{HOME}/work/kernel-interrupted") == "saved"
    code, out = tracked.exec(container, ["find", f"{HOME}/work/jobs/{ident}/checkpoints", "-name", "*.index"])
    assert code == 0 and out.strip(), out
    first = read(tracked, container, f"{HOME}/work/jobs/{ident}/output.log")
    printed = len(re.findall(r"^\d+/\d+ - .*loss:", first, re.MULTILINE))
    assert 3 <= printed < epochs, first[-2000:]

    code, out = job(tracked, container, "resume", ident)
    assert code == 0 and job_id(out) == ident, out
    found = wait_state(tracked, container, ident, "done", timeout=300)
    assert found["exit_code"] == 0
    log = read(tracked, container, f"{HOME}/work/jobs/{ident}/output.log")
    resumed = log.split("--- job resume: attempt 2", 1)[1]
    trained = int(re.findall(r"trained (\d+) epochs in this run", resumed)[-1])
    # Keras prints an epoch's line after the callbacks' epoch end: an interrupt in the pause after the
    # backup leaves one epoch saved but not printed.
    assert epochs - printed - 1 <= trained <= epochs - printed, resumed[-2000:]
    assert f"Epoch 1/{epochs}\n" not in resumed
