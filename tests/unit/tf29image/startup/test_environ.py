"""tf29image.startup.environ: what a sourced start hook leaves in the entrypoint's environment, and
sshd's SetEnv line for logins. The shell sides (run_start_hooks, prepare_ssh) run in tests/image/test_hooks.py
and tests/image/test_ssh.py."""

import subprocess
from pathlib import Path

import pytest

from tests.unit.tf29image import command, environment
from tf29image.startup import environ

BEFORE = {"PATH": "/opt/venv/bin:/usr/bin", "LANG": "C.UTF-8", "KEEP": "same", "GONE": "x", "PWD": "/"}
SHELL = ["PATH", "LANG", "KEEP", "GONE", "PWD", "cfg_mode", "NB_HOME", "changes"]

# The hook's environment when it ended -> (shell lines, warnings).
HOOKS: dict[str, tuple[dict[str, str], list[str], list[str]]] = {
    "nothing changed": (dict(BEFORE), [], []),
    "a new variable": ({**BEFORE, "CUDA_CACHE": "/cache/c"}, ["export CUDA_CACHE=/cache/c"], []),
    "a changed one, quoted": ({**BEFORE, "LANG": "it's $HOME\nnext"},
                              ["export LANG='it'\"'\"'s $HOME\nnext'"], []),
    "an unset one": ({k: v for k, v in BEFORE.items() if k != "GONE"}, ["unset -v GONE"], []),
    "the entrypoint's own": ({**BEFORE, "cfg_mode": "command"}, [], [
        "start hook /h.sh exported cfg_mode, a variable of the entrypoint's own: ignored"]),
    "what each process has of its own": ({"PATH": BEFORE["PATH"], "LANG": "C.UTF-8", "KEEP": "same", "GONE": "x",
                                          "PWD": "/home", "SHLVL": "2", "_": "/usr/bin/env"}, [], []),
    "an exported function is not a variable": ({**BEFORE, "BASH_FUNC_f%%": "() {  :\n}"}, [], []),
}


@pytest.mark.parametrize("case", list(HOOKS))
def test_after_a_hook(case: str) -> None:
    after, lines, warnings = HOOKS[case]
    assert environ.after_hook(BEFORE, after, SHELL, "/h.sh") == (lines, warnings)


def test_the_lines_read_back_in_bash_as_the_hooks_values() -> None:
    value = "a 'quoted' $VALUE `x`\n\\tail"
    lines, _ = environ.after_hook(BEFORE, {**BEFORE, "NEW": value}, SHELL, "/h.sh")
    out = subprocess.run(["bash", "-c", lines[0] + '\nprintf %s "$NEW"'], capture_output=True, text=True, check=True)
    assert out.stdout == value


def test_env0_is_read_as_env_writes_it() -> None:
    written = subprocess.run(["env", "-0"], env={"A": "1", "B": "two\nlines", "C": "x=y"}, capture_output=True,
                             check=True).stdout
    assert environ.parse_env0(written) == {"A": "1", "B": "two\nlines", "C": "x=y"}


# The environment -> sshd's SetEnv line.
SETENV: dict[str, tuple[dict[str, str], str]] = {
    "plain values, in order": ({"PATH": "/opt/venv/bin:/usr/bin", "LANG": "C.UTF-8"},
                               'SetEnv "PATH=/opt/venv/bin:/usr/bin" "LANG=C.UTF-8"'),
    "the session's own left out": ({"HOME": "/root", "USER": "root", "TERM": "xterm", "TZ": "UTC"}, 'SetEnv "TZ=UTC"'),
    "secrets left out": ({"JUPYTER_TOKEN": "t", "JUPYTER_PASSWORD_HASH": "h", "SSH_AUTHORIZED_KEYS": "k",
                          "JUPYTERHUB_API_TOKEN": "t", "JPY_API_TOKEN": "t", "JUPYTERHUB_OAUTH_SCOPES": "s",
                          "JUPYTERHUB_USER": "ann"}, 'SetEnv "JUPYTERHUB_USER=ann"'),
    "what SetEnv cannot carry left out": ({"A": 'say "hi"', "B": "back\\slash", "C": "two\nlines", "D": "ok it's"},
                                          'SetEnv "D=ok it\'s"'),
    "nothing": ({}, "SetEnv"),
}


@pytest.mark.parametrize("case", list(SETENV))
def test_the_ssh_setenv_line(case: str) -> None:
    env, line = SETENV[case]
    assert environ.ssh_setenv(env) == line


def test_the_command_lines_as_the_entrypoint_runs_them(tmp_path: Path) -> None:
    """`env -0 | python3 -I -m tf29image.startup.environ ...`, as the entrypoint runs it; LANG=C, under which Python
    adds LC_CTYPE to its own environment, which is not the shell's."""
    hook_env = tmp_path / "env"
    hook_env.write_bytes(b"KEEP=same\0NEW=1\0cfg_mode=x\0")
    shell_env = b"KEEP=same\0GONE=x\0LANG=C\0"
    done = subprocess.run(command("startup.environ", "after-hook", "/h.sh", str(hook_env), "KEEP", "GONE", "LANG",
                                  "cfg_mode"), input=shell_env, env=environment({"LANG": "C"}), capture_output=True,
                          check=True)
    assert done.stdout.decode().splitlines() == [
        "warn 'start hook /h.sh exported cfg_mode, a variable of the entrypoint'\"'\"'s own: ignored'",
        "export NEW=1", "unset -v GONE", "unset -v LANG"]
    done = subprocess.run(command("startup.environ", "ssh-setenv"), input=shell_env, env=environment({"LANG": "C"}),
                          capture_output=True, check=True)
    assert done.stdout.decode() == 'SetEnv "KEEP=same" "GONE=x" "LANG=C"\n'
