"""The selfcheck command on this host (no GPU, no driver, no CUDA libraries, no TensorFlow), run
as a user runs it: the framework-free layers only, modes and exit codes, the JSON report against
the shipped schema, and bad input as one line with exit 2."""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tf29env.core.paths import REPO

IMAGE_PYTHON = REPO / "image" / "python"  # where the image's tf29-env.pth points
SCHEMA = json.loads((IMAGE_PYTHON / "tf29image" / "selfcheck" / "report.schema.json").read_text())
FREE_LAYERS = "1,2,6"


def selfcheck(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    # What the image's ENV or a user sets is left out: each test sets what it needs.
    environment = {k: v for k, v in os.environ.items() if k not in ("SELF_CHECK", "TFENV_RUN_DIR")}
    environment.update(env or {})
    environment["PYTHONPATH"] = str(IMAGE_PYTHON)
    return subprocess.run([sys.executable, "-m", "tf29image.selfcheck", *args], capture_output=True, text=True,
                          timeout=60, env=environment, check=False)


def report_of(path: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(path.read_text())
    jsonschema.validate(report, SCHEMA, cls=jsonschema.Draft202012Validator)
    return report


def test_the_schema_is_a_valid_json_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["properties"]["schema"]["const"] == "tf29-env/selfcheck/v1"


def test_the_schema_says_what_the_layer_table_says() -> None:
    # The schema is a static file shipped in the image: this test is its tie to LAYERS, the one home.
    from tf29image.selfcheck.checks import LAYERS  # noqa: PLC0415

    layer = SCHEMA["$defs"]["layer"]["properties"]
    numbers = [info.layer for info in LAYERS]
    assert (layer["layer"]["minimum"], layer["layer"]["maximum"]) == (min(numbers), max(numbers))
    assert layer["name"]["enum"] == [info.name for info in LAYERS]
    layers = SCHEMA["properties"]["layers"]
    assert layers["minItems"] == layers["maxItems"] == len(LAYERS)  # every layer is reported, run or not


def test_layer_texts_from_the_table_read_as_before() -> None:
    from tf29image.selfcheck import cli  # noqa: PLC0415
    from tf29image.selfcheck.checks import l3_tensorflow, l5_performance  # noqa: PLC0415

    assert (cli.ALL_LAYERS, cli.NO_TF_LAYERS, cli.LAYER_RANGE) == ("1,2,3,4,5,6", "1,2,6", "1-6")
    assert l3_tensorflow.SEE_DRIVER_AND_LIBS == "see layers 1 and 2"
    assert l5_performance.SEE_DRIVER_AND_TF == "see layers 1 and 3"
    help_text = " ".join(selfcheck("--help").stdout.split())
    assert "comma-separated layers to run (1,2,6 need no TensorFlow)" in help_text


def test_warn_mode_reports_and_exits_0(tmp_path: Path) -> None:
    done = selfcheck("--layers", FREE_LAYERS, "--output", str(tmp_path / "r.json"))
    assert done.returncode == 0, done.stderr
    report = report_of(tmp_path / "r.json")
    assert (report["mode"], report["exit_code"], report["gpu_visible"]) == ("warn", 0, False)
    statuses = {layer["layer"]: layer["status"] for layer in report["layers"]}
    driver = {check["id"]: check for check in report["layers"][0]["checks"]}["driver.present"]
    if not Path("/dev/nvidiactl").exists():  # this build host and CI: no GPU, no driver
        assert statuses[1] == "FAIL" and "--gpus all" in driver["fix"]
    assert statuses[3] == statuses[4] == statuses[5] == "SKIP"  # not selected
    banner = [line for line in done.stdout.splitlines() if line.startswith("selfcheck: [")]
    assert len(banner) == sum(len(layer["checks"]) for layer in report["layers"] if layer["layer"] in (1, 2, 6))
    assert done.stdout.splitlines()[-1].startswith("selfcheck: ") and "GPU visible: no" in done.stdout


@pytest.mark.parametrize(("args", "env"), [(["--mode", "strict"], {}), ([], {"SELF_CHECK": "strict"})])
def test_strict_mode_exits_1_without_a_gpu(tmp_path: Path, args: list[str], env: dict[str, str]) -> None:
    done = selfcheck("--layers", FREE_LAYERS, "--output", str(tmp_path / "r.json"), *args, env=env)
    assert done.returncode == 1
    report = report_of(tmp_path / "r.json")
    assert report["mode"] == "strict" and report["exit_code"] == 1
    assert done.stdout.splitlines()[-1] == "selfcheck: strict mode: exit 1 because a check failed"


def test_strict_exits_1_on_no_gpu_even_without_a_fail(tmp_path: Path) -> None:
    # Layer 6 alone finds nothing to FAIL on this host; no GPU is reason enough in strict mode.
    done = selfcheck("--layers", "6", "--mode", "strict", "--output", str(tmp_path / "r.json"))
    report = report_of(tmp_path / "r.json")
    assert report["summary"]["fail"] == 0
    assert done.returncode == 1
    assert done.stdout.splitlines()[-1] == "selfcheck: strict mode: exit 1 because no GPU is visible"


def test_self_check_off_in_the_environment_still_checks_by_hand(tmp_path: Path) -> None:
    done = selfcheck("--layers", "6", "--output", str(tmp_path / "r.json"), env={"SELF_CHECK": "off"})
    assert done.returncode == 0
    assert report_of(tmp_path / "r.json")["mode"] == "warn"


@pytest.mark.parametrize(("value", "mode"), [(None, "warn"), ("", "warn"), ("warn", "warn"), ("strict", "strict"),
                                           ("off", "off")])
def test_start_mode_answers_what_the_entrypoint_asks(value: str | None, mode: str) -> None:
    # The start-up planner (startup/plan.py) trusts this answer: SELF_CHECK is parsed nowhere else.
    done = selfcheck("--start-mode", env={} if value is None else {"SELF_CHECK": value})
    assert (done.returncode, done.stdout, done.stderr) == (0, f"{mode}\n", "")


def test_json_flag_prints_exactly_the_report(tmp_path: Path) -> None:
    done = selfcheck("--json", "--layers", FREE_LAYERS, "--output", str(tmp_path / "r.json"))
    assert done.returncode == 0
    printed = json.loads(done.stdout)
    assert printed == report_of(tmp_path / "r.json")


def test_report_dir_from_tfenv_run_dir(tmp_path: Path) -> None:
    done = selfcheck("--layers", "6", env={"TFENV_RUN_DIR": str(tmp_path)})
    assert done.returncode == 0
    assert f"report: {tmp_path}/selfcheck.json" in done.stdout
    report_of(tmp_path / "selfcheck.json")
    assert [p.name for p in tmp_path.iterdir()] == ["selfcheck.json"]  # no scratch file left


def test_no_run_dir_and_no_output_is_one_line_and_not_fatal() -> None:
    done = selfcheck("--layers", "6")
    assert done.returncode == 0
    assert done.stderr.strip().splitlines() == [
        "selfcheck: could not write the report: TFENV_RUN_DIR is not set (the image sets it): use --output"]
    assert "report: not written" in done.stdout


def test_unwritable_report_is_one_line_and_not_fatal(tmp_path: Path) -> None:
    done = selfcheck("--layers", "6", "--output", str(tmp_path / "missing-dir" / "r.json"))
    assert done.returncode == 0
    assert done.stderr.strip().splitlines() == [
        f"selfcheck: could not write the report: {tmp_path}/missing-dir/r.json: No such file or directory"]
    assert "report: not written" in done.stdout


@pytest.mark.parametrize(("args", "env", "line"), [
    ([], {"SELF_CHECK": "loud"}, "selfcheck: SELF_CHECK='loud' is not a mode: use warn (default), strict or off"),
    (["--start-mode"], {"SELF_CHECK": "Strict"},
     "selfcheck: SELF_CHECK='Strict' is not a mode: use warn (default), strict or off"),
    (["--mode", "off"], {}, "selfcheck: argument --mode: invalid choice: 'off' (choose from 'warn', 'strict') "
                            "(see selfcheck --help)"),
    (["--layers", "2,x"], {}, "selfcheck: --layers '2,x' is not a comma-separated list of layer numbers 1-6 "
                              "(see selfcheck --help)"),
    (["--layers", "0"], {}, "selfcheck: --layers '0': layers are numbered 1-6 (see selfcheck --help)"),
    (["--time-limit", "-3"], {}, "selfcheck: --time-limit must be a positive number of seconds (see selfcheck --help)"),
    (["--bogus"], {}, "selfcheck: unrecognized arguments: --bogus (see selfcheck --help)"),
])
def test_bad_input_is_one_line_and_exit_2(args: list[str], env: dict[str, str], line: str) -> None:
    done = selfcheck(*args, env=env)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines() == [line]


def test_variant_from_the_lock_file_the_dockerfile_writes(tmp_path: Path) -> None:
    from tf29image.selfcheck.checks.common import variant  # noqa: PLC0415

    requirements = (REPO / "requirements.txt").read_text()
    gpu_lock, cpu_lock = tmp_path / "gpu.lock", tmp_path / "cpu.lock"
    gpu_lock.write_text(requirements)  # the gpu variant copies requirements.txt
    # The cpu variant: the Dockerfile's sed 's/^tensorflow==/tensorflow-cpu==/'.
    cpu_lock.write_text("\n".join("tensorflow-cpu==" + line[len("tensorflow=="):] if line.startswith("tensorflow==")
                                  else line for line in requirements.splitlines()))
    assert (variant(str(gpu_lock)), variant(str(cpu_lock)), variant(str(tmp_path / "none"))) == ("gpu", "cpu", None)
