"""image/python/tf29image/startup/settings.py's table is the one source of docs/settings.md's tables and of the
sentence on the limits: the file says what the table renders, and the table says what Settings holds."""

import dataclasses
import re
from pathlib import Path

import pytest

from tf29image.startup import settings, settings_docs, values

REPO = Path(__file__).resolve().parents[4]
DOC = REPO / "docs" / "settings.md"
FIX = "PYTHONPATH=image/python python3 -m tf29image.startup.settings_docs --update docs/settings.md"


def generated_part(text: str) -> str:
    start, end = text.index(settings_docs.BEGIN), text.index(settings_docs.END)
    return text[start:end + len(settings_docs.END) + 1]


def row_names(row: str) -> str:
    return row.split(" | ", 1)[0].lstrip("| ")


def test_the_docs_say_what_the_table_renders() -> None:
    written, rendered = generated_part(DOC.read_text()), settings_docs.markdown()
    if written == rendered:
        return
    written_rows = {row_names(row): row for row in written.splitlines() if row.startswith("| `")}
    rendered_rows = {row_names(row): row for row in rendered.splitlines() if row.startswith("| `")}
    differing = sorted(name for name in written_rows.keys() | rendered_rows.keys()
                       if written_rows.get(name) != rendered_rows.get(name))
    assert not differing, f"docs/settings.md differs from settings.py's table for {', '.join(differing)}: run {FIX}"
    pytest.fail(f"docs/settings.md's generated part differs from settings.py's (the limits or the order): run {FIX}")


def test_every_variable_the_planner_reads_has_a_row_and_a_limit_the_sentence_names() -> None:
    written = generated_part(DOC.read_text())
    for item in settings.READ:
        assert re.search(rf"^\| [^|]*`{item.name}`", written, re.MULTILINE), item.name
    sentence = written.splitlines()[1]
    for name, limit in settings.SETTING_LIMITS:
        shown = settings_docs.size(limit) if limit > 4096 else str(limit)
        assert re.search(rf"\b{shown} (characters )?for\b", sentence), (name, limit, sentence)
    kinds = {item.kind for item in settings.READ if item.kind}
    assert all(kind.noun in sentence for kind in kinds), sentence


def test_the_table_and_settings_hold_the_same_variables() -> None:
    fields = {field.name for field in dataclasses.fields(settings.Settings)}
    attributes = [item.attribute for item in settings.READ]
    assert len(attributes) == len(set(attributes))
    assert fields - set(attributes) == {"triplet", "hub_secret_names", "given"}
    assert set(attributes) <= fields


@pytest.mark.parametrize("item", settings.READ, ids=lambda item: item.name)
def test_each_default_passes_its_own_check(item: settings.Setting) -> None:
    context = values.Context(values.SERVICES, apptainer=False, triplet=False)
    if item.default:
        item.parse(item.name, item.default, context)
        assert item.kind is None or len(item.default) <= item.kind.limit
