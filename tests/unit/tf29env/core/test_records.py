"""The build output's file names: docs/build.md's table of what CI uploads names exactly the files
tf29env/core/records.py, their one home, defines."""

import re

from tf29env.core import records
from tf29env.core.paths import REPO


def defined_names() -> set[str]:
    """Every *_FILE, *_FILES and *_DIR of records.py."""
    names: set[str] = set()
    for key, value in vars(records).items():
        if key.isupper() and key.endswith(("_FILE", "_FILES", "_DIR")):
            names.update([value] if isinstance(value, str) else value)
    return names


def test_records_defines_the_output_names() -> None:
    assert {records.BUILD_FILE, records.LATEST_FILE, records.EXPORT_DIR, records.EXPORT_FILE} <= defined_names()


def test_docs_describe_every_output_file() -> None:
    """docs/build.md's output table names exactly records.py's files (a row may name two: `DIR/VARIANT/a`,
    `b`; a path's placeholders DIR and VARIANT are no names, its folders are)."""
    section = (REPO / "docs" / "build.md").read_text().split("## Build output", 1)[1].split("\n## ", 1)[0]
    documented: set[str] = set()
    for row in re.findall(r"^\| (`[^|]+) \|", section, re.MULTILINE):
        for path in re.findall(r"`([^`]+)`", row):
            documented.update(part for part in path.split("/") if part not in ("DIR", "VARIANT"))
    assert documented == defined_names()
