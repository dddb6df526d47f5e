"""The image as BuildKit builds it passes the same first checks as build.py's: a consistent pip
set, Jupyter behind its token, SSH with a key, healthy. BuildKit differs from the classic builder
in ways a Dockerfile can trip over (no implicit context files, other cache, SHELL and ARG
scoping); users of current Docker get it by default."""

import contextlib
import json
from pathlib import Path

import docker.errors
import pytest
from docker import DockerClient

from testkit.containers import TrackedContainer
from testkit.jupyter import api_status
from testkit.ssh import KeyPair, connect, run
from tests.buildkit.conftest import LOG, buildx, user_context
from tests.image.test_image_contents import CA_PROBE, ca_needles, host_cas, scan_layers
from tests.unit.tf29env.imagebuild.test_context import TEST_CA, TEST_CA_SHA256

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
        container = tracked.run(environment={"JUPYTER_TOKEN": TOKEN, "SSH_AUTHORIZED_KEYS": keypair.public_text})
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


def ca_report(docker_client: DockerClient, image: str, lines: list[str]) -> dict[str, object]:
    tracked = TrackedContainer(docker_client, image)
    try:
        report: dict[str, object] = json.loads(tracked.last_line_of(["python", "-c", CA_PROBE, *lines],
                                                                    timeout=120))
        return report
    finally:
        tracked.remove_all()


def test_build_only_cas_leave_no_trace(docker_client: DockerClient, buildkit_image: str) -> None:
    """The host's CAs, passed in FTP_PROXY as README says, served the build (it downloaded through
    the proxy) and are in no layer, no history line and not in the trust store."""
    needles = {cert.fingerprint: ca_needles(cert) for cert in host_cas()}
    forbidden, found = scan_layers(docker_client, buildkit_image, needles)
    assert forbidden == [] and found == []
    history = json.dumps(docker_client.api.history(buildkit_image))
    assert not [fp for fp, group in needles.items() if group[0].decode() in history]
    report = ca_report(docker_client, buildkit_image, [group[0].decode() for group in needles.values()])
    assert report["local"] == [] and report["in_store"] == [False] * len(needles)


@pytest.fixture
def ca_context(tmp_path: Path) -> Path:
    """The checkout's context with a CA dropped into ca-certs/."""
    (tmp_path / "context").mkdir()
    context_dir = user_context(tmp_path / "context")
    (context_dir / "ca-certs" / "test-ca.crt").write_text(TEST_CA)
    return context_dir


def test_ca_certs_files_are_kept_only_when_asked(docker_client: DockerClient, buildkit_image: str,
                                                  ca_context: Path) -> None:
    """ca-certs/*.crt: without TRUST_CA_CERTS=1 the build stops with one line, rather than trust
    them; with it, the image trusts them. Only the last steps run: the rest is BuildKit's cache."""
    tag = f"{buildkit_image}-kept"
    start = LOG.stat().st_size
    with LOG.open("a") as log:
        refused = buildx(ca_context, tag, log=log)
    assert refused != 0
    assert "ca-certs/ holds CA certificates, but TRUST_CA_CERTS is not 1: the image would trust them for every " \
           "user. Keep them with --build-arg TRUST_CA_CERTS=1" in LOG.read_text()[start:]
    try:
        with LOG.open("a") as log:
            kept = buildx(ca_context, tag, "--build-arg", "TRUST_CA_CERTS=1", log=log)
        assert kept == 0, LOG.read_text()[-3000:]
        report = ca_report(docker_client, tag, [TEST_CA.splitlines()[5]])
        assert report["local"] == [TEST_CA_SHA256] and report["in_store"] == [True]
    finally:
        with contextlib.suppress(docker.errors.APIError):
            docker_client.images.remove(tag)
