"""The CI workflow template: it parses, builds both variants, tests, uploads and pushes on main only."""

import re
from typing import Any

import yaml

from tf29env.cli import make_parser
from tf29env.paths import REPO

WORKFLOW = REPO / ".github" / "workflows" / "image.yml"


def steps() -> list[dict[str, Any]]:
    data = yaml.safe_load(WORKFLOW.read_text())
    job = data["jobs"]["image"]
    assert job["strategy"]["matrix"]["variant"] == ["gpu", "cpu"]
    return list(job["steps"])


def named(name: str) -> dict[str, Any]:
    return next(step for step in steps() if step.get("name") == name)


def test_build_test_upload_push_in_order() -> None:
    names = [step.get("name") for step in steps()]
    assert names.index("Build") < names.index("Test") < names.index("Upload manifests") < names.index("Push")
    assert named("Upload manifests")["with"]["path"] == "build-output/"
    assert named("Upload manifests")["if"] == "always()"


def test_push_only_on_main() -> None:
    condition = named("Push")["if"]
    assert "github.ref == 'refs/heads/main'" in condition and "pull_request" in condition


def test_its_build_py_commands_parse() -> None:
    """Every build.py command line in the template is accepted by the real parser."""
    parser = make_parser()
    values = {"matrix.variant": "gpu", "vars.REGISTRY": "registry.example.com:5000", "steps.cache.outputs.args": ""}
    for name in ("Build", "Test", "Push"):
        line = " ".join(str(named(name)["run"]).split())
        line = re.sub(r"\$\{\{ ([^}]+) \}\}", lambda m: values.get(m[1], "https://example.org/x"), line)
        line = line.replace("$REPOSITORY", "team/tf29-env").replace('"', "")
        args = parser.parse_args(line.split("build.py ", 1)[1].split())
        assert args.command == name.lower()
        assert args.variant == "gpu"
