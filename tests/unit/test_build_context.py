"""build.py's build context and .dockerignore (what plain `docker build .` sends) name the same
files and leave out the same tool caches, so both builders build the same image."""

import io
import tarfile

from tf29env import context
from tf29env.paths import REPO


def dockerignore() -> tuple[set[str], set[str]]:
    """(what .dockerignore lets through after its leading '*', the '**/NAME' patterns it drops)."""
    lines = [line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()]
    rules = [line for line in lines if line and not line.startswith("#")]
    assert rules[0] == "*", ".dockerignore must start by ignoring everything"
    allowed = {rule[1:] for rule in rules if rule.startswith("!")}
    dropped = {rule.removeprefix("**/") for rule in rules[1:] if rule.startswith("**/")}
    return allowed, dropped


def test_dockerignore_lets_through_exactly_the_context() -> None:
    allowed, _ = dockerignore()
    assert allowed == set(context.CONTEXT_PATHS)


def test_dockerignore_drops_the_tool_caches_the_context_leaves_out() -> None:
    _, dropped = dockerignore()
    assert dropped == {*context.EXCLUDED_DIRS, "*.pyc"}


def test_context_tar_holds_only_the_context_paths() -> None:
    buffer = io.BytesIO()
    context.write(buffer, [])
    buffer.seek(0)
    with tarfile.open(fileobj=buffer) as tar:
        tops = {name.split("/", 1)[0] for name in tar.getnames()}
        assert not any(part in context.EXCLUDED_DIRS for name in tar.getnames() for part in name.split("/"))
    assert tops == set(context.CONTEXT_PATHS)
