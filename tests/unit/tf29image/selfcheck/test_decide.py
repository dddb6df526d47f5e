"""The self-check's decisions on recorded real outputs of real GPUs (tests/fixtures/selfcheck,
sources in SOURCES.md): driver version -> verdict, compute capability -> verdict, /dev/shm and
ulimits -> verdict, measured matmul speed -> verdict."""

import json
import re

import pytest

from tf29env.core.paths import REPO
from tf29image.selfcheck import decide
from tf29image.selfcheck.model import FAIL, PASS, WARN

FIXTURES = REPO / "tests" / "fixtures" / "selfcheck"
RUNTIME_TF = (11, 2, 2)  # nvidia/cuda:11.2.2-cudnn8-runtime, the image's real base
RUNTIME_STANDIN = (11, 8, 89)  # the stand-in base's libcudart
BUILD = json.loads((FIXTURES / "tf-2.9.3-build-info.json").read_text())
ARCHS: list[str] = BUILD["cuda_compute_capabilities"]


def record(name: str) -> str:
    return (FIXTURES / name).read_text()


def smi_driver(name: str) -> str:
    """The driver version as nvidia-smi printed it: `-q`/`-a` through the check's own parser; the
    plain table's header ('Driver Version: 450.119.03'), which the image never parses, read here."""
    text = record(name)
    if "NVSMI LOG" in text:
        driver = decide.parse_smi_query(text)["driver"]
        assert isinstance(driver, str)
        return driver
    match = re.search(r"Driver Version:\s*(\S+)", text)
    assert match, f"no driver version in {name}"
    return match.group(1)


@pytest.mark.parametrize(("name", "driver", "cuda", "gpus"), [
    ("t4-colab-nvidia-smi-q.txt", "460.32.03", "11.2", ["Tesla T4"]),
    ("t4-nvidia-docker-nvidia-smi-a.txt", "440.33.01", "10.2", ["Tesla T4"]),
    ("a100-80gb-nvidia-smi-a.txt", "470.103.01", "11.4", ["NVIDIA A100-SXM4-80GB"]),
    ("quadro-p2200-nvidia-smi-a.txt", "450.80.02", "11.0", ["Quadro P2200"]),
])
def test_parse_nvidia_smi_query(name: str, driver: str, cuda: str, gpus: list[str]) -> None:
    assert decide.parse_smi_query(record(name)) == {"driver": driver, "cuda": cuda, "gpus": gpus}


@pytest.mark.parametrize(("name", "version"), [
    ("proc-version-open-565.txt", "565.57.01"),
    ("proc-version-open-555.58.txt", "555.58"),
])
def test_parse_proc_driver_version(name: str, version: str) -> None:
    assert decide.parse_proc_version(record(name)) == version


def test_proc_version_without_a_version_is_none() -> None:
    assert decide.parse_proc_version("GCC version:  gcc version 13.3.0\n") is None


# driver -> verdict for the image's real CUDA 11.2.2 runtime and for the stand-in's 11.8 runtime
DRIVER_CASES = [
    ("t4-colab-nvidia-smi-q.txt", PASS, WARN),  # 460.32.03: exactly 11.2.2's minimum
    ("t4-nvidia-docker-nvidia-smi-a.txt", FAIL, FAIL),  # 440.33.01: a CUDA 10.2 driver
    ("a100-80gb-nvidia-smi-a.txt", PASS, WARN),  # 470.103.01: 11.8 only by minor-version compatibility
    ("quadro-p2200-nvidia-smi-a.txt", WARN, WARN),  # 450.80.02: the floor of minor-version compatibility
    ("a100-40gb-nvidia-smi.txt", WARN, WARN),  # 450.119.03
    ("v100-nvidia-smi.txt", PASS, PASS),  # 525.105.17: a CUDA 12 driver runs every 11.x
    ("h100-nvidia-smi.txt", PASS, PASS),  # 535.161.08
    ("v100-nvidia-smi-header-450.51.05.txt", FAIL, FAIL),  # below 450.80.02
]


