"""The README's team line, typed as it stands there, in a fresh copy of the project: the shipped
example alice is taken over with the key given, `make up` starts her (and says why not bob, who has
no secrets), waits until she is healthy and prints a URL and an ssh command that answer."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import requests
from docker import DockerClient

from testkit.net import free_host_port
from testkit.ssh import KeyPair, run_as
from tests.compose.team import Team
from tf29env.core.paths import REPO


def readme_line(words: str) -> tuple[int, str]:
    """The README's shell line holding WORDS, with its line number."""
    for number, line in enumerate((REPO / "README.md").read_text().splitlines(), 1):
        if words in line and not line.lstrip().startswith("#"):
            return number, line.split("  #")[0].strip()
    raise AssertionError(f"README.md has no line with {words!r}")


def fresh_copy(target: Path) -> Path:
    """The project's files as a clone has them (tracked, and new ones git does not ignore)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


@pytest.fixture
def clone(tmp_path: Path, keypair: KeyPair) -> Path:
    project = fresh_copy(tmp_path / "tf29-env")
    compose_file = project / "docker-compose.yml"
    text = compose_file.read_text()
    for shipped_port in ("8801", "8802", "2201", "2202"):  # the examples' ports may be taken on this host
        text = text.replace(f":{shipped_port}:", f":{free_host_port()}:")
    compose_file.write_text(text)
    shutil.copy(f"{keypair.private}.pub", project / "alice.pub")  # the line's placeholder: alice's key
    return project


def test_the_readmes_team_line_brings_alice_up(docker_client: DockerClient, image: str, keypair: KeyPair,
                                               clone: Path) -> None:
    number, line = readme_line("compose/member.py add alice")
    team = Team(docker_client, clone, image, "docker compose")
    # The GPU box's file list is .env's; this engine has no NVIDIA runtime, as .env.example says to set.
    team.env["COMPOSE_FILE"] = "docker-compose.yml"
    try:
        done = subprocess.run(["bash", "-c", line], cwd=clone, env=team.env, capture_output=True, text=True,
                              timeout=600, check=False)
        said = done.stdout + done.stderr
        assert done.returncode == 0, f"README.md:{number}: {line}: {said[-3000:]}"
        assert "took over 'alice'" in done.stdout, said
        assert "bob: not started, it has no secrets yet" in done.stderr, said
        assert [container.labels["com.docker.compose.service"] for container in team.containers()] == ["alice"]
        url = re.search(r"^alice: JupyterLab (http://localhost:\d+/lab\?token=[0-9a-f]{48})$", done.stdout, re.M)
        assert url, said
        assert requests.get(url.group(1), timeout=30).status_code == 200
        ssh = re.search(r"^alice: SSH ssh -p (\d+) jovyan@localhost ", done.stdout, re.M)
        assert ssh, said
        code, out = run_as(int(ssh.group(1)), "jovyan", keypair, "id -u")
        assert code == 0 and out.splitlines()[-1] == "1001", out
    finally:
        team.remove_everything()
