"""A team setup in a scratch folder: a copy of docker-compose.yml and compose/, with members added
by compose/member.py, driven by either compose implementation and the targets of compose.mk.

Every run has its own compose project name, and every port is published on 127.0.0.1 only.
"""

import os
import secrets
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from docker import DockerClient
from docker.models.containers import Container

from testkit.ssh import KeyPair
from testkit.wait import wait_until

REPO = Path(__file__).resolve().parent.parent.parent
# The implementations the files must suit, as compose.mk's COMPOSE spells them: Debian 12's
# docker-compose 1.29 (the older one) and the `docker compose` v2 plugin that current Docker ships.
IMPLEMENTATIONS = {"v1": "docker-compose", "v2": "docker compose"}
STOP_TIMEOUT = 15


def engine_memlock(client: DockerClient, image: str) -> int:
    """The hard memlock limit (bytes, -1: unlimited) a container of IMAGE gets when it asks for
    none: the most this engine can grant (8 MiB on the build machine, whose engine may not raise it)."""
    out = client.containers.run(image, entrypoint="/bin/sh", command=["-c", "ulimit -H -l"], remove=True,
                                network_mode="none").decode().strip()
    return -1 if out == "unlimited" else int(out) * 1024


def copy_project(target: Path) -> Path:
    """docker-compose.yml, compose/ and compose.mk as shipped, without anyone's secrets."""
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "docker-compose.yml", target)
    shutil.copy(REPO / "compose.mk", target)
    shutil.copytree(REPO / "compose", target / "compose", ignore=shutil.ignore_patterns("secrets", "__pycache__"))
    return target


def port_spec(port: str | dict[str, Any]) -> str:
    """A published port as HOST_IP:PUBLISHED:TARGET/PROTOCOL, from v1's short or v2's long syntax."""
    if isinstance(port, str):
        return port
    return f"{port['host_ip']}:{port['published']}:{port['target']}/{port['protocol']}"


def size_bytes(size: str | int) -> int:
    """shm_size in bytes: v1 keeps "1g" as written, v2 writes "1073741824"."""
    text = str(size).lower()
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def resolved(project: Path, compose: str, env: dict[str, str]) -> dict[str, Any]:
    """`compose config` of PROJECT, in one shape for both implementations: ports as short
    strings (sorted) and shm_size in bytes."""
    result = subprocess.run([*compose.split(), "config"], cwd=project, env=env, capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0, f"{compose} config: {result.stderr[-3000:]}"
    loaded = yaml.safe_load(result.stdout)
    assert isinstance(loaded, dict)
    for service in loaded["services"].values():
        service["ports"] = sorted(port_spec(port) for port in service.get("ports", []))
        if "shm_size" in service:
            service["shm_size"] = size_bytes(service["shm_size"])
    return loaded


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
    def __init__(self, client: DockerClient, project: Path, image: str, compose: str,
                 files: str = "docker-compose.yml") -> None:
        self.client = client
        self.project = project
        self.command = compose
        self.up_log = ""  # what the first `make up` printed on stderr (the team fixture fills it)
        self.name = f"tf29cmp{secrets.token_hex(4)}"
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("COMPOSE_", "TF29ENV_", "DOCKER_"))},
            "COMPOSE_PROJECT_NAME": self.name,
            "COMPOSE_FILE": files,
            "TF29ENV_IMAGE": image,
            "TF29ENV_BIND_ADDRESS": "127.0.0.1",  # tests talk to loopback only
            "TF29ENV_SELF_CHECK": "off",  # its TensorFlow import is slow on a shared CPU; tested elsewhere
        }

    def compose(self, *args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        result = subprocess.run([*self.command.split(), *args], cwd=self.project, env=self.env, capture_output=True,
                                text=True, timeout=timeout, check=False)
        assert not check or result.returncode == 0, f"{self.command} {' '.join(args)}: {result.stderr[-3000:]}"
        return result

    def config(self) -> dict[str, Any]:
        return resolved(self.project, self.command, self.env)

    def make(self, target: str, *variables: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(["make", "-f", "compose.mk", target, f"COMPOSE={self.command}", *variables],
                                cwd=self.project, env=self.env, capture_output=True, text=True, timeout=300,
                                check=False)
        assert not check or result.returncode == 0, f"make {target}: {result.stdout[-2000:]}{result.stderr[-3000:]}"
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
