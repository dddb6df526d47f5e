"""Fixtures of the GPU-path tests: one stand-in GPU engine per session (testkit/gpuengine.py) on a
box with two whole GPUs and a third in MIG mode with two slices (gpuengine.WITH_MIG), with the
image under test loaded into it (nothing can be pulled: `docker save | docker load`, about 70-90 s
on 2 cores, kept for the next run), always stopped with its containers, networks, bridge and
folder. A missing dockerd, `ip` or docker CLI fails the tests with the line that says so, never
skips them. Every module leaves the engine without containers, so the hub's count of held GPUs starts from zero."""

from collections.abc import Iterator

import pytest
from docker import DockerClient

from testkit import gpuengine
from testkit.gpuengine import GpuEngine
from tests.devcontainer.conftest import devcontainer_cli, host_user
from tests.hub.hubrun import install_tools
from tf29env.core.paths import cache_dir

__all__ = ["devcontainer_cli", "host_user"]  # the dev container tests' fixtures, for test_devcontainer_gpu


@pytest.fixture(scope="session")
def gpu_engine(docker_client: DockerClient, image: str) -> Iterator[GpuEngine]:
    # The image copy (docker save | load, a minute or two) is kept for the next run of the same image.
    with gpuengine.kept_data(cache_dir() / "gpu-engine") as data:
        engine = gpuengine.start(gpuengine.WITH_MIG, data=data)
        try:
            engine.load_image(docker_client, image)
            yield engine
        finally:
            engine.stop()


@pytest.fixture(scope="session")
def hub_tools() -> None:
    install_tools()


def assert_no_gpu_holders(engine: GpuEngine) -> None:
    """What a module must leave behind: no container on the engine (one holding a GPU would change
    what the next module's hub or team gets)."""
    left = engine.client().containers.list(all=True)
    assert left == [], f"containers left on the stand-in GPU engine: {[c.name for c in left]}"
