"""The README's team line, typed as it stands there, in a fresh copy of the project: the shipped
example alice is taken over with the key given, `make up` starts her (and says why not bob, who has
no secrets), waits until she is healthy and prints a URL and an ssh command that answer. Then
docs/team.md's way with the examples, in the same copy: keys for alice and bob, and `make up` starts
bob beside her. alice.pub and bob.pub are the keys they sent, in the checkout."""

import re
import shutil
from pathlib import Path

import pytest
import requests
from docker import DockerClient

from testkit import docblocks
from testkit.docblocks import Plan
from testkit.net import free_host_port
from testkit.ssh import KeyPair, run_as
from tests.compose.team import Team

BLOCKS = docblocks.blocks_for(__file__)


@pytest.fixture
def clone(tmp_path: Path, keypair: KeyPair) -> Path:
    project = docblocks.fresh_copy(tmp_path / "tf29-env")
    compose_file = project / "docker-compose.yml"
    text = compose_file.read_text()
    for shipped_port in ("8801", "8802", "2201", "2202"):  # the examples' ports may be taken on this host
        text = text.replace(f":{shipped_port}:", f":{free_host_port()}:")
    compose_file.write_text(text)
    shutil.copy(f"{keypair.private}.pub", project / "alice.pub")
    shutil.copy(f"{keypair.private}.pub", project / "bob.pub")
    return project


def test_the_readmes_team_line_brings_alice_up(docker_client: DockerClient, image: str, keypair: KeyPair,
                                               clone: Path) -> None:
    team = Team(docker_client, clone, image, "docker compose")
    # The GPU box's file list is .env's; this engine has no NVIDIA runtime, as .env.example says to set.
    team.env["COMPOSE_FILE"] = "docker-compose.yml"
    plans = {("README.md", "cp .env.example .env"): Plan(),
             ("docs/team.md", "python3 compose/member.py secrets alice"): Plan()}
    shell = docblocks.bash(clone, team.env)
    try:
        (readme, _, plan), (examples, _, examples_plan) = docblocks.with_plans(BLOCKS, plans)
        said = docblocks.run_block(readme, shell, plan)
        assert "took over 'alice'" in said, said
        assert "bob: not started, it has no secrets yet" in said, said
        assert [container.labels["com.docker.compose.service"] for container in team.containers()] == ["alice"]
        url = re.search(r"^alice: JupyterLab (http://localhost:\d+/lab\?token=[0-9a-f]{48})$", said, re.M)
        assert url, said
        assert requests.get(url.group(1), timeout=30).status_code == 200
        ssh = re.search(r"^alice: SSH ssh -p (\d+) jovyan@localhost ", said, re.M)
        assert ssh, said
        code, out = run_as(int(ssh.group(1)), "jovyan", keypair, "id -u")
        assert code == 0 and out.splitlines()[-1] == "1001", out

        said = docblocks.run_block(examples, shell, examples_plan)
        assert sorted(c.labels["com.docker.compose.service"] for c in team.containers()) == ["alice", "bob"], said
        bob = re.search(r"^bob: SSH ssh -p (\d+) jovyan@localhost ", said, re.M)
        assert bob, said
        code, out = run_as(int(bob.group(1)), "jovyan", keypair, "id -u")
        assert code == 0 and out.splitlines()[-1] == "1002", out
    finally:
        team.remove_everything()
