"""`build.py audit`: the Python packages of an image's SBOM checked against a vulnerability database
(pip-audit: PyPI's advisory data or OSV), less the advisories the allowlist accepts, each for a
reason (security/vulnerability-allowlist.toml).

Known vulnerabilities not on the allowlist fail the audit (exit 7); an allowlist entry that no
longer matches anything is reported so it can go. When no database answers, which is the normal
state of an offline build machine, the audit says so in one line (exit 8): pip-audit on its own
either prints a traceback (OSV) or skips every package as "not found" and reports no
vulnerabilities (PyPI behind a proxy that does not serve its JSON API), and the second is the
dangerous one.
"""

import json
import re
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from tf29env.core.errors import EXIT_INPUT, EXIT_NO_DATABASE, UserError
from tf29env.core.paths import REPO

ALLOWLIST = REPO / "security" / "vulnerability-allowlist.toml"
SERVICES = ("pypi", "osv")
# Advisory ids pip-audit reports (and their aliases): PyPA's PYSEC, GitHub's GHSA, CVE, OSV's own.
ADVISORY_RE = re.compile(r"PYSEC-\d{4}-\d+|GHSA(-[23456789cfghjmpqrvwx]{4}){3}|CVE-\d{4}-\d{4,}|OSV-\d{4}-\d+")
ENTRY_KEYS = {"id", "packages", "reason"}
MIN_REASON = 20  # characters: a reason, not "n/a"
# What a request that never reached the database leaves in pip-audit's error output.
UNREACHABLE_RE = re.compile(r"ConnectionError|NameResolution|Max retries exceeded|timed out|ProxyError|SSLError|"
                            r"Connection refused|Network is unreachable")


@dataclass(frozen=True)
class Allowed:
    id: str
    packages: tuple[str, ...]  # PyPI names (normalized)
    reason: str


@dataclass(frozen=True)
class Finding:
    package: str
    version: str
    id: str
    aliases: tuple[str, ...]
    fix_versions: tuple[str, ...]

    def ids(self) -> set[str]:
        return {self.id, *self.aliases}


def load_allowlist(path: Path) -> list[Allowed]:
    """The allowlist's entries; one line naming the file, the entry and the problem (exit 2) when
    it is unreadable, not TOML, or an entry lacks an id, its packages or a reason."""
    try:
        data = tomllib.loads(path.read_text())
    except OSError as exc:
        raise UserError(f"allowlist {path}: cannot read it ({exc.strerror})", EXIT_INPUT) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UserError(f"allowlist {path}: not valid TOML ({exc})", EXIT_INPUT) from None
    extra = set(data) - {"advisory"}
    if extra:
        raise UserError(f"allowlist {path}: unknown key {sorted(extra)[0]!r} (only [[advisory]] tables)", EXIT_INPUT)
    entries = data.get("advisory", [])
    if not isinstance(entries, list):
        raise UserError(f"allowlist {path}: 'advisory' must be a list of tables ([[advisory]])", EXIT_INPUT)
    allowed: list[Allowed] = []
    for number, entry in enumerate(entries, 1):
        allowed.append(check_entry(path, number, entry))
    ids = [entry.id for entry in allowed]
    duplicates = sorted({advisory for advisory in ids if ids.count(advisory) > 1})
    if duplicates:
        raise UserError(f"allowlist {path}: {duplicates[0]} is listed more than once", EXIT_INPUT)
    return allowed


def check_entry(path: Path, number: int, entry: Any) -> Allowed:
    where = f"allowlist {path}: entry {number}"
    if not isinstance(entry, dict):
        raise UserError(f"{where} is not a table", EXIT_INPUT)
    advisory = entry.get("id")
    if isinstance(advisory, str):
        where += f" ({advisory})"
    unknown = set(entry) - ENTRY_KEYS
    if unknown:
        raise UserError(f"{where}: unknown key {sorted(unknown)[0]!r} (keys: id, packages, reason)", EXIT_INPUT)
    if not isinstance(advisory, str) or not ADVISORY_RE.fullmatch(advisory):
        raise UserError(f"{where}: 'id' must be an advisory id (PYSEC-…, GHSA-…, CVE-…, OSV-…), "
                        f"not {advisory!r}", EXIT_INPUT)
    packages = entry.get("packages")
    if not isinstance(packages, list) or not packages or not all(isinstance(p, str) and p for p in packages):
        raise UserError(f"{where}: 'packages' must be a non-empty list of PyPI names", EXIT_INPUT)
    reason = entry.get("reason")
    if not isinstance(reason, str) or len(reason.strip()) < MIN_REASON:
        raise UserError(f"{where}: 'reason' must say why it cannot be fixed (at least {MIN_REASON} characters)",
                        EXIT_INPUT)
    return Allowed(advisory, tuple(canonicalize_name(p) for p in packages), " ".join(reason.split()))


