"""The Slurm job scripts' Apptainer arguments for the team's data and GPU memory budget (docs/hpc.md):
TEAM_DATA binds read-only at ~/data, GPU_MEMORY_LIMIT_MB reaches the container, and a TEAM_DATA that
is not a folder is one line, exit 2, before Apptainer runs. The scripts run as sbatch would start
them, with a stand-in `apptainer` on PATH that records its arguments: only the command line is
checked here, the real Apptainer and Slurm run them in tests/hpc."""

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tf29env.core.paths import REPO

SCRIPTS = {"job.sbatch": ["train.py"], "jupyter.sbatch": []}
PREFIX = {"job.sbatch": "tf29-job", "jupyter.sbatch": "tf29-jupyter"}


@dataclass
class Run:
    code: int
    stderr: str
    argv: list[str] | None  # what apptainer was given; None when it never ran


@pytest.fixture
def node(tmp_path: Path) -> Path:
    """A compute node's view: a home, a SIF, and the stand-in apptainer first on PATH."""
    (tmp_path / "home").mkdir()
    (tmp_path / "bin").mkdir()
    (tmp_path / "tf29-env.sif").write_text("not a real SIF: the stand-in never opens it\n")
    stub = tmp_path / "bin" / "apptainer"
    stub.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" >"{tmp_path / "argv"}"\n')
    stub.chmod(0o755)
    return tmp_path


def sbatch(node: Path, script: str, **env: str) -> Run:
    environ = {"PATH": f"{node / 'bin'}:/usr/bin:/bin", "HOME": str(node / "home"), "TMPDIR": str(node),
               "SLURM_JOB_ID": "4242", "JOBS_DIR": str(node / "jobs"), **env}
    done = subprocess.run(["bash", str(REPO / "deploy" / "slurm" / script), str(node / "tf29-env.sif"),
                           *SCRIPTS[script]], cwd=node, env=environ, capture_output=True, text=True, timeout=60,
                          check=False)
    recorded = node / "argv"
    return Run(done.returncode, done.stderr, recorded.read_text().splitlines() if recorded.exists() else None)


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_team_data_is_bound_read_only_and_the_budget_passed(node: Path, script: str) -> None:
    data = node / "datasets"
    data.mkdir()
    run = sbatch(node, script, TEAM_DATA=str(data), GPU_MEMORY_LIMIT_MB="4096")
    assert run.code == 0 and run.argv is not None, run.stderr
    sif = run.argv.index(str(node / "tf29-env.sif"))
    options = run.argv[:sif]
    assert options[options.index("--bind") + 1] == f"{data}:{node / 'home'}/data:ro"
    assert options[options.index("--env") + 1] == "GPU_MEMORY_LIMIT_MB=4096"


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_without_them_nothing_is_added(node: Path, script: str) -> None:
    run = sbatch(node, script)
    assert run.code == 0 and run.argv is not None, run.stderr
    assert "--bind" not in run.argv and "--env" not in run.argv


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_team_data_that_is_not_a_folder_is_one_line(node: Path, script: str) -> None:
    missing = node / "no-such-datasets"
    run = sbatch(node, script, TEAM_DATA=str(missing))
    assert run.argv is None and run.code == 2
    assert run.stderr == (f"{PREFIX[script]}: ERROR: TEAM_DATA={missing} is not a readable folder on node "
                          f"{os.uname().nodename}\n")


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_team_data_apptainer_cannot_bind_is_one_line(node: Path, script: str) -> None:
    odd = node / "data,v2"
    odd.mkdir()
    run = sbatch(node, script, TEAM_DATA=str(odd))
    assert run.argv is None and run.code == 2
    assert run.stderr == (f"{PREFIX[script]}: ERROR: TEAM_DATA={odd} has a ':' or ',', which Apptainer's --bind "
                          "cannot take\n")
