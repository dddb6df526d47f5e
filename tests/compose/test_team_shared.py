"""The team's shared folder in a real compose team (`docker compose` v2; the files' parsing under both
implementations is test_files.py): TF29ENV_TEAM_SHARED is every member's ~/shared, and every member
joins its group (TEAM_GID), so ann (uid 1101) writes a file there over SSH and ben (uid 1102, another
group) appends to it as the dev user; it is no volume a snapshot takes. A folder that does not exist,
or one its group cannot write, stops `make up` with one line before anything starts. Without it no
member has ~/shared. Tests run in file order on one team."""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from docker import DockerClient

from compose import recreate, teamenv
from testkit.ssh import connect, run
from tests.compose.team import IMPLEMENTATIONS, Member, Team, copy_project, engine_memlock, member_py

TEAM_GID = 4242  # the team's group on the host, which owns the shared folder


def shared_folder(parent: Path, mode: int) -> Path:
    """The admin's folder: root's, the team's group, mode MODE (the suite runs as root)."""
    folder = parent / "shared"
    folder.mkdir()
    os.chown(folder, 0, TEAM_GID)
    folder.chmod(mode)
    return folder


@pytest.fixture(scope="module")
def shared_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shared_folder(tmp_path_factory.mktemp("team-shared"), 0o2775)  # chgrp 4242 DIR && chmod 2775 DIR


@pytest.fixture(scope="module")
def shared_project(tmp_path_factory: pytest.TempPathFactory, members: tuple[Member, Member]) -> Path:
    project = copy_project(tmp_path_factory.mktemp("shared-team"))
    for example in ("alice", "bob"):
        assert member_py(project, "remove", example).returncode == 0
    for member in members:
        added = member_py(project, "add", member.name, "--uid", str(member.uid), "--gid", str(member.gid),
                          "--jupyter-port", str(member.jupyter_port), "--ssh-port", str(member.ssh_port),
                          "--ssh-key", f"{member.key.private}.pub", "--gpus", "1")
        assert added.returncode == 0, added.stderr
    return project


@pytest.fixture(scope="module")
def shared_team(docker_client: DockerClient, image: str, shared_project: Path, shared_dir: Path) -> Iterator[Team]:
    team = Team(docker_client, shared_project, image, IMPLEMENTATIONS["v2"])
    team.env["TF29ENV_TEAM_SHARED"] = str(shared_dir)
    try:
        team.up_log = team.make("up").stderr
        yield team
    finally:
        team.remove_everything()


@pytest.mark.parametrize("case", ["missing", "group cannot write"])
def test_a_bad_shared_folder_stops_make_up_before_anything_starts(docker_client: DockerClient, image: str,
                                                                  shared_project: Path, tmp_path: Path,
                                                                  case: str) -> None:
    folder = tmp_path / "no-such-folder" if case == "missing" else shared_folder(tmp_path, 0o2755)
    line = {"missing": f"TF29ENV_TEAM_SHARED={folder}: no such folder on this host",
            "group cannot write": f"TF29ENV_TEAM_SHARED={folder}: its group {TEAM_GID} cannot write it (mode 2755): "
                                  f"chgrp {TEAM_GID} {folder} && chmod 2775 {folder}"}[case]
    team = Team(docker_client, shared_project, image, IMPLEMENTATIONS["v2"])
    team.env["TF29ENV_TEAM_SHARED"] = str(folder)
    try:
        done = team.make("up", check=False)
        assert done.returncode != 0
        said = [line for line in done.stderr.splitlines() if not line.startswith("make")]
        assert said == [f"tf29-env: ERROR: {line}"]
        assert team.containers() == []
        assert team.volumes() == []
    finally:
        team.remove_everything()


def test_one_member_writes_over_ssh_and_another_appends(shared_team: Team, shared_dir: Path,
                                                        members: tuple[Member, Member]) -> None:
    ann, ben = members
    shared_team.wait_healthy(ann.name)
    client = connect(ann.ssh_port, "jovyan", ann.key)
    try:
        # sshd's own groups for the login; umask 002 makes the file the group's to change too.
        code, out = run(client, "id -G")
        assert code == 0 and str(TEAM_GID) in out.split(), out
        assert run(client, "umask 002 && echo from ann > ~/shared/notes.txt") == (0, "")
    finally:
        client.close()
    container = shared_team.wait_healthy(ben.name)
    code, out = container.exec_run(["sh", "-c", "id -G && cat ~/shared/notes.txt && echo from ben >> "
                                    "~/shared/notes.txt"], user="jovyan")
    groups, said = out.decode().split("\n", 1)
    assert (code, said) == (0, "from ann\n")
    assert str(TEAM_GID) in groups.split(), groups
    made = shared_dir / "notes.txt"
    assert made.read_text() == "from ann\nfrom ben\n"
    assert (made.stat().st_uid, made.stat().st_gid) == (ann.uid, TEAM_GID)  # the setgid folder's group


def test_jupyterlab_runs_with_the_team_group(shared_team: Team, members: tuple[Member, Member]) -> None:
    """JupyterLab's groups, which its kernels and terminals inherit."""
    for member in members:
        container = shared_team.wait_healthy(member.name)
        code, out = container.exec_run(["sh", "-c", f"grep ^Groups: /proc/$(pgrep -u {member.uid} -o -f jupyter-lab)"
                                        "/status"], user="root")
        assert code == 0 and str(TEAM_GID) in out.decode().split()[1:], out


def test_no_snapshot_takes_the_shared_folder(shared_team: Team, shared_dir: Path,
                                             members: tuple[Member, Member]) -> None:
    """An upgrade's snapshot and rollback keep the member's own volumes only, never the team's folder."""
    container = shared_team.wait_healthy(members[0].name)
    shared = [mount for mount in container.attrs["Mounts"] if mount["Destination"] == teamenv.SHARED_TARGET]
    assert [(mount["Type"], mount["Source"], mount["RW"]) for mount in shared] == [("bind", str(shared_dir), True)]
    kept = recreate.named_volumes(container.attrs)
    assert sorted(where for _, where in kept) == ["/etc/ssh/host-keys", "/home/jovyan/.local", "/home/jovyan/.nv",
                                                  "/home/jovyan/work"]


def test_without_a_shared_folder_there_is_no_home_shared(docker_client: DockerClient, image: str,
                                                         shared_project: Path, shared_team: Team,
                                                         members: tuple[Member, Member]) -> None:
    """Plain compose (as without TF29ENV_TEAM_SHARED): no ~/shared and no group to join. Checked with `compose
    run` of ann's service (no ports) next to the running team, so that no second team starts."""
    plain = Team(docker_client, shared_project, image, IMPLEMENTATIONS["v2"])
    plain.env["TF29ENV_MEMLOCK"] = str(engine_memlock(docker_client, image))  # what make up would pass on
    try:
        done = plain.compose("run", "--rm", "--no-deps", "-T", members[0].name, "id", "-G", check=True)
        assert str(members[0].gid) in done.stdout.split() and str(TEAM_GID) not in done.stdout.split()
        done = plain.compose("run", "--rm", "--no-deps", "-T", "--entrypoint", "sh", members[0].name, "-c",
                             f"test -e {teamenv.SHARED_TARGET} && echo there || echo none", check=True)
        assert done.stdout.strip() == "none"
    finally:
        plain.remove_everything()
