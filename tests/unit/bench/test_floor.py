"""bench.floor and the inventory probe's file sizes: dpkg parsing, requirement graphs, the floor and the gap.

Recorded data: the dpkg stanzas are `dpkg -s` of tf29-env:test-gpu (Debian 11, 2026-12-03), and the
Requires-Dist lists are importlib.metadata's `requires` for pandas 2.0.3 and jupyter-server-proxy
4.5.0 in the same image (shortened to a few of their extras)."""

import importlib.util
import os
from pathlib import Path
from typing import Any

import pytest

from bench import floor
from tf29env.core.facts import INVENTORY_PROBE

DPKG = """\
Package: python3
Status: install ok installed
Installed-Size: 89
Depends: python3.9 (>= 3.9.2-0~), libpython3-stdlib (= 3.9.2-3)
Pre-Depends: python3-minimal (= 3.9.2-3)

Package: python3.9
Status: install ok installed
Installed-Size: 544
Depends: python3.9-minimal (= 3.9.2-1+deb11u7), libpython3.9-stdlib (= 3.9.2-1+deb11u7),
 media-types | mime-support

Package: tini
Status: install ok installed
Installed-Size: 758
Depends: libc6 (>= 2.14)

Package: gone
Status: deinstall ok config-files
Installed-Size: 12
"""

PANDAS = ['python-dateutil (>=2.8.2)', 'pytz (>=2020.1)', 'tzdata (>=2022.1)',
          'numpy (>=1.20.3) ; python_version < "3.10"', 'numpy (>=1.21.0) ; python_version >= "3.10"',
          "matplotlib (>=3.6.1) ; extra == 'plot'", "SQLAlchemy (>=1.4.16) ; extra == 'sql-other'"]
PROXY = ['aiohttp', "importlib-metadata>=4.8.3; python_version < '3.10'", 'jupyter-server>=1.24.0',
         'simpervisor>=1.0.0', "jupyterhub; extra == 'standalone'"]


def test_dpkg_status_keeps_installed_packages_with_their_dependencies() -> None:
    packages = floor.parse_dpkg_status(DPKG)
    assert sorted(packages) == ["python3", "python3.9", "tini"]  # config-files only: not installed
    assert packages["python3"] == {"bytes": 89 * 1024, "depends": ["python3-minimal", "python3.9", "libpython3-stdlib"]}
    # A continuation line and an alternative (media-types | mime-support): both names kept.
    assert packages["python3.9"]["depends"] == ["python3.9-minimal", "libpython3.9-stdlib", "media-types",
                                                "mime-support"]


@pytest.mark.parametrize(("version", "numpy", "metadata"), [("3.9", True, True), ("3.11", True, False)])
def test_requirements_follow_markers_and_drop_extras(version: str, numpy: bool, metadata: bool) -> None:
    env = floor.marker_environment(version, f"{version}.2")
    graph = floor.pip_graph([{"name": "pandas", "requires": PANDAS},
                             {"name": "jupyter_server_proxy", "requires": PROXY}], env)
    assert set(graph["pandas"]) == {"python-dateutil", "pytz", "tzdata", "numpy"}
    assert ("numpy" in graph["pandas"]) is numpy
    assert ("importlib-metadata" in graph["jupyter-server-proxy"]) is metadata
    assert "jupyterhub" not in graph["jupyter-server-proxy"] and "sqlalchemy" not in graph["pandas"]


def test_closure_stays_within_the_given_nodes_and_survives_cycles() -> None:
    graph = {"a": ["b"], "b": ["c", "a"], "c": ["d"], "x": ["a"]}
    assert floor.closure(graph, ["a"], {"a", "b", "c", "x"}) == {"a", "b", "c"}  # d is not ours (the base's)
    assert floor.closure(graph, ["missing"], {"a"}) == set()


def test_groups_name_the_leaf_that_pulled_each_part_in() -> None:
    graph = {"hub": ["sqlalchemy", "shared"], "proxy": ["aiohttp", "shared"], "sqlalchemy": [], "aiohttp": [],
             "shared": [], "tf": ["numpy"], "numpy": []}
    sizes = {"hub": 10, "sqlalchemy": 20, "proxy": 1, "aiohttp": 4, "shared": 100, "tf": 1000, "numpy": 50}
    found = floor.groups(graph, sizes, set(graph), {"tf", "numpy"}, "pip")
    assert [(g.leaf, g.bytes, g.parts) for g in found] == [
        ("pip: shared by 2 of the above", 100, 1), ("pip: hub", 30, 2), ("pip: proxy", 5, 2)]


