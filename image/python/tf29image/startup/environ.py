"""What the entrypoint's environment becomes: after a sourced start hook (entrypoint.d/server.sh),
and in sshd's SetEnv line for logins (entrypoint.d/server.sh). The shell's environment comes on
stdin from `env -0`, not from this process's own: Python adds LC_CTYPE to its own under LANG=C.

Standard library only, Python 3.8 (the image's /usr/bin/python3, run with -I). Subcommands:
  after-hook HOOK FILE NAME...  FILE holds the hook's environment as `env -0` wrote it when the hook
                                ended; NAMES are the entrypoint's variables (compgen -v). Prints the
                                shell's lines: a warn for each name it ignores, then export and unset.
  ssh-setenv                    prints the one SetEnv line for sshd's configuration.
"""

import re
import shlex
import sys
from typing import Dict, Iterable, List, Mapping, Tuple  # python 3.8: no dict[...] in annotations

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Each process has its own: a hook's are not the start's.
OWN = frozenset({"_", "PWD", "OLDPWD", "SHLVL"})
# The hub's credentials (take_hub_secrets takes them out of the environment; only the single-user server gets them).
HUB_SECRET = re.compile(r"JUPYTERHUB_API_TOKEN|JPY_API_TOKEN|JUPYTERHUB_CLIENT_ID|JUPYTERHUB_OAUTH_[A-Z_]*")
# Not for an SSH login: the session's own, or secrets.
NOT_FOR_SSH = frozenset({"HOSTNAME", "HOME", "PWD", "OLDPWD", "SHLVL", "_", "TERM", "USER", "LOGNAME", "SHELL",
                         "MAIL", "JUPYTER_TOKEN", "JUPYTER_PASSWORD_HASH", "SSH_AUTHORIZED_KEYS"})


def parse_env0(data: bytes) -> Dict[str, str]:
    """`env -0`'s output: NAME=VALUE entries, each ended by a NUL."""
    found: Dict[str, str] = {}
    for entry in data.decode("utf-8", "surrogateescape").split("\0"):
        name, equals, value = entry.partition("=")
        if equals:
            found[name] = value
    return found


def after_hook(before: Mapping[str, str], after: Mapping[str, str], shell_names: Iterable[str],
               hook: str) -> Tuple[List[str], List[str]]:
    """(shell lines, warnings): what the hook exported or changed is exported, what it unset is unset;
    a name that is one of the entrypoint's own unexported variables (cfg_*, the plan's) is not the
    hook's to set. Exported functions (BASH_FUNC_f%%) are not variables and stay as they are."""
    own = set(shell_names) - set(before)
    lines: List[str] = []
    warnings: List[str] = []
    for name, value in after.items():
        if not NAME.fullmatch(name) or name in OWN or before.get(name) == value:
            continue
        if name in own:
            warnings.append(f"start hook {hook} exported {name}, a variable of the entrypoint's own: ignored")
        else:
            lines.append(f"export {name}={shlex.quote(value)}")
    lines.extend(f"unset -v {name}" for name in before
                 if name not in after and NAME.fullmatch(name) and name not in OWN)
    return lines, warnings


def ssh_setenv(env: Mapping[str, str]) -> str:
    """sshd reads only the first SetEnv, so every variable goes on one line; a value SetEnv cannot
    carry (a quote, a backslash, a newline) is left out. PATH is among them: SetEnv wins over sshd's
    default, and the login shell keeps it (shell/profile.sh)."""
    words = [f'"{name}={value}"' for name, value in env.items()
             if name not in NOT_FOR_SSH and not HUB_SECRET.fullmatch(name) and not re.search(r'["\\\n]', value)]
    return " ".join(["SetEnv", *words])


def main(argv: List[str]) -> int:
    if argv[:1] == ["after-hook"] and len(argv) >= 3:
        with open(argv[2], "rb") as file:
            after = parse_env0(file.read())
        lines, warnings = after_hook(parse_env0(sys.stdin.buffer.read()), after, argv[3:], argv[1])
        sys.stdout.write("".join(line + "\n" for line in [*(f"warn {shlex.quote(w)}" for w in warnings), *lines]))
        return 0
    if argv == ["ssh-setenv"]:
        print(ssh_setenv(parse_env0(sys.stdin.buffer.read())))
        return 0
    print("usage: env -0 | environ.py after-hook HOOK FILE NAME... | ssh-setenv", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
