"""testkit/docblocks.py's reading of a doc and its runner, on small docs written here."""

from pathlib import Path

import pytest

from testkit import docblocks
from testkit.docblocks import Plan, Result

DOC = '''# Title

<!-- docs-test: tests/x/test_y.py -->
```sh
# a comment line is not a command
make up   # a trailing comment stays
docker run -d \\
  --name tf \\
  image
```

*Not run by the docs test: it needs a GPU.*

```console
$ selfcheck --json
{"output": "is not typed"}
$ job log -f ID
```

```python
print("not a shell block")
```

```sh
echo unmarked
```
'''


@pytest.fixture
def doc(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    path = tmp_path / "docs" / "a.md"
    path.write_text(DOC)
    return path


def test_blocks_with_their_markers_lines_and_commands(doc: Path, tmp_path: Path) -> None:
    first, second, third = docblocks.parse(doc, tmp_path)
    assert (first.where, first.runner, first.reason) == ("docs/a.md:4", "tests/x/test_y.py", None)
    assert [(c.line, c.text) for c in first.commands()] == [
        (6, "make up   # a trailing comment stays"), (7, "docker run -d --name tf image")]
    assert (second.lang, second.runner, second.reason) == ("console", None, "it needs a GPU.")
    assert [(c.line, c.text) for c in second.commands()] == [(15, "selfcheck --json"), (17, "job log -f ID")]
    assert (third.where, third.runner, third.reason) == ("docs/a.md:24", None, None)


def test_placeholders_fill_longest_first_and_from_what_came_before() -> None:
    filled, used = docblocks.fill("job log -f ID; ls ~/IDs", {"ID": lambda said: said.split()[-1], "~/IDs": "/x"},
                                  "started 2026-1")
    assert (filled, used) == ("job log -f 2026-1; ls /x", {"ID", "~/IDs"})


def block_of(body: str) -> docblocks.Block:
    return docblocks.Block("docs/a.md", 10, "sh", tuple(body.splitlines()))


def test_a_failing_command_names_the_file_line_command_and_last_output_line() -> None:
    typed: list[str] = []

    def execute(text: str, timeout: float) -> Result:
        typed.append(text)
        return Result(0, "ok") if text.startswith("true") else Result(3, "first\nthe reason\n\n")

    with pytest.raises(AssertionError) as failed:
        docblocks.run_block(block_of("true one\nfalse two\ntrue three"), execute)
    assert str(failed.value) == "docs/a.md:12: `false two` exited 3: the reason"
    assert typed == ["true one", "false two"]


def test_waits_repeat_a_command_and_follows_stop_one_that_is_still_printing() -> None:
    answers = iter([Result(255, "refused"), Result(0, "logged in")])

    def execute(text: str, timeout: float) -> Result:
        if text.startswith("ssh"):
            return next(answers)
        assert timeout == 1.0
        return Result(None, "epoch 1\n")

    plan = Plan(waits=("ssh",), follows=("job log -f",), follow_seconds=1.0, wait_seconds=30)
    said = docblocks.run_block(block_of("ssh host\njob log -f ID"), execute, plan)
    assert "logged in" in said and "epoch 1" in said


def test_a_placeholder_the_block_no_longer_has_fails() -> None:
    with pytest.raises(AssertionError, match=r"no longer has: \['alice.pub'\]"):
        docblocks.run_block(block_of("true"), lambda text, timeout: Result(0, ""),
                            Plan(placeholders={"alice.pub": "k"}))
