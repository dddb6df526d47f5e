"""The results as one table (Markdown, readable in a terminal too), rows by measure and one column
per variant, then the targets; the same document is written as JSON."""

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import machine, sidereport, targets
from tf29env.core.variants import GPU
from tf29env.release.manifest import human_size

SCHEMA = "tf29-env/bench/v1"
LAYER_NAMES = ("1 driver", "2 cuda_libs", "3 tensorflow", "4 mixed_precision", "5 performance", "6 environment")
Cell = Callable[[dict[str, Any]], str]


def dig(data: dict[str, Any], *keys: str) -> Any:
    """data[k1][k2]..., or None where any level is missing or None."""
    value: Any = data
    for key in keys:
        if not isinstance(value, dict) or value.get(key) is None:
            return None
        value = value[key]
    return value


def seconds(summary: dict[str, Any] | None) -> str:
    """A summary as `3.21 s (2.90-3.50, n=5)`; one run as `3.21 s`; nothing as `-`."""
    if not summary:
        return "-"
    if summary["runs"] == 1:
        return f"{summary['median']:.2f} s"
    return f"{summary['median']:.2f} s ({summary['min']:.2f}-{summary['max']:.2f}, n={summary['runs']})"


def size_cell(value: Any) -> str:
    """MiB with one decimal: GiB would hide the changes that matter (tens of MiB)."""
    return "-" if value is None else f"{int(value) / 2**20:.1f} MiB"


def plain_seconds(value: Any) -> str:
    return "-" if value is None else f"{float(value):.1f} s"


def annotated_seconds(section: str, key: str, note_key: str, name: str, note: Callable[[Any], str]) -> Cell:
    """Seconds from result[section][key][name], followed by note(result[section][note_key][name]) when there is one."""

    def cell(result: dict[str, Any]) -> str:
        text = seconds(dig(result, section, key, name))
        extra = dig(result, section, note_key, name)
        return text if extra is None else f"{text}{note(extra)}"

    return cell


def warm_cell(case: str) -> Cell:
    return annotated_seconds("build", "warm_s", "warm_share", case, lambda share: f"; {share:.1%} of cold")


def layer_cell(name: str) -> Cell:
    return annotated_seconds("selfcheck", "layers", "statuses", name, lambda status: f" {status}")


def slim_cell(result: dict[str, Any]) -> str:
    slim = result.get("slim")
    if not slim:
        return "-"
    checks = ", ".join(f"{check['name']} exit {check['exit']}" for check in slim["checks"])
    same = slim["selfcheck_statuses"] == dig(result, "selfcheck", "statuses")
    return (f"{size_cell(slim['ours_bytes'])} (-{size_cell(slim['saved_bytes'])}; {checks}; "
            f"self-check {'same' if same else 'DIFFERENT'})")


def pull_cell(result: dict[str, Any]) -> str:
    pull = result.get("pull")
    if not pull:
        return "-"
    return f"{size_cell(pull['whole_bytes'])} / {size_cell(pull['ours_bytes'])}"


def buildkit_warm_cell(result: dict[str, Any]) -> str:
    buildkit = dig(result, "build", "buildkit")
    if not buildkit:
        return "-"
    text = seconds(buildkit["warm_s"])
    if not buildkit["cold_s"]:
        return text
    return f"{text}; {buildkit['warm_s']['median'] / buildkit['cold_s']:.1%} of BuildKit's cold"


