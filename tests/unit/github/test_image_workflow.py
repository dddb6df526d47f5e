"""The CI workflow template: it builds both variants, tests, uploads and pushes on main only (its
build.py lines are parsed by tests/unit/github/test_workflows.py, with the shell's own expansion)."""

from typing import Any

import yaml

from tf29env.core.paths import REPO

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
