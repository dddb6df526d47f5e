"""tf29env is built in floors: a module imports only from its own folder or from a floor below it, two
folders on one floor do not import each other, and no two folders import each other at all. Every
import is read with ast (those inside functions too), so a shortcut upward fails here, naming the
file, the line and the import; a new folder fails until LAYERS gives it a floor."""

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tf29env.core.paths import PACKAGE

# The package's own top level (cli.py, commands.py, pipeline.py, ...), as a floor's member.
TOP = ""
# The floors, lowest first: each a name for messages and the folders of tf29env on it.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("the ground floor", ("core",)),  # errors, log, paths, engine, variants, facts, labels, records
    ("the engine-side build pieces", ("imagebuild",)),  # context, CAs, network, one build, stand-ins
    ("supply chain and release", ("supplychain", "release")),  # side by side: neither imports the other
    ("the pipeline and the commands", (TOP,)),  # pipeline, finallayer, progress, cli, commands
)


@dataclass(frozen=True)
class Import:
    path: Path  # the importing file
    line: int
    source: str  # its folder, or TOP
    target: str  # the dotted module it names
    into: str  # that module's folder, or TOP

    def __str__(self) -> str:
        return f"{self.path}:{self.line} imports {self.target}"


def folder_of(parts: list[str], root: Path) -> str:
    """The folder of the module root.name.PARTS, or TOP for a module at the top level."""
    return parts[0] if parts and (root / parts[0]).is_dir() else TOP


def imports(root: Path) -> Iterator[Import]:
    """Every import of root's package by its own modules, relative ones resolved."""
    name = root.name
    for path in sorted(root.rglob("*.py")):
        here = list(path.relative_to(root.parent).with_suffix("").parts)
        package = here[:-1]  # what a relative import starts from (for __init__.py, its own package)
        source = folder_of(here[1:-1], root)
        shown = path.relative_to(root.parent)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                module = ".".join([*base, *([node.module] if node.module else [])])
                # `from tf29env import commands` names a module; `from tf29env.core import labels` a folder.
                targets = [f"{module}.{alias.name}" for alias in node.names] if module == name else [module]
            else:
                continue
            for target in targets:
                parts = target.split(".")
                if parts[0] == name:
                    yield Import(shown, node.lineno, source, target, folder_of(parts[1:], root))


def floor(folder: str) -> int:
    return next(index for index, (_, folders) in enumerate(LAYERS) if folder in folders)


def where(folder: str) -> str:
    return f"{folder or 'the top level'} ({LAYERS[floor(folder)][0]})"


def upward(root: Path) -> list[str]:
    """The imports that reach a floor above their own, or a sibling folder on their own floor."""
    found = []
    for item in imports(root):
        if item.into == item.source:
            continue
        if floor(item.into) > floor(item.source):
            found.append(f"{item}: {where(item.source)} may not import from {where(item.into)}, a floor above")
        elif floor(item.into) == floor(item.source):
            found.append(f"{item}: {where(item.source)} may not import {where(item.into)}, beside it")
    return found


def mutual(root: Path) -> list[str]:
    """Each pair of folders that import each other, with one import each way."""
    edges: dict[tuple[str, str], Import] = {}
    for item in imports(root):
        if item.into != item.source:
            edges.setdefault((item.source, item.into), item)
    def rank(folder: str) -> tuple[int, str]:
        return floor(folder), folder

    pairs = sorted(((a, b) for a, b in edges if (b, a) in edges and rank(a) < rank(b)),
                   key=lambda pair: (rank(pair[0]), rank(pair[1])))
    return [f"{where(a)} and {where(b)} import each other: {edges[a, b]}; {edges[b, a]}" for a, b in pairs]


def folders(root: Path) -> set[str]:
    return {path.parent.relative_to(root).parts[0] for path in root.glob("*/__init__.py")}


def test_every_folder_has_a_floor() -> None:
    placed = {folder for _, members in LAYERS for folder in members} - {TOP}
    assert folders(PACKAGE) == placed, "LAYERS must name every folder of tf29env, and only those"
    # pytest, setuptools and editors take a folder named build for build output.
    assert "build" not in folders(PACKAGE)


def test_no_module_imports_from_a_floor_above_it() -> None:
    found = upward(PACKAGE)
    assert not found, "\n".join(found)


def test_no_two_folders_import_each_other() -> None:
    found = mutual(PACKAGE)
    assert not found, "\n".join(found)


def test_the_checks_find_an_upward_import_and_a_cycle(tmp_path: Path) -> None:
    """The same checks on a made-up package with both faults name the offending imports."""
    root = tmp_path / "tf29env"
    files = {
        "__init__.py": "",
        "cli.py": "from tf29env.core import paths\n",
        "core/__init__.py": "",
        "core/paths.py": "def where() -> None:\n    from tf29env import cli\n",
        "imagebuild/__init__.py": "",
        "imagebuild/context.py": "from ..supplychain import sbom\n",
        "supplychain/__init__.py": "",
        "supplychain/sbom.py": "import tf29env.imagebuild.context\nfrom tf29env.release import tags\n",
        "release/__init__.py": "",
        "release/tags.py": "from . import labels\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    assert upward(root) == [
        "tf29env/core/paths.py:2 imports tf29env.cli: core (the ground floor) may not import from the top level "
        "(the pipeline and the commands), a floor above",
        "tf29env/imagebuild/context.py:1 imports tf29env.supplychain: imagebuild (the engine-side build pieces) "
        "may not import from supplychain (supply chain and release), a floor above",
        "tf29env/supplychain/sbom.py:2 imports tf29env.release: supplychain (supply chain and release) may not "
        "import release (supply chain and release), beside it",
    ]
    assert mutual(root) == [
        "core (the ground floor) and the top level (the pipeline and the commands) import each other: "
        "tf29env/core/paths.py:2 imports tf29env.cli; tf29env/cli.py:1 imports tf29env.core",
        "imagebuild (the engine-side build pieces) and supplychain (supply chain and release) import each other: "
        "tf29env/imagebuild/context.py:1 imports tf29env.supplychain; "
        "tf29env/supplychain/sbom.py:1 imports tf29env.imagebuild.context",
    ]
