"""compose/teamenv.py, which `make up` runs before anything starts: TF29ENV_TEAM_DATA must be a
readable folder, TF29ENV_TLS one of off/self-signed/team with a readable, matching, unexpired
certificate and key for `team`; plain HTTP is published on loopback only unless TLS is on or
TF29ENV_HTTP_ANY=1. Bad input is one line, exit 2, and nothing for make to eval."""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from compose import teamenv
from testkit.tlscerts import make_ca, make_expired, make_server
from tf29env.core.paths import REPO

ANY = "0.0.0.0"  # noqa: S104 - an address compared, not bound


def run(project: Path, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TF29ENV_")}
    return subprocess.run([sys.executable, str(REPO / "compose" / "teamenv.py"), "--project-dir", str(project)],
                          env={**clean, **env}, capture_output=True, text=True, timeout=60, check=False)


def derive(project: Path, **settings: str) -> teamenv.Derived:
    return teamenv.derive(settings, {}, project)


def test_defaults_serve_http_on_loopback_and_no_data(tmp_path: Path) -> None:
    derived = derive(tmp_path)
    assert derived.variables == {"TF29ENV_GEN_CERT": "no", "TF29ENV_JUPYTER_CERT_FILE": "",
                                 "TF29ENV_JUPYTER_KEY_FILE": "", "TF29ENV_TEAM_SHARED_MOUNT": "",
                                 "TF29ENV_TEAM_SHARED_GID": "", "TF29ENV_JUPYTER_ADDRESS": "127.0.0.1"}
    assert "plain HTTP" in derived.notes[0] and "TF29ENV_HTTP_ANY=1" in derived.notes[0]


@pytest.mark.parametrize(("settings", "address"), [
    ({"TF29ENV_TLS": "self-signed"}, ANY),
    ({"TF29ENV_HTTP_ANY": "1"}, ANY),
    ({"TF29ENV_BIND_ADDRESS": "10.0.0.5"}, "127.0.0.1"),
    ({"TF29ENV_BIND_ADDRESS": "10.0.0.5", "TF29ENV_TLS": "self-signed"}, "10.0.0.5"),
    ({"TF29ENV_BIND_ADDRESS": "127.0.0.1"}, "127.0.0.1"),
])
def test_where_jupyter_is_published(tmp_path: Path, settings: dict[str, str], address: str) -> None:
    assert derive(tmp_path, **settings).variables["TF29ENV_JUPYTER_ADDRESS"] == address


def test_team_data_folder(tmp_path: Path) -> None:
    data = tmp_path / "datasets"
    data.mkdir()
    assert derive(tmp_path, TF29ENV_TEAM_DATA=str(data)).variables["TF29ENV_TEAM_DATA"] == str(data)
    # Relative to the folder of docker-compose.yml, as compose reads it.
    assert derive(tmp_path, TF29ENV_TEAM_DATA="./datasets").variables["TF29ENV_TEAM_DATA"] == str(data)


def test_team_cert(tmp_path: Path) -> None:
    ca = make_ca(tmp_path, "team")
    pair = make_server(tmp_path, ca, "box")
    variables = derive(tmp_path, TF29ENV_TLS="team", TF29ENV_TLS_CERT=str(pair.cert),
                       TF29ENV_TLS_KEY=str(pair.key)).variables
    assert variables["TF29ENV_JUPYTER_CERT_FILE"] == teamenv.CERT_TARGET
    assert variables["TF29ENV_JUPYTER_KEY_FILE"] == teamenv.KEY_TARGET
    assert variables["TF29ENV_CERT_SOURCE"] == str(pair.cert)
    assert variables["TF29ENV_JUPYTER_ADDRESS"] == ANY


@pytest.mark.parametrize(("case", "words"), [
    ("data-missing", "TF29ENV_TEAM_DATA={dir}/nowhere: no such folder on this host"),
    ("data-a-file", "TF29ENV_TEAM_DATA={dir}/box.pem: no such folder on this host"),
    ("tls-unknown", "TF29ENV_TLS=on is not one of: off, self-signed, team"),
    ("team-without-files", "TF29ENV_TLS=team needs TF29ENV_TLS_CERT and TF29ENV_TLS_KEY"),
    ("files-without-team", "TF29ENV_TLS_CERT/TF29ENV_TLS_KEY are set but TF29ENV_TLS=off"),
    ("key-missing", "TF29ENV_TLS_KEY={dir}/gone.pem: no such file, or this user cannot read it"),
    ("key-of-another", "TF29ENV_TLS_KEY={dir}/other-key.pem is not the key of TF29ENV_TLS_CERT={dir}/box.pem"),
    ("expired", "TF29ENV_TLS_CERT={dir}/old.pem has expired"),
])
def test_bad_settings_are_one_line(tmp_path: Path, case: str, words: str) -> None:
    ca = make_ca(tmp_path, "team")
    box, other = make_server(tmp_path, ca, "box"), make_server(tmp_path, ca, "other")
    old = make_expired(tmp_path, "old")
    settings = {
        "data-missing": {"TF29ENV_TEAM_DATA": f"{tmp_path}/nowhere"},
        "data-a-file": {"TF29ENV_TEAM_DATA": str(box.cert)},
        "tls-unknown": {"TF29ENV_TLS": "on"},
        "team-without-files": {"TF29ENV_TLS": "team", "TF29ENV_TLS_CERT": str(box.cert)},
        "files-without-team": {"TF29ENV_TLS_CERT": str(box.cert)},
        "key-missing": {"TF29ENV_TLS": "team", "TF29ENV_TLS_CERT": str(box.cert),
                        "TF29ENV_TLS_KEY": f"{tmp_path}/gone.pem"},
        "key-of-another": {"TF29ENV_TLS": "team", "TF29ENV_TLS_CERT": str(box.cert), "TF29ENV_TLS_KEY": str(other.key)},
        "expired": {"TF29ENV_TLS": "team", "TF29ENV_TLS_CERT": str(old.cert), "TF29ENV_TLS_KEY": str(old.key)},
    }[case]
    done = run(tmp_path, **settings)
    assert done.returncode == 2
    assert done.stdout == ""  # nothing for make to eval
    assert done.stderr == f"tf29-env: ERROR: {words.format(dir=tmp_path)}" + done.stderr.partition(
        words.format(dir=tmp_path))[2]
    assert done.stderr.count("\n") == 1


def test_unreadable_team_data_as_an_admin_without_root() -> None:
    """An admin who is not root (nobody, uid 65534, as setpriv makes it) and a folder only root may read:
    make up's script says so in one line. The suite runs as root, who reads any folder."""
    # Under /tmp, with a copy of compose/, as nobody may not reach the checkout (e.g. under /root).
    project = Path(tempfile.mkdtemp(prefix="tf29-teamenv-", dir="/tmp"))
    try:
        project.chmod(0o755)
        shutil.copytree(REPO / "compose", project / "compose", ignore=shutil.ignore_patterns("__pycache__"))
        (project / "datasets").mkdir(mode=0o700)
        # The host's python3, as make up runs it, from the PATH a login of nobody would have.
        done = subprocess.run(["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", "python3",
                               str(project / "compose" / "teamenv.py"), "--project-dir", str(project)],
                              env={"PATH": "/usr/local/bin:/usr/bin:/bin", "TF29ENV_TEAM_DATA": "./datasets"},
                              capture_output=True, text=True, timeout=60, check=False)
    finally:
        shutil.rmtree(project)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == ("tf29-env: ERROR: TF29ENV_TEAM_DATA=./datasets: this user cannot read the folder (its "
                           "members could not either): chmod it, e.g. a+rX\n")


def test_env_file_and_exports_eval_in_a_shell(tmp_path: Path) -> None:
    """What make up evals: .env read as compose reads it, values quoted for the shell."""
    data = tmp_path / "team data"
    data.mkdir()
    (tmp_path / ".env").write_text(f"TF29ENV_TLS=self-signed\nTF29ENV_TEAM_DATA='{data}'\n")
    done = run(tmp_path)
    assert done.returncode == 0, done.stderr
    shown = subprocess.run(["bash", "-c", 'set -euo pipefail; eval "$1"; printf %s "$TF29ENV_TEAM_DATA '
                            '$TF29ENV_GEN_CERT $TF29ENV_JUPYTER_ADDRESS"', "-", done.stdout],
                           capture_output=True, text=True, timeout=30, check=True)
    assert shown.stdout == f"{data} yes 0.0.0.0"


def shared_folder(tmp_path: Path, gid: int = 4242, mode: int = 0o2775) -> Path:
    """A team's shared folder as the admin makes it (the suite runs as root, who may chgrp it)."""
    folder = tmp_path / "shared"
    folder.mkdir()
    os.chown(folder, -1, gid)
    folder.chmod(mode)
    return folder


def test_team_shared_folder_is_mounted_with_its_group(tmp_path: Path) -> None:
    folder = shared_folder(tmp_path)
    derived = derive(tmp_path, TF29ENV_TEAM_SHARED=str(folder))
    assert derived.variables["TF29ENV_TEAM_SHARED_MOUNT"] == f"{folder}:{teamenv.SHARED_TARGET}:rw"
    assert derived.variables["TF29ENV_TEAM_SHARED_GID"] == "4242"
    # Relative to the folder of docker-compose.yml; TF29ENV_TEAM_GID, where given, is the folder's group.
    relative = derive(tmp_path, TF29ENV_TEAM_SHARED="./shared", TF29ENV_TEAM_GID="4242").variables
    assert relative["TF29ENV_TEAM_SHARED_GID"] == "4242"
    assert not [note for note in derived.notes if "setgid" in note]


def test_team_shared_folder_without_setgid_is_a_warning(tmp_path: Path) -> None:
    folder = shared_folder(tmp_path, mode=0o775)
    notes = derive(tmp_path, TF29ENV_TEAM_SHARED=str(folder)).notes
    assert notes[0] == (f"tf29-env: WARNING: TF29ENV_TEAM_SHARED={folder} has no setgid bit, so new files there get "
                        f"each member's own group and the others cannot change them: chmod g+s {folder}")


def test_every_member_must_mount_the_shared_folder(tmp_path: Path) -> None:
    """A docker-compose.yml from before ~/shared: its members lack the line, which `make up` names."""
    folder = shared_folder(tmp_path)
    (tmp_path / "docker-compose.yml").write_text((REPO / "docker-compose.yml").read_text().replace(
        "      - *team-shared\n", "", 1))
    with pytest.raises(teamenv.SettingError) as refused:
        derive(tmp_path, TF29ENV_TEAM_SHARED=str(folder))
    assert str(refused.value) == ("TF29ENV_TEAM_SHARED is set, but the volumes of alice in docker-compose.yml lack the "
                                  "line '- *team-shared': add it to each")


@pytest.mark.parametrize(("case", "words"), [
    ("missing", "TF29ENV_TEAM_SHARED={dir}/nowhere: no such folder on this host"),
    ("group cannot write", "TF29ENV_TEAM_SHARED={dir}/shared: its group 4242 cannot write it (mode 2755): chgrp 4242 "
                           "{dir}/shared && chmod 2775 {dir}/shared"),
    ("root's group", "TF29ENV_TEAM_SHARED={dir}/shared belongs to group 0 (root), which no member may join: chgrp GID "
                     "{dir}/shared && chmod 2775 {dir}/shared (GID: the team's group, e.g. getent group team)"),
    ("another group", "TF29ENV_TEAM_GID=5000, but TF29ENV_TEAM_SHARED={dir}/shared belongs to group 4242: chgrp 5000 "
                      "{dir}/shared && chmod 2775 {dir}/shared"),
    ("gid a word", "TF29ENV_TEAM_GID=team is not a numeric gid (1-2147483647)"),
    ("gid 0", "TF29ENV_TEAM_GID=0 is not a numeric gid (1-2147483647)"),
    ("gid alone", "TF29ENV_TEAM_GID=4242 is set but TF29ENV_TEAM_SHARED is not: set the shared folder too, or remove "
                  "TF29ENV_TEAM_GID"),
    ("the team data", "TF29ENV_TEAM_SHARED and TF29ENV_TEAM_DATA are both {dir}/shared: the team's data is read-only, "
                      "the shared folder writable; give two folders"),
])
def test_bad_team_shared_is_one_line(tmp_path: Path, case: str, words: str) -> None:
    folder = shared_folder(tmp_path, gid=0 if case == "root's group" else 4242,
                           mode=0o2755 if case == "group cannot write" else 0o2775)
    settings = {
        "missing": {"TF29ENV_TEAM_SHARED": f"{tmp_path}/nowhere"},
        "group cannot write": {"TF29ENV_TEAM_SHARED": str(folder)},
        "root's group": {"TF29ENV_TEAM_SHARED": str(folder)},
        "another group": {"TF29ENV_TEAM_SHARED": str(folder), "TF29ENV_TEAM_GID": "5000"},
        "gid a word": {"TF29ENV_TEAM_SHARED": str(folder), "TF29ENV_TEAM_GID": "team"},
        "gid 0": {"TF29ENV_TEAM_SHARED": str(folder), "TF29ENV_TEAM_GID": "0"},
        "gid alone": {"TF29ENV_TEAM_GID": "4242"},
        "the team data": {"TF29ENV_TEAM_SHARED": str(folder), "TF29ENV_TEAM_DATA": str(folder)},
    }[case]
    done = run(tmp_path, **settings)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"tf29-env: ERROR: {words.format(dir=tmp_path)}\n"
