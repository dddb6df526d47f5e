"""The Dockerfile built the way a user without build.py builds it: `docker buildx build` (BuildKit,
the default builder of current Docker) on the repository's files, with the host's extra CA files
dropped into ca-certs/ as ca-certs/README.md says, on the stand-in gpu base. No labels from
build.py, no computed tags: the image is removed again at the end."""

import contextlib
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import docker.errors
import pytest
from docker import DockerClient

from tests.conftest import BUILD_LOG, host_ca_certs
from tf29env import standin
from tf29env.context import CONTEXT_PATHS
from tf29env.paths import REPO
from tf29env.variants import VARIANTS

TAG = "tf29-env:test-buildkit"
LOG = BUILD_LOG.with_name("test-buildkit-build.log")


def user_context(target: Path) -> Path:
    """A copy of what a checkout's `docker build .` sends, plus the host's CAs in ca-certs/."""
    for name in (*CONTEXT_PATHS, ".dockerignore"):
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy(source, target / name)
    for directory in host_ca_certs():
        for cert in directory.glob("*.crt"):
            shutil.copy(cert, target / "ca-certs" / cert.name)
    return target


@pytest.fixture(scope="session")
def buildkit_image(docker_client: DockerClient, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    version = subprocess.run(["docker", "buildx", "version"], capture_output=True, text=True, check=False)
    assert version.returncode == 0, f"docker buildx is missing (scripts/host-setup.sh installs it): {version.stderr}"
    LOG.parent.mkdir(exist_ok=True)
    with LOG.open("w") as log_file:
        base = standin.ensure(docker_client, lambda line: print(line, file=log_file, flush=True),
                               VARIANTS["gpu"].standin_base)
        context = user_context(tmp_path_factory.mktemp("buildkit-context"))
        built = subprocess.run(["docker", "buildx", "build", "--progress", "plain", "--load",
                                "--build-arg", f"BASE_IMAGE={base}", "--tag", TAG, str(context)],
                               stdout=log_file, stderr=subprocess.STDOUT, timeout=3600, check=False)
    assert built.returncode == 0, f"docker buildx build failed (exit {built.returncode}): " \
                                  f"{LOG.read_text()[-3000:]}"
    try:
        yield TAG
    finally:
        # APIError: a container of it still exists; the next run's build moves the tag anyway.
        with contextlib.suppress(docker.errors.APIError):
            docker_client.images.remove(TAG)
