"""Every test file on disk is collected by `pytest tests`: a folder that pytest skips silently
(its default norecursedirs once hid tests/build from CI) passes by never running."""

import os
import subprocess
import sys

from tf29env.commands import BUILDER_TESTS_ENV
from tf29env.core.paths import REPO

TESTS = REPO / "tests"


def collected_files() -> set[str]:
    """The test files `pytest --collect-only tests` finds, as paths relative to the repository; the
    builders' tests too, which `build.py test IMAGE` leaves out on purpose (docs/build.md)."""
    env = {name: value for name, value in os.environ.items() if name != BUILDER_TESTS_ENV}
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                           str(TESTS)], cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, f"collection failed:\n{proc.stdout[-3000:]}{proc.stderr[-2000:]}"
    return {line.split("::", 1)[0] for line in proc.stdout.splitlines() if "::" in line}


def test_every_test_file_is_collected() -> None:
    on_disk = {str(path.relative_to(REPO)) for path in TESTS.rglob("test_*.py") if "__pycache__" not in path.parts}
    assert on_disk, "no test files found: wrong folder?"
    missing = sorted(on_disk - collected_files())
    assert not missing, f"test files pytest does not collect (they never run): {missing}"
