"""Fixtures of the team tests: a scratch copy of the team setup with two members, ann and ben,
added by compose/member.py on free ports (alice and bob, the shipped examples, removed first),
and that team brought up by `make up` once per module and compose implementation (v1 and v2,
one after the other) and always taken down with its volumes."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from docker import DockerClient

from testkit.net import free_host_port
from testkit.ssh import KeyPair
from tests.compose.team import IMPLEMENTATIONS, Member, Team, copy_project, member_py


@pytest.fixture(scope="module", params=sorted(IMPLEMENTATIONS))
def compose(request: pytest.FixtureRequest) -> str:
    """The compose command (compose.mk's COMPOSE): every team test runs under both implementations."""
    return IMPLEMENTATIONS[str(request.param)]


@pytest.fixture(scope="module")
def members(keypair: KeyPair, other_keypair: KeyPair) -> tuple[Member, Member]:
    return (Member("ann", 1101, 1101, free_host_port(), free_host_port(), keypair),
            Member("ben", 1102, 100, free_host_port(), free_host_port(), other_keypair))


@pytest.fixture(scope="module")
def team_project(tmp_path_factory: pytest.TempPathFactory, members: tuple[Member, Member]) -> Path:
    project = copy_project(tmp_path_factory.mktemp("team"))
    for example in ("alice", "bob"):
        assert member_py(project, "remove", example).returncode == 0
    for member, gpus in zip(members, (["--gpu-ids", "0"], ["--gpus", "1"]), strict=True):
        added = member_py(project, "add", member.name, "--uid", str(member.uid), "--gid", str(member.gid),
                          "--jupyter-port", str(member.jupyter_port), "--ssh-port", str(member.ssh_port),
                          "--ssh-key", f"{member.key.private}.pub", *gpus)
        assert added.returncode == 0, added.stderr
    return project


@pytest.fixture(scope="module")
def team(docker_client: DockerClient, image: str, team_project: Path, compose: str) -> Iterator[Team]:
    running = Team(docker_client, team_project, image, compose)
    try:
        running.up_log = running.make("up").stderr
        yield running
    finally:
        running.remove_everything()
