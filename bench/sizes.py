"""Image size: total, the base's part and ours (bench.layers), the largest pip packages (all of
them live in our pip layer) and what in our layers could go (measured with du inside a container)."""

import shlex
from dataclasses import dataclass
from typing import Any

from docker import DockerClient

from bench import layers
from bench.errors import BenchError
from tf29env.core import engine, labels
from tf29env.core.facts import dist_bytes, inventory

TOP_PACKAGES = 10
TOP_LAYERS = 5
SP = "/opt/venv/lib/python3*/site-packages"
OWN_FILES = "the project's own files (/opt/tf29-env)"
# name -> a shell expression printing apparent bytes (du -sb); each is one candidate for cutting.
WEIGHT = {
    "bytecode: __pycache__ in /opt/venv": "find /opt/venv -type d -name __pycache__ -prune -print0",
    "tests folders in site-packages": f"find {SP} -type d -name tests -prune -print0",
    "TensorFlow C++ headers (tensorflow/include)": f"find {SP}/tensorflow -maxdepth 1 -name include -print0",
    "static libraries (*.a) in /opt/venv": "find /opt/venv -name '*.a' -print0",
    "apt caches (/var/cache/apt)": "find /var/cache/apt -maxdepth 0 -print0",
    "pip caches (/root/.cache, venv share/python-wheels)":
        "find /root/.cache /opt/venv/share/python-wheels -maxdepth 0 -print0",
    OWN_FILES: "find /opt/tf29-env -maxdepth 0 -print0",
}


def du_script() -> str:
    """One bash script that prints `bytes<TAB>name` per WEIGHT entry (0 when nothing matches)."""
    lines = ["set -uo pipefail", "shopt -s nullglob"]
    for name, finder in WEIGHT.items():
        lines.append(f"printf '%s\\t%s\\n' \"$({{ {finder} 2>/dev/null; }} | du -scb --files0-from=- 2>/dev/null "
                     f"| tail -n1 | cut -f1)\" {shlex.quote(name)}")
    return "\n".join(lines)


def parse_du(output: str) -> dict[str, int]:
    found: dict[str, int] = {}
    for line in output.splitlines():
        value, sep, name = line.partition("\t")
        if sep and name in WEIGHT:
            found[name] = int(value) if value.strip().isdigit() else 0
    missing = set(WEIGHT) - set(found)
    if missing:
        raise ValueError(f"du printed nothing for: {', '.join(sorted(missing))}")
    return found


@dataclass(frozen=True)
class ImageSize:
    image: str
    base: str
    split: layers.LayerSplit
    packages: list[dict[str, Any]]  # name, version, bytes; largest first
    weight: dict[str, int]

    def to_json(self) -> dict[str, Any]:
        return {
            "image": self.image, "base": self.base, "total_bytes": self.split.total, "base_bytes": self.split.base,
            "ours_bytes": self.split.ours_bytes, "split_by": self.split.found_by,
            "largest_layers": [{"bytes": layer.size, "step": layer.step[:120]}
                               for layer in layers.largest(self.split, TOP_LAYERS)],
            "largest_packages": self.packages, "candidates_bytes": self.weight,
        }


def base_of(client: DockerClient, image: str) -> str:
    """The base named by build.py's label."""
    base = labels.of_image(engine.inspect(client, image)).get(labels.BASE, "")
    if not base:
        raise BenchError(f"{image} has no {labels.BASE} label: not built by build.py")
    return base


def history_split(client: DockerClient, image: str, base: str) -> layers.LayerSplit:
    """bench.layers.split of the image's history at its base (by the base's id, or its entry count)."""
    base_id = str(engine.inspect(client, base)["Id"])
    return layers.split(client.api.history(image), base_id, len(client.api.history(base)))


def check_total(split: layers.LayerSplit, engine_size: int, image: str) -> None:
    """The layers must add up to the engine's own size of the image, or the split is wrong."""
    if split.total != engine_size:
        raise BenchError(f"{image}: its layers add up to {split.total} bytes, the engine says {engine_size}")


def measure(client: DockerClient, image: str) -> ImageSize:
    base = base_of(client, image)
    split = history_split(client, image, base)
    check_total(split, int(engine.inspect(client, image)["Size"]), image)
    pip = sorted(inventory(client, image)["python"], key=dist_bytes, reverse=True)
    packages = [{"name": p["name"], "version": p["version"], "bytes": dist_bytes(p)} for p in pip[:TOP_PACKAGES]]
    status, output = engine.run_command(client, image, ["/bin/bash", "-c", du_script()])
    if status != 0:
        raise BenchError(f"{image}: the du script exited {status}: {output.strip()[-200:]}")
    return ImageSize(image, base, split, packages, parse_du(output))
