"""tf29image.dockerstacks.notebook_args, run as the entrypoint runs it (python3 -I -m, NOTEBOOK_ARGS in
its environment): NOTEBOOK_ARGS split as docker-stacks splits it, each word ended by a NUL, or one
line and exit 2."""

import os
import subprocess

import pytest

from tests.unit.tf29image import command, environment


def run(value: str | None) -> subprocess.CompletedProcess[str]:
    env = {name: text for name, text in os.environ.items() if name != "NOTEBOOK_ARGS"}
    if value is not None:
        env["NOTEBOOK_ARGS"] = value
    return subprocess.run(command("dockerstacks.notebook_args"), env=environment(env), capture_output=True,
                          text=True, check=False)


@pytest.mark.parametrize(("value", "words"), [
    (None, []),
    ("", []),
    ("  \t ", []),
    ("--ServerApp.base_url=/x/  --LabApp.collaborative=True",
     ["--ServerApp.base_url=/x/", "--LabApp.collaborative=True"]),
    ("--ServerApp.custom_display_url='http://h/a b' \"--x=\\\"q\\\"\"", ["--ServerApp.custom_display_url=http://h/a b",
                                                                         '--x="q"']),
    ("--a=b\\ c '' $HOME *", ["--a=b c", "", "$HOME", "*"]),  # no variables, no globs: words as written
])
def test_words_as_a_shell_splits_them(value: str | None, words: list[str]) -> None:
    result = run(value)
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == "".join(word + "\0" for word in words)


@pytest.mark.parametrize(("value", "reason"), [("--a='b", "No closing quotation"), ("--a=b\\", "No escaped character")])
def test_an_unsplittable_value_is_one_line_and_exit_2(value: str, reason: str) -> None:
    result = run(value)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.startswith(f"NOTEBOOK_ARGS cannot be split into arguments as a shell would ({reason})")
    assert result.stderr.count("\n") == 1
