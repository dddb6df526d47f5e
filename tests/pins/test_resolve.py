"""requirements.txt resolves to binary wheels on both bases' Python, for both variants: CPython 3.8
(the default base, nvidia/cuda:11.2.2-cudnn8-runtime-ubuntu20.04) and CPython 3.9 (the Debian 11
stand-in), both x86_64 with glibc 2.31; gpu installs requirements.txt as it is, cpu what the
Dockerfile's own sed expression makes of it.

Why: the default base cannot be pulled where the image is built for the tests, so its Python 3.8
path is never built there. A pin without a cp38 wheel, or a dependency that only 3.8 pulls in and
nobody pinned, would first break the nightly build on a GPU host. Here pip itself resolves each
lock for each target without installing anything (`pip install --dry-run --report`, only wheels,
the target's --python-version/--abi/--platform), with dependencies, so that pip proves the pins
consistent and complete; the test then holds pip's report against the lock: the same names and
versions, nothing more, and every file a wheel whose tags the target's pip accepts.

It needs PyPI (reached with the host's proxy and CA settings) and fails, never skips, without it.
It makes up for two things pip does not do for a foreign target:
- pip evaluates environment markers (`; python_version < "3.9"` here and in the packages'
  dependencies) for the Python it runs on, whatever --python-version says (pypa/pip#13296):
  LAUNCHER runs the host's pip with the target Python's marker environment, and the report's
  "environment" shows that it took.
- pip (23.2 to 26.3 at least) does not widen --platform manylinux_2_31_x86_64 to the older
  manylinux tags that a glibc 2.31 system accepts: PLATFORMS names them all.
"""

import ast
import importlib.metadata
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
from packaging.requirements import InvalidRequirement, Requirement
from packaging.tags import Tag, compatible_tags, cpython_tags
from packaging.utils import canonicalize_name, parse_wheel_filename
from packaging.version import Version

from tf29env.core.paths import REPO

REQUIREMENTS = REPO / "requirements.txt"
DOCKERFILE = REPO / "Dockerfile"
INDEX_URL = "https://pypi.org/simple"
# --dry-run and --report came with pip 22.2; the report's format is stable ("version": "1") since 23.0.
MIN_PIP = Version("23.0")
# glibc 2.31 on both bases (Ubuntu 20.04, Debian 11): every manylinux tag it accepts (PEP 600), down
# to 2_5, and the legacy aliases of 2_17, 2_12 and 2_5.
GLIBC_MINOR = 31
PLATFORMS = (*(f"manylinux_2_{minor}_x86_64" for minor in range(GLIBC_MINOR, 4, -1)),
             "manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64")
# The host's pip settings that only say how to reach the index; all others (its index, extra indexes,
# find-links, constraints, ...) would change what is resolved, and are left out.
TRANSPORT_SETTINGS = frozenset({"cert", "client-cert", "proxy", "timeout", "default-timeout", "retries",
                                "trusted-host", "cache-dir", "no-cache-dir", "use-feature",
                                "disable-pip-version-check"})
# A dry run still downloads every resolved wheel, about 600 MB per lock, with pip < 25.3 (pypa/pip#13482)
# and with any pip where the index serves no PEP 658 metadata.
PIP_TIMEOUT_S = 900
# The host's pip, with the marker environment given as its first argument (a JSON object) in place
# of its own Python's: pip evaluates every marker through its vendored packaging's
# default_environment(), replaced here before pip is imported.
LAUNCHER = """\
import json, sys
from pip._vendor.packaging import markers
target = json.loads(sys.argv.pop(1))
host = markers.default_environment
markers.default_environment = lambda: {**host(), **target}
from pip._internal.cli.main import main
sys.exit(main())
"""


@dataclass(frozen=True)
class Target:
    """A base's Python, as its pip sees it."""

    python: str  # "3.8"
    # The distro's python3: for markers on python_full_version and for Requires-Python, which may exclude
    # patch releases (cryptography 46: !=3.9.0,!=3.9.1), so --python-version gets it whole.
    full_version: str
    base: str

    def __str__(self) -> str:
        return f"CPython {self.full_version} ({self.base})"

    @property
    def abi(self) -> str:
        return "cp" + self.python.replace(".", "")

    def markers(self) -> dict[str, str]:
        """PEP 508's marker environment of this Python on x86_64 Linux (the kernel's fields stay the host's)."""
        return {"implementation_name": "cpython", "implementation_version": self.full_version, "os_name": "posix",
                "platform_machine": "x86_64", "platform_python_implementation": "CPython",
                "platform_system": "Linux", "python_full_version": self.full_version,
                "python_version": self.python, "sys_platform": "linux"}

    def accepted_tags(self) -> frozenset[Tag]:
        """The wheel tags this Python's pip installs on a glibc 2.31 x86_64 system."""
        version = tuple(int(part) for part in self.python.split("."))
        return frozenset((*cpython_tags(version, [self.abi], PLATFORMS),
                          *compatible_tags(version, self.abi, PLATFORMS)))


