"""bench.sidereport and bench.report's side-by-side section, on recorded results.

RECIPE holds what bench.official.measure returned for tf29-env:bench-official (aa2147da85c7: the
fixture of commit 0ef6a8b on tf29-env-standin:bullseye-cuda11, 2 cores, 2026-12-03); OURS the
matching figures of tf29-env-strip:dev2 (our gpu image of commit 1ce56ff plus the dpkg no-doc
config, same base, same day: its layers' bytes from docker history, its floor from bench.floor).
The pull sizes are made-up round numbers: only the arithmetic is under test there."""

from typing import Any

from bench import report, sidereport

MIB = 2**20
RECIPE: dict[str, Any] = {
    "image": "tf29-env:bench-official", "base": "tf29-env-standin:bullseye-cuda11", "cold_build_s": 283.5,
    "total_bytes": 5784294116, "base_bytes": 2875389240, "added_bytes": 2908904876,
    "import_tensorflow": {"exit": 1, "tail": "TypeError: Unable to convert function return value to a Python type! "
                                            "The signature was () -> handle", "seconds": 1.1},
    "versions": {"tensorflow": "2.9.3", "numpy": "2.0.2", "notebook": "7.5.8", "jupyterlab": "4.5.11"},
    "pip_check": {"exit": 1, "tail": "nbconvert 7.16.6 has requirement nbformat>=5.7, but you have nbformat 4.4.0."},
    "startup": {"jupyter_s": None, "exited": True, "log_tail": ["ImportError: cannot import name 'encodestring'"]},
    "deviations": ["Base: the stand-in instead of nvidia/cuda on Ubuntu 20.04."],
    "floor": {"floor_bytes": 1700 * MIB, "gap_bytes": 2908904876 - 1700 * MIB,
              "floor_parts": {"Python itself": 100 * MIB, "pip packages": 1600 * MIB},
              "gap": [{"what": "apt: build-essential", "bytes": 700 * MIB, "parts": 60}]},
    "pull": {"whole_bytes": 2000 * MIB, "base_bytes": 1200 * MIB, "ours_bytes": 800 * MIB},
}
OURS: dict[str, Any] = {
    "image": "tf29-env:bench-gpu",
    "size": {"ours_bytes": 1865814435, "base": "tf29-env-standin:bullseye-cuda11", "largest_layers": [],
             "largest_packages": [], "candidates_bytes": {}},
    "floor": {"floor_bytes": 1389236160, "gap_bytes": 1865814435 - 1389236160,
              "floor_parts": {"Python itself": 22937600, "pip packages": 1366298560},
              "gap": [{"what": "C++ headers of the floor's packages", "bytes": 109576192, "parts": 1}]},
    "build": {"cold_docker_build_s": 141.75},
    "startup": {"jupyter_s": {"median": 1.63, "min": 1.44, "max": 1.74, "runs": 3}},
    "pull": {"whole_bytes": 1800 * MIB, "base_bytes": 1200 * MIB, "ours_bytes": 600 * MIB,
             "update_bytes": 210000, "update_layers": 3},
    "recipe_checks": {"import_tensorflow": {"exit": 0, "tail": "2.9.3"}, "pip_check": {"exit": 0, "tail": "No broken "
                      "requirements found."}, "versions": {"tensorflow": "2.9.3", "numpy": "1.23.5", "notebook": None,
                                                         "jupyterlab": "4.3.8"}},
}


def by_label(rows: list[list[str]]) -> dict[str, list[str]]:
    return {row[0]: row[1:] for row in rows}


def test_ratios_are_ours_over_the_recipe() -> None:
    rows = by_label(sidereport.rows(OURS, RECIPE))
    assert rows["bytes added on the base (uncompressed)"] == ["1779.4 MiB", "2774.1 MiB", "0.64x"]
    assert rows["cold build: docker build, no cache (classic builder)"] == ["141.8 s", "283.5 s", "0.50x"]
    assert rows["pull: the layers on the base (compressed)"] == ["600.0 MiB", "800.0 MiB", "0.75x"]


def test_what_the_recipe_cannot_do_is_shown_not_divided() -> None:
    rows = by_label(sidereport.rows(OURS, RECIPE))
    assert rows["docker run -> Jupyter GET /api 200 (median)"] == ["1.63 s", "never", "-"]
    assert rows["import tensorflow"][0] == "exit 0: 2.9.3"
    assert rows["import tensorflow"][1].startswith("exit 1: TypeError: Unable to convert")
    assert rows["pull: an update after a script-only change (compressed)"] == ["0.2 MiB (3 layers)", "-", ""]
    assert "numpy 2.0.2" in rows["versions installed"][1] and "notebook (none)" in rows["versions installed"][0]


def test_times_refuses_what_cannot_be_divided() -> None:
    assert sidereport.times(None, 2) == "-" and sidereport.times(1, 0) == "-" and sidereport.times(1, 4) == "0.25x"


def test_a_long_error_line_is_shortened_for_the_table() -> None:
    cell = sidereport.check_cell({"exit": 1, "tail": "x" * 300})
    assert cell.startswith("exit 1: xxx") and cell.endswith("...") and len(cell) == len("exit 1: ") + 110


def test_markdown_has_the_side_by_side_section_only_with_a_recipe() -> None:
    base_document: dict[str, Any] = {
        "schema": report.SCHEMA, "argv": ["--side-by-side"],
        "machine": {"date": "2026-12-03T17:00:00Z", "engine_cpus": 2, "memory_bytes": 25275973632,
                    "engine_version": "20.10.24+dfsg1", "storage_driver": "overlay2", "os": "Debian GNU/Linux 12",
                    "kernel": "6.1", "load_average_at_start": [0.5, 0.5, 0.5]},
        "variants": {"gpu": OURS},
    }
    assert "## Side by side" not in report.markdown(base_document)
    text = report.markdown({**base_document, "official": RECIPE})
    section = text[text.index("## Side by side"):text.index("## Targets")]
    assert "| ours / recipe |" in section.replace("  ", " ") or "ours / recipe" in section
    assert "0.64x" in section and "- Base: the stand-in instead of nvidia/cuda" in section
    assert "beyond: apt: build-essential" in section and "700.0 MiB" in section
    assert "beyond: C++ headers of the floor's packages" in text[text.index("## Targets"):]  # ours, in the details
