"""The linters the project holds itself to (DEVELOPERS' standards), so that CI enforces them."""

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

CHECKS = {
    "shellcheck-entrypoint": ["shellcheck", "-x", "-a", "image/entrypoint.sh"],
    "shellcheck-scripts": ["shellcheck", "image/bin/selfcheck", "image/bin/healthcheck", "image/ssh/profile.sh",
                           "scripts/host-setup.sh", ".ci/run"],
    "hadolint": [str(BIN / "hadolint"), "Dockerfile", "standin/Dockerfile"],
    "ruff": [str(BIN / "ruff"), "check", "."],
    "mypy": [str(BIN / "mypy")],
}


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_clean(name: str) -> None:
    proc = subprocess.run(CHECKS[name], cwd=REPO, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
