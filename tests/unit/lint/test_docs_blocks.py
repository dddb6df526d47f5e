"""Every shell block in the README and docs/ is typed by a test or says, visibly, why not: the line
above its fence is `<!-- docs-test: tests/X/test_Y.py -->` (that file runs it as written, through
testkit/docblocks.py) or `*Not run by the docs test: WHY*`. The suite's summary lists the second kind."""

import ast

import pytest

from testkit import docblocks
from tf29env.core.paths import REPO

BLOCKS = docblocks.all_blocks()


@pytest.mark.parametrize("block", BLOCKS, ids=[block.where for block in BLOCKS])
def test_each_shell_block_is_run_by_a_test_or_says_why_not(block: docblocks.Block) -> None:
    assert block.commands(), f"{block.where}: a shell block without a command"
    assert (block.runner is None) != (block.reason is None), (
        f"{block.where}: put `<!-- docs-test: tests/X/test_Y.py -->` (the test that types it) or a visible "
        f"`*Not run by the docs test: WHY*` on the line above the fence")
    if block.runner is not None:
        runner = REPO / block.runner
        assert runner.is_file() and runner.name.startswith("test_"), f"{block.where}: no test file {block.runner}"
        called = {node.func.attr for node in ast.walk(ast.parse(runner.read_text()))
                  if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)}
        assert "blocks_for" in called, f"{block.where}: {block.runner} never asks docblocks.blocks_for for its blocks"


def test_the_blocks_are_found_where_the_docs_have_them() -> None:
    # README.md's quick start: the fence, its marker above, and its first and last commands.
    (quick,) = [block for block in BLOCKS
                if block.path == "README.md" and block.commands()[0].text.startswith("docker run")]
    lines = (REPO / "README.md").read_text().splitlines()
    assert lines[quick.line - 1] == "```sh"
    assert lines[quick.line - 3] == f"<!-- docs-test: {quick.runner} -->"
    assert lines[quick.commands()[-1].line - 1].startswith("ssh -p 2222 jovyan@localhost")
    assert len(BLOCKS) >= 30 and {block.path for block in BLOCKS} >= {"README.md", "docs/hpc.md", "docs/team.md"}
