"""compose/access.py and member.py's take-over of the shipped examples: what `make run` and `make up`
print to reach an environment, and which members `make up` starts, on copies of the shipped files.
`make run` and `make up` with the real engine: tests/gpu/test_make_run.py, tests/compose."""

import shutil
from pathlib import Path

import pytest

from compose import access, member
from tf29env.core.paths import REPO

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIK2J6zonBYNG+M6tAKnRhmTykg/xHOCedEPyKYPYP60I ann@host\n"
# The line the image prints with a token it made (image/python/tf29image/startup/server.py).
LOGS = ("tf29-env: SSH: listening on port 22 for jovyan (1 public keys; no passwords)\n"
        "tf29-env: JupyterLab token (generated; set JUPYTER_TOKEN or JUPYTER_TOKEN_FILE to choose one): "
        "http://127.0.0.1:8888/lab?token=" + "a" * 48 + "\n")


@pytest.fixture
def project(tmp_path: Path) -> member.Project:
    """A copy of the shipped team files: alice and bob, examples without secrets."""
    (tmp_path / "compose").mkdir()
    shutil.copy(REPO / "docker-compose.yml", tmp_path / "docker-compose.yml")
    shutil.copy(REPO / "compose" / "gpu.yml", tmp_path / "compose" / "gpu.yml")
    (tmp_path / "alice.pub").write_text(KEY)
    return member.Project.at(tmp_path)


def add(project: member.Project, name: str, *extra: str) -> int:
    directory = project.compose_file.parent
    return member.main(["--project-dir", str(directory), "add", name, "--ssh-key", str(directory / "alice.pub"),
                        "--uid", "1001", "--gid", "1001", "--gpus", "1", *extra])


def test_add_takes_over_a_shipped_example_keeping_its_ports(project: member.Project,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    before = project.read(project.compose_file)
    assert add(project, "alice") == 0
    out = capsys.readouterr().out
    assert "took over 'alice', a member without secrets" in out and "Jupyter on host port 8801, SSH on 2201" in out
    after = project.read(project.compose_file)
    assert member.entry_names(after, "services") == ["bob", "alice"]
    assert member.entry_lines(after, "services", "bob") == member.entry_lines(before, "services", "bob")
    assert 'environment: {<<: *member-env, NB_UID: "1001", NB_GID: "1001"}' in member.entry_lines(after, "services",
                                                                                                   "alice")[3]
    assert sorted(member.entry_names(after, "secrets")).count("alice-jupyter-token") == 1
    assert (project.secrets_dir / "alice" / "authorized_keys").read_text() == KEY
    # Now it has secrets: a second add is refused, and nothing changes.
    assert add(project, "alice") == 2
    assert "'alice' is already a member" in capsys.readouterr().err
    assert project.read(project.compose_file) == after


def test_make_up_starts_the_members_with_secrets_and_says_why_not_the_others(
        project: member.Project, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(access.AccessError, match="no member has secrets yet"):
        access.cmd_ready(project)
    assert add(project, "alice") == 0
    capsys.readouterr()
    assert access.cmd_ready(project) == ["alice"]
    (waiting,) = capsys.readouterr().err.splitlines()
    assert waiting.startswith("bob: not started, it has no secrets yet (compose/secrets/bob/): "
                              "`python3 compose/member.py add bob --ssh-key FILE.pub` takes it over")
    assert access.member_ports(project.read(project.compose_file), "bob") == (8802, 2202)


@pytest.mark.parametrize(("logs", "bind", "key", "expected"), [
    (LOGS, "0.0.0.0", "/root/.ssh/id_ed25519.pub",  # noqa: S104 - a string compared
     [f"JupyterLab: http://localhost:18888/lab?token={'a' * 48} (from another machine: this box's name instead of "
      "localhost)", "SSH: ssh -p 12222 jovyan@localhost (the key /root/.ssh/id_ed25519.pub)"]),
    (LOGS, "127.0.0.1", "",
     [f"JupyterLab: http://localhost:18888/lab?token={'a' * 48}",
      "SSH: off, as no ~/.ssh/id_ed25519.pub or ~/.ssh/id_rsa.pub was found: `make run SSH_PUBLIC_KEY=FILE.pub` "
      "turns it on"]),
    ("", "10.0.0.5", "k.pub",  # a token the person set: not in the log
     ["JupyterLab: http://10.0.0.5:18888/ with the token you set (JUPYTER_TOKEN)",
      "SSH: ssh -p 12222 jovyan@10.0.0.5 (the key k.pub)"]),
])
def test_what_make_run_prints(logs: str, bind: str, key: str, expected: list[str]) -> None:
    assert access.run_lines(logs, bind, 18888, 12222, key) == expected


def test_the_bind_address_is_read_from_env_as_compose_reads_it(tmp_path: Path) -> None:
    assert access.env_file_value(tmp_path, "TF29ENV_BIND_ADDRESS") is None
    (tmp_path / ".env").write_text("# team\nTF29ENV_BIND_ADDRESS='127.0.0.1'\nOTHER=x\n")
    assert access.env_file_value(tmp_path, "TF29ENV_BIND_ADDRESS") == "127.0.0.1"


def test_taking_over_an_example_without_a_host_account_keeps_its_ids(project: member.Project,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """The README's line, `add alice --ssh-key alice.pub`, on a box with no account alice: the example's ids."""
    assert not member.host_account("alice")
    directory = project.compose_file.parent
    assert member.main(["--project-dir", str(directory), "add", "alice", "--ssh-key", str(directory / "alice.pub"),
                        "--gpus", "1"]) == 0
    assert "added alice (uid 1001, gid 1001): Jupyter on host port 8801, SSH on 2201" in capsys.readouterr().out


@pytest.mark.parametrize(("bind", "jupyter_address", "scheme", "url"), [
    # TLS off: Jupyter on loopback only, SSH where TF29ENV_BIND_ADDRESS says.
    ("0.0.0.0", "127.0.0.1", "http", "http://localhost:8801/lab?token=t"),  # noqa: S104 - compared, not bound
    ("0.0.0.0", "0.0.0.0", "https",  # noqa: S104 - compared, not bound
     "https://localhost:8801/lab?token=t (from another machine: this box's name instead of localhost)"),
    ("10.0.0.5", "10.0.0.5", "https", "https://10.0.0.5:8801/lab?token=t"),
])
def test_member_lines_say_where_and_how_jupyter_is_served(bind: str, jupyter_address: str, scheme: str,
                                                          url: str) -> None:
    web, ssh = access.member_lines("ann", bind, 8801, 2201, "t", jupyter_address, scheme)
    assert web == f"ann: JupyterLab {url}"
    assert ssh.startswith(f"ann: SSH ssh -p 2201 jovyan@{access.reach_host(bind)} ")
