"""The Dockerfile built the way a user without build.py builds it: `docker buildx build` (BuildKit,
the default builder of current Docker) on the repository's files, with the host's extra CAs for the
build only, as README.md says (`--build-arg FTP_PROXY="$(cat /usr/local/share/ca-certificates/*.crt)"`),
on the stand-in gpu base. No labels from build.py, no computed tags: the image is removed again at
the end."""

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import IO

import docker.errors
import pytest
from docker import DockerClient

from tests.conftest import BUILD_LOG, host_ca_certs
from tf29env.commands import BUILDER_TESTS_ENV
from tf29env.core.paths import REPO
from tf29env.core.variants import VARIANTS
from tf29env.imagebuild import standin
from tf29env.imagebuild.cacerts import CA_BUILD_ARG
from tf29env.imagebuild.context import CONTEXT_PATHS

TAG = "tf29-env:test-buildkit"
LOG = BUILD_LOG.with_name("test-buildkit-build.log")


def user_context(target: Path) -> Path:
    """A copy of what a checkout's `docker build .` sends."""
    for name in (*CONTEXT_PATHS, ".dockerignore"):
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy(source, target / name)
    return target


def ca_build_args() -> list[str]:
    """README's build-only CAs: the host's *.crt files as they are, in FTP_PROXY (the Dockerfile says why)."""
    pem = "".join(cert.read_text() for directory in host_ca_certs() for cert in sorted(directory.glob("*.crt")))
    return ["--build-arg", f"{CA_BUILD_ARG}={pem}"] if pem else []


def buildx(context_dir: Path, tag: str, *args: str, log: IO[str]) -> int:
    """`docker buildx build` of context_dir on the stand-in gpu base, into the engine as tag; its exit code."""
    built = subprocess.run(["docker", "buildx", "build", "--progress", "plain", "--load",
                            "--build-arg", f"BASE_IMAGE={VARIANTS['gpu'].standin_base}", *ca_build_args(), *args,
                            "--tag", tag, str(context_dir)],
                           stdout=log, stderr=subprocess.STDOUT, timeout=3600, check=False)
    return built.returncode


@pytest.fixture(scope="session")
def buildkit_image(docker_client: DockerClient, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    version = subprocess.run(["docker", "buildx", "version"], capture_output=True, text=True, check=False)
    assert version.returncode == 0, f"docker buildx is missing (scripts/host-setup.sh installs it): {version.stderr}"
    LOG.parent.mkdir(exist_ok=True)
    with LOG.open("w") as log_file:
        standin.ensure(docker_client, lambda line: print(line, file=log_file, flush=True),
                       VARIANTS["gpu"].standin_base)
        code = buildx(user_context(tmp_path_factory.mktemp("buildkit-context")), TAG, log=log_file)
    assert code == 0, f"docker buildx build failed (exit {code}): {LOG.read_text()[-3000:]}"
    try:
        yield TAG
    finally:
        # APIError: a container of it still exists; the next run's build moves the tag anyway.
        with contextlib.suppress(docker.errors.APIError):
            docker_client.images.remove(TAG)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """`build.py test IMAGE` checks one image: these tests, which build the Dockerfile with BuildKit, are left out."""
    return True if os.environ.get(BUILDER_TESTS_ENV) == "0" else None
