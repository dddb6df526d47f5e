"""The vulnerability allowlist and `build.py audit`, offline: the committed allowlist parses and every
entry has an advisory id and a reason; a malformed one, or an SBOM that is not CycloneDX, stops the
real command line with one line and exit 2 / 4; no reachable database is one line, exit 8; the
verdict on a pip-audit report (as pip-audit prints it) fails only on what the allowlist lacks."""

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tf29env.core.errors import EXIT_BUILD, EXIT_INPUT, EXIT_NO_DATABASE, UserError
from tf29env.core.paths import REPO
from tf29env.supplychain import sbom, vulns

DEAD_PROXY = "http://127.0.0.1:9"  # nothing listens there: no database can be reached through it
GOOD_ENTRY = ('[[advisory]]\nid = "CVE-2023-25668"\npackages = ["tensorflow"]\n'
              'reason = "Fixed only in 2.11.1 and later; reached only by a crafted raw op call."\n')


def build_py(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(REPO / "build.py"), *args], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, **(env or {})}, timeout=300, check=False)


def test_the_committed_allowlist_parses_and_every_entry_has_a_reason() -> None:
    entries = vulns.load_allowlist(vulns.ALLOWLIST)
    assert entries
    for entry in entries:
        assert vulns.ADVISORY_RE.fullmatch(entry.id), entry
        assert entry.packages and len(entry.reason) >= vulns.MIN_REASON, entry
    assert len({entry.id for entry in entries}) == len(entries)


@pytest.fixture
def tiny_sbom(tmp_path: Path) -> Path:
    """A valid SBOM of two Python packages (one that every database knows)."""
    data = {"os": {"id": "debian", "version_id": "11"}, "dpkg": [], "libraries": [], "python": [
        {"name": name, "version": version, "license_expression": "", "license": "MIT",
         "license_text_in_metadata": False, "classifiers": []}
        for name, version in (("tensorflow", "2.9.3"), ("numpy", "1.23.5"))]}
    path = tmp_path / "sbom.cdx.json"
    path.write_text(sbom.to_json(sbom.make_bom(data, name="t", version="v", refs=[], image_labels={})))
    return path


@pytest.mark.parametrize(("content", "problem"), [
    ("[[advisory]\n", "not valid TOML"),
    (GOOD_ENTRY.replace('reason = "Fixed only in 2.11.1 and later; reached only by a crafted raw op call."\n', ""),
     "entry 1 (CVE-2023-25668): 'reason' must say why"),
    (GOOD_ENTRY.replace("Fixed only in 2.11.1 and later; reached only by a crafted raw op call.", "n/a"),
     "entry 1 (CVE-2023-25668): 'reason' must say why"),
    (GOOD_ENTRY.replace("CVE-2023-25668", "TF-1"), "entry 1 (TF-1): 'id' must be an advisory id"),
    (GOOD_ENTRY.replace('["tensorflow"]', "[]"), "entry 1 (CVE-2023-25668): 'packages' must be"),
    (GOOD_ENTRY + 'expires = "2027-01-01"\n', "entry 1 (CVE-2023-25668): unknown key 'expires'"),
    (GOOD_ENTRY + GOOD_ENTRY, "CVE-2023-25668 is listed more than once"),
    ("[advisory]\nid = 1\n", "'advisory' must be a list of tables"),
    ('ignore = ["CVE-2023-25668"]\n', "unknown key 'ignore'"),
])
def test_a_malformed_allowlist_is_one_line_exit_2(content: str, problem: str, tmp_path: Path,
                                                  tiny_sbom: Path) -> None:
    allowlist = tmp_path / "allow.toml"
    allowlist.write_text(content)
    run = build_py("audit", "--sbom", str(tiny_sbom), "--allowlist", str(allowlist), env={"HTTPS_PROXY": DEAD_PROXY})
    assert run.returncode == EXIT_INPUT, run.stderr
    assert run.stderr.startswith(f"error: allowlist {allowlist}: ") and problem in run.stderr, run.stderr
    assert run.stderr.count("\n") == 1 and run.stdout == ""


