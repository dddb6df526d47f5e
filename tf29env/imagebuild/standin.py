"""The stand-in base images, made without any registry: Debian 11 bootstrapped from Debian's
mirror (``STANDIN_OS``, the cpu variant's base) and the same plus NVIDIA's CUDA 11 libraries from
PyPI (``STANDIN_CUDA``, the gpu variant's base). Debian 11 has Ubuntu 20.04's glibc (2.31).

Once Debian's mirror no longer carries bullseye (Debian moves a release to its archive of retired
releases about a year after its LTS ends, and the mirror then answers 404 for the suite), the
bootstrap falls back to that archive (``--archive-mirror`` / ``STANDIN_ARCHIVE_MIRROR``): the base's
sources.list then names the archive, and apt accepts its expired Release files (Valid-Until), still
checking their signatures."""

import contextlib
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from docker import DockerClient

from tf29env.core import engine
from tf29env.core.errors import EXIT_BUILD, EXIT_INPUT, UserError
from tf29env.core.log import Log
from tf29env.core.paths import REPO, cache_dir
from tf29env.core.variants import CUDA_WHEELS, STANDIN_CUDA, STANDIN_OS
from tf29env.imagebuild import context, dockerbuild

SUITE = "bullseye"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
DEFAULT_ARCHIVE = "http://archive.debian.org/debian"
ARCHIVE_ENV = "STANDIN_ARCHIVE_MIRROR"
# debootstrap is given Debian's keyring explicitly: without it, it would go on unverified where it is missing.
KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")
# The suites of a release's sources.list, and the tree each lives in (security has its own).
SUITES = ((SUITE, "main"), (f"{SUITE}-updates", "main"), (f"{SUITE}-security", "security"))
ARCHIVE_APT_CONF = "etc/apt/apt.conf.d/99-tf29-archive"
ARCHIVE_APT_CONF_TEXT = """\
// tf29-env: this base's apt sources are Debian's archive of retired releases, whose Release files
// stay as they were last signed and so carry a Valid-Until in the past. Signatures are still checked.
Acquire::Check-Valid-Until "false";
"""
PROBE_TIMEOUT = 30  # seconds for one Release file's answer


def check_mirror_url(what: str, url: str) -> str:
    """URL, if it is an http(s) URL of a host without credentials; else one line naming WHAT."""
    try:
        parts = urllib.parse.urlsplit(url)
        port_ok = parts.port is None or parts.port > 0
    except ValueError:
        parts, port_ok = None, False
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or not port_ok \
            or parts.query or parts.fragment or any(char.isspace() for char in url):
        raise UserError(f"{what} {url}: not an http:// or https:// URL of a Debian mirror", EXIT_INPUT)
    if parts.username is not None or parts.password is not None:
        # The URL goes into the base's sources.list, so into every image built on it.
        raise UserError(f"{what} {parts.scheme}://***@{parts.hostname}: credentials in this URL would be "
                        "written into the base image's /etc/apt/sources.list; give a URL without them", EXIT_INPUT)
    return url


def archive_mirror(flag: str | None, env: Mapping[str, str]) -> str:
    """The archive of retired releases: --archive-mirror, else $STANDIN_ARCHIVE_MIRROR, else Debian's; checked."""
    if flag:
        return check_mirror_url("--archive-mirror", flag)
    if env.get(ARCHIVE_ENV):
        return check_mirror_url(ARCHIVE_ENV, env[ARCHIVE_ENV])
    return DEFAULT_ARCHIVE


def security_mirror(mirror: str) -> str:
    """Where a Debian mirror's security tree is: debian-security beside debian."""
    return mirror.rstrip("/").removesuffix("/debian") + "/debian-security"


def release_url(mirror: str, suite: str) -> str:
    return f"{mirror.rstrip('/')}/dists/{suite}/Release"


def has_suite(mirror: str, suite: str) -> bool:
    """Whether MIRROR carries SUITE: its Release file answers (True) or is 404 (False). Any other
    answer, or none, is one line: it says nothing about the suite."""
    url = release_url(mirror, suite)
    try:
        with urllib.request.urlopen(url, timeout=PROBE_TIMEOUT):  # noqa: S310 - the scheme was checked
            return True
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return False
        raise UserError(f"{url} answered HTTP {exc.code} ({exc.reason}): cannot tell whether the mirror has {suite}",
                        EXIT_BUILD) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise UserError(f"{url}: no answer ({reason})", EXIT_BUILD) from None


@dataclass(frozen=True)
class AptSource:
    """Where the bootstrap fetches from, and the base's sources.list."""

    mirror: str
    archived: bool  # the suite is gone from the mirror: the archive of retired releases is used
    lines: tuple[tuple[str, str], ...]  # (URL, suite)

    def sources_list(self) -> str:
        return "".join(f"deb {url} {suite} main\n" for url, suite in self.lines)


