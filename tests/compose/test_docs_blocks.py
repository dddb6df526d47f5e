"""docs/team.md's "From zero to two environments", typed as written in a fresh copy of the project on
a box without GPUs (the COMPOSE_FILE its step 2 says to set, given in the environment): the examples
removed, dana added from her host account's key (the account is made here and removed after), eli
with his key file and ids, `make up` and `make ps`; then the lines that tell each member where to go;
then "A GPU memory budget per member": fay added with one, dana's set, `make up` again.
The image is the one under test (TF29ENV_IMAGE, as .env names it)."""

import pwd
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from docker import DockerClient

from testkit import docblocks
from testkit.docblocks import Plan
from testkit.ssh import KeyPair, run_as
from tests.compose.team import Team

BLOCKS = docblocks.blocks_for(__file__)
ACCOUNT = "dana"  # the host account step 3 takes her uid and gid from


@pytest.fixture
def dana(keypair: KeyPair) -> Iterator[Path]:
    """Dana's account on this host, with her public key where the doc has it."""
    existing = [entry.pw_name for entry in pwd.getpwall() if entry.pw_name == ACCOUNT]
    assert not existing, f"this host has an account {ACCOUNT!r}, which the test would change: run it elsewhere"
    subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", ACCOUNT], check=True)
    try:
        home = Path(pwd.getpwnam(ACCOUNT).pw_dir)
        (home / ".ssh").mkdir(mode=0o700)
        shutil.copy(f"{keypair.private}.pub", home / ".ssh" / "id_ed25519.pub")
        yield home
    finally:
        subprocess.run(["userdel", "--remove", ACCOUNT], check=False, capture_output=True)


def test_from_zero_to_two_environments_as_typed(docker_client: DockerClient, image: str, keypair: KeyPair,
                                                other_keypair: KeyPair, dana: Path, tmp_path: Path) -> None:
    copy = docblocks.fresh_copy(tmp_path / "tf29-env")
    shutil.copy(f"{other_keypair.private}.pub", copy / "eli.pub")  # the key eli sent
    team = Team(docker_client, copy, image, "docker compose")
    team.env["COMPOSE_FILE"] = "docker-compose.yml"  # step 2's change on a box without GPUs
    shutil.copy(f"{keypair.private}.pub", copy / "fay.pub")  # the key fay sent
    budget = "python3 compose/member.py add fay"
    plans = {("docs/team.md", "cp .env.example .env"): Plan(), ("docs/team.md", 'echo "http://'): Plan(),
             ("docs/team.md", budget): Plan()}
    try:
        said = {key[1]: docblocks.run_block(block, docblocks.bash(copy, team.env), plan)
                for block, key, plan in docblocks.with_plans(BLOCKS, plans) if key[1] != budget}
        started = sorted(c.labels["com.docker.compose.service"] for c in team.containers())
        assert started == ["dana", "eli"], said["cp .env.example .env"][-3000:]
        urls = dict(re.findall(r"^(\w+): JupyterLab (http://localhost:\d+/lab\?token=[0-9a-f]{48})$",
                               said["cp .env.example .env"], re.M))
        assert sorted(urls) == ["dana", "eli"], said["cp .env.example .env"][-3000:]
        for url in urls.values():
            assert requests.get(url, timeout=30).status_code == 200
        ssh = dict(re.findall(r"^(\w+): SSH ssh -p (\d+) jovyan@localhost", said["cp .env.example .env"], re.M))
        code, out = run_as(int(ssh["eli"]), "jovyan", other_keypair, "id -u")
        assert code == 0 and out.splitlines()[-1] == "1005", out
        code, out = run_as(int(ssh["dana"]), "jovyan", keypair, "id -u")
        assert code == 0 and out.splitlines()[-1] == str(pwd.getpwnam(ACCOUNT).pw_uid), out
        # What the admin hands dana: her own token in the URL, the SSH port the doc says.
        assert f"lab?token={team.token('dana')}" in said['echo "http://'], said['echo "http://']

        # "A GPU memory budget per member": fay joins with one, dana's is set, make up recreates her.
        (block, _, plan), = [entry for entry in docblocks.with_plans(BLOCKS, plans) if entry[1][1] == budget]
        typed = docblocks.run_block(block, docblocks.bash(copy, team.env), plan)
        budgets = {}
        for container in team.containers():
            container.reload()
            variables = dict(line.split("=", 1) for line in container.attrs["Config"]["Env"])
            budgets[container.labels["com.docker.compose.service"]] = variables.get("GPU_MEMORY_LIMIT_MB")
        assert budgets == {"dana": "12288", "eli": None, "fay": "8192"}, typed[-3000:]
    finally:
        team.remove_everything()
