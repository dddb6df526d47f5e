"""compose/member.py on scratch copies of the shipped files: what it writes is valid compose for
docker-compose 1.29, add + remove gives the files back unchanged, and bad input is one line,
exit 2, nothing written."""

import stat
from pathlib import Path
from typing import Any

import pytest

from testkit.ssh import KeyPair
from tests.compose.team import copy_project, member_py, resolved


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return copy_project(tmp_path / "team")


def snapshot(project: Path) -> dict[str, bytes]:
    return {str(path.relative_to(project)): path.read_bytes() for path in sorted(project.rglob("*")) if path.is_file()}


def config(project: Path, compose: str, files: str) -> dict[str, Any]:
    return resolved(project, compose, {"PATH": "/usr/local/bin:/usr/bin:/bin", "COMPOSE_FILE": files,
                                       "COMPOSE_PROJECT_NAME": "t"})


def test_added_member_is_valid_compose_with_the_next_ports(project: Path, keypair: KeyPair, compose: str) -> None:
    added = member_py(project, "add", "carol", "--uid", "1503", "--gid", "1503", "--gpu-ids", "2,3",
                      "--ssh-key", f"{keypair.private}.pub")
    assert added.returncode == 0, added.stderr
    services = config(project, compose, "docker-compose.yml:compose/gpu.yml")["services"]
    carol = services["carol"]
    assert carol["ports"] == ["0.0.0.0:2203:22/tcp", "127.0.0.1:8803:8888/tcp"]  # plain HTTP: loopback
    assert carol["environment"]["NB_UID"] == "1503"
    assert carol["ulimits"] == services["alice"]["ulimits"]  # the template, folded in
    assert carol["deploy"] == {"resources": {"reservations": {"devices": [
        {"driver": "nvidia", "device_ids": ["2", "3"], "capabilities": ["gpu"]}]}}}
    assert sorted(carol["secrets"], key=str) == sorted(
        [{"source": "carol-jupyter-token", "target": "jupyter_token"},
         {"source": "carol-ssh-keys", "target": "authorized_keys"}], key=str)

    secrets = project / "compose" / "secrets" / "carol"
    assert (secrets / "authorized_keys").read_text() == keypair.public_text + "\n"
    token = (secrets / "jupyter_token").read_text().strip()
    assert len(token) == 48 and int(token, 16) >= 0
    for path in (secrets / "authorized_keys", secrets / "jupyter_token"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_host_account_gives_uid_and_gid(project: Path, keypair: KeyPair, compose: str) -> None:
    # nobody: an account every Debian host has (uid 65534, group nogroup 65534).
    added = member_py(project, "add", "nobody", "--ssh-key", f"{keypair.private}.pub")
    assert added.returncode == 0, added.stderr
    environment = config(project, compose, "docker-compose.yml")["services"]["nobody"]["environment"]
    assert environment["NB_UID"] == "65534"
    assert environment["NB_GID"] == "65534"


def test_add_then_remove_gives_the_files_back(project: Path, keypair: KeyPair) -> None:
    before = {name: (project / name).read_bytes() for name in ("docker-compose.yml", "compose/gpu.yml")}
    assert member_py(project, "add", "carol", "--uid", "1503", "--ssh-key", f"{keypair.private}.pub").returncode == 0
    assert (project / "docker-compose.yml").read_bytes() != before["docker-compose.yml"]
    removed = member_py(project, "remove", "carol")
    assert removed.returncode == 0, removed.stderr
    assert {name: (project / name).read_bytes() for name in before} == before


def test_removing_a_member_leaves_valid_compose(project: Path, compose: str) -> None:
    assert member_py(project, "remove", "alice").returncode == 0
    services = config(project, compose, "docker-compose.yml:compose/gpu.yml")["services"]
    assert sorted(services) == ["bob"]
    text = (project / "docker-compose.yml").read_text()
    assert "alice" not in text[text.index("\nservices:"):], "no volume, secret or port of alice may be left"


def test_secrets_rotates_the_token_and_keeps_the_keys(project: Path, keypair: KeyPair,
                                                      other_keypair: KeyPair) -> None:
    assert member_py(project, "secrets", "alice", "--ssh-key", f"{keypair.private}.pub").returncode == 0
    token_file = project / "compose" / "secrets" / "alice" / "jupyter_token"
    first = token_file.read_text()
    assert member_py(project, "secrets", "alice").returncode == 0
    assert token_file.read_text() == first, "without --new-token the token stays"
    assert member_py(project, "secrets", "alice", "--new-token").returncode == 0
    assert token_file.read_text() != first
    keys = token_file.with_name("authorized_keys")
    assert keys.read_text() == keypair.public_text + "\n"
    assert member_py(project, "secrets", "alice", "--ssh-key", f"{other_keypair.private}.pub").returncode == 0
    assert keys.read_text() == other_keypair.public_text + "\n"


BAD_INPUT = {
    "existing member": (["add", "alice", "--uid", "1500"], "'alice' is already a member"),  # with secrets
    "bad name": (["add", "Carol", "--uid", "1500"], "'Carol' is not a member name"),
    "no such account": (["add", "nosuchaccount", "--gid", "5"], "'nosuchaccount' is no account on this host"),
    "root": (["add", "carol", "--uid", "0"], "--uid 0: the environments never run as root"),
    "port taken": (["add", "carol", "--uid", "1500", "--jupyter-port", "8801"], "--jupyter-port 8801 is already"),
    "not a port": (["add", "carol", "--uid", "1500", "--ssh-port", "70000"], "--ssh-port 70000 is not a TCP port"),
    "two GPU choices": (["add", "carol", "--uid", "1500", "--gpus", "1", "--gpu-ids", "0"], "--gpus and --gpu-ids"),
    "bad GPU count": (["add", "carol", "--uid", "1500", "--gpus", "two"], "--gpus 'two' is not a number"),
    "bad GPU ids": (["add", "carol", "--uid", "1500", "--gpu-ids", "0;1"], "--gpu-ids: '0;1' is not a GPU index"),
    "private key": (["add", "carol", "--uid", "1500", "PRIVATE"], "key 1 is not an SSH public key"),
    "missing key file": (["add", "carol", "--uid", "1500", "MISSING"], "cannot read it (FileNotFoundError)"),
    "remove a stranger": (["remove", "carol"], "'carol' is not a member"),
    "secrets of a stranger": (["secrets", "carol"], "'carol' is not a member"),
    "secrets without keys": (["secrets", "alice"], "give --ssh-key with the member's public key"),
}


@pytest.mark.parametrize("case", list(BAD_INPUT))
def test_bad_input_is_one_line_and_changes_nothing(project: Path, keypair: KeyPair, case: str) -> None:
    args, message = BAD_INPUT[case]
    key_file = {"PRIVATE": str(keypair.private), "MISSING": str(project / "nothing.pub")}
    if args[0] == "add":
        last = key_file.get(args[-1])
        args = [*(args[:-1] if last else args), "--ssh-key", last or f"{keypair.private}.pub"]
    if case == "existing member":  # a shipped example without secrets is taken over: this one has them
        assert member_py(project, "secrets", "alice", "--ssh-key", f"{keypair.private}.pub").returncode == 0
    before = snapshot(project)
    result = member_py(project, *args)
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("member.py: error: ")
    assert message in lines[0]
    assert snapshot(project) == before