ROWS: list[tuple[str, Cell]] = [
    ("image size, total", lambda r: size_cell(dig(r, "size", "total_bytes"))),
    ("- the base image", lambda r: size_cell(dig(r, "size", "base_bytes"))),
    ("- our layers on top", lambda r: size_cell(dig(r, "size", "ours_bytes"))),
    ("cold build: docker build, no cache", lambda r: plain_seconds(dig(r, "build", "cold_docker_build_s"))),
    ("cold build: all of build.py's build (+ probe, labels)", lambda r: plain_seconds(dig(r, "build", "cold_tool_s"))),
    ("- the floor: what must ship (TF, Jupyter, numpy/pandas/matplotlib, Python)",
     lambda r: size_cell(dig(r, "floor", "floor_bytes"))),
    ("- beyond the floor (details below)", lambda r: size_cell(dig(r, "floor", "gap_bytes"))),
    ("pull: whole image / our layers, compressed (--side-by-side)", pull_cell),
    ("cold build: BuildKit (buildx), no cache (--side-by-side)",
     lambda r: plain_seconds(dig(r, "build", "buildkit", "cold_s"))),
    ("build.py's build, nothing changed", lambda r: plain_seconds(dig(r, "build", "tool_nochange_s"))),
    ("warm rebuild, entrypoint.sh changed", warm_cell("entrypoint")),
    ("warm rebuild, self-check changed", warm_cell("selfcheck")),
    ("warm rebuild, requirements.txt changed", warm_cell("requirements")),
    ("warm rebuild, entrypoint.sh changed, BuildKit (--side-by-side)", buildkit_warm_cell),
    ("docker run -> Jupyter GET /api 200", lambda r: seconds(dig(r, "startup", "jupyter_s"))),
    ("docker run -> healthy", lambda r: seconds(dig(r, "startup", "healthy_s"))),
    ("selfcheck --json, docker exec wall time", lambda r: seconds(dig(r, "selfcheck", "wall_s"))),
    ("selfcheck, its report's total", lambda r: seconds(dig(r, "selfcheck", "report_s"))),
    *[(f"- layer {name}", layer_cell(name)) for name in LAYER_NAMES],
    ("import tensorflow, fresh container (cold)", lambda r: seconds(dig(r, "import_tensorflow", "cold_s"))),
    ("import tensorflow, same container again (warm)", lambda r: seconds(dig(r, "import_tensorflow", "warm_s"))),
    ("python -c 'import tensorflow' exec, cold", lambda r: seconds(dig(r, "import_tensorflow", "cold_wall_s"))),
    ("--slim: our layers without apt caches, tests folders, TF headers", slim_cell),
    ("--slim: import tensorflow, bytecode deleted (cold)",
     lambda r: plain_seconds(dig(r, "slim", "reference_import_without_bytecode_s"))),
]


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True)) + " |"

    return [line(header), "|" + "|".join("-" * (width + 2) for width in widths) + "|", *[line(row) for row in rows]]


def main_table(document: dict[str, Any]) -> list[str]:
    variants = list(document["variants"])
    header = ["measure", *[f"{name} ({document['variants'][name].get('image', '?')})" for name in variants]]
    rows = [[label, *[cell(document["variants"][name]) for name in variants]] for label, cell in ROWS]
    return table(header, rows)


def targets_table(document: dict[str, Any]) -> list[str]:
    verdicts = targets.judge(document)
    return table(["target", "variant", "measured", "verdict"],
                 [[v.target, v.variant, v.measured or "-", v.word] for v in verdicts])


def side_by_side(document: dict[str, Any]) -> list[str]:
    recipe = document.get("official")
    ours = document["variants"].get(GPU)
    if not recipe or not ours:
        return []
    lines = ["", "## Side by side: ours and TensorFlow's gpu-jupyter recipe on the same base", "",
             f"Both built in this run on `{recipe['base']}`; the recipe is bench/official/Dockerfile.", ""]
    lines += table(["measure", f"ours ({ours['image']})", f"TensorFlow's recipe ({recipe['image']})", "ours / recipe"],
                   sidereport.rows(ours, recipe))
    if recipe.get("deviations"):
        lines += ["", "What the fixture changes or leaves out of the recipe:", ""]
        lines += [f"- {text}" for text in recipe["deviations"]]
    floor = sidereport.floor_rows(recipe)
    if floor:
        lines += ["", "### the recipe: the floor and what is beyond it", ""]
        lines += table(["part", "size", "packages"], floor)
    return lines


def details(document: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    for name, result in document["variants"].items():
        size = result.get("size")
        if not size:
            continue
        lines += ["", f"### {name}: our largest layers, packages and what could go", ""]
        lines += table(["our layer", "size"], [[layer["step"][:90], human_size(layer["bytes"])]
                                               for layer in size["largest_layers"]])
        lines.append("")
        lines += table(["pip package (files in its RECORD)", "size"],
                       [[f"{p['name']} {p['version']}", human_size(p["bytes"])] for p in size["largest_packages"]])
        lines.append("")
        lines += table(["in our layers (du -sb in a container)", "size"],
                       [[what, human_size(value)] for what, value in size["candidates_bytes"].items()])
        floor = sidereport.floor_rows(result)
        if floor:
            lines.append("")
            lines += table(["our layers: the floor and what is beyond it", "size", "packages"], floor)
    return lines


def markdown(document: dict[str, Any]) -> str:
    lines = ["# tf29-env benchmarks", "", machine.header_line(document["machine"]), "",
             f"`python -m bench {' '.join(document['argv'])}`".replace(" `", "`"), "",
             *main_table(document), *side_by_side(document), "", "## Targets", "", *targets_table(document),
             *details(document)]
    return "\n".join(lines) + "\n"


def write(document: dict[str, Any], path: Path) -> list[Path]:
    """PATH (JSON) and the Markdown beside it (same name, .md)."""
    document = {**document, "targets": [v.to_json() for v in targets.judge(document)]}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
    md = path.with_suffix(".md")
    md.write_text(markdown(document))
    return [path, md]
