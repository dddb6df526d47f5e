"""docs/build.md's blocks for a built image, typed as written in a fresh copy of the project (with
the project's .venv, as `make venv` makes it once per checkout): the size gate on the last build
(the session's, copied into the copy's build-output/), the baseline recorded from an image, and the
SBOM read out of an image into sbom.json. IMAGE and tf29-env:latest-gpu are the gpu image built here."""

import json
import os
import shutil
from pathlib import Path
from typing import Any

from testkit import docblocks
from testkit.docblocks import Plan
from tf29env.core.paths import REPO

BLOCKS = docblocks.blocks_for(__file__)


def test_the_build_docs_blocks_as_typed(built: dict[str, dict[str, Any]], output_dir: Path, tmp_path: Path) -> None:
    image = built["gpu"]["image"]
    copy = docblocks.fresh_copy(tmp_path / "tf29-env")
    (copy / ".venv").symlink_to(REPO / ".venv")
    shutil.copytree(output_dir, copy / "build-output")  # what the reader's last `build.py build` left
    plans = {("docs/build.md", "python3 build.py size"): Plan(placeholders={"IMAGE": image}),
             ("docs/build.md", "docker run --rm --entrypoint cat"): Plan(placeholders={"tf29-env:latest-gpu": image})}
    said = {key[1]: docblocks.run_block(block, docblocks.bash(copy, os.environ), plan)
            for block, key, plan in docblocks.with_plans(BLOCKS, plans)}

    assert "size gate:" in said["python3 build.py size"], said["python3 build.py size"]
    assert "recorded" in said["python3 build.py size"], said["python3 build.py size"]
    sbom = json.loads((copy / "sbom.json").read_text())
    assert sbom["bomFormat"] == "CycloneDX" and sbom["components"], "sbom.json is not the image's SBOM"
