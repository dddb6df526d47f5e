"""The base's support status, stated by `build.py audit` before it asks any database: the image's
own /etc/os-release (read from the image, no container started, no network) looked up in a dated
table of the releases a tf29-env image is built on; and the pins that cannot move, with their
mitigation. The table is the one home of these dates (docs/upgrade.md quotes them)."""

import contextlib
import datetime
import io
import posixpath
import shlex
import tarfile
from dataclasses import dataclass
from typing import Any

import docker.errors
from docker import DockerClient

from tf29env.core import engine
from tf29env.core.errors import UserError

UPGRADE_DOC = "docs/upgrade.md"
OS_RELEASE = ("/etc/os-release", "/usr/lib/os-release")  # os-release(5): the first that exists


@dataclass(frozen=True)
class Release:
    """One distro release and the last day of each phase of its free security support."""

    os_id: str  # os-release ID
    version_id: str  # os-release VERSION_ID
    regular: str  # what its first phase is called
    regular_end: datetime.date
    final: str  # the last phase of free security updates (the same as regular where there is one phase)
    final_end: datetime.date
    after: str  # what is left once final_end has passed

    def key(self) -> tuple[str, str]:
        return self.os_id, self.version_id


DAY = datetime.date.fromisoformat
RELEASES = (
    # https://www.debian.org/releases/bullseye/ (security support ended 2024-08-14) and
    # https://wiki.debian.org/LTS (Debian 11 LTS until 2026-08-31).
    Release("debian", "11", "regular support", DAY("2024-08-14"), "LTS", DAY("2026-08-31"),
            "no security updates from Debian"),
    # https://www.debian.org/releases/bookworm/ (security support until 2026-06-10) and
    # https://wiki.debian.org/LTS (Debian 12 LTS until 2028-06-30).
    Release("debian", "12", "regular support", DAY("2026-06-10"), "LTS", DAY("2028-06-30"),
            "no security updates from Debian"),
    # https://ubuntu.com/about/release-cycle and https://wiki.ubuntu.com/Releases: 20.04's standard
    # support ended 2025-05-31; Expanded Security Maintenance (Ubuntu Pro) runs to April 2030.
    Release("ubuntu", "20.04", "standard support", DAY("2025-05-31"), "standard support", DAY("2025-05-31"),
            "security updates only through Ubuntu Pro (ESM, until 2030-04)"),
    # https://ubuntu.com/about/release-cycle: 22.04's standard support ends in June 2027 (a month is
    # published; its last day is taken); ESM (Ubuntu Pro) runs to April 2032.
    Release("ubuntu", "22.04", "standard support", DAY("2027-06-30"), "standard support", DAY("2027-06-30"),
            "security updates only through Ubuntu Pro (ESM, until 2032-04)"),
)
TABLE = {release.key(): release for release in RELEASES}


@dataclass(frozen=True)
class Pin:
    """A pin that cannot move, why, and what keeps its known problems out of reach."""

    package: str
    why: str
    mitigation: str


PINS = (
    # The pure-Python parser's advisories (e.g. CVE-2025-4565, recursion) do not reach the C++ one.
    Pin("protobuf", "TensorFlow 2.9 requires protobuf<3.20", "protobuf's C++ backend (cpp) in use"),
)
# What the image's Python says about protobuf's backend, without importing TensorFlow.
PROTOBUF_BACKEND = "from google.protobuf.internal import api_implementation; print(api_implementation.Type())"


