""".env.example documents every variable of the compose files with its real default, and works as
.env; compose.mk has the team targets, each with a `## description` for `make help`."""

import re
import subprocess
import sys
from pathlib import Path

from compose import teamenv
from tests.compose.team import REPO, copy_project, resolved, size_bytes

# ${NAME}, ${NAME:-default} or ${NAME-default} in a compose file.
VARIABLE_RE = re.compile(r"\$\{([A-Z0-9_]+)(?::?-([^}]*))?\}")


def example_settings() -> dict[str, str]:
    """NAME=value lines of .env.example, each of which must follow a comment explaining it."""
    lines = (REPO / ".env.example").read_text().splitlines()
    settings = {}
    for number, line in enumerate(lines):
        if line and not line.startswith("#"):
            name, _, value = line.partition("=")
            assert lines[number - 1].startswith("#"), f".env.example: {name} has no comment above it"
            settings[name] = value
    return settings


def test_env_example_documents_every_variable_with_its_default() -> None:
    used: dict[str, str] = {}
    for path in (REPO / "docker-compose.yml", REPO / "compose" / "gpu.yml"):
        for name, default in VARIABLE_RE.findall(path.read_text()):
            assert used.setdefault(name, default) == default, f"{name} has two defaults"
    settings = example_settings()
    # make up sets these from .env's TLS settings, which compose/teamenv.py alone reads.
    used = {**{k: v for k, v in used.items() if k not in teamenv.DERIVED}, **teamenv.SETTINGS}
    assert set(used) == {name for name in settings if name.startswith("TF29ENV_")}
    for name, default in used.items():
        assert settings[name] == default, f".env.example shows {name}={settings[name]}, the file uses {default}"
    assert settings["TF29ENV_IMAGE"] == "tf29-env:latest-gpu"  # build.py's moving tag of the gpu variant


def test_env_example_works_as_env(tmp_path: Path, compose: str) -> None:
    project = copy_project(tmp_path / "team")
    (project / ".env").write_text((REPO / ".env.example").read_text())
    services = resolved(project, compose, {"PATH": "/usr/local/bin:/usr/bin:/bin"})["services"]
    assert sorted(services) == ["alice", "bob"]
    assert services["bob"]["image"] == "tf29-env:latest-gpu"
    # COMPOSE_FILE from .env brought in compose/gpu.yml.
    assert services["bob"]["deploy"]["resources"]["reservations"]["devices"][0]["driver"] == "nvidia"
    # Plain HTTP on loopback only: compose alone does not know TF29ENV_TLS (make up does).
    assert services["bob"]["ports"] == ["0.0.0.0:2202:22/tcp", "127.0.0.1:8802:8888/tcp"]


def test_compose_mk_has_the_team_targets_each_described() -> None:
    text = (REPO / "compose.mk").read_text()
    phony = set(re.search(r"^\.PHONY: (.+)$", text, re.MULTILINE).group(1).split())  # type: ignore[union-attr]
    described = dict(re.findall(r"^([a-z][a-z-]*):[^\n#]*## (\S.+)$", text, re.MULTILINE))
    assert {"up", "down", "logs", "ps"} <= set(described)
    assert set(described) == phony, "every target is .PHONY and has a ## description"


def test_compose_mk_runs_compose_in_the_project_folder(tmp_path: Path, compose: str) -> None:
    project = copy_project(tmp_path / "team")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # --no-print-directory: under `make test` this make is a sub-make and would announce its folder.
    dry = subprocess.run(["make", "--no-print-directory", "-n", "-f", str(project / "compose.mk"), "up", "down",
                          "ps", "logs", "MEMBER=alice", f"COMPOSE={compose}"], cwd=elsewhere, capture_output=True,
                         text=True, check=True)
    # down waits each member's stop_grace_period (the runs' grace: docs/jobs.md) unless STOP_TIMEOUT says.
    assert dry.stdout.splitlines() == [
        f'cd {project} && derived=$(python3 compose/teamenv.py) && eval "$derived" && \\',
        "memlock=$(python3 compose/memlock.py) && members=$(python3 compose/access.py ready) && \\",
        f"TF29ENV_MEMLOCK=$memlock python3 -m compose.rollout --compose '{compose}' $members && \\",
        f"python3 compose/access.py team --compose '{compose}' $members",
        f"cd {project} && {compose} down --remove-orphans",
        f"cd {project} && {compose} ps alice",
        f"cd {project} && {compose} logs -f --tail=200 alice"]
    timed = subprocess.run(["make", "--no-print-directory", "-n", "-f", str(project / "compose.mk"), "down",
                            "restart", "STOP_TIMEOUT=20", f"COMPOSE={compose}"], cwd=elsewhere, capture_output=True,
                           text=True, check=True)
    assert timed.stdout.splitlines() == [f"cd {project} && {compose} down --remove-orphans -t 20",
                                         f"cd {project} && {compose} restart -t 20 "]


def test_the_limits_make_run_and_the_hub_read_are_what_compose_gives_a_member(tmp_path: Path, compose: str) -> None:
    """compose/limits.py reads docker-compose.yml's x-member block as compose itself resolves it."""
    project = copy_project(tmp_path / "team")
    alice = resolved(project, compose, {"PATH": "/usr/local/bin:/usr/bin:/bin"})["services"]["alice"]
    printed = subprocess.run([sys.executable, str(project / "compose" / "limits.py"), "docker-args"],
                             capture_output=True, text=True, check=True).stdout.split()
    pairs = list(zip(printed[::2], printed[1::2], strict=True))  # each flag with its value
    args = dict(pairs)
    assert size_bytes(args["--shm-size"]) == alice["shm_size"] == 1 << 30
    assert args["--ulimit"] == f"stack={alice['ulimits']['stack']}"
    assert args["--log-driver"] == alice["logging"]["driver"] == "json-file"
    log_options = [value.split("=", 1) for flag, value in pairs if flag == "--log-opt"]
    assert dict(log_options) == alice["logging"]["options"]
    # The engine's wait is compose's stop_grace_period; the entrypoint's grace is the member's own.
    assert f"{args['--stop-timeout']}s" == alice["stop_grace_period"] == "35s"
    assert args["--env"] == f"STOP_GRACE_SECONDS={alice['environment']['STOP_GRACE_SECONDS']}"
    assert len(pairs) == 5 + len(log_options)