def choose_source(mirror: str, archive: str, probe: Callable[[str, str], bool] = has_suite) -> AptSource:
    """The mirror while it has the suite; else the archive, with the suites it carries (one line
    when it lacks the release itself)."""
    trees = {"main": mirror, "security": security_mirror(mirror)}
    if probe(mirror, SUITE):
        return AptSource(mirror, False, tuple((trees[tree], suite) for suite, tree in SUITES))
    if not probe(archive, SUITE):
        raise UserError(f"{SUITE} is gone from {mirror} and {archive} does not have it either "
                        f"({release_url(archive, SUITE)}: 404); give --archive-mirror (or {ARCHIVE_ENV}) "
                        "an archive of retired Debian releases", EXIT_INPUT)
    trees = {"main": archive, "security": security_mirror(archive)}
    # A retired release keeps what the archive took over: -updates and -security where they exist.
    lines = [(trees[tree], suite) for suite, tree in SUITES if suite == SUITE or probe(trees[tree], suite)]
    return AptSource(archive, True, tuple(lines))


def ensure(client: DockerClient, log: Log, image: str, *, mirror: str = DEFAULT_MIRROR,
           archive: str | None = None) -> str:
    """The stand-in IMAGE (STANDIN_OS or STANDIN_CUDA), made only if the engine lacks it."""
    if image not in (STANDIN_OS, STANDIN_CUDA):
        raise ValueError(f"{image} is not a stand-in base")
    if not engine.image_exists(client, STANDIN_OS):
        bootstrap_os(client, log, mirror, archive=archive)
    if image == STANDIN_CUDA and not engine.image_exists(client, STANDIN_CUDA):
        add_cuda(client, log)
    return image


def bootstrap_os(client: DockerClient, log: Log, mirror: str = DEFAULT_MIRROR, *, archive: str | None = None,
                 target: str = STANDIN_OS) -> None:
    """debootstrap Debian 11 into a scratch folder and import it as TARGET (default STANDIN_OS), from
    MIRROR, or from ARCHIVE (default: $STANDIN_ARCHIVE_MIRROR, else Debian's) once MIRROR lacks it."""
    if shutil.which("debootstrap") is None:
        raise UserError("debootstrap is not installed (Debian: apt-get install debootstrap)")
    if not KEYRING.is_file():
        raise UserError(f"{KEYRING} is missing: debootstrap checks Debian's signatures with it "
                        "(Debian: apt-get install debian-archive-keyring)")
    mirror = check_mirror_url("mirror", mirror)
    archive = check_mirror_url("--archive-mirror", archive) if archive else archive_mirror(None, os.environ)
    source = choose_source(mirror, archive)
    if source.archived:
        log(f"{SUITE} is gone from {mirror} ({release_url(mirror, SUITE)}: 404): "
            f"bootstrapping from the archive of retired releases {archive}")
    work = Path(tempfile.mkdtemp(prefix="rootfs-", dir=cache_dir()))
    try:
        rootfs = work / SUITE
        log(f"bootstrapping Debian 11 ({SUITE}) from {source.mirror}")
        run(["debootstrap", "--variant=minbase", "--include=ca-certificates", f"--keyring={KEYRING}", SUITE,
             str(rootfs), source.mirror])
        (rootfs / "etc/apt/sources.list").write_text(source.sources_list())
        if source.archived:
            (rootfs / ARCHIVE_APT_CONF).write_text(ARCHIVE_APT_CONF_TEXT)
        # What a container must not inherit from the bootstrap: the engine provides these per container.
        for leftover in ("etc/hostname", "etc/resolv.conf", "etc/machine-id"):
            (rootfs / leftover).unlink(missing_ok=True)
        for cache in ("var/cache/apt/archives", "var/lib/apt/lists", "var/log/apt"):
            for entry in (rootfs / cache).glob("*"):
                if entry.is_file():
                    entry.unlink()
        tarball = work / "rootfs.tar"
        log(f"importing the root filesystem as {target}")
        run(["tar", "--numeric-owner", "-C", str(rootfs), "-cf", str(tarball), "."])
        repository, tag = target.rsplit(":", 1)
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
    finally:
        remove_rootfs(work)


def remove_rootfs(work: Path) -> None:
    """Remove a scratch folder, first unmounting what a failed debootstrap left mounted in it (its
    chroot's /proc and /sys), so that removing it never reaches into the host's."""
    prefix = str(work.resolve()) + "/"
    with contextlib.suppress(OSError):
        mounts = [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()]
        for point in sorted((m for m in mounts if m.startswith(prefix)), key=len, reverse=True):
            subprocess.run(["umount", "-l", point], capture_output=True, check=False)
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
