"""compose/upgrade.py's pure parts: the self-check's container gate and its options."""

from __future__ import annotations

from typing import Any

import pytest

from compose import upgrade


def report(*checks: tuple[str, str]) -> dict[str, Any]:
    return {"layers": [{"layer": 2, "checks": [{"id": ident, "status": status, "what": f"{ident} found"}
                                               for ident, status in checks]}]}


@pytest.mark.parametrize(("checks", "failures"), [
    ((("tf.version", "PASS"), ("tf.gpus", "FAIL")), []),  # no GPU on this host: not the image's fault
    ((("layer3.crashed", "FAIL"), ("tf.gpus", "FAIL")), ["layer3.crashed: layer3.crashed found"]),
    ((("lib.cudnn", "FAIL"), ("lib.cupti", "WARN")), ["lib.cudnn: lib.cudnn found"]),
    ((("lib.cpu_only", "SKIP"),), []),
])
def test_the_gate_fails_on_the_images_own_failures(checks: tuple[tuple[str, str], ...], failures: list[str]) -> None:
    assert upgrade.gate_failures(report(*checks)) == failures


@pytest.mark.parametrize("argv", [["--timeout", "0", "rollback"], ["--timeout", "soon", "rollback"],
                                  ["upgrade", "--image", "x", "--keep", "0"], ["upgrade"]])
def test_bad_options_are_one_line_and_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        upgrade.parse_args(argv)
    assert stopped.value.code == 2
    assert len(capsys.readouterr().err.strip().splitlines()[-1:]) == 1
