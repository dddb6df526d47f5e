"""build.py export (issue 28): the image as a `docker save` archive for clusters without Docker, with
its tags and labels, a record beside it, and the SIF where Apptainer is installed (not on this host:
tests/hpc/test_apptainer.py makes it from this archive on a Debian 13 machine, as a cluster would)."""

import hashlib
import json
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Any

from docker import DockerClient

from tf29env.core import labels
from tf29env.core.paths import REPO


def test_the_archive_holds_the_image_with_its_tags_and_labels(
    docker_client: DockerClient, image: str, exported: dict[str, Any]
) -> None:
    archive = Path(exported["archive"]["path"])
    attrs = docker_client.images.get(image).attrs
    assert exported["id"] == attrs["Id"] and exported["labels"] == labels.of_image(attrs)
    assert exported["labels"].get(labels.VARIANT), exported["labels"]
    digest = hashlib.sha256()
    with archive.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    assert (exported["archive"]["sha256"], exported["archive"]["bytes"]) == (digest.hexdigest(), archive.stat().st_size)
    with tarfile.open(archive) as tar:
        manifest = json.load(tar.extractfile("manifest.json"))  # type: ignore[arg-type]
        config = json.load(tar.extractfile(manifest[0]["Config"]))  # type: ignore[arg-type]
    assert manifest[0]["RepoTags"] == [image]
    assert config["config"]["Labels"] == attrs["Config"]["Labels"]
    assert (archive.parent / "export.json").is_file()
    # No Apptainer on this host: no SIF, and the record says what to run where there is one.
    assert exported["sif"] is None
    assert exported["on_a_cluster"][0].endswith(f"docker-archive:{archive.name}")
    assert exported["on_a_cluster"][1].endswith("selfcheck")


def test_a_sif_asked_for_without_apptainer_is_one_line(image: str, tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(REPO / "build.py"), "export", image, "--sif", "yes",
                           "--output-dir", str(tmp_path)], capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and proc.stdout == "", proc
    assert proc.stderr.splitlines() == [
        "error: --sif yes: neither apptainer nor singularity is installed here; export the archive (--sif auto or "
        "no) and run `apptainer build X.sif docker-archive:X.tar` where it is (docs/hpc.md)"]
    assert not list(tmp_path.rglob("*.tar"))
