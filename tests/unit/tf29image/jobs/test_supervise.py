"""tf29image.jobs.supervise: what a job's worker runs, and with which environment. Its runs
themselves are tested in the image: tests/image/test_jobs.py."""

import sys
from pathlib import Path

import pytest

from tf29image.jobs import supervise

SCRIPT = {"id": "j", "kind": "script", "cwd": "/home/jovyan/work/src", "checkpoint_dir": "/j/checkpoints",
          "parameters": {"epochs": 3, "name": "x y"}, "input_copy": "input.py"}
NOTEBOOK = {**SCRIPT, "kind": "notebook", "input_copy": "input.ipynb"}


def test_a_run_gets_its_folders_and_the_users_pythonpath(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", "/home/jovyan/lib::")
    env = supervise.worker_environment("/j", SCRIPT)
    assert (env["JOB_ID"], env["JOB_DIR"], env["JOB_CHECKPOINT_DIR"]) == ("j", "/j", "/j/checkpoints")
    assert env["PYTHONPATH"] == "/home/jovyan/work/src:/home/jovyan/lib"  # the script's folder first
    assert supervise.worker_command("/j", SCRIPT, "output.log")[1:] == [
        "-u", "/j/input.py", "--epochs", "3", "--name", "x y"]
    assert [supervise.output_name({"kind": "notebook"}, n) for n in (1, 2)] == ["output.ipynb", "output.2.ipynb"]


def test_a_notebook_and_its_kernel_get_the_users_own_pythonpath(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", "/home/jovyan/lib")
    assert supervise.worker_environment("/j", NOTEBOOK)["PYTHONPATH"] == "/home/jovyan/lib"
    monkeypatch.delenv("PYTHONPATH")
    assert "PYTHONPATH" not in supervise.worker_environment("/j", NOTEBOOK)


def test_the_notebook_worker_is_the_packages_main_run_as_a_file() -> None:
    # A file's own folder goes first on sys.path; `-m` would put the notebook's folder (the user's) there.
    command = supervise.worker_command("/j", NOTEBOOK, "output.ipynb")
    assert command == [sys.executable, supervise.JOB_MAIN, "_notebook", "/j", "output.ipynb"]
    assert Path(supervise.JOB_MAIN) == Path(supervise.__file__).parent / "__main__.py"
