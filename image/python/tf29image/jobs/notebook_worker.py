"""A notebook job's worker: papermill executes the job's copy of the notebook with its parameters
(injected after the cell tagged `parameters`), saves the output notebook after every cell and
writes each cell's stream output to stdout as it comes (the supervisor logs it). An interrupt is
passed on to the kernel, where it is a KeyboardInterrupt in the running cell."""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

from tf29image.jobs import procs, store


def interrupt_kernels(_signum: int, _frame: Any) -> None:
    # The kernel runs in a session of its own (jupyter_client's launcher), so the job's group signal
    # misses it; ipykernel turns SIGINT into KeyboardInterrupt only while a cell runs.
    kernels = procs.descendants(os.getpid())
    if not kernels:
        raise KeyboardInterrupt
    procs.signal_all(kernels, signal.SIGINT)


def one_line(text: str, limit: int = 160) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def own_output() -> None:
    """The kernel inherits this process's stdout and stderr, and ipykernel copies what is written to
    them (TensorFlow's C++ log, a subprocess's output) into the cell's output too: the log would get
    it twice. So the kernel gets /dev/null, and this process writes to copies of the two."""
    out, err = os.dup(1), os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    os.close(null)
    sys.stdout = open(out, "w", buffering=1, encoding="utf-8", errors="replace")  # noqa: SIM115 - for the process's life
    sys.stderr = open(err, "w", buffering=1, encoding="utf-8", errors="replace")  # noqa: SIM115


def main(folder: str, output: str) -> int:
    own_output()
    record = store.read(folder)
    signal.signal(signal.SIGINT, interrupt_kernels)
    import papermill  # noqa: PLC0415 - a second's import, only in the worker
    from papermill.exceptions import PapermillExecutionError  # noqa: PLC0415

    try:
        papermill.execute_notebook(os.path.join(folder, record["input_copy"]), os.path.join(folder, output),
                                   parameters=record["parameters"], cwd=record["cwd"], progress_bar=False,
                                   request_save_on_cell_execute=True, stdout_file=sys.stdout,
                                   stderr_file=sys.stderr)
    except PapermillExecutionError as error:
        first = next((line for line in str(error.source).splitlines() if line.strip()), "")
        raised = f"{error.ename}: {one_line(error.evalue)}" if str(error.evalue).strip() else error.ename
        line = f"cell In [{error.exec_count}] ({one_line(first, 60)}) raised {raised}"
        print(f"job: {line}", file=sys.stderr, flush=True)
        with open(os.path.join(folder, store.FAILURE), "w", encoding="utf-8") as failure:
            failure.write(line + "\n")
        return 130 if error.ename == "KeyboardInterrupt" else 1
    except Exception as error:  # noqa: BLE001 - a bad notebook or a kernel that died: one line, then exit
        line = f"the notebook could not run: {type(error).__name__}: {one_line(str(error))}"
        print(f"job: {line}", file=sys.stderr, flush=True)
        with open(os.path.join(folder, store.FAILURE), "w", encoding="utf-8") as failure:
            failure.write(line + "\n")
        return 1
    return 0
