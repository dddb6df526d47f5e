"""Fixtures of tests/hpc (issue 28): the cluster machines' image (Debian 13 with Apptainer, Slurm and
MUNGE, testkit/hpc.py), build.py export's archive of the image under test, and the SIF a cluster
without Docker makes from it, each made once and kept on the engine by a content hash or the image's
id where that saves a later run the work. What is missing to make them (debootstrap) fails the tests
in one line, never skips them."""

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from docker import DockerClient

from testkit import hpc
from testkit.ssh import KeyPair
from tests.hpc.cluster import SLURM_SCRIPTS, Cluster
from tf29env.core.paths import REPO, cache_dir

LOG = REPO / "build-output" / "hpc.log"
USERS = {"alice": 2001, "bob": 2002}
HPC_USERS = " ".join(f"{name}:{uid}" for name, uid in USERS.items())


def as_in_the_docs(user: str) -> str:
    """The command that puts the SIF where docs/hpc.md has it, ~/tf29-env.sif (a link to the shared one)."""
    return f"ln -s /shared/{hpc.SIF_NAME} /home/{user}/{hpc.SIF_NAME}"


def log(line: str) -> None:
    LOG.parent.mkdir(exist_ok=True)
    with LOG.open("a") as handle:
        print(line, file=handle, flush=True)


@pytest.fixture(scope="session")
def hpc_node(docker_client: DockerClient) -> str:
    assert shutil.which("debootstrap"), "debootstrap is missing: run scripts/host-setup.sh"
    return hpc.node_image(docker_client, log)


@pytest.fixture(scope="session")
def exported(image: str) -> Iterator[dict[str, Any]]:
    """`build.py export IMAGE --json` into a scratch folder: its record (the archive is removed after
    the session)."""
    with tempfile.TemporaryDirectory(dir=cache_dir()) as work:
        proc = subprocess.run([sys.executable, str(REPO / "build.py"), "export", image, "--output-dir", work, "--json"],
                              capture_output=True, text=True, check=False, timeout=1200)
        assert proc.returncode == 0, proc.stderr[-2000:]
        yield json.loads(proc.stdout)


@pytest.fixture(scope="session")
def sif(docker_client: DockerClient, hpc_node: str, image: str, request: pytest.FixtureRequest) -> str:
    """The volume holding the SIF, made as a cluster without Docker makes it: from build.py export's
    archive (exported only when the SIF is to be made), with `apptainer build X.sif docker-archive:X.tar`."""
    return hpc.sif_volume(docker_client, hpc_node, image,
                          lambda: Path(request.getfixturevalue("exported")["archive"]["path"]), log)


@pytest.fixture(scope="session")
def hub_node(docker_client: DockerClient, hpc_node: str) -> str:
    """The login machine's image: the machines' plus the hub's venv (deploy/slurm/hub/requirements.txt)."""
    return hpc.hub_image(docker_client, hpc_node, log)


@pytest.fixture(scope="session")
def cluster(docker_client: DockerClient, hpc_node: str, hub_node: str, sif: str, keypair: KeyPair) -> Iterator[Cluster]:
    """The Slurm cluster (tests/hpc/cluster.py), shared by the Slurm and the hub tests: the users'
    homes with work/, what docs/hpc.md's lines name there (~/tf29-env.sif, and deploy/slurm as in a
    checkout of the project: the home is where the tests type them), and alice's public key for the
    login machine's sshd."""
    made = Cluster(docker_client, hpc_node, hub_node, sif, HPC_USERS)
    try:
        made.up()
        for name in USERS:
            code, out = made.login.run(f"install -d -m 700 -o {name} -g {name} /home/{name} /home/{name}/work "
                                       f"/home/{name}/.ssh /home/{name}/deploy")
            assert code == 0, out
            code, out = made.login.run(f"{as_in_the_docs(name)} && ln -s {SLURM_SCRIPTS} /home/{name}/deploy/slurm",
                                       user=name)
            assert code == 0, out
        code, out = made.login.run(f"printf '%s\\n' '{keypair.public_text}' > /home/alice/.ssh/authorized_keys && "
                                   "chown alice:alice /home/alice/.ssh/authorized_keys")
        assert code == 0, out
        yield made
    finally:
        made.down()
