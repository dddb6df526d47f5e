#!/usr/bin/env python3
"""How a person reaches an environment, printed by `make run` and `make up` once it answers.

  python3 compose/access.py run [--container NAME] --bind ADDRESS --jupyter-port P --ssh-port P [--ssh-key FILE]
      `make run`: waits until its container (tf29-env) is healthy, then prints its JupyterLab URL (the token
      from its log, the host's port) and the SSH command, or that SSH is off and how to turn it on.
  python3 compose/access.py ready
      `make up`: the members of docker-compose.yml whose secrets exist, for `compose up`; one line on
      stderr for each that has none yet (a shipped example), which is not started.
  python3 compose/access.py team --compose 'docker compose' NAME...
      `make up`: waits until the members NAME are healthy, then prints each one's URL and SSH command.

A container that does not turn healthy in time: its last log lines, one line saying so, exit 1.
Standard library only: it runs on the host's python3 (3.8 or newer).
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

if __package__:  # compose.access, as the tests import it
    from compose import member
else:  # python3 compose/access.py, as the Makefile runs it: this file's folder is on sys.path
    import member  # type: ignore[import-not-found, no-redef]

CONTAINER = "tf29-env"  # `make run`'s container (the Makefile's name for it)
HEALTHY_WITHIN = 180  # seconds: a first start on a busy box, self-check and all
# The line the image prints where it made the token (startup/server.py): the URL as the container sees it.
TOKEN_URL = re.compile(r"JupyterLab token \(generated[^)]*\): (https?)://[^/\s]+(/\S*)")
# Addresses that a browser on this box reaches as localhost.
LOCAL = {"", "0.0.0.0", "127.0.0.1", "::", "[::]", "::1", "[::1]"}  # noqa: S104 - compared, not bound
KEY_FILES = "~/.ssh/id_ed25519.pub or ~/.ssh/id_rsa.pub"


class AccessError(Exception):
    """The environment is not there to reach: one line, exit 1."""


def reach_host(bind_address: str) -> str:
    return "localhost" if bind_address in LOCAL else bind_address


def elsewhere(bind_address: str) -> str:
    """The note for a port published on every address: other machines use this box's name."""
    return " (from another machine: this box's name instead of localhost)" if bind_address in ("", "0.0.0.0") else ""  # noqa: S104


def run_lines(logs: str, bind_address: str, jupyter_port: int, ssh_port: int, key_file: str) -> list[str]:
    """`make run`'s closing lines, from the container's log and the ports it was published on."""
    host = reach_host(bind_address)
    found = TOKEN_URL.findall(logs)
    if found:
        scheme, path = found[-1]
        lines = [f"JupyterLab: {scheme}://{host}:{jupyter_port}{path}{elsewhere(bind_address)}"]
    else:
        lines = [f"JupyterLab: http://{host}:{jupyter_port}/ with the token you set (JUPYTER_TOKEN)"]
    if key_file:
        lines.append(f"SSH: ssh -p {ssh_port} jovyan@{host} (the key {key_file})")
    else:
        lines.append(f"SSH: off, as no {KEY_FILES} was found: `make run SSH_PUBLIC_KEY=FILE.pub` turns it on")
    return lines


def member_lines(name: str, bind_address: str, jupyter_port: int, ssh_port: int, token: str,
                 jupyter_address: str | None = None, scheme: str = "http") -> list[str]:
    """A member's URL and SSH line; JUPYTER_ADDRESS: where Jupyter's port is published, if not BIND_ADDRESS."""
    jupyter_address = bind_address if jupyter_address is None else jupyter_address
    web, host = reach_host(jupyter_address), reach_host(bind_address)
    return [f"{name}: JupyterLab {scheme}://{web}:{jupyter_port}/lab?token={token}{elsewhere(jupyter_address)}",
            f"{name}: SSH ssh -p {ssh_port} jovyan@{host} (the keys in compose/secrets/{name}/authorized_keys)"]


