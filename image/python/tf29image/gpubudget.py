"""GPU_MEMORY_LIMIT_MB: a budget TensorFlow keeps on each visible GPU (docs/settings.md, docs/team.md).
Python 3.8 or newer, standard library only; TensorFlow is never imported here.

zz-tf29-env-usersite.pth calls install() at every start of the venv's Python (kernels, scripts, jobs,
SSH sessions). With the variable unset it returns at once. Set, it puts a finder first on sys.meta_path
that waits for `import tensorflow`: once TensorFlow's own __init__ has run, and before anything can run an
op, each physical GPU gets one logical device with memory_limit=MB. TensorFlow's allocator then keeps
under it; TF_FORCE_GPU_ALLOW_GROWTH=true (the image's) still applies below it, so a budget is taken as
needed, not at once. It is a cap TensorFlow keeps, not a hardware limit: other CUDA code, and TensorFlow's
own CUDA context (a few hundred MiB), are outside it.

TensorFlow 2.9 refuses tf.config.experimental.set_memory_growth on a GPU with a logical device
configuration ("Cannot set memory growth on device when virtual devices configured"): code that calls it
must drop the call (TF_FORCE_GPU_ALLOW_GROWTH already grows memory) or unset GPU_MEMORY_LIMIT_MB.
"""

import os
import sys
from typing import Any, List, NamedTuple, Optional, Sequence, Tuple, TypeVar  # python 3.8: no list[...]

ENV = "GPU_MEMORY_LIMIT_MB"
MAX_MB = 16 << 20  # 16 TiB, far above any GPU's memory: more digits are a typo
DEVICE = TypeVar("DEVICE")


class Budget(NamedTuple):
    """What the hook did: the budget in MiB, the GPUs it went to (by name), and why not, if it did not."""

    limit_mb: int
    gpus: Tuple[str, ...]
    problem: str = ""


# What the hook did in this process, once TensorFlow was imported (None: not yet, or no budget).
applied: Optional[Budget] = None


def parse_limit(value: Optional[str]) -> int:
    """The budget in MiB, 0 for none (unset or empty); ValueError with the one line that says why not."""
    if not value:
        return 0
    if not (value.isascii() and value.isdigit() and len(value) <= 9 and 1 <= int(value) <= MAX_MB):
        raise ValueError(f"{ENV}='{value}' is not a number of MiB from 1 to {MAX_MB} (e.g. 4096 for 4 GiB); "
                         "unset it for no budget")
    return int(value)


def plan(value: Optional[str], gpus: Sequence[DEVICE]) -> List[Tuple[DEVICE, int]]:
    """Each GPU with the memory limit to give its one logical device: none without a budget."""
    limit = parse_limit(value)
    return [(gpu, limit) for gpu in gpus] if limit else []


def apply(config: Any, value: Optional[str]) -> Budget:
    """Give each physical GPU that tf.config (CONFIG) lists its budget. Listing the physical devices does
    not start TensorFlow's runtime; an op run before this (in TensorFlow's own import, never so far) would
    have, and then nothing can change: said in the Budget's problem."""
    limit = parse_limit(value)
    gpus = config.list_physical_devices("GPU")
    names = tuple(str(getattr(gpu, "name", gpu)) for gpu in gpus)
    try:
        for gpu, memory_limit in plan(value, gpus):
            config.set_logical_device_configuration(gpu, [config.LogicalDeviceConfiguration(memory_limit=memory_limit)])
    except (RuntimeError, ValueError) as error:
        return Budget(limit, names, str(error).splitlines()[0] if str(error) else type(error).__name__)
    return Budget(limit, names)


def describe(budget: Budget) -> str:
    """One line on what the hook did, for `python -c` and the tests."""
    if budget.problem:
        return f"{ENV}={budget.limit_mb}: not applied: {budget.problem}" if budget.limit_mb else budget.problem
    gpus = ", ".join(budget.gpus) if budget.gpus else "no GPU visible, nothing to limit"
    return f"{ENV}={budget.limit_mb}: each GPU's TensorFlow memory capped at {budget.limit_mb} MiB ({gpus})"


def after_import(module: Any) -> None:
    """Runs once TensorFlow's __init__ is done: never lets a problem here break `import tensorflow`."""
    global applied  # noqa: PLW0603 - the one record of what this process did
    try:
        applied = apply(module.config, os.environ.get(ENV))
    except ValueError as error:  # a value set in a shell after the start, which checks it
        applied = Budget(0, (), f"{error}: no budget applied")
    except Exception as error:  # noqa: BLE001 - a budget that fails must not take TensorFlow with it
        applied = Budget(0, (), f"{type(error).__name__}: {error}")
    if applied.problem:
        sys.stderr.write(f"tf29-env: WARNING: {describe(applied)}\n")


class TensorFlowHook:
    """A finder that finds nothing itself: for `tensorflow` it asks the finders after it and wraps the
    loader's exec_module, so that after_import runs when the module has run; then it leaves sys.meta_path."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != "tensorflow":
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)  # once per process; the finders after it find TensorFlow
        import importlib.util  # noqa: PLC0415 - only when TensorFlow is imported

        spec = importlib.util.find_spec(fullname)
        loader = spec.loader if spec is not None else None
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run_module = loader.exec_module

        def exec_module(module: Any) -> None:
            run_module(module)
            after_import(module)

        setattr(loader, "exec_module", exec_module)  # this loader object serves this one import only  # noqa: B010
        return spec


def install() -> None:
    """From the .pth file: with no budget, nothing; a bad value is said once, when TensorFlow is imported."""
    if not os.environ.get(ENV) or "tensorflow" in sys.modules:
        return
    if not any(isinstance(finder, TensorFlowHook) for finder in sys.meta_path):
        sys.meta_path.insert(0, TensorFlowHook())
