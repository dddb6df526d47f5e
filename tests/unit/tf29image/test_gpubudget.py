"""tf29image.gpubudget, GPU_MEMORY_LIMIT_MB's import hook: the value's check, the plan over TensorFlow's GPU
list (faked: no GPU here), and the hook itself, run by the real import machinery on a stand-in `tensorflow`
package, so that it is known to fire once, after the module has run, and to leave sys.meta_path."""

import importlib
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tf29image import gpubudget


@pytest.mark.parametrize(("value", "limit"), [(None, 0), ("", 0), ("1", 1), ("04096", 4096), ("16777216", 16 << 20)])
def test_a_budget_is_a_number_of_mib(value: str | None, limit: int) -> None:
    assert gpubudget.parse_limit(value) == limit


@pytest.mark.parametrize("value", ["0", "-1", "4G", "4096.0", " 4096", "16777217", "٤٠٩٦", "1" * 10])
def test_anything_else_is_one_line(value: str) -> None:
    with pytest.raises(ValueError, match=r"^GPU_MEMORY_LIMIT_MB='.*' is not a number of MiB from 1 to ") as error:
        gpubudget.parse_limit(value)
    assert "\n" not in str(error.value)


def test_the_plan_gives_every_gpu_the_budget_and_none_without_one() -> None:
    assert gpubudget.plan("2048", ["GPU:0", "GPU:1"]) == [("GPU:0", 2048), ("GPU:1", 2048)]
    assert gpubudget.plan("2048", []) == []
    assert gpubudget.plan(None, ["GPU:0"]) == []


@dataclass
class FakeConfig:
    """tf.config as the hook uses it: the physical GPUs, and what it was asked to set."""

    gpus: list[str]
    initialized: bool = False
    logical: dict[str, list[Any]] = field(default_factory=dict)

    def list_physical_devices(self, kind: str) -> list[str]:
        return list(self.gpus) if kind == "GPU" else []

    def set_logical_device_configuration(self, gpu: str, devices: list[Any]) -> None:
        if self.initialized:  # TensorFlow's own words once an op has run
            raise RuntimeError("Virtual devices cannot be modified after being initialized")
        self.logical[gpu] = devices

    @staticmethod
    def LogicalDeviceConfiguration(memory_limit: int) -> tuple[str, int]:  # TensorFlow's name
        return ("memory_limit", memory_limit)


def test_apply_gives_each_physical_gpu_one_logical_device_with_the_limit() -> None:
    config = FakeConfig(["GPU:0", "GPU:1"])
    budget = gpubudget.apply(config, "3000")
    assert config.logical == {"GPU:0": [("memory_limit", 3000)], "GPU:1": [("memory_limit", 3000)]}
    assert budget == gpubudget.Budget(3000, ("GPU:0", "GPU:1"))
    assert gpubudget.describe(budget) == ("GPU_MEMORY_LIMIT_MB=3000: each GPU's TensorFlow memory capped at 3000 MiB "
                                          "(GPU:0, GPU:1)")


def test_with_no_gpu_there_is_nothing_to_apply_but_the_budget_is_said() -> None:
    budget = gpubudget.apply(FakeConfig([]), "3000")
    assert gpubudget.describe(budget) == ("GPU_MEMORY_LIMIT_MB=3000: each GPU's TensorFlow memory capped at 3000 MiB "
                                          "(no GPU visible, nothing to limit)")


def test_a_runtime_already_started_is_said_not_raised() -> None:
    budget = gpubudget.apply(FakeConfig(["GPU:0"], initialized=True), "3000")
    assert budget.problem == "Virtual devices cannot be modified after being initialized"
    assert gpubudget.describe(budget).startswith("GPU_MEMORY_LIMIT_MB=3000: not applied: Virtual devices")


# A stand-in for TensorFlow's package: its config, and whether the hook ran before its own code had finished.
FAKE_TENSORFLOW = """
    from tf29image import gpubudget
    seen_during_import = gpubudget.applied
    class config:
        gpus = ["/physical_device:GPU:0"]
        logical = {}
        @staticmethod
        def list_physical_devices(kind):
            return config.gpus
        @staticmethod
        def set_logical_device_configuration(gpu, devices):
            config.logical[gpu] = devices
        @staticmethod
        def LogicalDeviceConfiguration(memory_limit):
            return memory_limit
"""


@pytest.fixture
def fake_tensorflow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    (tmp_path / "tensorflow").mkdir()
    (tmp_path / "tensorflow" / "__init__.py").write_text(textwrap.dedent(FAKE_TENSORFLOW))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    monkeypatch.delitem(sys.modules, "tensorflow", raising=False)
    monkeypatch.setattr(gpubudget, "applied", None)
    yield
    sys.modules.pop("tensorflow", None)


@pytest.mark.usefixtures("fake_tensorflow")
def test_the_hook_applies_the_budget_once_tensorflow_has_run(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPU_MEMORY_LIMIT_MB", "4096")
    gpubudget.install()
    gpubudget.install()  # the .pth file runs once; a second call adds no second finder
    assert sum(isinstance(finder, gpubudget.TensorFlowHook) for finder in sys.meta_path) == 1
    tensorflow = importlib.import_module("tensorflow")  # the stand-in, through the import machinery and the hook

    assert tensorflow.seen_during_import is None  # not before the module's own code had run
    assert tensorflow.config.logical == {"/physical_device:GPU:0": [4096]}
    assert gpubudget.applied == gpubudget.Budget(4096, ("/physical_device:GPU:0",))
    assert not any(isinstance(finder, gpubudget.TensorFlowHook) for finder in sys.meta_path)


@pytest.mark.usefixtures("fake_tensorflow")
def test_without_a_budget_nothing_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GPU_MEMORY_LIMIT_MB", raising=False)
    gpubudget.install()
    assert not any(isinstance(finder, gpubudget.TensorFlowHook) for finder in sys.meta_path)
    tensorflow = importlib.import_module("tensorflow")

    assert tensorflow.config.logical == {}
    assert gpubudget.applied is None


@pytest.mark.usefixtures("fake_tensorflow")
def test_a_bad_value_set_later_warns_and_leaves_tensorflow_working(monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("GPU_MEMORY_LIMIT_MB", "lots")
    gpubudget.install()
    tensorflow = importlib.import_module("tensorflow")

    assert tensorflow.config.logical == {}
    assert capsys.readouterr().err == ("tf29-env: WARNING: GPU_MEMORY_LIMIT_MB='lots' is not a number of MiB from 1 "
                                       "to 16777216 (e.g. 4096 for 4 GiB); unset it for no budget: no budget "
                                       "applied\n")
