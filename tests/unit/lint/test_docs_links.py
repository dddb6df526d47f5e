"""Every relative link in the README and docs/ leads somewhere: the file exists and, with a #part,
the file has that heading (as GitHub makes anchors of headings). A moved section breaks a test,
not a reader's click."""

import re
from pathlib import Path

import pytest

from testkit.docs import FENCE, anchor, anchors
from tf29env.core.paths import REPO

DOCS = sorted([REPO / "README.md", *(REPO / "docs").glob("*.md")])
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
def links(path: Path) -> list[tuple[int, str]]:
    text = path.read_text()
    fenced = [(match.start(), match.end()) for match in FENCE.finditer(text)]
    return [(text.count("\n", 0, match.start()) + 1, match.group(1)) for match in LINK.finditer(text)
            if not any(start <= match.start() < end for start, end in fenced)]


def test_anchors_as_github_makes_them() -> None:
    assert anchor("Without build.py: plain `docker build`") == "without-buildpy-plain-docker-build"
    assert anchor("SBOM, licenses and vulnerabilities") == "sbom-licenses-and-vulnerabilities"
    assert anchor("Start a run, go home, come back") == "start-a-run-go-home-come-back"


@pytest.mark.parametrize("path", DOCS, ids=[str(path.relative_to(REPO)) for path in DOCS])
def test_relative_links_lead_somewhere(path: Path) -> None:
    broken = []
    for line, target in links(path):
        if re.match(r"[a-z]+:", target):  # https:, mailto:: not ours to check here
            continue
        file_part, _, part = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        if not linked.exists():
            broken.append(f"{path.name}:{line}: {target}: no such file")
        elif part and linked.suffix == ".md" and part not in anchors(linked):
            broken.append(f"{path.name}:{line}: {target}: {linked.name} has no heading #{part}")
    assert not broken, "\n".join(broken)
