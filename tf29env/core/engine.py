"""Docker operations the tool needs besides building: connect, look up, run a probe, tag, remove."""

import contextlib
from typing import Any

import docker
import docker.errors
import requests.exceptions
from docker import DockerClient

from tf29env.core.errors import EXIT_ENGINE, EXIT_TEST, UserError

# The image's venv Python (3.8 or 3.9): the probes import TensorFlow from it.
IMAGE_PYTHON = "/opt/venv/bin/python"


def connect() -> DockerClient:
    """A client for the engine in DOCKER_HOST (default: the local socket), checked with a ping."""
    try:
        client = docker.from_env(timeout=600)
        client.ping()
    except docker.errors.DockerException as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UserError(f"no Docker engine answers ({reason}); start dockerd or set DOCKER_HOST", EXIT_ENGINE) from None
    return client


def image_exists(client: DockerClient, ref: str) -> bool:
    """Whether the engine has an image by this reference locally (nothing is pulled)."""
    try:
        client.images.get(ref)
    except docker.errors.ImageNotFound:
        return False
    except docker.errors.APIError as exc:  # e.g. an invalid reference
        raise UserError(f"{ref}: {exc.explanation or exc}") from None
    return True


def inspect(client: DockerClient, ref: str) -> dict[str, Any]:
    """The engine's `docker image inspect` of ref; a missing image is one line."""
    try:
        attrs: dict[str, Any] = client.api.inspect_image(ref)
    except docker.errors.ImageNotFound:
        raise UserError(f"image {ref} is not on this engine (build it with `build.py build`)") from None
    return attrs


def run_python(client: DockerClient, image: str, script: str, args: list[str], timeout: float = 300,
               python: str = IMAGE_PYTHON) -> str:
    """Run a Python script with the image's python in a throwaway container (no network, entrypoint
    bypassed); its output.

    A non-zero exit raises with the output's last lines: the image cannot run its own Python.
    """
    container = client.containers.create(
        image, entrypoint=[python, "-c", script], command=args, network_mode="none",
        environment={"TF_CPP_MIN_LOG_LEVEL": "3"},
    )
    try:
        container.start()
        try:
            status = int(container.wait(timeout=timeout)["StatusCode"])
        except requests.exceptions.ReadTimeout:
            raise UserError(f"{image}: the probe did not finish within {timeout:.0f}s", EXIT_TEST) from None
        output = container.logs(stdout=True, stderr=False).decode(errors="replace")
        if status != 0:
            errors = container.logs(stdout=False, stderr=True).decode(errors="replace").strip().splitlines()
            raise UserError(f"{image}: the probe exited {status}: {' | '.join(errors[-3:])}", EXIT_TEST)
        return str(output)
    finally:
        with contextlib.suppress(docker.errors.NotFound):
            container.remove(force=True)


def run_command(client: DockerClient, image: str, argv: list[str], timeout: float = 300) -> tuple[int, str]:
    """Run a command (entrypoint bypassed, no network) to completion; its status and output."""
    container = client.containers.create(image, entrypoint=argv[:1], command=argv[1:], network_mode="none")
    try:
        container.start()
        status = int(container.wait(timeout=timeout)["StatusCode"])
        return status, str(container.logs().decode(errors="replace"))
    finally:
        with contextlib.suppress(docker.errors.NotFound):
            container.remove(force=True)


def tag(client: DockerClient, image_id: str, ref: str) -> None:
    repository, _, tag_name = ref.rpartition(":")
    client.api.tag(image_id, repository, tag_name, force=True)


def remove_dangling(client: DockerClient, image_id: str) -> None:
    """Remove an intermediate image the tool itself made, if nothing tags or builds on it."""
    with contextlib.suppress(docker.errors.APIError):
        if not client.api.inspect_image(image_id).get("RepoTags"):
            client.api.remove_image(image_id, noprune=False)
