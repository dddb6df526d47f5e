"""The image as BuildKit builds it passes the same first checks as build.py's: a consistent pip
set, Jupyter behind its token, SSH with a key, healthy. BuildKit differs from the classic builder
in ways a Dockerfile can trip over (no implicit context files, other cache, SHELL and ARG
scoping); users of current Docker get it by default."""

from docker import DockerClient

from testkit.containers import TrackedContainer
from testkit.jupyter import api_status
from testkit.ssh import KeyPair, connect, run

TOKEN = "tok-buildkit-5b7e0c2a"


def test_image_was_built_by_buildkit(docker_client: DockerClient, buildkit_image: str) -> None:
    """Not a classic-builder image that happens to carry the tag: BuildKit marks each layer."""
    history = docker_client.api.history(buildkit_image)
    assert any(entry.get("Comment") == "buildkit.dockerfile.v0" for entry in history)


def test_pip_set_is_consistent(docker_client: DockerClient, buildkit_image: str) -> None:
    tracked = TrackedContainer(docker_client, buildkit_image)
    try:
        container = tracked.run(publish=(), command=["pip", "check"])
        assert tracked.wait_exit(container) == 0, tracked.logs(container)
        assert "No broken requirements found." in tracked.logs(container)
    finally:
        tracked.remove_all()


def test_jupyter_ssh_and_health(docker_client: DockerClient, buildkit_image: str, keypair: KeyPair) -> None:
    tracked = TrackedContainer(docker_client, buildkit_image)
    try:
        container = tracked.run(environment={"JUPYTER_TOKEN": TOKEN, "SSH_AUTHORIZED_KEYS": keypair.public_text,
                                             "SELF_CHECK": "off"})
        tracked.wait_healthy(container, timeout=120)
        port = tracked.port(container, 8888)
        assert api_status(port) == 403
        assert api_status(port, TOKEN) == 200
        client = connect(tracked.port(container, 22), "jovyan", keypair)
        try:
            assert run(client, "id -un; python -c 'import tensorflow as tf; print(tf.__version__)' 2>/dev/null") == \
                (0, "jovyan\n2.9.3\n")
        finally:
            client.close()
    finally:
        tracked.remove_all()
