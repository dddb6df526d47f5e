"""The side-by-side table (ours against TensorFlow's recipe on the same base, with ratios) and
each image's floor account, as Markdown lines for bench.report."""

from collections.abc import Callable
from typing import Any

from bench.stats import ratio

MIB = 2**20
Getter = Callable[[dict[str, Any]], Any]


def dig(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, dict) or data.get(key) is None:
            return None
        data = data[key]
    return data


def mib(value: Any) -> str:
    return "-" if value is None else f"{int(value) / MIB:.1f} MiB"


def secs(value: Any) -> str:
    return "-" if value is None else f"{float(value):.1f} s"


def times(ours: Any, theirs: Any) -> str:
    """ours/theirs as `0.65x`; `-` where either is missing or theirs is 0."""
    if ours is None or theirs is None or not float(theirs):
        return "-"
    return f"{ratio(float(ours), float(theirs)):.2f}x"


def check_cell(found: Any) -> str:
    """`exit 0: 2.9.3`, or a failure's exit and error line (shortened)."""
    if not isinstance(found, dict):
        return "-"
    tail = str(found.get("tail", ""))
    tail = tail if len(tail) <= 110 else tail[:107] + "..."
    return f"exit {found['exit']}: {tail}" if tail else f"exit {found['exit']}"


def versions_cell(found: Any) -> str:
    if not isinstance(found, dict) or not found:
        return "-"
    return ", ".join(f"{name} {version or '(none)'}" for name, version in found.items())


# label, our value, the recipe's value, how a value is shown; the ratio is ours / the recipe's.
NumberRow = tuple[str, Getter, Getter, Callable[[Any], str]]
NUMBER_ROWS: list[NumberRow] = [
    ("bytes added on the base (uncompressed)", lambda o: dig(o, "size", "ours_bytes"),
     lambda r: dig(r, "added_bytes"), mib),
    ("- the floor: what must ship (TF, Jupyter, numpy/pandas/matplotlib, Python)",
     lambda o: dig(o, "floor", "floor_bytes"), lambda r: dig(r, "floor", "floor_bytes"), mib),
    ("- beyond the floor", lambda o: dig(o, "floor", "gap_bytes"), lambda r: dig(r, "floor", "gap_bytes"), mib),
    ("pull, first time: the whole image (compressed)", lambda o: dig(o, "pull", "whole_bytes"),
     lambda r: dig(r, "pull", "whole_bytes"), mib),
    ("pull: the layers on the base (compressed)", lambda o: dig(o, "pull", "ours_bytes"),
     lambda r: dig(r, "pull", "ours_bytes"), mib),
    ("cold build: docker build, no cache (classic builder)", lambda o: dig(o, "build", "cold_docker_build_s"),
     lambda r: dig(r, "cold_build_s"), secs),
    ("docker run -> Jupyter GET /api 200 (median)", lambda o: dig(o, "startup", "jupyter_s", "median"),
     lambda r: dig(r, "startup", "jupyter_s", "median"), lambda v: "never" if v is None else f"{float(v):.2f} s"),
]
TextRow = tuple[str, Getter, Getter]
TEXT_ROWS: list[TextRow] = [
    ("pull: an update after a script-only change (compressed)",
     lambda o: None if dig(o, "pull", "update_bytes") is None
     else f"{mib(o['pull']['update_bytes'])} ({o['pull']['update_layers']} layers)",
     lambda r: None),
    ("import tensorflow", lambda o: check_cell(dig(o, "recipe_checks", "import_tensorflow")),
     lambda r: check_cell(r.get("import_tensorflow"))),
    ("pip check", lambda o: check_cell(dig(o, "recipe_checks", "pip_check")), lambda r: check_cell(r.get("pip_check"))),
    ("versions installed", lambda o: versions_cell(dig(o, "recipe_checks", "versions")),
     lambda r: versions_cell(r.get("versions"))),
]


def rows(ours: dict[str, Any], recipe: dict[str, Any]) -> list[list[str]]:
    found = [[label, show(get_ours(ours)), show(get_recipe(recipe)), times(get_ours(ours), get_recipe(recipe))]
             for label, get_ours, get_recipe, show in NUMBER_ROWS]
    found += [[label, get_ours(ours) or "-", get_recipe(recipe) or "-", ""]
              for label, get_ours, get_recipe in TEXT_ROWS]
    return found


def floor_rows(result: dict[str, Any]) -> list[list[str]]:
    floor = result.get("floor")
    if not floor:
        return []
    lines = [[f"the floor: {part}", mib(size), ""] for part, size in floor["floor_parts"].items()]
    lines += [[f"beyond: {row['what']}", mib(row["bytes"]), str(row["parts"] or "")] for row in floor["gap"]]
    return lines
