"""The team's data and GPU memory budgets in a real compose team (`docker compose` v2 only: the
compose file's parsing under both implementations is test_files.py, and test_compose.py starts the
same volumes under v1): TF29ENV_TEAM_DATA is every member's ~/data, readable and read-only for the
member and for root; a folder that does not exist stops `make up` with one line before anything
starts; `member.py add --gpu-memory` and `member.py set` put GPU_MEMORY_LIMIT_MB in the member's
container. Tests run in file order on one team."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from docker import DockerClient

from testkit.ssh import connect, run
from tests.compose.team import IMPLEMENTATIONS, Member, Team, copy_project, engine_memlock, member_py

DATA_FILE = "labels.csv"
DATA_TEXT = "image,label\ncat.png,cat\n"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The team's datasets: a folder every member may read (its parent, root's, does not matter to a bind)."""
    folder = tmp_path_factory.mktemp("datasets") / "team"
    folder.mkdir(mode=0o755)
    (folder / DATA_FILE).write_text(DATA_TEXT)
    (folder / DATA_FILE).chmod(0o644)
    return folder


@pytest.fixture(scope="module")
def data_project(tmp_path_factory: pytest.TempPathFactory, members: tuple[Member, Member]) -> Path:
    """ann with a budget from `add`, ben with one from `set`."""
    project = copy_project(tmp_path_factory.mktemp("data-team"))
    for example in ("alice", "bob"):
        assert member_py(project, "remove", example).returncode == 0
    for member, budget in zip(members, (["--gpu-memory", "2048"], []), strict=True):
        added = member_py(project, "add", member.name, "--uid", str(member.uid), "--gid", str(member.gid),
                          "--jupyter-port", str(member.jupyter_port), "--ssh-port", str(member.ssh_port),
                          "--ssh-key", f"{member.key.private}.pub", "--gpus", "1", *budget)
        assert added.returncode == 0, added.stderr
    changed = member_py(project, "set", members[1].name, "--gpu-memory", "1024")
    assert changed.returncode == 0, changed.stderr
    assert changed.stdout.startswith(f"{members[1].name}: 1024 MiB of each of its GPUs for TensorFlow")
    return project


@pytest.fixture(scope="module")
def data_team(docker_client: DockerClient, image: str, data_project: Path, data_dir: Path) -> Iterator[Team]:
    team = Team(docker_client, data_project, image, IMPLEMENTATIONS["v2"])
    team.env["TF29ENV_TEAM_DATA"] = str(data_dir)
    try:
        team.up_log = team.make("up").stderr
        yield team
    finally:
        team.remove_everything()


def test_missing_team_data_stops_make_up_before_anything_starts(docker_client: DockerClient, image: str,
                                                                data_project: Path, tmp_path: Path) -> None:
    team = Team(docker_client, data_project, image, IMPLEMENTATIONS["v2"])
    team.env["TF29ENV_TEAM_DATA"] = str(tmp_path / "no-such-datasets")
    try:
        done = team.make("up", check=False)
        assert done.returncode != 0
        said = [line for line in done.stderr.splitlines() if not line.startswith("make")]
        assert said == [f"tf29-env: ERROR: TF29ENV_TEAM_DATA={tmp_path}/no-such-datasets: no such folder on this host"]
        assert team.containers() == []
        assert team.volumes() == []
    finally:
        team.remove_everything()


def test_member_reads_team_data_but_cannot_write_it(data_team: Team, members: tuple[Member, Member]) -> None:
    """What ann sees in her SSH session (a terminal's shell): the team's file, and a refusal to write there."""
    ann = members[0]
    data_team.wait_healthy(ann.name)
    client = connect(ann.ssh_port, "jovyan", ann.key)
    try:
        assert run(client, f"cat ~/data/{DATA_FILE}") == (0, DATA_TEXT)
        status, said = run(client, "touch ~/data/mine.csv 2>&1; rm -f ~/data/labels.csv 2>&1")
        assert status != 0
        assert said.count("Read-only file system") == 2, said
    finally:
        client.close()
    assert sorted(path.name for path in Path(data_team.env["TF29ENV_TEAM_DATA"]).iterdir()) == [DATA_FILE]


def test_root_in_the_member_cannot_write_team_data_either(data_team: Team, members: tuple[Member, Member]) -> None:
    for member in members:
        container = data_team.wait_healthy(member.name)
        code, out = container.exec_run(["sh", "-c", "touch /home/jovyan/data/by-root; chmod 777 /home/jovyan/data"],
                                       user="root")
        assert code != 0
        assert out.decode().count("Read-only file system") == 2
        code, out = container.exec_run(["cat", f"/home/jovyan/data/{DATA_FILE}"], user="root")
        assert (code, out.decode()) == (0, DATA_TEXT)
    assert sorted(path.name for path in Path(data_team.env["TF29ENV_TEAM_DATA"]).iterdir()) == [DATA_FILE]


def test_each_member_has_its_gpu_memory_budget(data_team: Team, members: tuple[Member, Member]) -> None:
    """The budget each member's processes get: 2048 MiB from `add`, 1024 from `set`."""
    for member, budget in zip(members, ("2048", "1024"), strict=True):
        container = data_team.wait_healthy(member.name)
        code, out = container.exec_run(["sh", "-c", "echo $GPU_MEMORY_LIMIT_MB"], user=str(member.uid))
        assert (code, out.decode().strip()) == (0, budget)


def test_without_team_data_home_data_is_empty_and_read_only(docker_client: DockerClient, image: str,
                                                            data_project: Path, data_team: Team,
                                                            members: tuple[Member, Member]) -> None:
    """The default: the project's empty volume team-data, read-only. Checked with `compose run` of ann's
    service (no ports) next to the running team, so that no second team starts."""
    plain = Team(docker_client, data_project, image, IMPLEMENTATIONS["v2"])
    plain.env["TF29ENV_MEMLOCK"] = str(engine_memlock(docker_client, image))  # what make up would pass on
    try:
        done = plain.compose("run", "--rm", "--no-deps", "-T", "--entrypoint", "sh", members[0].name, "-c",
                             "ls -A /home/jovyan/data; touch /home/jovyan/data/x 2>&1; true", check=True)
        assert done.stdout.strip().endswith("Read-only file system")
        assert DATA_FILE not in done.stdout
    finally:
        plain.remove_everything()