TARGETS = (Target("3.8", "3.8.10", "nvidia/cuda:11.2.2-cudnn8-runtime-ubuntu20.04"),
           Target("3.9", "3.9.2", "the Debian 11 stand-in"))
VARIANTS = ("gpu", "cpu")


def cpu_rewrite() -> tuple[str, str]:
    """(pattern, replacement) of the Dockerfile's `cpu) sed -E 's/PATTERN/REPLACEMENT/'`, which makes
    the cpu variant's requirements.lock from requirements.txt."""
    found = re.search(r"\bcpu\)\s*sed -E 's/([^/']+)/([^/'\\&]*)/'", DOCKERFILE.read_text())
    assert found, "the Dockerfile's cpu case is no longer a plain sed -E 's/PATTERN/REPLACEMENT/': update lock_text()"
    return found[1], found[2]


def lock_text(variant: str) -> str:
    """A variant's requirements.lock, made as the Dockerfile makes it: gpu copies requirements.txt, cpu
    rewrites it line by line with the Dockerfile's sed expression (ERE and Python agree on it; no g flag:
    the first match per line)."""
    text = REQUIREMENTS.read_text()
    if variant == "gpu":
        assert re.search(r"\bgpu\)\s*cp \S*requirements\.txt ", DOCKERFILE.read_text()), \
            "the Dockerfile's gpu case no longer copies requirements.txt: update lock_text()"
        return text
    pattern, replacement = cpu_rewrite()
    return "".join(re.sub(pattern, replacement, line, count=1) for line in text.splitlines(keepends=True))


def pins(lock: str, target: Target) -> dict[str, str]:
    """{normalized name: version} of the lock's lines whose markers hold on target; each must be NAME==VERSION."""
    result: dict[str, str] = {}
    for raw in lock.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        requirement = Requirement(line)
        specifiers = list(requirement.specifier)
        assert len(specifiers) == 1 and specifiers[0].operator == "==" and "*" not in specifiers[0].version, \
            f"{line!r} is not an exact pin NAME==VERSION"
        name = canonicalize_name(requirement.name)
        assert name not in result, f"{requirement.name} is pinned twice"
        if requirement.marker is None or requirement.marker.evaluate(target.markers()):
            result[name] = specifiers[0].version
    return result


def setting_name(variable: str) -> str:
    """pip's setting for one of its environment variables: PIP_DEFAULT_TIMEOUT -> default-timeout."""
    return variable.removeprefix("PIP_").lower().replace("_", "-")


def host_transport_config() -> dict[str, str]:
    """The transport settings of the host's pip configuration files ([global], then [install], which wins)."""
    listing = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                             timeout=60, check=True).stdout
    found: dict[str, str] = {}
    for section in ("global", "install"):
        for key, value in re.findall(rf"^{section}\.([\w-]+)=(.*)$", listing, re.MULTILINE):
            if key in TRANSPORT_SETTINGS:
                found[key] = str(ast.literal_eval(value))
    return found


def pip_env() -> dict[str, str]:
    """The environment pip runs in: the host's, with the host's way to the index (proxy, CA, timeouts,
    cache) but nothing that changes what is resolved, from variables or configuration files."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith("PIP_") or setting_name(key) in TRANSPORT_SETTINGS}
    for key, value in host_transport_config().items():
        env.setdefault("PIP_" + key.upper().replace("-", "_"), value)
    env["PIP_CONFIG_FILE"] = os.devnull
    return env


def resolve(lock_file: Path, target: Target, workdir: Path) -> dict[str, Any]:
    """pip's installation report for lock_file on target, resolved with dependencies, from wheels only."""
    pip_version = Version(importlib.metadata.version("pip"))
    assert pip_version >= MIN_PIP, f"pip {pip_version} cannot report a dry run; the tests' venv needs pip >= {MIN_PIP}"
    report = workdir / "report.json"
    # --target: older pip (23.2) takes --python-version/--abi/--platform only with it; a dry run writes nothing there.
    command = [sys.executable, "-c", LAUNCHER, json.dumps(target.markers()), "install", "--dry-run",
               "--ignore-installed", "--target", str(workdir / "target"), "--only-binary=:all:",
               "--index-url", INDEX_URL, "--python-version", target.full_version, "--implementation", "cp",
               "--abi", target.abi, *(f"--platform={platform}" for platform in PLATFORMS),
               "--report", str(report), "--quiet", "-r", str(lock_file)]
    proc = subprocess.run(command, env=pip_env(), capture_output=True, text=True, timeout=PIP_TIMEOUT_S,
                          check=False)
    assert proc.returncode == 0, (f"pip cannot resolve the pins for {target} from {INDEX_URL} "
                                  f"(exit {proc.returncode}):\n{proc.stdout[-2000:]}{proc.stderr[-4000:]}")
    loaded: dict[str, Any] = json.loads(report.read_text())
    return loaded


