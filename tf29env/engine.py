"""Connecting to the Docker engine, with a message that says what to do when there is none."""

import docker
import docker.errors
from docker import DockerClient

from tf29env.errors import UserError

EXIT_ENGINE = 3


def connect() -> DockerClient:
    """A client for the engine in DOCKER_HOST (default: the local socket), checked with a ping."""
    try:
        client = docker.from_env(timeout=600)
        client.ping()
    except docker.errors.DockerException as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UserError(
            f"no Docker engine answers ({reason}); start dockerd or set DOCKER_HOST",
            EXIT_ENGINE,
        ) from None
    return client


def image_exists(client: DockerClient, ref: str) -> bool:
    """Whether the engine has an image by this reference locally (nothing is pulled)."""
    try:
        client.images.get(ref)
    except docker.errors.ImageNotFound:
        return False
    return True
