"""`make up` after a new image (issue 40, docs/upgrade.md, "The team (`make up`)"): two members, ann and ben,
started on an image A with a file each in ~/work, move to an image B one at a time, each with a
snapshot that `sha256sum -c` verifies; then an image C whose TensorFlow does not import fails ann's
health gate: ann goes back to B with her file, the rollout stops, and ben is not touched. Bad input
is one line with both running as they were. On the real engine with `docker compose` (compose.mk's
COMPOSE here), in a copy of the team files (conftest's team_project) with a project name of its own.
Tests run in file order on one team."""

from __future__ import annotations

import contextlib
import io
import json
import secrets
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import docker.errors
import pytest
from docker import DockerClient

from tests.compose.team import IMPLEMENTATIONS, REPO, Member, Team

B_MARK = "/etc/tf29-rollout-b"
# B: the image under test and one file more. C: its TensorFlow no longer imports, so JupyterLab and
# SSH start and the container turns healthy, and only the self-check's container checks can tell.
B_DOCKERFILE = f"FROM {{base}}\nRUN touch {B_MARK}\n"
C_DOCKERFILE = ("FROM {base}\nRUN for f in /opt/venv/lib/python3.*/site-packages/tensorflow/__init__.py; "
                "do echo 'raise ImportError(\"broken on purpose\")' >> \"$f\"; done\n")
WORK_FILE = "/home/jovyan/work/before-the-rollout.txt"


@dataclass(frozen=True)
class Images:
    a: str
    b: str
    c: str

    def id(self, client: DockerClient, reference: str) -> str:
        return str(client.images.get(reference).id)


@pytest.fixture(scope="module")
def images(docker_client: DockerClient, image: str) -> Iterator[Images]:
    """A is the image under test under a tag of this module's own (its tag may move while the suite
    builds), B and C are built from A with one small layer each."""
    repository = f"tf29-rollout-{secrets.token_hex(4)}"
    made = Images(f"{repository}:a", f"{repository}:b", f"{repository}:c")
    docker_client.images.get(image).tag(repository, "a")
    try:
        for tag, dockerfile in ((made.b, B_DOCKERFILE), (made.c, C_DOCKERFILE)):
            docker_client.images.build(fileobj=io.BytesIO(dockerfile.format(base=made.a).encode()), tag=tag, rm=True)
        yield made
    finally:
        for tag in (made.c, made.b, made.a):
            with contextlib.suppress(docker.errors.APIError):
                docker_client.images.remove(tag)


class RollingTeam(Team):
    """The team, with the BACKUP_DIR its `make up` gets."""

    def __init__(self, client: DockerClient, project: Path, image: str, backups: Path) -> None:
        super().__init__(client, project, image, IMPLEMENTATIONS["v2"])
        self.backups = backups

    def up(self, image: str, backups: Path | None = None) -> subprocess.CompletedProcess[str]:
        """`make up` with the members' image set as .env would set it."""
        self.env["TF29ENV_IMAGE"] = image
        return self.make("up", f"BACKUP_DIR={backups or self.backups}", "UPGRADE_TIMEOUT=240", check=False)

    def snapshots(self, name: str) -> list[Path]:
        return sorted(self.backups.glob(f"{self.container(name).name}-*"))


@pytest.fixture(scope="module")
def team(docker_client: DockerClient, team_project: Path, images: Images,
         members: tuple[Member, Member], tmp_path_factory: pytest.TempPathFactory) -> Iterator[RollingTeam]:
    """Both members up on A by `make up`, each with a file in ~/work; the host tools' venv beside the
    team files, as in a checkout where the image was built."""
    (team_project / ".venv").symlink_to(REPO / ".venv")
    running = RollingTeam(docker_client, team_project, images.a, tmp_path_factory.mktemp("backups"))
    try:
        running.make("up")
        for member in members:
            container = running.container(member.name)
            code, out = container.exec_run(["sh", "-c", f"echo work of {member.name} > {WORK_FILE}"], user="jovyan")
            assert code == 0, out
        yield running
    finally:
        running.remove_everything()


