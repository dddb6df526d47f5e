"""The team hub's first commands as README.md and docs/hub.md show them, typed at a prompt in the
project (whose hub/.venv and proxy the session fixture installed, as `make hub` would): the hub
starts and prints a URL that answers, a second `make hub` finds it running, status and logs say so,
and `make hub-down` stops it. The settings a reader would not type (free loopback ports, a state
folder and names of the test's own, the image under test as HUB_IMAGE) come from the environment."""

import re
from pathlib import Path

import pytest
import requests
from docker import DockerClient

from testkit import docblocks
from testkit.docblocks import Plan
from tests.hub.hubrun import HubRun, hub_environment
from tf29env.core.paths import REPO

BLOCKS = docblocks.blocks_for(__file__)


def test_the_hubs_first_commands_as_typed(hub_tools: None, docker_client: DockerClient, image: str,
                                          tmp_path: Path) -> None:
    run = HubRun(docker_client, hub_environment(image, tmp_path / "state"))
    plans = {("README.md", "make hub"): Plan(), ("docs/hub.md", "make hub"): Plan(follows=["make hub-logs"])}
    said: dict[str, str] = {}
    try:
        for block, key, plan in docblocks.with_plans(BLOCKS, plans):
            said[key[0]] = docblocks.run_block(block, docblocks.bash(REPO, run.env), plan)
            if key[0] == "README.md":  # the URL it printed answers with the login page
                printed = re.search(r"the hub is up: (http\S+)", said[key[0]])
                assert printed and printed[1] == f"{run.url}/", said[key[0]][-2000:]
                assert 'name="password"' in requests.get(f"{printed[1]}hub/login", timeout=30).text
        doc = said["docs/hub.md"]
        assert "tf29-hub: already running: " in doc, doc[-2000:]
        assert re.search(r"^hub: running, pid \d+$", doc, re.M), doc[-2000:]
        assert re.search(r"^proxy: running, pid \d+$", doc, re.M), doc[-2000:]
        assert "==> " in doc and "hub.log <==" in doc, doc[-2000:]  # tail -F's headers: the logs followed
        status = run.make("hub-status")
        assert status.returncode != 0 and "hub: stopped" in status.stdout, status.stdout
        with pytest.raises(requests.ConnectionError):
            requests.get(f"{run.url}/hub/login", timeout=5)
    finally:
        run.remove_everything()
