"""build.py's argument errors: one line on stderr, the documented exit code, and no engine asked
(DOCKER_HOST points at a socket that does not exist, so asking it would give exit 3 instead)."""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tf29env.cli import main
from tf29env.commands import BUILDER_TESTS_ENV
from tf29env.core import errors
from tf29env.core.errors import EXIT_ENGINE, EXIT_INPUT
from tf29env.core.paths import REPO

CA = "/usr/local/share/ca-certificates"


@pytest.fixture(autouse=True)
def no_engine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-such.sock")


@pytest.mark.parametrize(("argv", "words"), [
    (["build", "--variant", "tpu"], "argument --variant: invalid choice: 'tpu'"),
    (["build", "--tag", "tf29-env:bad tag!"], "--tag tf29-env:bad tag!: 'bad tag!' is not a valid tag"),
    (["build", "--tag", "TF29:x"], "--tag TF29:x: not a valid repository"),
    (["build", "--repository", "Upper/Case"], "--repository Upper/Case: not a valid repository"),
    (["build", "--ca-cert", "/nonexistent/ca.crt"], "--ca-cert /nonexistent/ca.crt: no such file or directory"),
    (["build", "--apt-mirror", "mirror.example"], "--apt-mirror mirror.example: not an http:// or https:// URL"),
    (["build", "--http-proxy", "proxy:3128"], "--http-proxy proxy:3128: not an http:// or https:// URL"),
    (["build", "--cache-from", "A:B"], "--cache-from A:B: not a valid repository"),
    (["push", "--registry", "https://127.0.0.1:5000", "tf29-env:x"], "--registry https://127.0.0.1:5000: expected"),
    (["push", "tf29-env:x"], "the following arguments are required: --registry"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
])
def test_bad_input(argv: list[str], words: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == EXIT_INPUT
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and words in err, err


def test_a_directory_without_certificates(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["build", "--ca-cert", str(tmp_path)]) == EXIT_INPUT
    assert f"--ca-cert {tmp_path}: the directory holds no *.crt or *.pem file" in capsys.readouterr().err


def test_no_build_recorded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["push", "--registry", "127.0.0.1:5000", "--output-dir", str(tmp_path)]) == EXIT_INPUT
    assert f"no build recorded in {tmp_path}/latest.json" in capsys.readouterr().err


def test_no_engine(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["build", "--ca-cert", CA]) == EXIT_ENGINE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no Docker engine answers" in err and "DOCKER_HOST" in err


@pytest.mark.parametrize("command", [["/usr/bin/python3", "build.py"], ["./build.py"]], ids=["python3", "./build.py"])
def test_any_python3_runs_it_in_the_projects_venv(command: list[str]) -> None:
    """`python3 build.py` and `./build.py`, as the docs show them, from the distro's Python without the
    tool's dependencies: it runs itself again in .venv (made by `make venv` where missing)."""
    proc = subprocess.run([*command, "--help"], capture_output=True, text=True, check=False, cwd=REPO, timeout=60)
    assert proc.returncode == 0 and "usage: build.py" in proc.stdout, proc.stderr


def test_a_venv_without_the_tools_is_one_line_saying_make_venv(tmp_path: Path) -> None:
    """A .venv that lacks the tool's dependencies (a real venv, made without them): one line, not a traceback."""
    shutil.copy(REPO / "build.py", tmp_path / "build.py")
    (tmp_path / "tf29env").symlink_to(REPO / "tf29env")
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip", str(tmp_path / ".venv")], check=True, timeout=60)
    (tmp_path / ".venv" / ".done").touch()
    proc = subprocess.run(["/usr/bin/python3", "build.py", "--help"], capture_output=True, text=True, check=False,
                          cwd=tmp_path, timeout=60)
    assert proc.returncode == EXIT_INPUT and proc.stdout == ""
    assert len(proc.stderr.splitlines()) == 1 and "`make venv`" in proc.stderr, proc.stderr


def test_docs_list_every_exit_code_of_errors_py() -> None:
    """docs/build.md's exit-code table explains exactly the codes tf29env/core/errors.py defines (and 0)."""
    section = (REPO / "docs" / "build.md").read_text().split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    documented = {int(code) for code in re.findall(r"^\| (\d+) \|", section, re.MULTILINE)}
    defined = {value for name, value in vars(errors).items() if name.startswith("EXIT_")}
    assert documented == {0, *defined}


@pytest.mark.parametrize(("value", "collected"), [("0", False), ("1", True)])
def test_checking_one_image_leaves_the_builders_tests_out(value: str, collected: bool) -> None:
    """What `build.py test IMAGE` sets (BUILDER_TESTS_ENV=0) leaves tests/build and tests/buildkit uncollected."""
    folders = [str(REPO / "tests" / name) for name in ("build", "buildkit")]
    proc = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *folders],
                          capture_output=True, text=True, check=False, cwd=REPO, timeout=120,
                          env={**os.environ, BUILDER_TESTS_ENV: value})
    found = [line for line in proc.stdout.splitlines() if "::" in line]
    assert {line.split("/")[1] for line in found} == ({"build", "buildkit"} if collected else set()), proc.stdout
