"""Fixtures of the hub tests: the hub's venv and proxy installed by hub.mk (on a fresh clone
too; a failure fails, never skips), and per module a team hub on free loopback ports that is
always taken down with its containers, volumes and network (tests/hub/hubrun.py)."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from docker import DockerClient

from tests.hub.hubrun import HubRun, hub_environment, install_tools


@pytest.fixture(scope="session")
def hub_tools() -> None:
    install_tools()


def start_hub(client: DockerClient, image: str, state: Path, **settings: str) -> Iterator[HubRun]:
    run = HubRun(client, hub_environment(image, state, **settings))
    try:
        run.up()
        yield run
    finally:
        run.remove_everything()


@pytest.fixture(scope="module")
def team_hub(hub_tools: None, docker_client: DockerClient, image: str,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubRun]:
    """A hub with the shipped timeouts (no culling during the tests) and HUB_ADMIN_USERS=boss."""
    yield from start_hub(docker_client, image, tmp_path_factory.mktemp("hub-state"))
