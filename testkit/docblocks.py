"""The shell blocks of README.md and docs/*.md, and a runner that types their commands as written.

A block says how it is tested on the line above its fence: `<!-- docs-test: tests/X/test_Y.py -->`
names the test file that runs it (that file calls `blocks_for(__file__)` and `run_block`), and a
visible line `*Not run by the docs test: WHY.*` says why it cannot run on this kind of machine.
tests/unit/lint/test_docs_blocks.py holds every block to one of the two.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from testkit.wait import wait_until
from tf29env.core.paths import REPO

SHELL_LANGS = ("sh", "bash", "shell", "console")
FENCE_OPEN = re.compile(r"^```(\w*)\s*$")
RUNNER = re.compile(r"^<!-- docs-test: (\S+) -->$")
NOT_RUN = re.compile(r"^\*Not run by the docs test: (.+?)\*$")
PROMPT = "$ "


def doc_files(root: Path = REPO) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


@dataclass(frozen=True)
class Command:
    line: int  # where it starts in the doc (1-based)
    text: str  # continuation lines joined as bash joins them


@dataclass(frozen=True)
class Block:
    path: str  # relative to the project
    line: int  # the opening fence's line (1-based)
    lang: str
    body: tuple[str, ...]
    runner: str | None = None  # the test file that runs it
    reason: str | None = None  # why it is not run here

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"

    def commands(self) -> list[Command]:
        """The commands a reader types: comment-only lines left out; in a console block only what
        follows a `$ ` prompt (the rest is output)."""
        found: list[Command] = []
        pending: list[str] = []
        start = 0
        for offset, typed in enumerate(self.body, self.line + 1):
            raw = typed
            if not pending:
                if self.lang == "console":
                    if not typed.startswith(PROMPT):
                        continue
                    raw = typed[len(PROMPT):]
                if not raw.strip() or raw.lstrip().startswith("#"):
                    continue
                start = offset
            if raw.rstrip().endswith("\\"):
                pending.append(raw.rstrip()[:-1])
                continue
            found.append(Command(start, " ".join(part.strip() for part in [*pending, raw]).strip()))
            pending = []
        if pending:
            found.append(Command(start, " ".join(part.strip() for part in pending).strip()))
        return found


def parse(path: Path, root: Path = REPO) -> list[Block]:
    """PATH's shell blocks, each with the marker on the nearest non-blank line above its fence."""
    lines = path.read_text().splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        opened = FENCE_OPEN.match(lines[index])
        if not opened:
            index += 1
            continue
        end = index + 1
        while end < len(lines) and not lines[end].startswith("```"):
            end += 1
        if opened.group(1) in SHELL_LANGS:
            above = next((line.strip() for line in reversed(lines[:index]) if line.strip()), "")
            runner, reason = RUNNER.match(above), NOT_RUN.match(above)
            blocks.append(Block(str(path.relative_to(root)), index + 1, opened.group(1), tuple(lines[index + 1:end]),
                                runner.group(1) if runner else None, reason.group(1) if reason else None))
        index = end + 1
    return blocks


def all_blocks(root: Path = REPO) -> list[Block]:
    return [block for path in doc_files(root) for block in parse(path, root)]


def blocks_for(test_file: str, root: Path = REPO) -> list[Block]:
    """The blocks whose marker names TEST_FILE (a test module's __file__)."""
    name = str(Path(test_file).resolve().relative_to(root))
    return [block for block in all_blocks(root) if block.runner == name]


def block_at(test_file: str, path: str, first_command: str) -> Block:
    """The block of PATH run by TEST_FILE whose first command starts with FIRST_COMMAND."""
    for block in blocks_for(test_file):
        commands = block.commands()
        if block.path == path and commands and commands[0].text.startswith(first_command):
            return block
    raise AssertionError(f"{path} has no shell block marked for {Path(test_file).name} that starts with "
                         f"{first_command!r}")


# A placeholder's value: text, or what an earlier command printed (the transcript so far).
Value = str | Callable[[str], str]


@dataclass
class Result:
    code: int | None  # None: still running when its time was up (a command that follows)
    output: str


Execute = Callable[[str, float], Result]


@dataclass
class Plan:
    """How the test types a block: its placeholders' values, the commands a person repeats until
    they answer (a login while the container starts), and those that follow output until Ctrl-C."""
    placeholders: Mapping[str, Value] = field(default_factory=dict)
    waits: Sequence[str] = ()  # commands starting so are retried until WAIT_SECONDS
    follows: Sequence[str] = ()  # commands starting so run FOLLOW_SECONDS, then are stopped
    timeout: float = 600.0
    wait_seconds: float = 180.0
    follow_seconds: float = 15.0


def fill(text: str, placeholders: Mapping[str, Value], transcript: str) -> tuple[str, set[str]]:
    """TEXT with each placeholder replaced (longest first), and the placeholders it held."""
    used = set()
    for key in sorted(placeholders, key=len, reverse=True):
        if key in text:
            value = placeholders[key]
            text = text.replace(key, value if isinstance(value, str) else value(transcript))
            used.add(key)
    return text, used