def environment_problems(report: dict[str, Any], target: Target) -> list[str]:
    """What in the report says that pip did not resolve for target's markers, or wrote another format."""
    problems = [f"pip's report has format {report.get('version')!r}, not '1'"] if report.get("version") != "1" else []
    used = report.get("environment", {})
    problems += [f"pip evaluated markers with {key}={used.get(key)!r}, not {value!r}: LAUNCHER did not take"
                 for key, value in target.markers().items() if used.get(key) != value]
    return problems


def dependencies(item: dict[str, Any], target: Target) -> set[str]:
    """The normalized names of one resolved package's Requires-Dist on target (no extras requested)."""
    found: set[str] = set()
    for line in item["metadata"].get("requires_dist", []):
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        if requirement.marker is None or requirement.marker.evaluate({**target.markers(), "extra": ""}):
            found.add(canonicalize_name(requirement.name))
    return found


def required_by(report: dict[str, Any], name: str, target: Target) -> list[str]:
    """The resolved packages that need name on target."""
    return sorted(item["metadata"]["name"] for item in report["install"] if name in dependencies(item, target))


def pin_problems(report: dict[str, Any], pinned: dict[str, str], target: Target) -> list[str]:
    """Where pip's resolved set and the pins differ: unpinned dependencies, pins not installed, other versions."""
    resolved: dict[str, str] = {canonicalize_name(item["metadata"]["name"]): item["metadata"]["version"]
                                for item in report["install"]}
    problems = [f"{name} {version}: pip pulls it in (needed by {', '.join(required_by(report, name, target)) or '?'})"
                f" but the lock does not pin it for {target}"
                for name, version in sorted(resolved.items()) if name not in pinned]
    problems += [f"{name}=={version}: pinned, but pip would not install it for {target}"
                 for name, version in sorted(pinned.items()) if name not in resolved]
    problems += [f"{name}: pinned {version}, pip resolved {resolved[name]}"
                 for name, version in sorted(pinned.items()) if name in resolved and resolved[name] != version]
    return problems


def wheel_problem(item: dict[str, Any], target: Target) -> str | None:
    """Why the file pip chose for one package would not install on target, or None."""
    pin = f"{item['metadata']['name']}=={item['metadata']['version']}"
    url = item["download_info"]["url"]
    if urlsplit(url).scheme != "https":
        return f"{pin}: {url} is not from the index {INDEX_URL}"
    filename = unquote(urlsplit(url).path.rsplit("/", 1)[-1])
    if not filename.endswith(".whl"):
        return f"{pin}: {filename} is not a wheel (pip would build it from source)"
    tags = parse_wheel_filename(filename)[3]
    if not tags & target.accepted_tags():
        return (f"{pin}: {filename} has tags {sorted(map(str, tags))}, none of which {target} accepts "
                "on manylinux x86_64 with glibc 2.31")
    return None


def wheel_problems(report: dict[str, Any], target: Target) -> list[str]:
    """Every resolved file that is not a wheel for target."""
    return [problem for item in report["install"] if (problem := wheel_problem(item, target))]


def test_cpu_lock_swaps_tensorflow_for_tensorflow_cpu_only() -> None:
    gpu, cpu = (pins(lock_text(variant), TARGETS[0]) for variant in VARIANTS)
    assert cpu.pop("tensorflow-cpu") == gpu.pop("tensorflow"), "tensorflow-cpu must have tensorflow's version"
    assert cpu == gpu, "the cpu lock must pin everything else as requirements.txt does"
    # The Dockerfile installs the pinned pip (grep '^pip==') before the rest.
    assert re.search(r"^pip==\S+$", lock_text("gpu"), re.MULTILINE), "requirements.txt must pin pip (pip==VERSION)"


@pytest.mark.network
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("target", TARGETS, ids=lambda target: target.abi)
def test_pins_resolve_to_wheels_for_the_bases_python(target: Target, variant: str, tmp_path: Path) -> None:
    lock = lock_text(variant)
    lock_file = tmp_path / "requirements.lock"
    lock_file.write_text(lock)
    report = resolve(lock_file, target, tmp_path)
    problems = [*environment_problems(report, target), *pin_problems(report, pins(lock, target), target),
                *wheel_problems(report, target)]
    assert not problems, f"the {variant} lock on {target}:\n" + "\n".join(problems)
