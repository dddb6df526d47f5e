"""build.py kit: one folder that sets up a team box with no internet (docs/kit.md), or one tarball of
that folder (an OUTPUT ending in .tar: uncompressed, as the image archive inside is). It holds the image
(a `docker save` archive, as `build.py export` writes it), the project's files (every file git tracks
or would track, as they are in this working tree), wheelhouses for the host tools' venv
(requirements-dev.txt, what `make venv` installs) and the hub's (hub/requirements.txt, --no-deps as
hub.mk installs it), an npm cache from which `npm ci --offline` installs the hub's proxy, the build's
SBOM and license summary where the build recorded them for this image, scripts/kit-install.sh as
install.sh, and SHA256SUMS over all of it. Made in OUTPUT.partial and renamed at the end: a kit that failed halfway
is never taken for one."""

import contextlib
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docker import DockerClient

from tf29env.core import engine, labels, records
from tf29env.core.errors import EXIT_BUILD, EXIT_INPUT, UserError
from tf29env.core.log import Log
from tf29env.core.paths import REPO
from tf29env.release import export

# The kit's layout (scripts/kit-install.sh reads the same names).
INSTALL = "install.sh"
KIT_FILE = "kit.json"
SUMS = "SHA256SUMS"
IMAGES = "images"
PROJECT = "project.tar.gz"
HOST_WHEELS = "wheels/host"
HUB_WHEELS = "wheels/hub"
NPM_CACHE = "npm-cache.tar.gz"
SBOM_DIR = "sbom"
# An --output ending so is one tarball holding the kit's folder, named after the tarball (tf29-kit.tar: tf29-kit/).
TARBALL = ".tar"
INSTALL_SOURCE = REPO / "scripts" / "kit-install.sh"  # the kit's install.sh
HOST_REQUIREMENTS = "requirements-dev.txt"  # the Makefile's $(VENV)/.done
HUB_REQUIREMENTS = "hub/requirements.txt"  # hub.mk's $(HUB_VENV)/.done
HUB_LOCK = ("hub/package.json", "hub/package-lock.json")  # hub.mk's node_modules/.done
# Folders made on a box, never shipped even where git would track them: members' secrets, the hub's state
# (.env, the venvs, node_modules and caches git ignores already).
LEFT_OUT = ("compose/secrets/", "hub/state/")
CHUNK = 1024 * 1024
DOWNLOAD_TIMEOUT = 1800


@dataclass(frozen=True)
class Kit:
    folder: Path  # the kit's folder, or the tarball that holds it
    record: dict[str, Any]  # kit.json


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def is_tarball(output: Path) -> bool:
    return output.suffix == TARBALL


def check_output(output: Path) -> Path:
    """OUTPUT must be new (a folder kit's may be an empty folder) and its parent writable: its partial sibling."""
    if is_tarball(output) and (output.exists() or output.is_symlink()):
        raise UserError(f"--output {output}: already exists; name a new {TARBALL} file", EXIT_INPUT)
    if output.exists() and (not output.is_dir() or any(output.iterdir())):
        raise UserError(f"--output {output}: already exists and is not an empty folder; name a new one", EXIT_INPUT)
    if not output.parent.is_dir() or not os.access(output.parent, os.W_OK):
        raise UserError(f"--output {output}: {output.parent} is not a writable folder", EXIT_INPUT)
    return output.with_name(f"{output.name}.partial")


