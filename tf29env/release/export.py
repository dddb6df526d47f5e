"""build.py export: the image for clusters without Docker (docs/hpc.md). A `docker save` archive of the
image with its tags (its config, inside the archive, carries the labels), a JSON record beside it
(labels, size, SHA256, the commands to run on a cluster), and, where Apptainer (or Singularity) is
installed here, the SIF made from the archive with `apptainer build X.sif docker-archive:X.tar`:
the same command a cluster runs, so that the SIF made here and there are made alike."""

import hashlib
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docker import DockerClient

from tf29env.core import engine, labels
from tf29env.core.errors import EXIT_BUILD, EXIT_INPUT, UserError
from tf29env.core.log import Log

SIF_MODES = ("auto", "yes", "no")
APPTAINER_COMMANDS = ("apptainer", "singularity")
# The archive is about the image's size; the SIF, compressed, about half of it, but its build also
# unpacks the image under APPTAINER_TMPDIR (default /tmp): docs/hpc.md says so.
SPARE_BYTES = 256 * 1024 * 1024
CHUNK = 1024 * 1024


@dataclass
class Exported:
    archive: Path
    sha256: str
    size: int
    sif: Path | None
    record: dict[str, Any]


def file_stem(ref: str) -> str:
    """tf29-env:2.9.3-gpu-... -> tf29-env_2.9.3-gpu-... (a file name: no ':' or '/')."""
    return ref.replace("/", "_").replace(":", "_")


def apptainer_binary() -> str | None:
    for name in APPTAINER_COMMANDS:
        found = shutil.which(name)
        if found:
            return found
    return None


def check_space(folder: Path, needed: int, what: str) -> None:
    free = shutil.disk_usage(folder).free
    if free < needed + SPARE_BYTES:
        raise UserError(f"{folder}: {free / 2**30:.1f} GiB free, {what} needs about {needed / 2**30:.1f} GiB: "
                        f"free some space or pick another --output-dir", EXIT_INPUT)


def cluster_commands(archive_name: str, sif_name: str) -> list[str]:
    """What to run on a cluster without Docker, after copying the archive there (docs/hpc.md)."""
    return [
        f"APPTAINER_TMPDIR=/path/with/space apptainer build {sif_name} docker-archive:{archive_name}",
        f"apptainer exec {sif_name} selfcheck",
    ]


def export(client: DockerClient, image: str, folder: Path, sif_mode: str, log: Log) -> Exported:
    if sif_mode not in SIF_MODES:
        raise UserError(f"--sif {sif_mode}: use one of {', '.join(SIF_MODES)}")
    apptainer = apptainer_binary()
    if sif_mode == "yes" and apptainer is None:
        raise UserError("--sif yes: neither apptainer nor singularity is installed here; export the archive "
                        "(--sif auto or no) and run `apptainer build X.sif docker-archive:X.tar` where it is "
                        "(docs/hpc.md)")
    attrs = engine.inspect(client, image)
    image_labels = labels.of_image(attrs)
    refs = [ref for ref in attrs.get("RepoTags") or [] if ref]
    name = image if image in refs or not refs else refs[0]
    folder.mkdir(parents=True, exist_ok=True)
    size = int(attrs["Size"])
    check_space(folder, size, "the archive")
    archive = folder / f"{file_stem(name)}.tar"
    partial = archive.with_suffix(".tar.partial")
    digest = hashlib.sha256()
    log(f"==> docker save {name} -> {archive}")
    try:
        with partial.open("wb") as out:
            for chunk in client.images.get(image).save(chunk_size=CHUNK, named=name if name in refs else False):
                out.write(chunk)
                digest.update(chunk)
    except Exception as exc:
        partial.unlink(missing_ok=True)
        raise UserError(f"docker save {name} failed: {exc}", EXIT_BUILD) from exc
    partial.replace(archive)
    sif_path: Path | None = None
    sif_name = f"{file_stem(name)}.sif"
    if sif_mode != "no":
        if apptainer is None:
            log("==> no apptainer or singularity here: make the SIF where one is installed: "
                + cluster_commands(archive.name, sif_name)[0])
        else:
            sif_path = folder / sif_name
            check_space(folder, size // 2, "the SIF")
            log(f"==> {Path(apptainer).name} build {sif_path} docker-archive:{archive}")
            proc = subprocess.run([apptainer, "build", "--force", str(sif_path), f"docker-archive:{archive}"],
                                  capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                tail = " ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
                raise UserError(f"{Path(apptainer).name} build failed (exit {proc.returncode}): {tail}", EXIT_BUILD)
    record = {
        "image": name,
        "id": str(attrs["Id"]),
        "refs": refs,
        "labels": image_labels,
        "archive": {"path": str(archive), "bytes": archive.stat().st_size, "sha256": digest.hexdigest()},
        "sif": str(sif_path) if sif_path else None,
        "on_a_cluster": cluster_commands(archive.name, sif_name),
    }
    return Exported(archive, digest.hexdigest(), archive.stat().st_size, sif_path, record)
