"""The Slurm hub's settings without Slurm (deploy/slurm/hub/slurmhub.py): HUB_TEAM_DATA and
HUB_GPU_MEMORY_MB read as the team hub reads them (hub/settings.py), each bad value one line naming
it, a budget only for a profile with a GPU, and the lines its jobs take from jupyter.sbatch. The hub's
jobs themselves run in tests/hpc/test_batchspawner.py."""

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from hub import settings as hub_settings
from tf29env.core.paths import REPO

SLURM = REPO / "deploy" / "slurm"
PROFILES = {"cpu": {"title": "CPU", "partition": "cpu", "gres": ""},
            "gpu": {"title": "1 GPU", "partition": "gpu", "gres": "gpu:1"},
            "a100": {"title": "2 A100", "partition": "a100", "gres": "gpu:a100:2"}}


def load_slurmhub() -> ModuleType:
    """The module as the hub's config imports it: a file beside the config, not a package."""
    spec = importlib.util.spec_from_file_location("slurmhub", SLURM / "hub" / "slurmhub.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


slurmhub = load_slurmhub()


def refused(environ: dict[str, str]) -> str:
    with pytest.raises(slurmhub.SettingError) as raised:
        slurmhub.load(environ, PROFILES)
    return str(raised.value)


def test_the_defaults() -> None:
    settings = slurmhub.load({}, PROFILES)
    assert (settings.kernel_idle, settings.stop_grace, settings.team_data, dict(settings.gpu_memory)) == (
        3600, 30, "", {})


@pytest.mark.parametrize(("value", "budgets"), [
    ("8192", {"gpu": 8192, "a100": 8192}),
    ("a100=40000", {"a100": 40000}),
    ("4096 a100=40000", {"gpu": 4096, "a100": 40000}),
    ("a100=40000,4096", {"gpu": 4096, "a100": 40000}),
])
def test_a_budget_goes_to_the_gpu_profiles_never_the_cpu_one(value: str, budgets: dict[str, int]) -> None:
    assert dict(slurmhub.load({"HUB_GPU_MEMORY_MB": value}, PROFILES).gpu_memory) == budgets


@pytest.mark.parametrize(("value", "line"), [
    ("8G", "HUB_GPU_MEMORY_MB: '8G' is not a whole number of MiB from 1 to 1048576 (e.g. 8192, or gpu=8192)"),
    ("0", "HUB_GPU_MEMORY_MB: '0' is not a whole number of MiB from 1 to 1048576 (e.g. 8192, or gpu=8192)"),
    ("gpu=1048577", "HUB_GPU_MEMORY_MB: 'gpu=1048577' is not a whole number of MiB from 1 to 1048576 "
                    "(e.g. 8192, or gpu=8192)"),
    ("cpu=1024", "HUB_GPU_MEMORY_MB: the cpu profile has no GPU to budget"),
    ("gpu1=1024", "HUB_GPU_MEMORY_MB: 'gpu1' is not one of the hub's profiles (cpu, gpu, a100)"),
    ("1024 2048", "HUB_GPU_MEMORY_MB gives a default twice"),
    ("gpu=1 gpu=2", "HUB_GPU_MEMORY_MB gives gpu twice"),
])
def test_a_bad_budget_is_one_line(value: str, line: str) -> None:
    assert refused({"HUB_GPU_MEMORY_MB": value}) == line


def test_team_data_is_a_readable_folder(tmp_path: Path) -> None:
    assert slurmhub.load({"HUB_TEAM_DATA": str(tmp_path)}, PROFILES).team_data == str(tmp_path)
    (tmp_path / "file").write_text("not a folder\n")
    (tmp_path / "data,v2").mkdir()
    for name in ("none", "file"):
        assert refused({"HUB_TEAM_DATA": str(tmp_path / name)}) == (
            f"HUB_TEAM_DATA={tmp_path / name} is not a folder on this host")
    assert refused({"HUB_TEAM_DATA": str(tmp_path / "data,v2")}) == (
        f"HUB_TEAM_DATA={tmp_path}/data,v2 has a ':' or ',', which Apptainer's --bind cannot take")
    assert refused({"HUB_TEAM_DATA": "datasets"}) == (
        "HUB_TEAM_DATA='datasets' is not an absolute path (the folder as the nodes see it, e.g. /shared/datasets)")


def test_a_bad_number_of_seconds_is_one_line() -> None:
    assert refused({"TF29_HUB_STOP_GRACE_SECONDS": "0"}) == (
        "TF29_HUB_STOP_GRACE_SECONDS='0' must be a number of seconds from 1 to 3600")


def test_the_budgets_read_as_the_team_hubs() -> None:
    """One setting, two hubs: the same default key, largest budget and plain-number meaning."""
    assert (slurmhub.GPU_MEMORY_DEFAULT, slurmhub.GPU_MEMORY_MAX_MB) == (
        hub_settings.GPU_MEMORY_DEFAULT, hub_settings.GPU_MEMORY_MAX_MB)
    team = hub_settings.load({"HUB_GPU_MEMORY_MB": "4096"})
    assert team.gpu_memory_mb("gpu1") == slurmhub.load({"HUB_GPU_MEMORY_MB": "4096"}, PROFILES).gpu_memory["gpu"]


def test_the_jobs_run_jupyter_sbatchs_lines_and_job_sbatch_has_the_same() -> None:
    lines = slurmhub.team_lines((SLURM / "jupyter.sbatch").read_text())
    assert 'args+=(--bind "${TEAM_DATA}:${HOME}/data:ro")' in lines
    assert 'args+=(--env "GPU_MEMORY_LIMIT_MB=${GPU_MEMORY_LIMIT_MB}")' in lines
    assert lines in (SLURM / "job.sbatch").read_text(), "job.sbatch's team data lines differ from jupyter.sbatch's"
    with pytest.raises(slurmhub.SettingError):
        slurmhub.team_lines("#!/bin/bash\nexec apptainer run x.sif\n")


GPU = {"title": "1 GPU", "partition": "gpu", "gres": "gpu:1", "runtime": "08:00:00", "memory": "32G", "nprocs": "8"}


def test_profiles_as_json() -> None:
    text = json.dumps({"gpu": GPU, "cpu": {**GPU, "gres": ""}})
    assert slurmhub.profiles("TF29_HUB_PROFILES", text, GPU) == {"gpu": GPU, "cpu": {**GPU, "gres": ""}}


@pytest.mark.parametrize(("text", "line"), [
    ("{gpu: 1}", "TF29_HUB_PROFILES is not JSON ("),
    ("[]", "TF29_HUB_PROFILES must be a JSON object of profiles"),
    ("{}", "TF29_HUB_PROFILES must be a JSON object of profiles"),
    ('{"gpu": {"title": "x"}}', "TF29_HUB_PROFILES: the profile 'gpu' must have the keys gres, memory, nprocs"),
    (json.dumps({"a b": GPU}), "TF29_HUB_PROFILES: the profile name 'a b' must be letters"),
    (json.dumps({"gpu": {**GPU, "nprocs": 8}}), "TF29_HUB_PROFILES: the profile 'gpu' must have strings"),
])
def test_bad_profiles_are_one_line(text: str, line: str) -> None:
    with pytest.raises(slurmhub.SettingError) as raised:
        slurmhub.profiles("TF29_HUB_PROFILES", text, GPU)
    assert str(raised.value).startswith(line) and "\n" not in str(raised.value), raised.value
