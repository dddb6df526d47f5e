"""What the shipped code and configuration tell a reader to look up exists: each `docs/NAME.md`,
`README.md` or `bench/README.md` it names, with a #part that file's heading, and each section it
names in words (README "Security", docs/hub.md, "Profiles and GPUs") a heading of that file. A doc
section that moves breaks this test, not the reader's trail from an error line."""

import re
import subprocess
from pathlib import Path

import pytest

from testkit.docs import anchors, headings
from tf29env.core.paths import REPO

# Everything that ships or runs for a user: the image, the team setups, the build tool, the deployments.
SHIPPED = ("image", "compose", "hub", "tf29env", "build.py", "deploy", "scripts", "bench", "Makefile", "compose.mk",
           "docker-compose.yml", "Dockerfile", ".ci", "ca-certs", "notebooks", "README.md", "docs")
DOC = r"((?:docs/[a-z0-9-]+|bench/README|README)\.md|README)"
PATH_REF = re.compile(DOC + r"(#[\w-]+)?")
# A section named in words after the file: README "Security", README's 'Settings', docs/hub.md, "Profiles".
SECTION_REF = re.compile(DOC + r"(?:'s|,|:)? ?[\"'“]([A-Z][^\"'”\n]{2,60})[\"'”]")
COMMA_SECTION_REF = re.compile(r"\b(README|docs/[a-z0-9-]+\.md), ([A-Z][A-Za-z ]{2,40})\)")
# A file of the project named by its path (a comment's "image/entrypoint.d/20-user.sh"), or an
# entrypoint piece by its number and name ("(20-user)"): each must still be there.
TOP = "image|compose|hub|tf29env|tests|testkit|bench|deploy|scripts|docs"
REPO_PATH = re.compile(rf"(?<![\w/.-])((?:{TOP})/[\w./-]*\.[a-z]+)\b")
PIECE = re.compile(r"\b([0-9]{2}-[a-z]+)(?:\.sh\b|(?=[),:]))")
# The image's modules and entrypoint files as comments name them: startup/plan.py, entrypoint.d/user.sh.
PACKAGE = REPO / "image" / "python" / "tf29image"
SUBPACKAGE = "startup|selfcheck|jobs|probes|dockerstacks"
IMAGE_PATH = re.compile(rf"(?<![\w/.-])((?:{SUBPACKAGE})/[\w/]*\.py|entrypoint\.d/[\w-]+\.sh)\b")
# A setting named as the file's: README's SSH_AUTHORIZED_KEYS.
SETTING_REF = re.compile(DOC + r"(?:'s)? ([A-Z][A-Z0-9]*_[A-Z0-9_]+)")


def shipped_files() -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", *SHIPPED],
                            cwd=REPO, capture_output=True, check=True)
    files = [REPO / name for name in listed.stdout.decode().split("\0") if name]
    # bench/results/ holds what past runs recorded, as they recorded it.
    return [path for path in files if path.is_file() and path.suffix not in {".png", ".ipynb", ".tar", ".gz"}
            and "results" not in path.relative_to(REPO).parts]


def target(name: str) -> Path:
    return REPO / (name if name.endswith(".md") else name + ".md")


def doc_problems(line: str) -> list[str]:
    """Docs named by path (with a #part), by section in words, or as where a setting is."""
    problems = []
    for match in PATH_REF.finditer(line):
        doc, part = target(match.group(1)), (match.group(2) or "")[1:]
        if not doc.exists():
            problems.append(f"{match.group(0)}: no such file")
        elif part and part not in anchors(doc):
            problems.append(f"{match.group(0)}: {doc.relative_to(REPO)} has no heading #{part}")
    for match in [*SECTION_REF.finditer(line), *COMMA_SECTION_REF.finditer(line)]:
        doc, section = target(match.group(1)), match.group(2).strip()
        if doc.exists() and section.lower() not in {heading.lower() for heading in headings(doc)}:
            problems.append(f"{match.group(0)}: {doc.relative_to(REPO)} has no heading '{section}'")
    for match in SETTING_REF.finditer(line):
        doc, setting = target(match.group(1)), match.group(2)
        if doc.exists() and setting not in doc.read_text():
            problems.append(f"{match.group(0)}: {doc.relative_to(REPO)} never names {setting}")
    return problems


def file_problems(line: str) -> list[str]:
    """Files of the project named by path, the image's by their path in it, entrypoint pieces by number."""
    problems = []
    for match in REPO_PATH.finditer(line):
        placeholder = re.search(r"[A-Z]{3}|[*{$]|_$", match.group(1))  # compose/secrets/NAME, a glob
        dotfile = Path(match.group(1)).name.startswith(".")  # hub/.venv: made by make, not shipped
        if not placeholder and not dotfile and not (REPO / match.group(1)).exists():
            problems.append(f"{match.group(1)}: no such file or folder")
    for match in IMAGE_PATH.finditer(line):
        name = match.group(1)
        if not (REPO / "image" / name if name.startswith("entrypoint.d/") else PACKAGE / name).exists():
            problems.append(f"{name}: no such file in the image")
    for match in PIECE.finditer(line):
        if not list((REPO / "image" / "entrypoint.d").glob(match.group(1) + ".sh")):
            problems.append(f"{match.group(0)}: no such entrypoint piece")
    return problems


def broken_references(path: Path) -> list[str]:
    where = path.relative_to(REPO)
    return [f"{where}:{number}: {problem}"
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
            for problem in [*doc_problems(line), *file_problems(line)]]


def test_the_patterns_find_what_they_should() -> None:
    assert PATH_REF.search("see docs/build.md#exit-codes").groups() == ("docs/build.md", "#exit-codes")  # type: ignore[union-attr]
    assert SECTION_REF.search("(--cap-add; README 'Security' lists").groups() == ("README", "Security")  # type: ignore[union-attr]
    assert SECTION_REF.search('docs/hub.md, "Profiles and GPUs"').groups() == ("docs/hub.md", "Profiles and GPUs")  # type: ignore[union-attr]
    assert COMMA_SECTION_REF.search("JUPYTER_PASSWORD_HASH (README, Settings), never").groups() == (  # type: ignore[union-attr]
        "README", "Settings")
    assert SETTING_REF.search("as in README's SSH_AUTHORIZED_KEYS (").groups() == ("README", "SSH_AUTHORIZED_KEYS")  # type: ignore[union-attr]


@pytest.mark.parametrize("path", shipped_files(), ids=lambda path: str(path.relative_to(REPO)))
def test_what_the_code_points_at_exists(path: Path) -> None:
    problems = broken_references(path)
    assert not problems, "\n".join(problems)
