"""compose/teamenv.py, which `make up` runs before anything starts: TF29ENV_TEAM_DATA must be a
readable folder, TF29ENV_TLS one of off/self-signed/team with a readable, matching, unexpired
certificate and key for `team`; plain HTTP is published on loopback only unless TLS is on or
TF29ENV_HTTP_ANY=1. Bad input is one line, exit 2, and nothing for make to eval."""

import os
import subprocess
import sys
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
                                 "TF29ENV_JUPYTER_KEY_FILE": "", "TF29ENV_JUPYTER_ADDRESS": "127.0.0.1"}
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
    ("key-of-another", "TF29ENV_TLS_KEY={dir}/other-key.pem does not match the certificate"),
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


def test_unreadable_team_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder this user may not read (faked: the suite runs as root, who reads any)."""
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    with pytest.raises(teamenv.SettingError, match=f"^TF29ENV_TEAM_DATA={tmp_path}: this user cannot read"):
        derive(tmp_path, TF29ENV_TEAM_DATA=str(tmp_path))


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
