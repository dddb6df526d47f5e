"""The base's support status, offline: the dated table, os-release parsing, the one line audit
prints for each phase (today given, not the clock's), the pins' lines, and --fail-on-eol without an
image to read the base from (one line, exit 2, no engine)."""

import datetime
from pathlib import Path

import pytest

from tf29env.cli import main
from tf29env.core.errors import EXIT_INPUT
from tf29env.core.paths import REPO
from tf29env.supplychain import sbom, support
from tf29env.supplychain.support import Backend, Status

DAY = datetime.date.fromisoformat
BULLSEYE = {"PRETTY_NAME": "Debian GNU/Linux 11 (bullseye)", "ID": "debian", "VERSION_ID": "11"}
FOCAL = {"PRETTY_NAME": "Ubuntu 20.04.6 LTS", "ID": "ubuntu", "VERSION_ID": "20.04"}


def test_the_table_holds_the_bases_with_their_dates() -> None:
    table = {key: (release.regular_end, release.final_end) for key, release in support.TABLE.items()}
    assert table == {
        ("debian", "11"): (DAY("2024-08-14"), DAY("2026-08-31")),
        ("debian", "12"): (DAY("2026-06-10"), DAY("2028-06-30")),
        ("ubuntu", "20.04"): (DAY("2025-05-31"), DAY("2025-05-31")),
        ("ubuntu", "22.04"): (DAY("2027-06-30"), DAY("2027-06-30")),
    }
    for release in support.RELEASES:
        assert release.regular_end <= release.final_end, release


def test_every_date_says_its_source() -> None:
    """Each entry of the table has a comment above it naming where its dates come from."""
    lines = (REPO / "tf29env" / "supplychain" / "support.py").read_text().splitlines()
    entries = [number for number, line in enumerate(lines) if line.strip().startswith("Release(\"")]
    assert len(entries) == len(support.RELEASES)
    for number in entries:
        assert lines[number - 1].strip().startswith("#") and "https://" in lines[number - 2] + lines[number - 1]


def test_os_release_is_read_as_a_shell_would() -> None:
    text = ('PRETTY_NAME="Debian GNU/Linux 11 (bullseye)"\nNAME="Debian GNU/Linux"\nVERSION_ID="11"\n'
            "ID=debian\n# a comment\n\nHOME_URL='https://www.debian.org/'\nEMPTY=\nbroken line\n")
    assert support.parse_os_release(text) == {"PRETTY_NAME": "Debian GNU/Linux 11 (bullseye)",
                                              "NAME": "Debian GNU/Linux", "VERSION_ID": "11", "ID": "debian",
                                              "HOME_URL": "https://www.debian.org/", "EMPTY": ""}


@pytest.mark.parametrize(("os_release", "today", "line", "ended"), [
    (BULLSEYE, "2026-12-07", "base: Debian GNU/Linux 11 (bullseye): LTS ended 2026-08-31 (98 days ago); "
                             "no security updates from Debian: see docs/upgrade.md", True),
    (BULLSEYE, "2026-09-01", "base: Debian GNU/Linux 11 (bullseye): LTS ended 2026-08-31 (1 day ago); "
                             "no security updates from Debian: see docs/upgrade.md", True),
    (BULLSEYE, "2026-08-31", "base: Debian GNU/Linux 11 (bullseye): regular support ended 2024-08-14; "
                             "LTS until 2026-08-31 (0 days left)", False),
    (BULLSEYE, "2024-08-01", "base: Debian GNU/Linux 11 (bullseye): regular support until 2024-08-14, "
                             "then LTS until 2026-08-31 (760 days left)", False),
    (FOCAL, "2026-12-07", "base: Ubuntu 20.04.6 LTS: standard support ended 2025-05-31 (555 days ago); "
                          "security updates only through Ubuntu Pro (ESM, until 2030-04): see docs/upgrade.md", True),
    (FOCAL, "2025-05-30", "base: Ubuntu 20.04.6 LTS: standard support until 2025-05-31 (1 day left)", False),
    ({"ID": "debian", "VERSION_ID": "12", "NAME": "Debian GNU/Linux"}, "2026-12-07",
     "base: Debian GNU/Linux 12: regular support ended 2026-06-10; LTS until 2028-06-30 (571 days left)", False),
    ({"ID": "ubuntu", "VERSION_ID": "22.04", "PRETTY_NAME": "Ubuntu 22.04.5 LTS"}, "2026-12-07",
     "base: Ubuntu 22.04.5 LTS: standard support until 2027-06-30 (205 days left)", False),
    ({"ID": "fedora", "VERSION_ID": "40", "PRETTY_NAME": "Fedora Linux 40"}, "2026-12-07",
     "base: Fedora Linux 40: not in tf29-env's support table (tf29env/supplychain/support.py): "
     "support status unknown", None),
])
def test_the_statement(os_release: dict[str, str], today: str, line: str, ended: bool | None) -> None:
    status = support.status_of(os_release, DAY(today))
    assert status.line() == line
    assert status.ended is ended
    assert status.to_dict()["statement"] == line and status.to_dict()["ended"] is ended


def test_today_is_the_clocks_by_default() -> None:
    assert support.today_utc() == datetime.datetime.now(datetime.UTC).date()
    assert isinstance(Status("x", "debian", "11", support.today_utc()).ended, bool)


SBOM_WITH_PROTOBUF = {"components": [
    {"name": "protobuf", "version": "3.19.6", "purl": "pkg:pypi/protobuf@3.19.6"},
    {"name": "protobuf", "version": "3.12.4-1", "purl": "pkg:deb/debian/protobuf@3.12.4-1"},
    {"name": "numpy", "version": "1.23.5", "purl": "pkg:pypi/numpy@1.23.5"}]}


@pytest.mark.parametrize(("backend", "verified"), [
    (Backend("cpp"), "(checked in the image: cpp)"),
    (Backend("upb"), "(checked in the image: upb)"),
    (Backend("python"), "(NOT in effect: the image uses the python backend)"),
    (Backend("", "the probe exited 1: no python"), "(not checked: the probe exited 1: no python)"),
    (None, "(not checked: no image to ask)"),
])
def test_the_pins_line(backend: Backend | None, verified: str) -> None:
    versions = support.pinned_versions(SBOM_WITH_PROTOBUF)
    assert versions == {"protobuf": "3.19.6"}
    assert support.pin_lines(versions, backend) == [
        "pinned: protobuf 3.19.6 (TensorFlow 2.9 requires protobuf<3.20); mitigation: protobuf's C++ backend "
        f"(cpp) in use {verified}"]
    assert support.pin_lines({}, backend) == []


def test_fail_on_eol_without_an_image_to_read_is_one_line_exit_2(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """An SBOM of an image that is nowhere: the status cannot be stated, and a CI policy must not
    read that as "supported"."""
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-such.sock")
    data = {"os": {"id": "debian", "version_id": "11"}, "dpkg": [], "libraries": [], "python": [
        {"name": "numpy", "version": "1.23.5", "license_expression": "", "license": "BSD",
         "license_text_in_metadata": False, "classifiers": []}]}
    path = tmp_path / "sbom.cdx.json"
    path.write_text(sbom.to_json(sbom.make_bom(data, name="tf29-env", version="gone", refs=[], image_labels={})))
    assert main(["audit", "--sbom", str(path), "--fail-on-eol"]) == EXIT_INPUT
    out, err = capsys.readouterr()
    assert out.startswith("base: support status unknown (no Docker engine answers"), out
    assert err.count("\n") == 1
    assert err.startswith("error: --fail-on-eol: cannot tell whether the base is past its end of support"), err