def probe_document() -> dict[str, Any]:
    def dist(name: str, requires: list[str], size: int, pyc: int = 0, headers: int = 0) -> dict[str, Any]:
        return {"name": name, "version": "1", "requires": requires, "bytes": size, "pyc_bytes": pyc,
                "header_bytes": headers}

    return {
        "python_version": "3.9", "python_full_version": "3.9.2",
        "python": [dist("tensorflow-cpu", ["numpy"], 700, pyc=60, headers=90), dist("numpy", [], 50, pyc=5),
                  dist("jupyterlab", [], 30), dist("pandas", ["numpy"], 40), dist("matplotlib", ["numpy"], 30),
                  dist("jupyterhub", ["SQLAlchemy"], 8), dist("sqlalchemy", [], 20)],
        "dpkg": [{"name": name, "bytes": kib * 1024, "depends": depends} for name, kib, depends in (
            ("python3", 1, ["python3.9", "libc6"]), ("python3.9", 2, []), ("libc6", 100, []), ("git", 3, ["perl"]),
            ("perl", 4, ["libc6"]))],
    }


def test_analyse_splits_floor_and_gap_and_accounts_for_every_byte() -> None:
    result = floor.analyse(probe_document(), {"libc6": {"bytes": 100 * 1024, "depends": []}}, added_bytes=2000,
                           own_files_bytes=7)
    assert result["roots"][0] == "tensorflow-cpu" and result["roots_missing"] == []
    assert result["floor_parts"] == {
        "Python itself (apt: python3 and what it needs, not in the base)": 3 * 1024,
        "pip packages the roots require (code and data; no bytecode, no C++ headers)": 700 + 50 + 30 + 40 + 30}
    assert result["gap_bytes"] == 2000 - result["floor_bytes"]
    rows = {row["what"]: row["bytes"] for row in result["gap"]}
    assert rows["apt: git"] == 7 * 1024  # git and perl; libc6 is the base's
    assert rows["pip: jupyterhub"] == 28
    assert rows["bytecode (.pyc) of the floor's packages"] == 65
    assert rows["C++ headers of the floor's packages (TensorFlow's, for custom ops)"] == 90
    assert rows["the project's own files"] == 7
    assert sum(rows.values()) == result["gap_bytes"]  # "the rest" closes the account


def test_analyse_names_missing_roots() -> None:
    document = probe_document()
    document["python"] = [d for d in document["python"] if d["name"] not in ("jupyterlab", "tensorflow-cpu")]
    result = floor.analyse(document, {}, added_bytes=10**6)
    assert result["roots_missing"] == ["tensorflow", "jupyterlab"]


def test_a_file_reached_twice_counts_once(tmp_path: Path) -> None:
    """As in the image: jupyterlab/static is a link to share/jupyter/lab/static, and the wheel's
    RECORD lists both paths; a hard link is one file too."""
    served = tmp_path / "share" / "static"
    served.mkdir(parents=True)
    (served / "main.js").write_bytes(b"x" * 1000)
    (served / "main.pyc").write_bytes(b"y" * 10)
    (tmp_path / "core").symlink_to(served)
    os.link(served / "main.js", tmp_path / "copy.js")
    entries = [(f"share/static/{name}", str(served / name)) for name in ("main.js", "main.pyc")]
    entries += [("core/main.js", str(tmp_path / "core" / "main.js")), ("copy.js", str(tmp_path / "copy.js")),
                ("gone.js", str(tmp_path / "gone.js")), ("core", str(tmp_path / "core"))]
    seen: set[tuple[int, int]] = set()
    probe = inventory_probe()
    assert probe.file_bytes(entries, seen) == {"bytes": 1000, "pyc_bytes": 10, "header_bytes": 0}
    # Another distribution listing the same file gets nothing for it.
    assert probe.file_bytes([("x/main.js", str(served / "main.js"))], seen)["bytes"] == 0


def inventory_probe() -> Any:
    """image/python/tf29image/probes/inventory.py as a module (it runs in images; here its functions are tested)."""
    spec = importlib.util.spec_from_file_location("inventory_probe", INVENTORY_PROBE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