def python_requirements(document: dict[str, Any]) -> list[str]:
    """NAME==VERSION for every pkg:pypi component of a CycloneDX document."""
    found = set()
    for component in document.get("components", []):
        purl = str(component.get("purl", ""))
        if purl.startswith("pkg:pypi/") and component.get("version"):
            found.add(f"{component['name']}=={component['version']}")
    return sorted(found, key=str.lower)


def run_pip_audit(requirements: list[str], service: str, timeout: float) -> dict[str, Any]:
    """pip-audit's JSON report for requirements (pinned, no resolution: exactly what the image holds)."""
    with tempfile.TemporaryDirectory() as tmp:
        req = Path(tmp) / "requirements.txt"
        req.write_text("".join(f"{line}\n" for line in requirements))
        cmd = [sys.executable, "-m", "pip_audit", "-r", str(req), "--no-deps", "--disable-pip", "--format", "json",
               "--progress-spinner", "off", "--vulnerability-service", service, "--cache-dir", str(Path(tmp) / "cache")]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            raise UserError(f"no vulnerability database answered: pip-audit ({service}) took over {timeout:.0f}s",
                            EXIT_NO_DATABASE) from None
    if proc.stdout.strip().startswith("{"):
        report: dict[str, Any] = json.loads(proc.stdout)
        return report
    errors = proc.stderr.strip().splitlines() or ["no output"]
    if UNREACHABLE_RE.search(proc.stderr):
        host = re.search(r"host='([^']+)'", proc.stderr)
        raise UserError(f"no vulnerability database answers: pip-audit ({service}) cannot reach "
                        f"{host[1] if host else 'its service'} (offline? run the audit where it is reachable, "
                        "e.g. in CI)", EXIT_NO_DATABASE)
    raise UserError(f"pip-audit ({service}) failed (exit {proc.returncode}): {errors[-1][:300]}", EXIT_NO_DATABASE)


def findings(report: dict[str, Any]) -> tuple[list[Finding], list[str]]:
    """The vulnerabilities in a pip-audit report, and the packages it could not audit."""
    found, skipped = [], []
    for dep in report.get("dependencies", []):
        if "skip_reason" in dep:
            skipped.append(str(dep["name"]))
            continue
        for vuln in dep.get("vulns", []):
            found.append(Finding(canonicalize_name(dep["name"]), str(dep["version"]), str(vuln["id"]),
                                 tuple(vuln.get("aliases", [])), tuple(vuln.get("fix_versions", []))))
    return found, skipped


@dataclass(frozen=True)
class Verdict:
    new: list[Finding]  # not on the allowlist: these fail the audit
    allowed: list[tuple[Finding, Allowed]]
    unused: list[Allowed]  # entries that matched nothing (fixed, or never applied): remove them
    skipped: list[str]  # packages the database knows nothing of (not audited)
    audited: int


def judge(found: list[Finding], skipped: list[str], audited: int, allowlist: list[Allowed]) -> Verdict:
    new, allowed = [], []
    used: set[str] = set()
    for finding in found:
        match = next((entry for entry in allowlist
                      if entry.id in finding.ids() and finding.package in entry.packages), None)
        if match is None:
            new.append(finding)
        else:
            allowed.append((finding, match))
            used.add(match.id)
    return Verdict(new, allowed, [entry for entry in allowlist if entry.id not in used], skipped, audited)


def audit(document: dict[str, Any], allowlist: list[Allowed], service: str, timeout: float) -> Verdict:
    requirements = python_requirements(document)
    if not requirements:
        raise UserError("the SBOM lists no Python packages (pkg:pypi components): nothing to audit", EXIT_INPUT)
    found, skipped = findings(run_pip_audit(requirements, service, timeout))
    check_coverage(requirements, skipped, service)
    return judge(found, skipped, len(requirements) - len(skipped), allowlist)


def check_coverage(requirements: list[str], skipped: list[str], service: str) -> None:
    """One line (exit 8) when the database knew none of the packages: nothing was audited."""
    if len(skipped) >= len(requirements):
        raise UserError(f"no vulnerability database answers: {service} knew none of the {len(requirements)} "
                        "packages (a proxy or mirror without its advisory API?); nothing was audited",
                        EXIT_NO_DATABASE)


def to_dict(verdict: Verdict) -> dict[str, Any]:
    def item(finding: Finding) -> dict[str, Any]:
        return {"package": finding.package, "version": finding.version, "id": finding.id,
                "aliases": list(finding.aliases), "fix_versions": list(finding.fix_versions)}

    return {"audited": verdict.audited, "new": [item(f) for f in verdict.new],
            "allowed": [{**item(f), "reason": entry.reason} for f, entry in verdict.allowed],
            "unused_allowlist_entries": [entry.id for entry in verdict.unused], "not_audited": verdict.skipped}
