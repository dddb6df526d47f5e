"""The image people upgrade from: this repository's image as it was at PREVIOUS, the last commit
before `make upgrade` existed, built from a git worktree of that commit by its own build.py and kept
by its revision label, so that a warm run reuses it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from docker import DockerClient

from tests.conftest import host_ca_certs
from tf29env.core import engine, labels
from tf29env.core.paths import REPO
from tf29env.imagebuild.context import CONTEXT_PATHS

PREVIOUS = "17ec8e60562a6e6409f7eba9691aba335992a40b"
# A repository of its own: build.py adds the tags an image earns (latest-gpu, ...) in --tag's repository.
PREVIOUS_TAG = "tf29-env-previous:test"
BUILD_LOG = REPO / "build-output" / "test-previous-build.log"


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture(scope="session")
def previous_image(docker_client: DockerClient, image: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """PREVIOUS's image (after the image under test, whose build it shares most layers with)."""
    revision = git("log", "-1", "--format=%H", PREVIOUS, "--", *CONTEXT_PATHS)
    if engine.image_exists(docker_client, PREVIOUS_TAG):
        found = docker_client.images.get(PREVIOUS_TAG)
        if labels.of_image(found.attrs).get(labels.REVISION) == revision:
            return str(found.id)
    tree = tmp_path_factory.mktemp("previous") / "tree"
    git("worktree", "add", "--detach", str(tree), PREVIOUS)
    try:
        # Its build.py runs in the project's venv when it finds it as its own .venv.
        (tree / ".venv").symlink_to(REPO / ".venv")
        ca = [arg for path in host_ca_certs() for arg in ("--ca-cert", str(path))]
        BUILD_LOG.parent.mkdir(exist_ok=True)
        with BUILD_LOG.open("w") as log:
            done = subprocess.run([sys.executable, str(tree / "build.py"), "build", "--variant", "gpu", "--base",
                                   "standin", *ca, "--tag", PREVIOUS_TAG], cwd=tree, stdout=log,
                                  stderr=subprocess.STDOUT, timeout=2400, check=False)
        assert done.returncode == 0, f"building {PREVIOUS[:12]}'s image failed: {Path(BUILD_LOG).read_text()[-3000:]}"
    finally:
        git("worktree", "remove", "--force", str(tree))
    built = docker_client.images.get(PREVIOUS_TAG)
    assert built.id != docker_client.images.get(image).id, "the previous image is the image under test"
    return str(built.id)
