"""The self-check when NVIDIA_VISIBLE_DEVICES names GPUs but no driver arrived (the toolkit or its
runtime is missing where the container runs): layers 1 and 6 say so in one line each, with the fix,
on this host without a driver. In a real container (the stand-in GPU engine, `--gpus device=1`):
tests/gpu/test_make_run.py."""

from pathlib import Path

import pytest

from tests.unit.tf29image.selfcheck.test_cli import report_of, selfcheck

TOOLKIT_FIX = "install the NVIDIA Container Toolkit on the host"


def layer_checks(tmp_path: Path, visible: str) -> dict[str, dict[str, object]]:
    done = selfcheck("--layers", "1,6", "--output", str(tmp_path / "r.json"), env={"NVIDIA_VISIBLE_DEVICES": visible})
    assert done.returncode == 0, done.stderr
    report = report_of(tmp_path / "r.json")
    return {check["id"]: check for layer in report["layers"] for check in layer["checks"]}


@pytest.mark.parametrize("visible", ["1", "0,1", "GPU-1f9a3c52-7d4e-4b8a-9c61-0a2b3c4d5e60", "MIG-x/1/0"])
def test_named_gpus_without_a_driver(tmp_path: Path, visible: str) -> None:
    if Path("/dev/nvidiactl").exists():
        raise AssertionError("this test needs a host without the NVIDIA driver (the build host, CI)")
    found = layer_checks(tmp_path, visible)
    present, runtime = found["driver.present"], found["env.nvidia_runtime"]
    assert present["status"] == "FAIL" and runtime["status"] == "WARN"
    for check in (present, runtime):
        assert str(check["what"]).startswith(f"NVIDIA_VISIBLE_DEVICES={visible} names GPUs but no NVIDIA driver "
                                             "was injected")
        assert "the NVIDIA Container Toolkit or its runtime is missing" in str(check["what"])
        assert str(check["fix"]).startswith(TOOLKIT_FIX) and "nvidia-ctk runtime configure" in str(check["fix"])


def test_the_images_default_all_keeps_the_start_with_gpus_fix(tmp_path: Path) -> None:
    """`all` is the image's own default, set whether or not GPUs were asked for."""
    found = layer_checks(tmp_path, "all")
    assert "no NVIDIA driver in the container" in str(found["driver.present"]["what"])
    assert "--gpus all" in str(found["driver.present"]["fix"])