def test_a_missing_allowlist_is_one_line_exit_2(tmp_path: Path, tiny_sbom: Path) -> None:
    run = build_py("audit", "--sbom", str(tiny_sbom), "--allowlist", str(tmp_path / "none.toml"))
    assert run.returncode == EXIT_INPUT and run.stderr.count("\n") == 1 and "cannot read it" in run.stderr


def test_an_sbom_that_fails_validation_is_one_line_exit_4(tmp_path: Path, tiny_sbom: Path) -> None:
    document = json.loads(tiny_sbom.read_text())
    del document["components"][0]["name"]
    broken = tmp_path / "broken.cdx.json"
    broken.write_text(json.dumps(document))
    run = build_py("audit", "--sbom", str(broken))
    assert run.returncode == EXIT_BUILD, run.stderr
    assert run.stderr.startswith(f"error: {broken} fails CycloneDX 1.6 schema validation")
    assert run.stderr.count("\n") == 1


def test_no_build_and_no_sbom_is_one_line_exit_2(tmp_path: Path) -> None:
    run = build_py("audit", "--output-dir", str(tmp_path))
    assert run.returncode == EXIT_INPUT and run.stderr.count("\n") == 1 and "no build recorded" in run.stderr


@pytest.mark.parametrize("service", vulns.SERVICES)
def test_no_reachable_database_is_one_line_exit_8(service: str, tiny_sbom: Path) -> None:
    proxies = {"HTTPS_PROXY": DEAD_PROXY, "https_proxy": DEAD_PROXY, "NO_PROXY": "", "no_proxy": ""}
    run = build_py("audit", "--sbom", str(tiny_sbom), "--service", service, "--timeout", "120", env=proxies)
    assert run.returncode == EXIT_NO_DATABASE, run.stderr
    assert run.stderr.startswith("error: no vulnerability database answers") and run.stderr.count("\n") == 1
    assert "Traceback" not in run.stderr


def report(*deps: dict[str, Any]) -> dict[str, Any]:
    """A pip-audit JSON report, as `pip-audit --format json` prints it."""
    return {"dependencies": list(deps), "fixes": []}


TF_VULN = {"id": "PYSEC-2023-0001", "aliases": ["CVE-2023-25668", "GHSA-aaaa-bbbb-cccc"], "fix_versions": ["2.11.1"],
           "description": "..."}


def test_an_allowlisted_advisory_passes_by_alias_and_only_for_its_packages() -> None:
    allowlist = vulns.load_allowlist(vulns.ALLOWLIST)
    found, skipped = vulns.findings(report(
        {"name": "tensorflow", "version": "2.9.3", "vulns": [TF_VULN]},
        {"name": "Some_Lib", "version": "1.0", "vulns": [{**TF_VULN, "id": "PYSEC-2023-0002", "fix_versions": []}]},
        {"name": "pkg-resources", "skip_reason": "Dependency not found on PyPI and could not be audited"}))
    verdict = vulns.judge(found, skipped, 2, allowlist)
    assert [(f.package, f.id) for f, _ in verdict.allowed] == [("tensorflow", "PYSEC-2023-0001")]
    # The same CVE on a package the entry does not name is new.
    assert [(f.package, f.id) for f in verdict.new] == [("some-lib", "PYSEC-2023-0002")]
    assert verdict.skipped == ["pkg-resources"]
    assert {entry.id for entry in verdict.unused} == {entry.id for entry in allowlist} - {"CVE-2023-25668"}
    shown = vulns.to_dict(verdict)
    assert shown["new"][0]["id"] == "PYSEC-2023-0002" and shown["allowed"][0]["reason"]


def test_a_database_that_knows_no_package_audited_nothing() -> None:
    """PyPI behind a proxy that does not serve its JSON API: pip-audit 'skips' every package and
    reports no vulnerability; that is no audit, not a clean one."""
    with pytest.raises(UserError) as caught:
        vulns.check_coverage(["a==1", "b==2"], ["a", "b"], "pypi")
    assert caught.value.exit_code == EXIT_NO_DATABASE
    vulns.check_coverage(["a==1", "b==2"], ["a"], "pypi")  # one audited is an audit
