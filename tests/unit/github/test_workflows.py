"""Every workflow in .github/workflows/ (and the Dependabot config) passes zizmor with no finding at
--min-severity low and GitHub's JSON schemas, both offline (pinned in requirements-dev.txt); and the
image template keeps its hardening: pinned actions, no persisted token, least privilege, secrets in
one step, values reaching scripts through env: only, and build.py commands the real parser takes."""

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tf29env.cli import make_parser
from tf29env.core.paths import REPO

BIN = Path(sys.executable).parent
GITHUB = REPO / ".github"
WORKFLOWS = sorted((GITHUB / "workflows").glob("*.y*ml"))
DEPENDABOT = GITHUB / "dependabot.yml"
TEMPLATE = GITHUB / "workflows" / "image.yml"
# A proxy on a port where nothing listens: a tool that tried the network would fail, not pass.
OFFLINE_ENV = {**os.environ, "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9",
               "http_proxy": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9", "NO_PROXY": ""}
PIN_RE = re.compile(r"^\s*(?:- )?uses: ([\w.-]+/[\w./-]+)@([0-9a-f]{40})  # v\d+(\.\d+)*$")


def run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env=OFFLINE_ENV, timeout=120, check=False)


def test_there_are_workflows() -> None:
    assert TEMPLATE in WORKFLOWS


@pytest.mark.parametrize("path", [*WORKFLOWS, DEPENDABOT], ids=lambda p: p.name)
def test_zizmor_finds_nothing(path: Path) -> None:
    proc = run(str(BIN / "zizmor"), "--offline", "--min-severity", "low", "--no-progress", str(path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "No findings to report" in proc.stdout + proc.stderr


@pytest.mark.parametrize(("path", "schema"), [*[(w, "vendor.github-workflows") for w in WORKFLOWS],
                                              (DEPENDABOT, "vendor.dependabot")], ids=lambda v: getattr(v, "name", v))
def test_github_schema(path: Path, schema: str) -> None:
    proc = run(str(BIN / "check-jsonschema"), "--builtin-schema", schema, str(path))
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_schema_check_can_fail(tmp_path: Path) -> None:
    """The same offline check refuses a workflow GitHub would refuse (a job without runs-on)."""
    broken = tmp_path / "broken.yml"
    broken.write_text("on: push\njobs:\n  a:\n    steps:\n      - run: echo\n")
    proc = run(str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.github-workflows", str(broken))
    assert proc.returncode == 1, proc.stdout + proc.stderr


def test_zizmor_can_fail(tmp_path: Path) -> None:
    """The same offline run flags what the template avoids: a tag pin and an expression in a script."""
    bad = tmp_path / "bad.yml"
    bad.write_text("on: pull_request_target\npermissions: {}\njobs:\n  a:\n    runs-on: ubuntu-22.04\n"
                   "    steps:\n      - uses: actions/checkout@v4\n"
                   "      - run: echo ${{ github.event.pull_request.title }}\n")
    proc = run(str(BIN / "zizmor"), "--offline", "--min-severity", "low", "--no-progress", str(bad))
    assert proc.returncode != 0 and "unpinned-uses" in proc.stdout and "template-injection" in proc.stdout


def template() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(TEMPLATE.read_text())
    return data


def steps() -> list[dict[str, Any]]:
    return list(template()["jobs"]["image"]["steps"])


def named(name: str) -> dict[str, Any]:
    return next(step for step in steps() if step.get("name") == name)


def test_actions_pinned_by_commit_with_version() -> None:
    lines = [line for path in WORKFLOWS for line in path.read_text().splitlines() if "uses:" in line]
    assert lines
    assert [line for line in lines if not PIN_RE.match(line)] == []


def test_checkout_keeps_no_token() -> None:
    checkouts = [step for step in steps() if str(step.get("uses", "")).startswith("actions/checkout@")]
    assert checkouts and all(step["with"]["persist-credentials"] is False for step in checkouts)


def test_least_privilege() -> None:
    data = template()
    assert data["permissions"] == {}
    assert {name: job.get("permissions") for name, job in data["jobs"].items()} == {"image": {"contents": "read"}}


def test_no_expression_inside_a_script() -> None:
    scripts = [str(step["run"]) for path in WORKFLOWS for job in yaml.safe_load(path.read_text())["jobs"].values()
               for step in job["steps"] if "run" in step]
    assert scripts and [script for script in scripts if "${{" in script] == []


def test_secrets_only_in_the_login_step() -> None:
    data = template()
    users = [step.get("name") for step in steps() if "secrets." in yaml.safe_dump(step)]
    assert users == ["Log in to the registry"]
    outside_steps = {**data, "jobs": {name: {**job, "steps": []} for name, job in data["jobs"].items()}}
    assert "secrets." not in yaml.safe_dump(outside_steps)


def test_audit_runs_before_push_and_reports_are_uploaded() -> None:
    names = [step.get("name") for step in steps()]
    assert names.index("Build") < names.index("Test") < names.index("Audit") < names.index("Push")
    assert named("Upload manifests")["if"] == "always()"
    assert named("Upload manifests")["with"]["path"] == "build-output/"


def shell_args(step: dict[str, Any], variant: str, extra_env: dict[str, str]) -> list[str]:
    """The arguments the step's script passes to `python`, as bash expands them with the job's env."""
    job_env = {"VARIANT": variant, "REGISTRY": "registry.example.com:5000", "REPOSITORY": "team/tf29-env",
               "SOURCE_URL": "https://github.com/team/tf29-env"}
    script = "python3() { printf '%s\\0' \"$@\"; }\n" + str(step["run"])
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True,
                          env={"PATH": os.environ["PATH"], **job_env, **extra_env})
    return proc.stdout.split("\0")[:-1]


@pytest.mark.parametrize("variant", ["gpu", "cpu"])
@pytest.mark.parametrize(("name", "extra_env"), [("Build", {"CACHE_FROM": ""}),
                                                 ("Build", {"CACHE_FROM": "r.example.com/t:latest-gpu"}),
                                                 ("Test", {}), ("Audit", {}), ("Push", {})])
def test_build_py_commands_parse(name: str, extra_env: dict[str, str], variant: str) -> None:
    """Every build.py command in the template, expanded by bash, is accepted by the real parser."""
    assert template()["jobs"]["image"]["env"]["VARIANT"] == "${{ matrix.variant }}"
    args = shell_args(named(name), variant, extra_env)
    assert args[0] == "build.py"
    parsed = make_parser().parse_args(args[1:])
    assert parsed.command == name.lower()
    assert parsed.variant == variant
    if name == "Build":
        assert parsed.cache_from == ([extra_env["CACHE_FROM"]] if extra_env["CACHE_FROM"] else [])
        assert parsed.repository == "team/tf29-env"