def parse_os_release(text: str) -> dict[str, str]:
    """os-release's KEY=value lines, values unquoted as a shell would."""
    found = {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition("=")
        if not sep or key.startswith("#"):
            continue
        try:
            words = shlex.split(value)
        except ValueError:
            continue
        found[key] = words[0] if words else ""
    return found


def days(count: int) -> str:
    return "1 day" if count == 1 else f"{count} days"


@dataclass(frozen=True)
class Status:
    """What the base is and where it stands on TODAY."""

    name: str  # os-release PRETTY_NAME (else NAME VERSION_ID)
    os_id: str
    version_id: str
    today: datetime.date

    @property
    def release(self) -> Release | None:
        return TABLE.get((self.os_id, self.version_id))

    @property
    def ended(self) -> bool | None:
        """Past its last free security support (None: the table does not know it)."""
        return None if self.release is None else self.today > self.release.final_end

    def line(self) -> str:
        """The one line audit prints first."""
        release = self.release
        if release is None:
            return (f"base: {self.name}: not in tf29-env's support table (tf29env/supplychain/support.py): "
                    "support status unknown")
        if self.today > release.final_end:
            ago = (self.today - release.final_end).days
            return (f"base: {self.name}: {release.final} ended {release.final_end} ({days(ago)} ago); "
                    f"{release.after}: see {UPGRADE_DOC}")
        left = days((release.final_end - self.today).days)
        if release.final_end == release.regular_end:
            return f"base: {self.name}: {release.regular} until {release.final_end} ({left} left)"
        if self.today > release.regular_end:
            return (f"base: {self.name}: {release.regular} ended {release.regular_end}; "
                    f"{release.final} until {release.final_end} ({left} left)")
        return (f"base: {self.name}: {release.regular} until {release.regular_end}, "
                f"then {release.final} until {release.final_end} ({left} left)")

    def to_dict(self) -> dict[str, Any]:
        release = self.release
        return {"name": self.name, "id": self.os_id, "version_id": self.version_id, "today": str(self.today),
                "ended": self.ended, "support_ends": str(release.final_end) if release else None,
                "statement": self.line()}


def status_of(os_release: dict[str, str], today: datetime.date) -> Status:
    os_id, version = os_release.get("ID", ""), os_release.get("VERSION_ID", "")
    name = os_release.get("PRETTY_NAME") or f"{os_release.get('NAME', os_id or 'unknown OS')} {version}".strip()
    return Status(name, os_id, version, today)


def today_utc() -> datetime.date:
    return datetime.datetime.now(datetime.UTC).date()


def read_image_file(client: DockerClient, image: str, path: str, hops: int = 5) -> bytes | None:
    """PATH's content in IMAGE (symlinks in the image followed), or None where it has none; from a
    container that is created but never started, without a network."""
    container = client.containers.create(image, entrypoint=["/bin/true"], command=[], network_mode="none")
    try:
        for _ in range(hops):
            try:
                chunks, _stat = container.get_archive(path)
            except docker.errors.NotFound:
                return None
            with tarfile.open(fileobj=io.BytesIO(b"".join(chunks))) as tar:
                member = tar.next()
                if member is None:
                    return None
                if not member.issym():
                    extracted = tar.extractfile(member)
                    return extracted.read() if extracted else None
                path = posixpath.normpath(posixpath.join(posixpath.dirname(path), member.linkname))
        return None
    finally:
        with contextlib.suppress(docker.errors.NotFound):
            container.remove(force=True)


def image_status(client: DockerClient, image: str, today: datetime.date) -> Status:
    """IMAGE's base as its /etc/os-release says; one line when the image has none."""
    for path in OS_RELEASE:
        content = read_image_file(client, image, path)
        if content is not None:
            return status_of(parse_os_release(content.decode(errors="replace")), today)
    raise UserError(f"{image} has no /etc/os-release: cannot tell its base's support status")


def pinned_versions(document: dict[str, Any]) -> dict[str, str]:
    """PINS' packages and the versions an SBOM lists for them."""
    wanted = {pin.package for pin in PINS}
    return {str(c["name"]).lower(): str(c.get("version", "")) for c in document.get("components", [])
            if str(c.get("purl", "")).startswith("pkg:pypi/") and str(c.get("name", "")).lower() in wanted}


@dataclass(frozen=True)
class Backend:
    """The protobuf backend an image's Python uses: cpp, upb or python ("" where it could not say)."""

    name: str
    problem: str = ""


def protobuf_backend(client: DockerClient, image: str) -> Backend:
    """Asked of the image's Python in a container without a network; a failure is a Backend with a problem."""
    try:
        return Backend(engine.run_python(client, image, PROTOBUF_BACKEND, [], timeout=120).strip())
    except UserError as exc:
        return Backend("", str(exc))
    except docker.errors.DockerException:
        return Backend("", f"{engine.IMAGE_PYTHON} does not start in the image")


def pin_lines(versions: dict[str, str], backend: Backend | None) -> list[str]:
    """One line per pin the SBOM holds: its version, why it stays, and whether its mitigation holds
    in the image (BACKEND None: no image was asked)."""
    lines = []
    for pin in PINS:
        if pin.package not in versions:
            continue
        if backend is None:
            verified = "not checked: no image to ask"
        elif backend.problem:
            verified = f"not checked: {backend.problem}"
        elif backend.name in ("cpp", "upb"):
            verified = f"checked in the image: {backend.name}"
        else:
            verified = f"NOT in effect: the image uses the {backend.name} backend"
        lines.append(f"pinned: {pin.package} {versions[pin.package]} ({pin.why}); mitigation: {pin.mitigation} "
                     f"({verified})")
    return lines