def docker(*args: str) -> str:
    done = subprocess.run(["docker", *args], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise AccessError(f"docker {args[0]}: {(done.stderr.strip().splitlines() or ['failed'])[-1]}")
    return done.stdout


def wait_healthy(container: str, shown: str, timeout: float = HEALTHY_WITHIN) -> None:
    """Until the container's healthcheck passes; its last log lines and AccessError if it stops or times out."""
    deadline = time.monotonic() + timeout
    state = ""
    while time.monotonic() < deadline:
        state = docker("inspect", "-f", "{{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{end}}",
                       container).strip()
        if state == "running healthy":
            return
        if not state.startswith("running"):
            break
        time.sleep(1)
    tail = subprocess.run(["docker", "logs", "--tail", "15", container], capture_output=True, text=True, check=False)
    sys.stderr.write(tail.stdout + tail.stderr)
    raise AccessError(f"{shown} is not healthy ({state or 'gone'}) after at most {timeout:.0f} s: its last log "
                      f"lines are above (`docker logs {container}` has all)")


def env_file_value(project: Path, name: str) -> str | None:
    """NAME from the project's .env, as compose reads it (KEY=VALUE lines; quotes taken off)."""
    try:
        lines = (project / ".env").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        key, sep, value = line.strip().partition("=")
        if sep and key.strip() == name:
            return value.strip().strip("'\"")
    return None


def member_ports(compose: list[str], name: str) -> tuple[int, int]:
    """The host ports of the member's Jupyter (8888) and SSH (22), from its service in docker-compose.yml."""
    lines = member.entry_lines(compose, "services", name)
    jupyter, ssh = member.published_ports(lines, 8888), member.published_ports(lines, 22)
    if not jupyter or not ssh:
        raise AccessError(f"{name}: docker-compose.yml publishes no host port for its Jupyter or SSH")
    return jupyter[0], ssh[0]


def ready_members(project: member.Project) -> tuple[list[str], list[str]]:
    """(the members with both secret files, a line for each without)."""
    ready, waiting = [], []
    for name in member.entry_names(project.read(project.compose_file), "services"):
        if member.has_secrets(project, name):
            ready.append(name)
        else:
            waiting.append(f"{name}: not started, it has no secrets yet (compose/secrets/{name}/): "
                           f"`python3 compose/member.py add {name} --ssh-key FILE.pub` takes it over, "
                           f"or `python3 compose/member.py remove {name}`")
    return ready, waiting


def cmd_run(args: argparse.Namespace) -> list[str]:
    wait_healthy(args.container, args.container)
    done = subprocess.run(["docker", "logs", args.container], capture_output=True, text=True, check=False)
    logs = done.stdout + done.stderr
    warnings = [line for line in logs.splitlines() if line.startswith("tf29-env: WARNING")]
    return [*warnings, *run_lines(logs, args.bind, args.jupyter_port, args.ssh_port, args.ssh_key)]


def cmd_ready(project: member.Project) -> list[str]:
    ready, waiting = ready_members(project)
    for line in waiting:
        print(line, file=sys.stderr)
    if not ready:
        raise AccessError("no member has secrets yet: `python3 compose/member.py add NAME --ssh-key FILE.pub` "
                          "adds one (docs/team.md)")
    return [" ".join(ready)]


def cmd_team(args: argparse.Namespace, project: member.Project) -> list[str]:
    compose = project.read(project.compose_file)
    # As compose reads it: the environment first, then .env, then docker-compose.yml's default.
    setting = "TF29ENV_BIND_ADDRESS"
    bind = os.environ.get(setting) or env_file_value(project.compose_file.parent, setting) or "0.0.0.0"  # noqa: S104
    # What compose/teamenv.py derived for compose (make up exports it); docker-compose.yml's defaults without.
    jupyter_address = os.environ.get("TF29ENV_JUPYTER_ADDRESS") or "127.0.0.1"
    https = os.environ.get("TF29ENV_GEN_CERT") == "yes" or bool(os.environ.get("TF29ENV_JUPYTER_CERT_FILE"))
    lines = []
    for name in args.names:
        container = subprocess.run([*shlex.split(args.compose), "ps", "-q", name], capture_output=True, text=True,
                                   check=False, cwd=project.compose_file.parent).stdout.strip()
        if not container:
            raise AccessError(f"{name}: compose started no container for it")
        wait_healthy(container, name)
        jupyter_port, ssh_port = member_ports(compose, name)
        token = (project.secrets_dir / name / "jupyter_token").read_text().strip()
        lines += member_lines(name, bind, jupyter_port, ssh_port, token, jupyter_address, "https" if https else "http")
    return lines


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="access.py", description="Say how to reach the environments.")
    parser.add_argument("--project-dir", type=Path, default=member.PROJECT_DIR,
                        help="the folder of docker-compose.yml (default: the one above this script)")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="make run's container: wait until healthy, print the URL and SSH line")
    run.add_argument("--container", default=CONTAINER, help="the container's name (make run's CONTAINER)")
    run.add_argument("--bind", default="0.0.0.0", help="the host address the ports are published on")  # noqa: S104
    run.add_argument("--jupyter-port", type=int, required=True, help="the host port of JupyterLab")
    run.add_argument("--ssh-port", type=int, required=True, help="the host port of SSH")
    run.add_argument("--ssh-key", default="", help="the public key file given to SSH (empty: SSH is off)")
    commands.add_parser("ready", help="the members that have secrets, for compose up")
    team = commands.add_parser("team", help="wait until the members are healthy, print their URLs and SSH lines")
    team.add_argument("--compose", default="docker compose", help="the compose command (compose.mk's COMPOSE)")
    team.add_argument("names", nargs="*", help="the members compose started")
    return parser.parse_args(argv)


def main(argv: Sequence[str]) -> int:
    args = parse_args(argv)
    project = member.Project.at(args.project_dir)
    try:
        if args.command == "run":
            lines = cmd_run(args)
        elif args.command == "ready":
            lines = cmd_ready(project)
        else:
            lines = cmd_team(args, project)
    except (AccessError, member.MemberError) as exc:
        print(f"access.py: error: {exc}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
