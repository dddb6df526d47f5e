"""The README's and docs/' headings as GitHub anchors them, for the tests that check what points at them."""

import re
from pathlib import Path

HEADING = re.compile(r"^(#{1,6}) +(.+?) *#*$", re.MULTILINE)
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation out (but - and _), spaces to -."""
    text = re.sub(r"`|\*\*|\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def headings(path: Path) -> list[str]:
    """The file's headings as written, code blocks left out."""
    return [heading for _, heading in HEADING.findall(FENCE.sub("", path.read_text()))]


def anchors(path: Path) -> set[str]:
    found: dict[str, int] = {}
    names = set()
    for heading in headings(path):
        name = anchor(heading)
        count = found.get(name, 0)
        found[name] = count + 1
        names.add(name if count == 0 else f"{name}-{count}")
    return names
