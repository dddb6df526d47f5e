"""A team setup in a scratch folder: a copy of docker-compose.yml and compose/, with members added
by compose/member.py, driven by Debian's docker-compose 1.29 and the targets of compose.mk.

Every run has its own compose project name, and every port is published on 127.0.0.1 only.
"""

import os
import resource
import secrets
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from docker import DockerClient
from docker.models.containers import Container

from tests.helpers.ssh import KeyPair
from tests.helpers.wait import wait_until

REPO = Path(__file__).resolve().parent.parent.parent
COMPOSE = "docker-compose"  # Debian's 1.29, the older of the two implementations the file must suit
STOP_TIMEOUT = 15


def memlock_limit() -> str:
    """TF29ENV_MEMLOCK for this host: unlimited (-1) where the hard limit allows, else the limit
    (an engine that runs under a hard limit cannot give containers more; this one's is 8 MiB)."""
    hard = resource.getrlimit(resource.RLIMIT_MEMLOCK)[1]
    return "-1" if hard == resource.RLIM_INFINITY else str(hard)


def copy_project(target: Path) -> Path:
    """docker-compose.yml, compose/ and compose.mk as shipped, without anyone's secrets."""
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "docker-compose.yml", target)
    shutil.copy(REPO / "compose.mk", target)
    shutil.copytree(REPO / "compose", target / "compose", ignore=shutil.ignore_patterns("secrets", "__pycache__"))
    return target


def member_py(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(project / "compose" / "member.py"), "--project-dir", str(project),
                           *args], capture_output=True, text=True, check=False)


@dataclass(frozen=True)
class Member:
    name: str
    uid: int
    gid: int
    jupyter_port: int
    ssh_port: int
    key: KeyPair


class Team:
    def __init__(self, client: DockerClient, project: Path, image: str, files: str = "docker-compose.yml") -> None:
        self.client = client
        self.project = project
        self.name = f"tf29cmp{secrets.token_hex(4)}"
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("COMPOSE_", "TF29ENV_", "DOCKER_"))},
            "COMPOSE_PROJECT_NAME": self.name,
            "COMPOSE_FILE": files,
            "TF29ENV_IMAGE": image,
            "TF29ENV_BIND_ADDRESS": "127.0.0.1",  # tests talk to loopback only
            "TF29ENV_SELF_CHECK": "off",  # its TensorFlow import is slow on a shared CPU; tested elsewhere
            "TF29ENV_MEMLOCK": memlock_limit(),
        }

    def compose(self, *args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        result = subprocess.run([COMPOSE, *args], cwd=self.project, env=self.env, capture_output=True, text=True,
                                timeout=timeout, check=False)
        assert not check or result.returncode == 0, f"{COMPOSE} {' '.join(args)}: {result.stderr[-3000:]}"
        return result

    def make(self, target: str, *variables: str) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(["make", "-f", "compose.mk", target, f"COMPOSE={COMPOSE}", *variables],
                                cwd=self.project, env=self.env, capture_output=True, text=True, timeout=300,
                                check=False)
        assert result.returncode == 0, f"make {target}: {result.stdout[-2000:]}{result.stderr[-3000:]}"
        return result

    def token(self, member: str) -> str:
        return (self.project / "compose" / "secrets" / member / "jupyter_token").read_text().strip()

    def containers(self, service: str | None = None) -> list[Container]:
        labels = [f"com.docker.compose.project={self.name}"]
        if service:
            labels.append(f"com.docker.compose.service={service}")
        return list(self.client.containers.list(all=True, filters={"label": labels}))

    def container(self, service: str) -> Container:
        found = self.containers(service)
        assert len(found) == 1, f"{service}: {len(found)} containers"
        return found[0]

    def wait_healthy(self, service: str, timeout: float = 180) -> Container:
        def probe() -> Container | None:
            container = self.container(service)
            state = container.attrs["State"]
            if state["Status"] == "exited" or state.get("Restarting"):
                raise AssertionError(f"{service} stopped: {container.logs().decode(errors='replace')[-2000:]}")
            return container if state.get("Health", {}).get("Status") == "healthy" else None

        return wait_until(probe, timeout=timeout, what=f"{service} healthy")

    def volumes(self) -> list[str]:
        found = self.client.volumes.list(filters={"label": f"com.docker.compose.project={self.name}"})
        return sorted(volume.name for volume in found)

    def remove_everything(self) -> None:
        self.compose("down", "-v", "--remove-orphans", "-t", "5", check=False)
