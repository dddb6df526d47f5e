"""What the install kit costs (docs/kit.md): its size, part by part, and the time to make and install it.

For each image: `build.py kit`'s make (a full `docker save`, pip wheel from the wheel cache, npm ci)
into a scratch folder, the bytes of each part, then RUNS installs of it with install.sh, each onto a
fresh second engine (testkit/gpuengine.py: a dockerd of its own that lacks the image) with every
registry and proxy on a dead port (testkit/kitbox.py), as on a box with no internet.

`PYTHONPATH=image/python python -m bench.kit --image REF [--image REF ...] [--runs 1]` (testkit's second
engine reads the image's tf29image, as pytest's pythonpath gives it) prints a Markdown table; timings are
reported (median, min-max), never asserted (bench/README.md).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bench.errors import BenchError
from bench.stats import Summary, summarize
from testkit import gpuengine, kitbox
from tf29env.core import engine
from tf29env.core.errors import UserError
from tf29env.core.paths import DEFAULT_OUTPUT
from tf29env.release import kit

MIB = 1024 * 1024
# The kit's parts as the table names them: the folder or file of each, by kit.py's layout.
PARTS = (("image archive", kit.IMAGES), ("host tools' wheels", kit.HOST_WHEELS), ("hub's wheels", kit.HUB_WHEELS),
         ("npm cache (hub proxy)", kit.NPM_CACHE), ("project files", kit.PROJECT))


def part_bytes(folder: Path, name: str) -> int:
    path = folder / name
    return path.stat().st_size if path.is_file() else kit.size_of(path) if path.is_dir() else 0


def install_once(kit_dir: Path) -> float:
    """Seconds of one install.sh run onto a fresh second engine, offline."""
    second = gpuengine.start()
    target = Path(tempfile.mkdtemp(prefix="bench-kit-box-")) / "tf29-env"
    try:
        with kitbox.offline(second) as env:
            begin = time.monotonic()
            done = kitbox.install(kit_dir, target, env)
            took = time.monotonic() - begin
        if done.returncode != 0:
            raise BenchError(f"install.sh failed: {(done.stdout + done.stderr)[-500:]}")
        return took
    finally:
        second.stop()
        shutil.rmtree(target.parent, ignore_errors=True)


def measure(image: str, runs: int, output_dir: Path) -> dict[str, Summary | int | str]:
    scratch = Path(tempfile.mkdtemp(prefix="bench-kit-", dir=DEFAULT_OUTPUT))
    try:
        begin = time.monotonic()
        try:
            made = kit.make(engine.connect(), image, scratch / "kit", output_dir, lambda _line: None)
        except UserError as error:
            raise BenchError(f"making the kit of {image}: {error}") from None
        make_s = time.monotonic() - begin
        found: dict[str, Summary | int | str] = {"variant": str(made.record["variant"]),
                                                 "make": summarize([make_s]),
                                                 "install": summarize([install_once(made.folder) for _ in range(runs)]),
                                                 "total": kit.size_of(made.folder)}
        for label, name in PARTS:
            found[label] = part_bytes(made.folder, name)
        found["SBOM"] = part_bytes(made.folder, kit.SBOM_DIR)
        return found
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def table(results: dict[str, dict[str, Summary | int | str]]) -> str:
    images = list(results)

    def cell(image: str, key: str) -> str:
        value = results[image][key]
        if isinstance(value, Summary):
            return value.cell()
        return f"{value / MIB:,.1f} MiB" if isinstance(value, int) else value

    rows = [("variant", "variant"), *((label, label) for label, _ in PARTS), ("SBOM and licenses", "SBOM"),
            ("whole kit", "total"), ("make (`build.py kit`)", "make"),
            ("install (`install.sh`, offline, second engine)", "install")]
    lines = [f"| Measure | {' | '.join(f'`{image}`' for image in images)} |", "|---|" + "---|" * len(images)]
    lines += [f"| {label} | {' | '.join(cell(image, key) for image in images)} |" for label, key in rows]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.kit", description=__doc__.splitlines()[0])
    parser.add_argument("--image", action="append", required=True, help="an image to make the kit of (repeatable)")
    parser.add_argument("--runs", type=int, default=1, help="installs of each kit (default 1)")
    parser.add_argument("--output-dir", type=Path, default=DEFAULT_OUTPUT,
                        help="build output whose SBOMs go into the kits (default: build-output)")
    args = parser.parse_args(argv)
    if args.runs < 1:
        print("bench.kit: --runs must be 1 or more", file=sys.stderr)
        return 2
    client = engine.connect()
    for image in args.image:
        if not engine.image_exists(client, image):
            print(f"bench.kit: no image {image} on the engine", file=sys.stderr)
            return 2
    try:
        print(table({image: measure(image, args.runs, args.output_dir) for image in args.image}), end="")
    except BenchError as error:
        print(f"bench.kit: {error}", file=sys.stderr)
        return 4
    return 0


if __name__ == "__main__":
    sys.exit(main())