def last_line(output: str) -> str:
    lines = [line.strip() for line in output.replace("\r", "\n").splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"


def type_command(execute: Execute, text: str, plan: Plan, *, follows: bool, waits: bool) -> tuple[bool, Result]:
    """Type TEXT once, or (WAITS) again every 2 s until it works or the plan's wait is over; whether
    it worked, and what its last try printed."""
    tries: list[Result] = []

    def attempt() -> bool:
        tries.append(execute(text, plan.follow_seconds if follows else plan.timeout))
        return tries[-1].code == 0 or (follows and tries[-1].code is None and tries[-1].output.strip() != "")

    worked = attempt()
    if not worked and waits:
        with contextlib.suppress(TimeoutError):  # the last try is reported by the caller
            worked = wait_until(attempt, timeout=plan.wait_seconds, interval=2, what=text)
    return worked, tries[-1]


def run_block(block: Block, execute: Execute, plan: Plan | None = None) -> str:
    """Type BLOCK's commands one after the other; the transcript when all worked. A command that
    fails raises with the doc's file and line, the command and its last output line."""
    plan = plan or Plan()
    transcript = ""
    used: set[str] = set()
    for command in block.commands():
        text, held = fill(command.text, plan.placeholders, transcript)
        used |= held
        follows = command.text.startswith(tuple(plan.follows)) if plan.follows else False
        waits = command.text.startswith(tuple(plan.waits)) if plan.waits else False
        worked, result = type_command(execute, text, plan, follows=follows, waits=waits)
        transcript += f"$ {text}\n{result.output}\n"
        if not worked:
            why = "was still running" if result.code is None else f"exited {result.code}"
            raise AssertionError(f"{block.path}:{command.line}: `{command.text}` {why}: {last_line(result.output)}")
    unused = set(plan.placeholders) - used
    assert not unused, f"{block.where}: the test fills placeholders the block no longer has: {sorted(unused)}"
    return transcript


def bash(cwd: Path, env: Mapping[str, str], *, tty: bool = False, prefix: Sequence[str] = ()) -> Execute:
    """Run a command as typed at a bash prompt in CWD (with a terminal when TTY, as `docker exec -it`
    needs; PREFIX, e.g. setpriv, makes the prompt another user's); a command still running at its time
    is stopped as Ctrl-C stops it."""
    def execute(text: str, timeout: float) -> Result:
        argv = [*prefix, "bash", "-o", "pipefail", "-c", text]
        if tty:
            argv = ["script", "-qefc", shlex.join(argv), "/dev/null"]
        with subprocess.Popen(argv, cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, errors="replace", start_new_session=True) as proc:
            try:
                output, _ = proc.communicate(timeout=timeout)
                return Result(proc.returncode, output)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGINT)
                try:
                    output, _ = proc.communicate(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    output, _ = proc.communicate()
                return Result(None, output)
    return execute


def fresh_copy(target: Path) -> Path:
    """The project's files as a clone of this tree has them (tracked, and new ones git does not ignore)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


SSH_CONFIG = """\
Host *
    IdentityFile {home}/.ssh/id_ed25519
    UserKnownHostsFile {home}/.ssh/known_hosts
    StrictHostKeyChecking accept-new
    BatchMode yes
    ConnectTimeout 10
"""


def reader_env(home: Path, private_key: Path, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a reader typing the docs: HOME with their key in ~/.ssh (id_ed25519), and
    an `ssh` that reads that home's config (OpenSSH reads the passwd home, not $HOME) and takes a new
    host key as the reader answers "yes" to its first question."""
    ssh_dir = home / ".ssh"
    ssh_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    shutil.copy(private_key, ssh_dir / "id_ed25519")
    shutil.copy(f"{private_key}.pub", ssh_dir / "id_ed25519.pub")
    (ssh_dir / "id_ed25519").chmod(0o600)
    (ssh_dir / "config").write_text(SSH_CONFIG.format(home=home))
    (ssh_dir / "config").chmod(0o600)
    tools = home / ".docs-test-bin"
    tools.mkdir(exist_ok=True)
    real_ssh = shutil.which("ssh")
    assert real_ssh, "ssh is missing: run scripts/host-setup.sh"
    wrapper = tools / "ssh"
    wrapper.write_text(f'#!/bin/sh\nexec {real_ssh} -F "$HOME/.ssh/config" "$@"\n')
    wrapper.chmod(0o755)
    env = dict(os.environ if base is None else base)
    env["HOME"] = str(home)
    env["PATH"] = f"{tools}:{env.get('PATH', '/usr/bin:/bin')}"
    return env


PlanKey = tuple[str, str]  # a doc, and how the first command of its block starts


def with_plans(blocks: Sequence[Block], plans: Mapping[PlanKey, Plan]) -> list[tuple[Block, PlanKey, Plan]]:
    """Each block with its plan, in the docs' order; a block without a plan, or a plan whose block
    has gone, fails: the doc and the test change together."""
    matched = []
    for block in blocks:
        keys = [key for key in plans if block.path == key[0] and block.commands()[0].text.startswith(key[1])]
        assert len(keys) == 1, f"{block.where}: {len(keys)} plans in its test for a block marked for it"
        matched.append((block, keys[0], plans[keys[0]]))
    gone = set(plans) - {key for _, key, _ in matched}
    assert not gone, f"plans for blocks no doc marks for this test any more: {sorted(gone)}"
    return matched
