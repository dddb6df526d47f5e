"""The image as a dev container, with the real Dev Containers CLI (conftest.py): each example
config in examples/devcontainer comes up on this GPU-less host, `devcontainer exec` runs
TensorFlow as jovyan with the host user's uid (files in the workspace are the host user's; home,
venv and CUDA cache folder stay writable), the image's metadata label is merged into the
configuration, the self-check's banner shows in the start log, and the container is healthy."""

import json
import os
from pathlib import Path

import pytest
from docker import DockerClient

from testkit import docblocks
from testkit.wait import wait_until
from tests.devcontainer.conftest import Workspace, unique_volume
from tf29env.core.paths import REPO

pytestmark = pytest.mark.image

(DOC_BLOCK,) = docblocks.blocks_for(__file__)  # docs/devcontainer.md's CLI lines
EXAMPLES = sorted((REPO / "examples" / "devcontainer").glob("*/devcontainer.json"))


def write_config(workspace: Workspace, example: Path, image: str) -> None:
    """The example as a user copies it, pointed at the image under test; a named volume of its
    own per test, so that nothing is shared with a user's."""
    config = json.loads(example.read_text())
    config["image"] = image
    for mount in config.get("mounts", []):
        mount["source"] = unique_volume()
        workspace.volumes.append(mount["source"])
    target = workspace.folder / ".devcontainer" / "devcontainer.json"
    target.write_text(json.dumps(config))
    os.chown(target, workspace.user.uid, -1)


def test_examples_exist() -> None:
    assert [path.parent.name for path in EXAMPLES] == ["cpu", "gpu"]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda path: path.parent.name)
def test_up_and_exec(workspace: Workspace, image: str, docker_client: DockerClient, example: Path) -> None:
    write_config(workspace, example, image)
    # docs/devcontainer.md's CLI lines as a reader types them; the `up` below finds that container.
    typed = docblocks.run_block(DOC_BLOCK, workspace.prompt())
    assert "2.9.3" in [line.strip() for line in typed.splitlines()], typed[-2000:]
    up = workspace.run("up")
    result = json.loads(up.stdout.strip().splitlines()[-1])
    assert result["outcome"] == "success", up.stderr[-3000:]
    assert result["remoteUser"] == "jovyan"
    # postStartCommand from the image's label, at the first up (the doc's)
    assert "tf29-env GPU / FP16 self-check" in typed, typed[-3000:]

    workspace_in = result["remoteWorkspaceFolder"]
    probe = ("id -un; id -u; python -c 'import tensorflow as tf; print(tf.__version__)'; "
             "bash -lc 'command -v python pip tensorboard'; "
             f"touch {workspace_in}/from-the-container ~/.nv/probe ~/probe && "
             "python -c 'import site, pathlib; pathlib.Path(site.getsitepackages()[0], \"probe\").touch()' && "
             "echo writable")
    done = workspace.run("exec", "sh", "-c", probe)
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    assert done.returncode == 0, done.stdout + done.stderr
    assert lines[:2] == ["jovyan", str(workspace.user.uid)], done.stdout
    assert "2.9.3" in lines and lines[-1] == "writable", done.stdout
    # A terminal in the editor is a login shell: it keeps the venv first on PATH.
    assert lines[3:6] == ["/opt/venv/bin/python", "/opt/venv/bin/pip", "/opt/venv/bin/tensorboard"], done.stdout
    assert (workspace.folder / "from-the-container").stat().st_uid == workspace.user.uid

    container = docker_client.containers.get(result["containerId"])

    def healthy() -> bool:
        container.reload()
        status = container.attrs["State"]["Health"]["Status"]
        assert status != "unhealthy", container.attrs["State"]["Health"]["Log"][-1]
        return bool(status == "healthy")

    wait_until(healthy, timeout=30, what="the dev container healthy")


def test_image_metadata_is_merged(workspace: Workspace, image: str) -> None:
    """`{"image": ...}` alone: the label supplies user, GPU, port, editor extensions, self-check."""
    (workspace.folder / ".devcontainer" / "devcontainer.json").write_text(json.dumps({"image": image}))
    merged = workspace.run_json("read-configuration", "--include-merged-configuration")["mergedConfiguration"]
    assert merged["remoteUser"] == "jovyan"
    assert merged["hostRequirements"]["gpu"] == "optional"
    assert 8888 in merged["forwardPorts"]
    assert merged["portsAttributes"]["8888"]["label"] == "JupyterLab"
    extensions = [name for entry in merged["customizations"]["vscode"] for name in entry.get("extensions", [])]
    assert {"ms-python.python", "ms-toolsai.jupyter"} <= set(extensions)
    assert merged["postStartCommands"] == ["selfcheck"]
