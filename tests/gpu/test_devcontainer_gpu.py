"""The GPU dev container example (examples/devcontainer/gpu, `hostRequirements.gpu: optional`) on a
GPU-capable engine (the stand-in), with the real Dev Containers CLI as a non-root host user: the CLI
sees the NVIDIA runtime and starts the container with every GPU (`--gpus all`), which the container
gets as NVIDIA_VISIBLE_DEVICES. On the main engine, without GPUs, the same example starts without
them: tests/devcontainer."""

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.gpuengine import GpuEngine, visible_devices
from tests.devcontainer.conftest import HostUser, Workspace, project_folder, unique_volume
from tests.gpu.conftest import assert_no_gpu_holders
from tf29env.core.paths import REPO

EXAMPLE = REPO / "examples" / "devcontainer" / "gpu" / "devcontainer.json"


@pytest.fixture
def gpu_workspace(devcontainer_cli: Path, host_user: HostUser, gpu_engine: GpuEngine,
                  monkeypatch: pytest.MonkeyPatch) -> Iterator[Workspace]:
    """A project folder of the host user's whose CLI talks to the stand-in engine; what the CLI
    made there (containers, the uid-matching image, volumes) is removed afterwards."""
    monkeypatch.setenv("DOCKER_HOST", gpu_engine.url)
    folder = project_folder(host_user, "tf29-env-dc-gpu-")
    workspace = Workspace(folder, host_user, devcontainer_cli)
    try:
        yield workspace
    finally:
        client = gpu_engine.client()
        for container in client.containers.list(all=True, filters={"label": f"devcontainer.local_folder={folder}"}):
            image = container.attrs["Config"]["Image"]
            container.remove(force=True, v=True)
            if image.startswith("vsc-"):
                client.images.remove(image, force=True)
        for volume in workspace.volumes:
            client.volumes.get(volume).remove(force=True)
        shutil.rmtree(folder, ignore_errors=True)
        assert_no_gpu_holders(gpu_engine)


def test_gpu_example_gets_every_gpu(gpu_workspace: Workspace, gpu_engine: GpuEngine, image: str) -> None:
    config = json.loads(EXAMPLE.read_text())
    assert config["hostRequirements"] == {"gpu": "optional"}
    config["image"] = image
    for mount in config["mounts"]:
        mount["source"] = unique_volume()
        gpu_workspace.volumes.append(mount["source"])
    target = gpu_workspace.folder / ".devcontainer" / "devcontainer.json"
    target.write_text(json.dumps(config))
    os.chown(target, gpu_workspace.user.uid, -1)
    calls = len(gpu_engine.hook_calls())

    up = gpu_workspace.run("up")
    result = json.loads(up.stdout.strip().splitlines()[-1])
    assert result["outcome"] == "success", up.stderr[-3000:]
    container = gpu_engine.client().containers.get(result["containerId"])
    (request,) = container.attrs["HostConfig"]["DeviceRequests"]
    assert (request["Count"], request["Capabilities"]) == (-1, [["gpu"]])
    assert visible_devices(container) == "all"
    assert len(gpu_engine.hook_calls()) > calls
    done = gpu_workspace.run("exec", "sh", "-c", "id -un")  # the CLI adds its own options last
    assert (done.returncode, done.stdout.strip()) == (0, "jovyan"), done.stderr[-2000:]