def error_line(done: subprocess.CompletedProcess[str]) -> str:
    """A refusal: non-zero, and exactly one error line from the rollout (make adds its own after it)."""
    assert done.returncode != 0, done.stdout[-3000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("tf29-env: error: ")]
    assert len(errors) == 1, done.stdout[-2000:] + done.stderr[-3000:]
    return errors[0]


def started(team: RollingTeam, name: str) -> tuple[str, str, str]:
    """A container's id, start time and image id: what an untouched member keeps."""
    container = team.container(name)
    return container.id, container.attrs["State"]["StartedAt"], container.attrs["Image"]


def work_file(team: RollingTeam, name: str) -> str:
    code, out = team.container(name).exec_run(["cat", WORK_FILE], user="jovyan")
    assert code == 0, out
    return str(out.decode()).strip()


def test_make_up_moves_each_member_to_the_new_image_with_a_snapshot(
        docker_client: DockerClient, team: RollingTeam, images: Images, members: tuple[Member, Member]) -> None:
    a, b = images.id(docker_client, images.a), images.id(docker_client, images.b)
    assert {started(team, member.name)[2] for member in members} == {a}

    done = team.up(images.b)

    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    upgraded = [line for line in done.stdout.splitlines() if line.startswith("tf29-env: upgraded ")]
    assert [line.split()[2] for line in upgraded] == ["ann", "ben"], done.stdout
    for member in members:
        assert f"{member.name}: JupyterLab http://localhost:{member.jupyter_port}/lab?token=" in done.stdout
        container = team.container(member.name)
        assert container.attrs["Image"] == b
        assert container.attrs["State"]["Health"]["Status"] == "healthy"
        assert container.exec_run(["test", "-e", B_MARK])[0] == 0
        assert work_file(team, member.name) == f"work of {member.name}"
        (folder,) = team.snapshots(member.name)
        check = subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=folder, capture_output=True, text=True,
                               check=False)
        assert check.returncode == 0, check.stdout + check.stderr
        manifest = json.loads((folder / "snapshot.json").read_text())
        # What `make rollback CONTAINER=...` reads: the kind, the container, the old image and how to create it.
        assert (manifest["kind"], manifest["container"], manifest["image"]) == ("upgrade", container.name, a)
        assert manifest["create"]["HostConfig"]["PortBindings"]["8888/tcp"][0]["HostPort"] == str(member.jupyter_port)
        assert len(manifest["volumes"]) == 4


def test_bad_input_is_one_line_and_leaves_everyone_running(team: RollingTeam, images: Images, tmp_path: Path,
                                                          members: tuple[Member, Member]) -> None:
    before = {member.name: started(team, member.name) for member in members}
    not_a_folder = tmp_path / "backups"
    not_a_folder.write_text("a file where BACKUP_DIR should be\n")

    line = error_line(team.up(images.c, not_a_folder))

    assert line.startswith("tf29-env: error: ann: no snapshot can be taken into "), line
    assert {member.name: started(team, member.name) for member in members} == before


def test_a_member_failing_the_gate_goes_back_and_stops_the_rollout(
        docker_client: DockerClient, team: RollingTeam, images: Images, members: tuple[Member, Member]) -> None:
    b = images.id(docker_client, images.b)
    ben_before = started(team, "ben")

    line = error_line(team.up(images.c))

    assert line.startswith(f"tf29-env: error: ann: the upgrade to {images.c} failed: the self-check failed"), line
    assert "ImportError: broken on purpose" in line, line
    assert line.endswith("not upgraded, still on their image: ben"), line
    ann = team.container("ann")
    assert ann.attrs["Image"] == b
    assert ann.attrs["State"]["Health"]["Status"] == "healthy"
    assert ann.exec_run(["test", "-e", B_MARK])[0] == 0
    assert work_file(team, "ann") == "work of ann"
    newest = team.snapshots("ann")[-1]
    assert list(newest.glob("failed-*.log")), f"no log of the failed container in {newest}"
    assert started(team, "ben") == ben_before
    assert work_file(team, "ben") == "work of ben"
