"""Runs the repository's quickstart notebooks headless inside a container of the image under test,
as the dev user, with nbclient from the image's venv (the kernel the user gets), and hands back the
executed notebook as JSON for the tests to read."""

import ast
import io
import json
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from docker.models.containers import Container

from testkit.containers import TrackedContainer

REPO = Path(__file__).resolve().parents[2]
SOURCE = REPO / "notebooks" / "quickstart"
# In the throwaway container, never on the host.
CONTAINER_TMP = "/tmp"  # noqa: S108 - the container's own /tmp
IN_CONTAINER = f"{CONTAINER_TMP}/quickstart-under-test"
USER = "jovyan"
# Sizes that make every notebook run in seconds on a CPU (the notebooks' QS_<NAME> overrides).
TINY = {"QS_BATCH_SIZE": "16", "QS_STEPS": "3", "QS_WARMUP_STEPS": "1", "QS_HIDDEN": "32", "QS_PROFILE_STEPS": "2"}
CELL_TIMEOUT_S = 300

# Executed in the container: stops at the first failing cell, as a user's "Run All" does, and keeps
# the outputs up to there; the notebook and the error's name go to a JSON file for the host. INJECT
# (or "") is a cell put after the `parameters` cell, as papermill does; UNTIL (or "") ends the notebook
# at the first code cell whose source holds it.
EXECUTE = """
import json, os, sys
import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
path, out, timeout, inject, until = sys.argv[1:6]
nb = nbformat.read(path, as_version=4)
if inject:
    at = next(i for i, cell in enumerate(nb.cells) if "parameters" in cell.metadata.get("tags", []))
    nb.cells.insert(at + 1, nbformat.v4.new_code_cell(inject, metadata={"tags": ["injected-parameters"]}))
if until:
    end = next(i for i, cell in enumerate(nb.cells) if cell.cell_type == "code" and until in cell.source)
    nb.cells = nb.cells[:end + 1]
client = NotebookClient(nb, timeout=int(timeout), kernel_name="python3",
                        resources={"metadata": {"path": os.path.dirname(path)}})
error = None
try:
    client.execute()
except CellExecutionError as exc:
    error = exc.ename
with open(out, "w") as handle:
    json.dump({"error": error, "notebook": nb}, handle)
"""


@dataclass
class Executed:
    """An executed notebook: its code cells' outputs, and the name of the error that stopped it."""

    error: str | None
    cells: list[dict[str, Any]] = field(default_factory=list)

    def stdout(self) -> str:
        return "".join(
            "".join(output.get("text", ""))
            for cell in self.cells for output in cell.get("outputs", [])
            if output.get("output_type") == "stream" and output.get("name") == "stdout"
        )

    def errors(self) -> list[dict[str, Any]]:
        return [output for cell in self.cells for output in cell.get("outputs", [])
                if output.get("output_type") == "error"]

    def ran(self) -> list[bool]:
        """For each code cell: did it run (it has an execution count)."""
        return [cell.get("execution_count") is not None for cell in self.cells]


def notebooks() -> list[str]:
    return sorted(path.name for path in SOURCE.glob("*.ipynb"))


def size_pairs(name: str) -> dict[str, tuple[int, int]]:
    """The sizes that the notebook's `parameters` cell gives as pairs: {NAME: (on a GPU, on a CPU)}."""
    notebook = json.loads((SOURCE / name).read_text())
    cell = next(cell for cell in notebook["cells"] if "parameters" in cell["metadata"].get("tags", []))
    pairs = {}
    for node in ast.parse("".join(cell["source"])).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Tuple):
            target, = node.targets
            assert isinstance(target, ast.Name), ast.dump(node)
            gpu, cpu = ast.literal_eval(node.value)
            pairs[target.id] = (int(gpu), int(cpu))
    return pairs


def copy_in(container: Container) -> None:
    """The repository's notebooks into IN_CONTAINER, readable by the dev user."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        folder = tarfile.TarInfo(IN_CONTAINER.rsplit("/", 1)[-1])
        folder.type, folder.mode = tarfile.DIRTYPE, 0o755
        tar.addfile(folder)
        for name in notebooks():
            data = (SOURCE / name).read_bytes()
            info = tarfile.TarInfo(f"{folder.name}/{name}")
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    assert container.put_archive(CONTAINER_TMP, buffer.getvalue())


def execute(tracked: TrackedContainer, container: Container, name: str, env: dict[str, str], *,
            inject: str = "", until: str = "") -> Executed:
    """Run notebook NAME with ENV, optionally with a cell INJECTed after its parameters (as papermill does)
    and only UNTIL the first code cell whose source holds that text."""
    out = f"{CONTAINER_TMP}/executed-{name}.json"
    code, log = tracked.exec(container, ["python", "-c", EXECUTE, f"{IN_CONTAINER}/{name}", out, str(CELL_TIMEOUT_S),
                                         inject, until], user=USER, environment=env)
    assert code == 0, f"{name}: the runner itself failed:\n{log[-3000:]}"
    code, text = tracked.exec(container, ["cat", out], user=USER)
    assert code == 0, text
    result = json.loads(text)
    cells = [cell for cell in result["notebook"]["cells"] if cell["cell_type"] == "code"]
    return Executed(result["error"], cells)
