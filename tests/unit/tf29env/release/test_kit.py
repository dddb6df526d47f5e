"""The kit's parts that need no engine or registry: its output (a folder or one tarball), the project
files it ships, SHA256SUMS as `sha256sum -c` reads it, the made kit moved to its folder or written as
a tarball that unpacks to a checked kit, an earlier kit's archive reused only for the same image, and
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


def test_a_tarball_output_must_be_new(tmp_path: Path) -> None:
    assert kit.check_output(tmp_path / "kit.tar") == tmp_path / "kit.tar.partial"
    for existing in ("file.tar", "folder.tar"):
        if existing == "file.tar":
            (tmp_path / existing).write_bytes(b"")
        else:
            (tmp_path / existing).mkdir()
        with pytest.raises(UserError) as info:
            kit.check_output(tmp_path / existing)
        assert info.value.exit_code == EXIT_INPUT
        assert str(info.value) == f"--output {tmp_path / existing}: already exists; name a new .tar file"
    with pytest.raises(UserError, match="is not a writable folder"):
        kit.check_output(tmp_path / "missing" / "kit.tar")


@pytest.mark.parametrize("output", ["kit", "kit.tar"])
def test_build_py_kit_refuses_a_bad_output_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      output: str) -> None:
    (tmp_path / output).mkdir()
    (tmp_path / output / "old").write_text("")
    for bad, why in ((tmp_path / output, "already exists"), (tmp_path / "missing" / output, "is not a writable")):
        assert cli.main(["kit", "--image", "tf29-env:x", "--output", str(bad)]) == EXIT_INPUT
        err = capsys.readouterr().err
        assert err.splitlines() == [err.strip()] and err.startswith(f"error: --output {bad}: ") and why in err, err


def made_kit(partial: Path) -> None:
    """A small kit's files in PARTIAL, with their SHA256SUMS, as make() leaves them before finish()."""
    (partial / kit.IMAGES).mkdir(parents=True)
    (partial / kit.IMAGES / "tf29-env_x.tar").write_bytes(b"image" * 1000)
    (partial / kit.KIT_FILE).write_text("{}")
    (partial / kit.INSTALL).write_text("#!/bin/sh\n")
    (partial / kit.INSTALL).chmod(0o755)
    kit.write_sums(partial)


def test_a_folder_kit_is_renamed_into_place(tmp_path: Path) -> None:
    (tmp_path / "kit").mkdir()  # an empty folder may be the output
    partial = kit.check_output(tmp_path / "kit")
    made_kit(partial)
    kit.finish(partial, tmp_path / "kit", lambda _line: None)
    assert not partial.exists() and set(kit.sums(tmp_path / "kit")) == {
        kit.KIT_FILE, kit.INSTALL, f"{kit.IMAGES}/tf29-env_x.tar"}


def test_a_tarball_unpacks_to_a_kit_that_checks(tmp_path: Path) -> None:
    output = tmp_path / "usb" / "tf29-kit.tar"
    output.parent.mkdir()
    partial = kit.check_output(output)
    made_kit(partial / "tf29-kit")
    said: list[str] = []
    kit.finish(partial, output, said.append)
    assert not partial.exists() and said == ["==> tf29-kit.tar (uncompressed, the image archive last)"]
    with tarfile.open(output) as archive:  # "r:" only: not compressed
        names = archive.getnames()
        assert {member.uid for member in archive.getmembers()} == {0}
    assert names[0] == "tf29-kit" and names[-1] == f"tf29-kit/{kit.IMAGES}/tf29-env_x.tar"
    assert f"tf29-kit/{kit.SUMS}" in names and f"tf29-kit/{kit.INSTALL}" in names
    unpacked = subprocess.run(["tar", "-xf", str(output)], cwd=tmp_path, capture_output=True, text=True, check=False)
    assert unpacked.returncode == 0, unpacked.stderr
    checked = subprocess.run(["sha256sum", "-c", "--quiet", kit.SUMS], cwd=tmp_path / "tf29-kit", capture_output=True,
                             text=True, check=False)
    assert checked.returncode == 0, checked.stdout
    assert (tmp_path / "tf29-kit" / kit.INSTALL).stat().st_mode & 0o111
    assert kit.size_of(output) == output.stat().st_size


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
