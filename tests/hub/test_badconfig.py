"""A hub that cannot work does not start at all: one line on stderr naming the problem, a
non-zero exit, and no process, pid file, state folder or bound port left behind."""

import socket
import subprocess
from pathlib import Path

import pytest

from tests.hub.hubrun import LOOPBACK, REPO, ctl, hub_environment

pytestmark = pytest.mark.image


def assert_nothing_started(env: dict[str, str]) -> None:
    assert not Path(env["HUB_STATE_DIR"]).exists(), "a state folder was made"
    networks = subprocess.run(["docker", "network", "ls", "-q", "--filter", f"name={env['HUB_NETWORK']}"],
                              capture_output=True, text=True, check=True).stdout
    assert networks.strip() == "", "a network was made"
    for port in (env["HUB_PORT"], env["HUB_PROXY_API_PORT"]):
        with socket.socket() as sock:
            sock.bind((LOOPBACK, int(port)))  # still free: no proxy was started


def refused(env: dict[str, str], exit_code: int, *words: str) -> None:
    result = ctl(env, "up")
    lines = result.stderr.strip().splitlines()
    assert result.returncode == exit_code, result.stdout + result.stderr
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("tf29-hub: ERROR: ")
    for word in words:
        assert word in lines[0]
    assert result.stdout == ""
    assert_nothing_started(env)


def test_missing_image(hub_tools: None, image: str, tmp_path: Path) -> None:
    env = hub_environment("tf29-env:no-such-image", tmp_path / "state")
    refused(env, 2, "HUB_IMAGE=tf29-env:no-such-image", "not on this Docker engine")


def test_no_docker_engine(hub_tools: None, image: str, tmp_path: Path) -> None:
    env = hub_environment(image, tmp_path / "state", DOCKER_HOST=f"unix://{tmp_path}/no-such.sock")
    refused(env, 3, "no Docker engine answers", "DOCKER_HOST")


def test_bad_setting(hub_tools: None, image: str, tmp_path: Path) -> None:
    env = hub_environment(image, tmp_path / "state", HUB_CULL_TIMEOUT="soon")
    refused(env, 2, "HUB_CULL_TIMEOUT='soon'")


def test_port_in_use(hub_tools: None, image: str, tmp_path: Path) -> None:
    env = hub_environment(image, tmp_path / "state")
    with socket.socket() as taken:
        taken.bind((LOOPBACK, int(env["HUB_PORT"])))
        taken.listen()
        result = ctl(env, "up")
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"tf29-hub: ERROR: HUB_PORT={env['HUB_PORT']}: {LOOPBACK}:{env['HUB_PORT']} is in use or cannot be bound; "
        "choose another port"]
    assert_nothing_started(env)


def test_make_hub_fails_on_a_missing_image(hub_tools: None, image: str, tmp_path: Path) -> None:
    """Through make too: the one line, then make's own note, and a non-zero exit."""
    env = hub_environment("tf29-env:no-such-image", tmp_path / "state")
    result = subprocess.run(["make", "hub"], cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
                            check=False)
    assert result.returncode != 0
    assert "tf29-hub: ERROR: HUB_IMAGE=tf29-env:no-such-image is not on this Docker engine" in result.stderr
    assert_nothing_started(env)