def project_files(repo: Path = REPO) -> list[str]:
    """The files git tracks or would track (not ignored), as paths relative to REPO, sorted."""
    proc = subprocess.run(["git", "-C", str(repo), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise UserError(f"{repo} is not a git checkout: the kit ships the files git tracks ({proc.stderr.strip()})")
    names = {name for name in proc.stdout.split("\0") if name}
    return sorted(name for name in names
                  if (repo / name).is_file() and not name.startswith(LEFT_OUT) and "__pycache__" not in name)


def file_entry(name: str, data: bytes) -> bytes:
    """What project_digest takes of one file: its name and its content's digest."""
    return name.encode() + b"\0" + hashlib.sha256(data).digest()


def project_digest(names: Iterable[str], repo: Path = REPO) -> str:
    """SHA256 over the project files' names and contents: what a kit's project part was made from (a file
    removed since git listed it is left out, as write_project leaves it)."""
    digest = hashlib.sha256()
    for name in names:
        with contextlib.suppress(FileNotFoundError):
            digest.update(file_entry(name, (repo / name).read_bytes()))
    return digest.hexdigest()


def write_project(target: Path, names: Iterable[str], repo: Path = REPO) -> str:
    """NAMES from REPO in a gzip tarball, owned by nobody in particular (the installer's user extracts it);
    the project_digest of what went in, each file read once."""
    digest = hashlib.sha256()
    with tarfile.open(target, "w:gz") as archive:
        for name in names:
            try:
                info = archive.gettarinfo(str(repo / name), arcname=name)
                data = (repo / name).read_bytes()
            except FileNotFoundError:
                continue  # removed since git listed it: work in progress in this checkout
            info.size = len(data)
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            archive.addfile(info, io.BytesIO(data))
            digest.update(file_entry(name, data))
    return digest.hexdigest()


def run_tool(command: list[str], what: str, cwd: Path | None = None) -> None:
    """A download step; its failure is one line with the tool's last words (exit 4)."""
    try:
        proc = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=DOWNLOAD_TIMEOUT, check=False)
    except FileNotFoundError:
        raise UserError(f"{what}: {command[0]} is not installed here", EXIT_BUILD) from None
    except subprocess.TimeoutExpired:
        raise UserError(f"{what}: no answer within {DOWNLOAD_TIMEOUT} s", EXIT_BUILD) from None
    if proc.returncode != 0:
        tail = " ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
        raise UserError(f"{what} failed (exit {proc.returncode}): {tail}", EXIT_BUILD)


def download_wheels(folder: Path, python: str, log: Log) -> None:
    """The host tools' wheels (resolved with their dependencies) and the hub's (pinned whole, --no-deps).
    `pip wheel`: a package published only as source (onetimepass) is built here, so the box needs no
    build backend."""
    for requirements, wheels, extra, what in ((HOST_REQUIREMENTS, HOST_WHEELS, [], "host tools"),
                                              (HUB_REQUIREMENTS, HUB_WHEELS, ["--no-deps"], "hub")):
        log(f"==> pip wheel {' '.join([*extra, '-r', requirements])} -> {wheels}/")
        run_tool([python, "-m", "pip", "wheel", "-q", "--disable-pip-version-check", *extra,
                  "-w", str(folder / wheels), "-r", str(REPO / requirements)], f"pip wheel ({what})")


def npm_cache(target: Path, log: Log) -> str:
    """The npm cache `npm ci` fills for hub/package-lock.json, as a tarball, and the registry it came from:
    `npm ci --offline --cache` on it, with that --registry (the lock file names no tarball URLs, so npm
    finds them in the cached metadata, which is kept by the registry's URL), installs the proxy with no
    registry asked."""
    log(f"==> npm ci --cache (hub/package-lock.json) -> {NPM_CACHE}")
    with tempfile.TemporaryDirectory(prefix="tf29-kit-npm-") as scratch:
        work = Path(scratch)
        for name in HUB_LOCK:
            shutil.copy(REPO / name, work / Path(name).name)
        cache = work / "cache"
        registry = subprocess.run(["npm", "config", "get", "registry"], cwd=work, capture_output=True, text=True,
                                  check=False).stdout.strip()
        run_tool(["npm", "ci", "--cache", str(cache), "--no-audit", "--no-fund", "--loglevel=error"],
                 "npm ci (hub proxy)", cwd=work)
        # The tarballs and their index; logs and npx's folder are this machine's.
        with tarfile.open(target, "w:gz") as archive:
            archive.add(cache / "_cacache", arcname="_cacache")
    return registry


def copy_sbom(folder: Path, output_dir: Path, variant: str, image_id: str, log: Log) -> list[str]:
    """The SBOM and license summary the build recorded for IMAGE_ID (build-output/VARIANT/), if any."""
    try:
        record = records.load_build(output_dir, variant)
    except UserError:
        record = {}
    if record.get("id") != image_id or "sbom" not in record:
        log(f"==> no SBOM recorded for this image in {output_dir / variant} (the image holds its own: "
            f"label {labels.SBOM})")
        return []
    sources = [Path(str(record["sbom"])), *(Path(str(p)) for p in record.get("licenses", []))]
    (folder / SBOM_DIR).mkdir()
    copied = []
    for source in sources:
        if source.is_file():
            shutil.copy(source, folder / SBOM_DIR / source.name)
            copied.append(f"{SBOM_DIR}/{source.name}")
    log(f"==> SBOM and licenses: {', '.join(copied)}")
    return copied


def kit_order(names: Iterable[str]) -> list[str]:
    """NAMES in the order of SHA256SUMS and of the tarball: the image archives last."""
    return sorted(names, key=lambda name: (name.startswith(f"{IMAGES}/"), name))


def write_sums(folder: Path) -> None:
    """SHA256SUMS over every file of the kit but itself, in `sha256sum -c`'s format; the image archives
    last, so that install.sh names a damaged small file without reading gigabytes first."""
    names = kit_order(str(path.relative_to(folder)) for path in folder.rglob("*") if path.is_file())
    lines = [f"{sha256_of(folder / name)}  {name}\n" for name in names if name != SUMS]
    (folder / SUMS).write_text("".join(lines))


def _owned_by_nobody(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def write_tarball(folder: Path, target: Path) -> None:
    """FOLDER as an uncompressed tarball at TARGET, its files under FOLDER's name, the image archives last
    (gzip would take minutes over gigabytes of image layers)."""
    entries = kit_order(str(path.relative_to(folder)) for path in folder.rglob("*"))
    # 1 MiB copies: half the time of tarfile's 16 KiB default over the image archive.
    with tarfile.TarFile(target, "w", copybufsize=CHUNK) as archive:
        archive.add(folder, arcname=folder.name, recursive=False, filter=_owned_by_nobody)
        for name in entries:
            archive.add(folder / name, arcname=f"{folder.name}/{name}", recursive=False, filter=_owned_by_nobody)


def python_tag(python: str) -> str:
    """X.Y of the Python the wheels are for (the box's python3 must be the same)."""
    out = subprocess.run([python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                         capture_output=True, text=True, check=True).stdout
    return out.strip()


def reused_archive(earlier: Path | None, image_id: str) -> Path | None:
    """The image archive of an EARLIER kit of the same image, if it holds one intact in size."""
    if earlier is None or not (earlier / KIT_FILE).is_file():
        return None
    record = read(earlier)
    archives = [earlier / str(name) for name in record.get("archives", [])]
    if record.get("id") != image_id or len(archives) != 1 or not archives[0].is_file():
        return None
    return archives[0]


def save_image(client: DockerClient, image: str, attrs: dict[str, Any], folder: Path, earlier: Path | None,
               log: Log) -> tuple[Path, dict[str, Any]]:
    """IMAGE's docker save archive in FOLDER (as `build.py export` writes it), hard-linked from an
    earlier kit of the same image where one is given (the tests' and the benchmark's cache)."""
    archive = reused_archive(earlier, str(attrs["Id"]))
    if archive is not None:
        folder.mkdir(parents=True)
        os.link(archive, folder / archive.name)
        log(f"==> {archive.name}: the archive of {earlier}, the same image (hard link)")
        return folder / archive.name, {"image": read(archive.parent.parent)["image"], "id": str(attrs["Id"])}
    done = export.export(client, image, folder, "no", log)
    return done.archive, done.record


def make(client: DockerClient, image: str, output: Path, output_dir: Path, log: Log,
         python: str = sys.executable, earlier: Path | None = None) -> Kit:
    """The kit of IMAGE in OUTPUT (new: a folder, or a tarball where it ends in .tar), from this checkout and
    the connected machine's registries; EARLIER: a kit folder of the same image whose archive is reused."""
    partial = check_output(output)
    attrs = engine.inspect(client, image)
    image_labels = labels.of_image(attrs)
    variant = image_labels.get(labels.VARIANT, "")
    if not variant:
        raise UserError(f"{image} has no {labels.VARIANT} label: not built by build.py")
    if not INSTALL_SOURCE.is_file():
        raise UserError(f"{INSTALL_SOURCE} is missing: this checkout cannot make a kit")
    shutil.rmtree(partial, ignore_errors=True)  # a kit that failed halfway before
    partial.mkdir()
    # A tarball's folder is made inside the partial one, beside the tarball being written.
    folder = partial / output.stem if is_tarball(output) else partial
    try:
        folder.mkdir(exist_ok=True)
        names = project_files()
        log(f"==> {len(names)} project files -> {PROJECT}")
        project_sha256 = write_project(folder / PROJECT, names)
        download_wheels(folder, python, log)
        registry = npm_cache(folder / NPM_CACHE, log)
        sboms = copy_sbom(folder, output_dir, variant, str(attrs["Id"]), log)
        shutil.copy(INSTALL_SOURCE, folder / INSTALL)
        (folder / INSTALL).chmod(0o755)
        # Last: the slow step, after every download had its chance to fail.
        archive, saved = save_image(client, image, attrs, folder / IMAGES, earlier, log)
        record = {
            "image": saved["image"], "id": saved["id"],  # the archive holds this one reference
            "variant": variant, "version": image_labels.get("org.opencontainers.image.version", ""),
            "archives": [f"{IMAGES}/{archive.name}"], "python": python_tag(python),
            "project_files": len(names), "project_sha256": project_sha256, "sbom": sboms,
            "npm_registry": registry,
        }
        records.write_json(folder / KIT_FILE, record)
        log(f"==> {SUMS}")
        write_sums(folder)
        finish(partial, output, log)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    return Kit(output, record)


def finish(partial: Path, output: Path, log: Log) -> None:
    """The kit made in PARTIAL (check_output's) to OUTPUT: renamed, or, for a tarball, its folder written as
    the tarball beside it, which is renamed, and PARTIAL removed."""
    if not is_tarball(output):
        if output.exists():
            output.rmdir()  # check_output let only an empty folder through
        partial.rename(output)
        return
    log(f"==> {output.name} (uncompressed, the image archive last)")
    write_tarball(partial / output.stem, partial / output.name)
    (partial / output.name).rename(output)
    shutil.rmtree(partial, ignore_errors=True)


def size_of(path: Path) -> int:
    """The bytes of a kit's folder, or of its tarball."""
    if path.is_file():
        return path.stat().st_size
    return sum(item.stat().st_size for item in path.rglob("*") if item.is_file())


def summary(kit: Kit) -> str:
    """What `build.py kit` prints at the end (stdout)."""
    where = "tarball" if is_tarball(kit.folder) else "folder"
    return json.dumps({**kit.record, where: str(kit.folder), "bytes": size_of(kit.folder)}, sort_keys=True)


def read(folder: Path) -> dict[str, Any]:
    """A kit's kit.json (for the tests and the benchmark)."""
    data: dict[str, Any] = json.loads((folder / KIT_FILE).read_text())
    return data


def sums(folder: Path) -> dict[str, str]:
    """SHA256SUMS as path -> digest."""
    pairs = (line.split("  ", 1) for line in (folder / SUMS).read_text().splitlines())
    return {name: digest for digest, name in pairs}
