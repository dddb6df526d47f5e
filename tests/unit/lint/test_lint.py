"""The linters the project holds itself to (DEVELOPERS' standards), so that CI enforces them."""

import subprocess
import sys
from pathlib import Path

import pytest

from tf29env.core.paths import REPO

BIN = Path(sys.executable).parent

# Every shell file outside the entrypoint (which shellcheck follows into entrypoint.d/ on its own).
SCRIPTS = sorted(str(path.relative_to(REPO)) for pattern in (
    "image/bin/*", "image/shell/*.sh", "scripts/*.sh", ".ci/run", "compose/start.d/*.sh", "deploy/slurm/*.sbatch",
    "tests/hpc/node/*.sh", "build-ca.sh")
    for path in REPO.glob(pattern))

# The one list of linters: `make lint` runs this file.
CHECKS = {
    "shellcheck-entrypoint": ["shellcheck", "-x", "-a", "image/entrypoint.sh"],
    "shellcheck-scripts": ["shellcheck", *SCRIPTS],
    "hadolint": [str(BIN / "hadolint"), "Dockerfile", "standin/Dockerfile", "tests/hpc/node/Dockerfile",
                 "tests/hpc/hub/Dockerfile"],
    "ruff": [str(BIN / "ruff"), "check", "."],  # image/ at Python 3.8 (pyproject.toml)
    "mypy": [str(BIN / "mypy")],
    # What ships in the image runs on its Python 3.8, against its venv's packages, not the host's.
    # mypy 1.17+ checks for 3.9 at the oldest; ruff keeps the syntax to 3.8. Module names as the image's
    # tf29-env.pth gives them: image/python/ (tf29image.startup.plan).
    "mypy-image": ["env", "MYPYPATH=image/python", str(BIN / "mypy"), "--python-version", "3.9",
                   "--no-site-packages", "--explicit-package-bases", "image"],
}


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_clean(name: str) -> None:
    assert len(SCRIPTS) >= 6, SCRIPTS  # the globs still find the scripts
    proc = subprocess.run(CHECKS[name], cwd=REPO, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
