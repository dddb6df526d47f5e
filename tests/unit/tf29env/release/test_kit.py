"""The kit's parts that need no engine or registry: its output folder, the project files it ships,
SHA256SUMS as `sha256sum -c` reads it, an earlier kit's archive reused only for the same image, and
`build.py kit`'s bad input."""

import json
import subprocess
import tarfile
from pathlib import Path

import pytest

from tf29env import cli
from tf29env.core.errors import EXIT_INPUT, UserError
from tf29env.release import kit


def test_the_output_must_be_new_or_empty(tmp_path: Path) -> None:
    assert kit.check_output(tmp_path / "new") == tmp_path / "new.partial"
    (tmp_path / "empty").mkdir()
    assert kit.check_output(tmp_path / "empty") == tmp_path / "empty.partial"
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(UserError) as info:
        kit.check_output(tmp_path / "full")
    assert info.value.exit_code == EXIT_INPUT and "already exists and is not an empty folder" in str(info.value)
    with pytest.raises(UserError, match="is not a writable folder"):
        kit.check_output(tmp_path / "missing" / "kit")


def test_build_py_kit_refuses_a_full_output_before_the_engine(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "kit").mkdir()
    (tmp_path / "kit" / "old").write_text("")
    assert cli.main(["kit", "--image", "tf29-env:x", "--output", str(tmp_path / "kit")]) == EXIT_INPUT
    err = capsys.readouterr().err
    assert err.splitlines() == [f"error: --output {tmp_path / 'kit'}: already exists and is not an empty folder; "
                                "name a new one"]


def test_the_project_is_what_git_tracks_without_secrets_or_state() -> None:
    names = kit.project_files()
    for needed in ("docker-compose.yml", ".env.example", "Makefile", "compose.mk", "hub.mk", "hub/ctl.py",
                   "hub/package-lock.json", "hub/requirements.txt", kit.HOST_REQUIREMENTS, "docs/kit.md"):
        assert needed in names, needed
    assert not [name for name in names if name.startswith(("hub/.venv/", "hub/node_modules/", "hub/state/",
                                                           "compose/secrets/", ".venv/", "build-output/"))]
    assert names == sorted(names)


def test_the_project_digest_follows_the_contents(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("one")
    first = kit.project_digest(["a"], tmp_path)
    (tmp_path / "a").write_text("two")
    assert kit.project_digest(["a"], tmp_path) != first


def test_sha256sums_is_what_sha256sum_checks(tmp_path: Path) -> None:
    (tmp_path / "wheels" / "hub").mkdir(parents=True)
    (tmp_path / "wheels" / "hub" / "x-1.0-py3-none-any.whl").write_bytes(b"wheel")
    (tmp_path / "kit.json").write_text("{}")
    kit.write_sums(tmp_path)
    assert set(kit.sums(tmp_path)) == {"wheels/hub/x-1.0-py3-none-any.whl", "kit.json"}
    checked = subprocess.run(["sha256sum", "-c", "--quiet", kit.SUMS], cwd=tmp_path, capture_output=True, text=True,
                             check=False)
    assert checked.returncode == 0, checked.stdout
    (tmp_path / "kit.json").write_text("{ }")
    checked = subprocess.run(["sha256sum", "-c", "--quiet", kit.SUMS], cwd=tmp_path, capture_output=True, text=True,
                             check=False)
    assert checked.returncode == 1 and checked.stdout.startswith("kit.json: FAILED")


def test_an_earlier_archive_is_reused_only_for_the_same_image(tmp_path: Path) -> None:
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "x.tar").write_bytes(b"tar")
    (tmp_path / kit.KIT_FILE).write_text(json.dumps({"id": "sha256:aa", "archives": ["images/x.tar"]}))
    assert kit.reused_archive(tmp_path, "sha256:aa") == tmp_path / "images" / "x.tar"
    assert kit.reused_archive(tmp_path, "sha256:bb") is None
    assert kit.reused_archive(None, "sha256:aa") is None
    (tmp_path / "images" / "x.tar").unlink()
    assert kit.reused_archive(tmp_path, "sha256:aa") is None


def test_the_tarball_holds_the_files_and_their_digest(tmp_path: Path) -> None:
    (tmp_path / "compose").mkdir()
    (tmp_path / "compose" / "member.py").write_text("print('hi')\n")
    (tmp_path / "Makefile").write_text("all:\n")
    names = ["Makefile", "compose/member.py", "gone.txt"]  # gone.txt: removed since git listed it
    digest = kit.write_project(tmp_path / "project.tar.gz", names, tmp_path)
    assert digest == kit.project_digest(names, tmp_path)
    with tarfile.open(tmp_path / "project.tar.gz") as archive:
        assert archive.getnames() == ["Makefile", "compose/member.py"]
        member = archive.extractfile("compose/member.py")
        assert member is not None and member.read() == b"print('hi')\n"


@pytest.mark.parametrize(("args", "message"), [
    (["--bogus"], "tf29-kit: error: unknown option --bogus (usage: ./install.sh [TARGET])"),
    (["one", "two"], "tf29-kit: error: one TARGET folder at most (usage: ./install.sh [TARGET])"),
])
def test_install_sh_refuses_bad_arguments_in_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    refused = subprocess.run(["bash", str(kit.INSTALL_SOURCE), *args], cwd=tmp_path, capture_output=True, text=True,
                             timeout=30, check=False)
    assert (refused.returncode, refused.stderr, refused.stdout) == (2, f"{message}\n", "")
    assert list(tmp_path.iterdir()) == []
