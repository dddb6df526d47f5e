"""Every relative link in the README and docs/ leads somewhere: the file exists and, with a #part,
the file has that heading (as GitHub makes anchors of headings). A moved section breaks a test,
not a reader's click."""

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = sorted([REPO / "README.md", *(REPO / "docs").glob("*.md")])
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6}) +(.+?) *#*$", re.MULTILINE)
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation out (but - and _), spaces to -."""
    text = re.sub(r"`|\*\*|\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    found: dict[str, int] = {}
    names = set()
    for _, heading in HEADING.findall(FENCE.sub("", path.read_text())):
        name = anchor(heading)
        count = found.get(name, 0)
        found[name] = count + 1
        names.add(name if count == 0 else f"{name}-{count}")
    return names


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
