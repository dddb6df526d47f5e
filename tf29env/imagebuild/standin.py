"""The stand-in base images, made without any registry: Debian 11 bootstrapped from Debian's
archive (``STANDIN_OS``, the cpu variant's base) and the same plus NVIDIA's CUDA 11 libraries from
PyPI (``STANDIN_CUDA``, the gpu variant's base). Debian 11 has Ubuntu 20.04's glibc (2.31)."""

import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

from docker import DockerClient

from tf29env.core import engine
from tf29env.core.errors import EXIT_BUILD, UserError
from tf29env.core.log import Log
from tf29env.core.paths import REPO, cache_dir
from tf29env.core.variants import CUDA_WHEELS, STANDIN_CUDA, STANDIN_OS
from tf29env.imagebuild import context, dockerbuild

SUITE = "bullseye"
DEFAULT_MIRROR = "http://deb.debian.org/debian"

SOURCES_LIST = """deb {mirror} bullseye main
deb {mirror} bullseye-updates main
deb {security} bullseye-security main
"""



def ensure(client: DockerClient, log: Log, image: str, *, mirror: str = DEFAULT_MIRROR) -> str:
    """The stand-in IMAGE (STANDIN_OS or STANDIN_CUDA), made only if the engine lacks it."""
    if image not in (STANDIN_OS, STANDIN_CUDA):
        raise ValueError(f"{image} is not a stand-in base")
    if not engine.image_exists(client, STANDIN_OS):
        bootstrap_os(client, log, mirror)
    if image == STANDIN_CUDA and not engine.image_exists(client, STANDIN_CUDA):
        add_cuda(client, log)
    return image


def bootstrap_os(client: DockerClient, log: Log, mirror: str = DEFAULT_MIRROR) -> None:
    """debootstrap Debian 11 into a scratch folder and import it as STANDIN_OS."""
    if shutil.which("debootstrap") is None:
        raise UserError("debootstrap is not installed (Debian: apt-get install debootstrap)")
    work = cache_dir() / "rootfs"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    rootfs = work / SUITE
    log(f"bootstrapping Debian 11 ({SUITE}) from {mirror}")
    run(["debootstrap", "--variant=minbase", "--include=ca-certificates", SUITE, str(rootfs), mirror])
    security = mirror.rstrip("/").removesuffix("/debian") + "/debian-security"
    (rootfs / "etc/apt/sources.list").write_text(SOURCES_LIST.format(mirror=mirror, security=security))
    # What a container must not inherit from the bootstrap: the engine provides these per container.
    for leftover in ("etc/hostname", "etc/resolv.conf", "etc/machine-id"):
        (rootfs / leftover).unlink(missing_ok=True)
    for cache in ("var/cache/apt/archives", "var/lib/apt/lists", "var/log/apt"):
        for entry in (rootfs / cache).glob("*"):
            if entry.is_file():
                entry.unlink()
    tarball = work / "rootfs.tar"
    log(f"importing the root filesystem as {STANDIN_OS}")
    run(["tar", "--numeric-owner", "-C", str(rootfs), "-cf", str(tarball), "."])
    repository, tag = STANDIN_OS.split(":")
    client.api.import_image_from_file(
        str(tarball),
        repository=repository,
        tag=tag,
        changes=[
            "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            'CMD ["bash"]',
            'LABEL org.opencontainers.image.title="tf29-env stand-in Debian 11"',
        ],
    )
    shutil.rmtree(work, ignore_errors=True)


def add_cuda(client: DockerClient, log: Log) -> None:
    """Build STANDIN_CUDA: STANDIN_OS plus the CUDA libraries, unpacked on the host from the wheels."""
    wheels = download_wheels(log)
    with tempfile.TemporaryDirectory(dir=cache_dir()) as tmp:
        tar_path = Path(tmp) / "context.tar"
        with tarfile.open(tar_path, "w") as tar:
            context.add_file(tar, "Dockerfile", (REPO / "standin" / "Dockerfile").read_bytes())
            for wheel in wheels:
                add_libraries(tar, wheel)
        log(f"building {STANDIN_CUDA} (CUDA 11 libraries on {STANDIN_OS})")
        with tar_path.open("rb") as fileobj:
            dockerbuild.build_context(client, fileobj, tag=STANDIN_CUDA, buildargs={"OS_IMAGE": STANDIN_OS}, log=log)


def download_wheels(log: Log) -> list[Path]:
    """The CUDA wheels, cached across runs (pip checks each against the index's sha256)."""
    target = cache_dir() / "wheels"
    target.mkdir(parents=True, exist_ok=True)
    log(f"fetching {len(CUDA_WHEELS)} CUDA wheels into {target} (about 1.7 GB, cached)")
    run([
        sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
        "--platform", "manylinux2014_x86_64", "--python-version", "3.9", "--implementation", "cp",
        "--dest", str(target), *CUDA_WHEELS,
    ])
    wheels = []
    for spec in CUDA_WHEELS:
        found = cached_wheel(spec)
        if found is None:
            raise UserError(f"pip did not fetch {spec} into {target}")
        wheels.append(found)
    return wheels


def cached_wheel(spec: str) -> Path | None:
    """The wheel for NAME==VERSION in the download cache (as pip download names it), or None."""
    name, version = spec.split("==")
    found = sorted((cache_dir() / "wheels").glob(f"{name.replace('-', '_')}-{version}-*.whl"))
    return found[0] if found else None


def add_libraries(tar: tarfile.TarFile, wheel: Path) -> None:
    """Copy the wanted shared libraries of one wheel into cuda/ of the build context."""
    wanted = next(libs for spec, libs in CUDA_WHEELS.items()
                  if wheel.name.startswith(spec.split("==")[0].replace("-", "_") + "-"))
    with zipfile.ZipFile(wheel) as archive:
        members = {Path(info.filename).name: info for info in archive.infolist() if "/lib/" in info.filename}
        for lib in wanted:
            if lib not in members:
                raise UserError(f"{wheel.name} has no {lib}")
            info = tarfile.TarInfo(f"cuda/{lib}")
            info.size = members[lib].file_size
            info.mode = 0o755
            with archive.open(members[lib]) as src:
                tar.addfile(info, src)


def run(argv: list[str]) -> None:
    """Run a step; a failure becomes one line naming the step and its last output line."""
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise UserError(f"{Path(argv[0]).name} failed (exit {proc.returncode}): {tail[0]}", EXIT_BUILD)
