"""bench.cli: bad input is one line (BenchError or tf29env's UserError) before anything starts."""

from pathlib import Path

import pytest

from bench import cli
from bench.errors import BenchError
from tf29env.core.errors import UserError


def test_defaults(tmp_path: Path) -> None:
    args = cli.parse(["--output", str(tmp_path / "r.json")])
    assert args.variant == ["cpu", "gpu"] and args.runs == 3 and not args.skip_cold
    assert (tmp_path / "r.log").exists()  # the output folder was checked by writing to it


@pytest.mark.parametrize(("argv", "message"), [
    (["--runs", "0"], "at least 1"),
    (["--runs", "two"], "at least 1"),
    (["--variant", "tpu"], "invalid choice"),
    (["--image", "tf29-env:x", "--variant", "cpu"], "give one of them"),
    (["--image", "tf29-env:x", "--slim", "cpu"], "cannot measure --image"),
    (["--slim", "tpu"], "invalid choice"),
    (["--output", "results.md"], "name a .json file"),
    (["--output", "/proc/no/such/dir/r.json"], "cannot write there"),
    (["--frobnicate"], "unrecognized arguments"),
    (["--side-by-side", "--variant", "cpu"], "add --variant gpu"),
])
def test_bad_input_is_one_line(argv: list[str], message: str) -> None:
    with pytest.raises(BenchError, match=message) as info:
        cli.parse(argv)
    assert "\n" not in str(info.value)


def test_a_bad_image_reference_is_refused_by_tf29envs_own_check(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="--image"):
        cli.parse(["--image", "Bad::Ref", "--output", str(tmp_path / "r.json")])


def test_main_turns_bad_input_into_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["--runs", "0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bench: ") and err.count("\n") == 1
