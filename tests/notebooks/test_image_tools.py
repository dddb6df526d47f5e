"""What notebooks 3 and 4 need from the image, checked without a GPU: in the gpu variant CUDA's
libdevice and ptxas (XLA) and CUPTI (the profiler's GPU events), as the self-check's layer 2 finds
them in `selfcheck --json`; in both variants TensorBoard's profile plugin."""

import json

import pytest

from testkit.containers import TrackedContainer

pytestmark = pytest.mark.image

TOOLS = ("lib.libdevice", "lib.ptxas", "lib.cupti")


def command_output(tracked: TrackedContainer, command: list[str]) -> str:
    container = tracked.run(command=command, publish=())
    code = tracked.wait_exit(container, timeout=180)
    out = tracked.logs(container)
    assert code == 0, out[-3000:]
    return out


def test_layer2_finds_xla_and_profiler_tools(tracked: TrackedContainer, variant: str) -> None:
    out = command_output(tracked, ["sh", "-c", "selfcheck --layers 2 --json 2>/dev/null"])
    report = json.loads(out[out.index("{"):])
    found = {check["id"]: check for entry in report["layers"] if entry["layer"] == 2 for check in entry["checks"]}
    if variant == "cpu":
        assert list(found) == ["lib.cpu_variant"] and found["lib.cpu_variant"]["status"] == "SKIP", found
        return
    for check_id in TOOLS:
        assert found[check_id]["status"] == "PASS", found[check_id]
    assert found["lib.ptxas"]["data"]["version"].startswith("11."), found["lib.ptxas"]
    assert found["lib.libdevice"]["data"]["path"] == "/usr/local/cuda/nvvm/libdevice/libdevice.10.bc"
    assert found["lib.cupti"]["data"]["loaded"] == "libcupti.so.11.2", found["lib.cupti"]


def test_tensorboard_has_the_profile_plugin(tracked: TrackedContainer) -> None:
    """TensorBoard finds plugins by their entry points; the plugin's module imports with the image's
    protobuf (3.19, TF 2.9's) and TensorBoard."""
    out = command_output(tracked, ["python", "-c", (
        "import importlib.metadata as md; import tensorboard_plugin_profile.profile_plugin; "
        "print('plugins:', sorted(e.name for e in md.entry_points().get('tensorboard_plugins', [])))")])
    assert "plugins: " in out and "'profile'" in out.split("plugins: ", 1)[1], out
