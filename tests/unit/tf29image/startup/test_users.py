"""tf29image.startup.users: the passwd and group copies libnss-wrapper serves an arbitrary uid, and the
checks of CHOWN_HOME_OPTS / CHOWN_EXTRA / CHOWN_EXTRA_OPTS, on real files (no engine needed). The
image tests (tests/image/test_dockerstacks_users.py) run the same code in the container."""

import subprocess
from pathlib import Path

import pytest

from tests.unit.tf29image import command, environment
from tf29image.startup import users

PASSWD = "root:x:0:0:root:/root:/bin/bash\njovyan:x:1000:100::/home/jovyan:/bin/bash\n"
GROUP = "root:x:0:\nshadow:x:42:\nusers:x:100:\n"
HOME_DIR = "/srv/home"
TMP = "/tmp"  # noqa: S108 - a path the checks refuse, never used


def test_an_arbitrary_uid_gets_the_name_and_the_image_user_moves_aside() -> None:
    text = users.with_user(PASSWD, 12345, 100, "jovyan", "/home/jovyan")
    assert text.splitlines() == ["root:x:0:0:root:/root:/bin/bash", "jovyan:x:12345:100:jovyan:/home/jovyan:/bin/bash"]


def test_the_image_users_uid_takes_a_new_name() -> None:
    text = users.with_user(PASSWD, 1000, 100, "alice", "/home/jovyan")
    assert [line.split(":")[0] for line in text.splitlines()] == ["root", "alice"]
    assert "alice:x:1000:100:alice:/home/jovyan:/bin/bash" in text


def test_a_new_gid_gets_a_group_and_a_known_one_keeps_its_own() -> None:
    assert users.with_group(GROUP, 12345, "alice").splitlines()[-1] == "alice:x:12345:"
    assert users.with_group(GROUP, 100, "alice") == GROUP
    with pytest.raises(users.Refused, match="'shadow' is the image's group 42"):
        users.with_group(GROUP, 12345, "shadow")


def test_nss_files_are_written_from_etc(tmp_path: Path) -> None:
    etc = tmp_path / "etc"
    etc.mkdir()
    (etc / "passwd").write_text(PASSWD)
    (etc / "group").write_text(GROUP)
    users.write_nss_files(tmp_path, etc, 4242, 4242, "bob", "team", HOME_DIR)
    assert (tmp_path / "passwd").read_text().endswith("bob:x:4242:4242:bob:/srv/home:/bin/bash\n")
    assert (tmp_path / "group").read_text().endswith("team:x:4242:\n")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["etc", "group", "passwd"]


@pytest.mark.parametrize("value", ["-R", "--recursive", "-Rv", "-R -h", "-c --quiet", ""])
def test_safe_chown_options(value: str) -> None:
    assert users.chown_options("CHOWN_HOME_OPTS", value) == value.split()


@pytest.mark.parametrize("value", ["-L", "-RL", "-H -R", "--from=0:0", "--reference=/etc", "--dereference", "x",
                                   "-R;id"])
def test_other_chown_options_are_refused(value: str) -> None:
    with pytest.raises(users.Refused, match=r"^CHOWN_EXTRA_OPTS: '.*' is not allowed"):
        users.chown_options("CHOWN_EXTRA_OPTS", value)


def test_extra_folders_of_ones_own(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b c").mkdir()
    value = f" {tmp_path}/a ,{tmp_path}/b c,"
    assert users.chown_extra_paths(value) == [f"{tmp_path}/a", f"{tmp_path}/b c"]


@pytest.mark.parametrize(("path", "message"), [
    ("/etc", "/etc is or holds the system's /etc"),
    ("/usr/local", "is or holds the system's /usr"),
    ("/", "/ is or holds the system's"),
    ("/opt/tf29-env", "the system's /opt/tf29-env"),
    (TMP, f"{TMP} holds others' files too"),
    ("/home", "/home holds others' files too"),
    ("relative/dir", "'relative/dir' is not an absolute path"),
    ("/nonexistent-folder", "/nonexistent-folder does not exist"),
    (f"{TMP}/../etc", "holds '..'"),
])
def test_system_and_bad_folders_are_refused(path: str, message: str) -> None:
    with pytest.raises(users.Refused, match=r"^CHOWN_EXTRA: ") as refused:
        users.chown_extra_paths(path)
    assert message in str(refused.value)


def test_a_link_counts_where_it_leads(tmp_path: Path) -> None:
    (tmp_path / "config").symlink_to("/etc")
    with pytest.raises(users.Refused, match=r"\(that is /etc\) is or holds the system's /etc"):
        users.chown_extra_paths(str(tmp_path / "config"))


def run_script(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command("startup.users", *args), capture_output=True, text=True,
                          env=environment(env or {}), check=False)


def test_the_chown_settings_or_one_line(tmp_path: Path) -> None:
    assert users.chown_options("CHOWN_EXTRA_OPTS", "-R -h") == ["-R", "-h"]
    assert users.chown_extra_paths(str(tmp_path)) == [str(tmp_path)]
    with pytest.raises(users.Refused) as refused:
        users.chown_extra_paths("/var")
    assert str(refused.value).startswith("CHOWN_EXTRA: /var is or holds") and "\n" not in str(refused.value)


def test_the_cli_without_its_arguments_is_one_usage_line() -> None:
    usage = run_script("nss")
    assert usage.returncode == 2 and usage.stderr.startswith("usage:")