@pytest.mark.parametrize(("name", "for_tf", "for_standin"), DRIVER_CASES)
def test_driver_verdict(name: str, for_tf: str, for_standin: str) -> None:
    driver = smi_driver(name)
    tf_check = decide.driver_verdict(driver, RUNTIME_TF)
    standin_check = decide.driver_verdict(driver, RUNTIME_STANDIN)
    assert (tf_check.status, standin_check.status) == (for_tf, for_standin)
    for check in (tf_check, standin_check):
        assert check.id == "driver.version" and driver in check.what
        assert (check.fix is None) == (check.status == PASS)
        if check.status != PASS:
            assert check.fix is not None and check.data["native_minimum"] in check.fix


def test_driver_verdict_names_the_minimum_it_applied() -> None:
    assert decide.driver_verdict("460.27.03", (11, 2, 0)).status == PASS  # 11.2.0 needed less than 11.2.1+
    assert decide.driver_verdict("460.27.03", (11, 2, 2)).data["native_minimum"] == "460.32.03"
    assert decide.driver_verdict("520.61.05", RUNTIME_STANDIN).status == PASS
    assert decide.driver_verdict("520.56.06", RUNTIME_STANDIN).status == WARN


def test_two_part_driver_versions_compare() -> None:
    version = decide.parse_proc_version(record("proc-version-open-555.58.txt"))
    assert version is not None and decide.driver_verdict(version, RUNTIME_STANDIN).status == PASS


def test_bad_version_text_is_refused() -> None:
    with pytest.raises(ValueError, match="not a version"):
        decide.parse_version("460.32.03beta")


def capability(name: str) -> tuple[str, tuple[int, int]]:
    """GPU name and compute capability from a TF device log or a PyTorch/TF warning."""
    text = " ".join(record(name).split())
    tf_log = (r"name: (.+?), pci bus id: [^,]+?\)?"
              r"(?: with Cuda c ?ompute capability |, compute capability: )(\d+)\.(\d+)")
    for pattern in (tf_log, r"^(.+?) with CUDA capability sm_(\d)(\d)"):
        match = re.search(pattern, text)
        if match:
            return match.group(1), (int(match.group(2)), int(match.group(3)))
    raise AssertionError(f"no compute capability in {name}")


# record -> (Tensor Cores verdict, JIT verdict or None when TF 2.9 has SASS for it)
CC_CASES = [
    ("tf-device-log-v100.txt", "Tesla V100-SXM2-32GB", (7, 0), PASS, None),
    ("tf-device-log-t4.txt", "Tesla T4", (7, 5), PASS, None),
    ("tf-device-log-m40.txt", "Tesla M40 24GB", (5, 2), WARN, None),
    ("tf-device-log-rtx3090.txt", "NVIDIA GeForce RTX 3090", (8, 6), PASS, WARN),
    ("torch-warning-a100.txt", "A100-SXM4-40GB", (8, 0), PASS, WARN),
    ("torch-warning-h100.txt", "NVIDIA H100 80GB HBM3", (9, 0), PASS, WARN),
    ("tf-ignoring-cc30.txt", "GeForce GTX 660 Ti", (3, 0), WARN, FAIL),
]


@pytest.mark.parametrize(("name", "gpu", "cc", "cores", "jit"), CC_CASES)
def test_compute_capability_verdicts(name: str, gpu: str, cc: tuple[int, int], cores: str, jit: str | None) -> None:
    assert capability(name) == (gpu, cc)
    checks = decide.gpu_verdicts(gpu, cc, ARCHS)
    by_id = {check.id: check for check in checks}
    assert by_id["perf.tensor_cores"].status == cores
    assert ("mixed_float16" in by_id["perf.tensor_cores"].what) and gpu in by_id["perf.tensor_cores"].what
    if jit is None:
        assert "perf.ptx_jit" not in by_id
    else:
        assert by_id["perf.ptx_jit"].status == jit
    if jit == WARN:
        fix = by_id["perf.ptx_jit"].fix
        assert fix is not None and "CUDA_CACHE_MAXSIZE" in fix and "ComputeCache" in fix
        assert "compute_80" in by_id["perf.ptx_jit"].what and "minutes" in by_id["perf.ptx_jit"].what


def test_tf_says_the_same_about_jit_as_the_verdict() -> None:
    # TensorFlow's own warning on an H100 and our verdict for compute capability 9.0 agree.
    assert "jit-compiled from PTX" in record("tf-warning-cc90.txt")
    assert "compute capability 9.0" in record("tf-warning-cc90.txt")
    verdict = {c.id: c for c in decide.gpu_verdicts("H100", (9, 0), ARCHS)}["perf.ptx_jit"]
    assert verdict.status == WARN and "30 minutes" in verdict.what


