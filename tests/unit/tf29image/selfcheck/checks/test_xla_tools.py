"""Layer 2's checks for XLA and the profiler (selfcheck/checks/xla_tools.py) on real files and real
processes: libdevice where XLA looks (XLA_FLAGS first), a ptxas that runs and is CUDA 11's (11.1+),
CUPTI by the sonames TF 2.9 dlopens; one line each, a fix exactly when not PASS; none of it in a
start without GPUs (cpu variant, NVIDIA_VISIBLE_DEVICES=void)."""

import stat
from pathlib import Path

import pytest

from tf29image.selfcheck.checks import l2_cudalibs, xla_tools
from tf29image.selfcheck.model import PASS, SKIP, WARN, Check

PTXAS_11_8 = "ptxas: NVIDIA (R) Ptx optimizing assembler\nCuda compilation tools, release 11.8, V11.8.89\n"


def cuda_root(tmp_path: Path, name: str, *, libdevice: bool = True, ptxas_output: str | None = None,
              ptxas_exit: int = 0) -> str:
    """A CUDA folder as CUDA lays it out: nvvm/libdevice/libdevice.10.bc, bin/ptxas (a real script)."""
    root = tmp_path / name
    (root / "nvvm" / "libdevice").mkdir(parents=True)
    if libdevice:
        (root / "nvvm" / "libdevice" / "libdevice.10.bc").write_bytes(b"BC\xc0\xde")
    if ptxas_output is not None:
        (root / "bin").mkdir()
        script = root / "bin" / "ptxas"
        script.write_text(f"#!/bin/sh\nprintf '%s' '{ptxas_output}'\nexit {ptxas_exit}\n")
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(root)


def assert_one_line(check: Check) -> None:
    assert "\n" not in check.what
    assert (check.fix is not None) == (check.status in (WARN, "FAIL")), check


def test_roots_xla_flags_first() -> None:
    env = {"XLA_FLAGS": "--xla_gpu_autotune_level=2 --xla_gpu_cuda_data_dir=/opt/cuda"}
    assert xla_tools.cuda_roots(env) == ["/opt/cuda", "/usr/local/cuda-11.2", "/usr/local/cuda"]
    assert xla_tools.cuda_roots({}) == ["/usr/local/cuda-11.2", "/usr/local/cuda"]


def test_libdevice_found_in_the_first_root_that_has_the_folder(tmp_path: Path) -> None:
    first = cuda_root(tmp_path, "flag")
    second = cuda_root(tmp_path, "usr-local-cuda")
    check = xla_tools.libdevice([str(tmp_path / "absent"), first, second])
    assert check.status == PASS and check.data["path"] == f"{first}/nvvm/libdevice/libdevice.10.bc", check
    assert_one_line(check)


def test_libdevice_folder_without_the_file_is_what_xla_takes(tmp_path: Path) -> None:
    empty = cuda_root(tmp_path, "empty", libdevice=False)
    check = xla_tools.libdevice([empty, cuda_root(tmp_path, "full")])
    assert check.status == WARN and "no readable libdevice.10.bc" in check.what, check
    assert_one_line(check)


def test_libdevice_missing_everywhere(tmp_path: Path) -> None:
    check = xla_tools.libdevice([str(tmp_path / "a"), str(tmp_path / "b")])
    assert check.status == WARN and "libdevice not found" in check.what, check
    assert check.fix is not None and "--xla_gpu_cuda_data_dir" in check.fix
    assert_one_line(check)


def test_ptxas_runs_and_is_cuda_11(tmp_path: Path) -> None:
    root = cuda_root(tmp_path, "cuda", ptxas_output=PTXAS_11_8)
    check = xla_tools.ptxas([root], path="")
    assert check.status == PASS and check.data == {"path": f"{root}/bin/ptxas", "version": "11.8.89"}, check
    assert_one_line(check)


def test_ptxas_from_path_when_no_root_has_one(tmp_path: Path) -> None:
    root = cuda_root(tmp_path, "on-path", ptxas_output=PTXAS_11_8)
    check = xla_tools.ptxas([str(tmp_path / "none")], path=f"{root}/bin")
    assert check.status == PASS and check.data["path"] == f"{root}/bin/ptxas", check


@pytest.mark.parametrize(("output", "exit_code", "words"), [
    ("Cuda compilation tools, release 11.0, V11.0.221", 0, "11.1 or newer"),
    ("Cuda compilation tools, release 12.2, V12.2.140", 0, "needs CUDA 11's"),
    ("ptxas fatal: broken", 3, "fails (exit 3)"),
    ("no version here", 0, "fails (exit 0)"),
])
def test_ptxas_bad_versions_and_failures(tmp_path: Path, output: str, exit_code: int, words: str) -> None:
    root = cuda_root(tmp_path, "cuda", ptxas_output=output, ptxas_exit=exit_code)
    check = xla_tools.ptxas([root], path="")
    assert check.status == WARN and words in check.what, check
    assert_one_line(check)


def test_ptxas_missing(tmp_path: Path) -> None:
    check = xla_tools.ptxas([str(tmp_path / "none")], path=str(tmp_path))
    assert check.status == WARN and "no ptxas" in check.what and check.fix is not None, check


def test_cupti_by_the_sonames_tf_asks_for() -> None:
    assert xla_tools.CUPTI_SONAMES == ("libcupti.so.11.2", "libcupti.so")
    missing = xla_tools.cupti(("libcupti-not-here.so.11.2",))
    assert missing.status == WARN and missing.data["errors"], missing
    assert_one_line(missing)
    # The loading itself, on a library every Linux host has: the second name is taken when the first fails.
    found = xla_tools.cupti(("libcupti-not-here.so.11.2", "libc.so.6"))
    assert found.status == PASS and found.data["loaded"] == "libc.so.6", found
    assert "soname" not in found.data  # layer 2's image test lists the CUDA libraries by that key


@pytest.mark.parametrize("visible", ["void", "none"])
def test_no_xla_checks_in_a_start_without_gpus(monkeypatch: pytest.MonkeyPatch, visible: str) -> None:
    monkeypatch.setenv("NVIDIA_VISIBLE_DEVICES", visible)
    checks = l2_cudalibs.run()
    assert [(check.id, check.status) for check in checks] == [("lib.cpu_only", SKIP)]


def test_layer2_runs_them(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("NVIDIA_VISIBLE_DEVICES", "all")
    monkeypatch.setenv("XLA_FLAGS", f"--xla_gpu_cuda_data_dir={cuda_root(tmp_path, 'cuda')}")
    ids = [check.id for check in l2_cudalibs.run()]
    assert ids[-3:] == ["lib.libdevice", "lib.ptxas", "lib.cupti"], ids