def test_arch_list_of_the_real_build() -> None:
    sass, ptx = decide.parse_arch_list(ARCHS)
    assert sass == [(3, 5), (5, 0), (6, 0), (7, 0), (7, 5)] and ptx == [(8, 0)]
    assert decide.has_sass_for((6, 1), sass) and not decide.has_sass_for((8, 0), sass)


def docker_limits() -> list[dict[str, list[int]]]:
    """The three recorded container runs: Docker's defaults, --shm-size=1g, --ipc=host + stack."""
    runs: list[dict[str, list[int]]] = []
    for line in record("docker-20.10-shm-ulimits.txt").splitlines():
        if line.startswith("# docker run"):
            runs.append({})
        elif line.strip():
            words = line.split()
            if words[0] == "shm_blocks":
                runs[-1]["shm"] = [int(words[1]) * int(words[3])]
            else:
                runs[-1][words[0]] = [int(v) for v in words[1:]]
    assert len(runs) == 3
    return runs


def test_shm_verdicts_on_recorded_containers() -> None:
    default, bigger, host_ipc = docker_limits()
    check = decide.shm_verdict(default["shm"][0])
    assert check.status == WARN and "64 MiB" in check.what
    assert check.fix is not None and "--shm-size" in check.fix and "--ipc=host" in check.fix
    assert decide.shm_verdict(bigger["shm"][0]).status == PASS
    assert decide.shm_verdict(bigger["shm"][0]).data["bytes"] == 1024 ** 3
    assert decide.shm_verdict(host_ipc["shm"][0]).status == PASS


def test_ulimit_verdicts_on_recorded_containers() -> None:
    default, _, raised = docker_limits()
    memlock = default["memlock"][0]
    assert decide.memlock_verdict(memlock, gpu=False).status == PASS
    with_gpu = decide.memlock_verdict(memlock, gpu=True)
    assert with_gpu.status == WARN and with_gpu.fix == "start the container with --ulimit memlock=-1"
    assert decide.memlock_verdict(-1, gpu=True).status == PASS  # RLIM_INFINITY
    assert decide.stack_verdict(default["stack"][0]).status == PASS
    assert decide.stack_verdict(raised["stack"][0]).what == "stack ulimit is 64 MiB"
    assert decide.stack_verdict(4 * 1024 * 1024).status == WARN


@pytest.mark.parametrize(("value", "status"), [("true", PASS), (None, WARN), ("false", WARN), ("1", WARN),
                                               ("True", WARN)])
def test_allow_growth_verdict(value: str | None, status: str) -> None:
    check = decide.allow_growth_verdict(value)
    assert check.status == status
    if value not in ("true", None, "false"):
        assert "ignored by TensorFlow" in check.what


def test_speed_verdict_on_recorded_h100_numbers() -> None:
    numbers = {}
    section = ""
    for line in record("h100-torch-matmul-tflops.txt").splitlines():
        if line.endswith(":"):
            section = line[:-1]
        elif "TFLOPS" in line:
            numbers[section] = float(line.split(":")[1].split()[0])
    _, cc = capability("torch-warning-h100.txt")
    check = decide.speed_verdict("NVIDIA H100 80GB HBM3", cc, numbers["FP32"], numbers["FP16"], numbers["TF32"])
    assert check.status == PASS
    assert check.data["speedup"] == pytest.approx(760.04 / 51.88, abs=0.01)
    assert "TF32" in check.what and check.data["tf32_tflops"] == 402.15


def test_speed_verdict_warnings() -> None:
    # Synthetic numbers (no recorded slow run exists): the two WARN paths and their boundaries.
    assert decide.speed_verdict("x", (7, 0), 10.0, 14.0).status == WARN  # Tensor Cores but < 1.5x
    assert decide.speed_verdict("x", (7, 0), 10.0, 15.0).status == PASS
    assert decide.speed_verdict("x", (6, 1), 10.0, 9.0).status == WARN  # FP16 slower without Tensor Cores
    assert decide.speed_verdict("x", (6, 0), 9.0, 18.0).status == PASS


def test_tflops_of_a_square_matmul() -> None:
    assert decide.tflops(4096, 2 * 4096 ** 3 / 1e12) == pytest.approx(1.0)
