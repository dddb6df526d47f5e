"""The environment is the same everywhere a person types: a JupyterLab terminal opened as the
launcher opens one, `docker exec` with a login shell (as the dev user and as root) and without, an
interactive SSH session and an SSH command, and a start hook. In each, python, pip, jupyter and
tensorboard are the venv's, TensorFlow imports, nvidia-smi is found where the NVIDIA toolkit mounts
it, the user's own variables are kept and the Jupyter token is not there; terminals and SSH
sessions open in the home folder. One test per entry point, so a regression names the broken one."""

from collections.abc import Callable, Iterator

import pytest
from docker import DockerClient
from docker.models.containers import Container

from testkit import ssh
from testkit.containers import LOOPBACK, TrackedContainer
from testkit.ssh import KeyPair
from testkit.terminal import LabTerminal, Shell, SshShell, type_command

pytestmark = pytest.mark.image

TOKEN = "tok-5be0c2d1e8a94f37"
SETTING = ("TEAM_SETTING", "kept-by-every-shell")
HOME = "/home/jovyan"
VENV_BIN = "/opt/venv/bin"
TOOLS = ("python", "pip", "jupyter", "tensorboard")
# Where the NVIDIA Container Toolkit mounts it; a stand-in here, since this host has no driver.
NVIDIA_SMI = "/usr/bin/nvidia-smi"
# What a person would check first, one `name=value` line each; `env` last, for the token check.
PROBE = "; ".join([
    "printf 'cwd=%s\\n' \"$PWD\"",
    f"for tool in {' '.join(TOOLS)} nvidia-smi; do printf '%s=%s\\n' \"$tool\" \"$(command -v \"$tool\")\"; done",
    f"printf 'setting=%s\\n' \"${{{SETTING[0]}-}}\"",
    "python -c 'import tensorflow as tf; print(\"tensorflow=\" + tf.__version__)' 2>/dev/null",
    "env | sed 's/^/env:/'",
])


class Box:
    """One container for every entry point: token from a file (so not in the container's own
    configuration, which `docker exec` hands out), SSH, a start hook that runs the probe."""

    def __init__(self, tracked: TrackedContainer, container: Container) -> None:
        self.tracked = tracked
        self.container = container
        self.url = f"http://{LOOPBACK}:{tracked.port(container, 8888)}/"


@pytest.fixture(scope="module")
def box(docker_client: DockerClient, image: str, keypair: KeyPair,
        tmp_path_factory: pytest.TempPathFactory) -> Iterator[Box]:
    folder = tmp_path_factory.mktemp("shells")
    (folder / "token").write_text(TOKEN + "\n")
    (folder / "nvidia-smi").write_text("#!/bin/sh\necho 'stand-in for the toolkit-mounted nvidia-smi'\n")
    (folder / "nvidia-smi").chmod(0o755)
    hooks = folder / "start.d"
    hooks.mkdir()
    (hooks / "10-probe").write_text(f"#!/bin/bash\n{{ {PROBE}; }} | sed 's/^/hook-probe: /'\n")
    (hooks / "10-probe").chmod(0o755)
    tracked = TrackedContainer(docker_client, image)
    try:
        container = tracked.run(
            environment={"JUPYTER_TOKEN_FILE": "/run/secrets/token", "SSH_AUTHORIZED_KEYS": keypair.public_text,
                         SETTING[0]: SETTING[1]},
            volumes={str(folder / "token"): {"bind": "/run/secrets/token", "mode": "ro"},
                     str(folder / "nvidia-smi"): {"bind": NVIDIA_SMI, "mode": "ro"},
                     str(hooks): {"bind": "/etc/tf29-env/start.d", "mode": "ro"}})
        tracked.wait_healthy(container, timeout=120)
        yield Box(tracked, container)
    finally:
        tracked.remove_all()


def parse(output: str, prefix: str = "") -> dict[str, str]:
    lines = [line.removeprefix(prefix) for line in output.splitlines() if line.startswith(prefix)]
    return dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("env:"))


def env_lines(output: str, prefix: str = "") -> list[str]:
    return [line.removeprefix(prefix).removeprefix("env:") for line in output.splitlines()
            if line.removeprefix(prefix).startswith("env:")]


def assert_the_image_environment(output: str, prefix: str = "", cwd: str | None = HOME) -> None:
    found = parse(output, prefix)
    for tool in TOOLS:
        assert found.get(tool) == f"{VENV_BIN}/{tool}", output[-3000:]
    assert found.get("tensorflow") == "2.9.3", output[-3000:]
    assert found.get("nvidia-smi") == NVIDIA_SMI, output[-3000:]
    assert found.get("setting") == SETTING[1], output[-3000:]
    if cwd is not None:
        assert found.get("cwd") == cwd, output[-3000:]
    environment = env_lines(output, prefix)
    assert any(line.startswith("PATH=") for line in environment), output[-3000:]
    assert TOKEN not in output
    assert not [line for line in environment if line.startswith(("JUPYTER_TOKEN=", "JPY_API_TOKEN="))], environment


def typed_in(shell: Shell, close: Callable[[], None]) -> str:
    try:
        code, output = type_command(shell, PROBE)
    finally:
        close()
    assert code == 0, output
    return output


@pytest.mark.parametrize("body", [{"cwd": ""}, None], ids=["from-the-launcher", "without-cwd"])
def test_jupyterlab_terminal(box: Box, body: dict[str, str] | None) -> None:
    """File > New > Terminal, or the launcher's tile: a login shell started by the server."""
    terminal = LabTerminal(box.url, TOKEN, body)
    assert_the_image_environment(typed_in(terminal, terminal.close))


@pytest.mark.parametrize("user", ["jovyan", "root"])
def test_docker_exec_login_shell(box: Box, user: str) -> None:
    """`docker exec -u jovyan NAME bash -lc '...'` (and as root): /etc/profile resets PATH on Debian."""
    code, output = box.tracked.exec(box.container, ["bash", "-lc", PROBE], user=user)
    assert code == 0, output
    assert_the_image_environment(output, cwd=None)  # docker exec starts where -w says, / by default


def test_docker_exec_plain_shell(box: Box) -> None:
    code, output = box.tracked.exec(box.container, ["bash", "-c", PROBE], user="jovyan", workdir=HOME)
    assert code == 0, output
    assert_the_image_environment(output)


def test_ssh_interactive_session(box: Box, keypair: KeyPair) -> None:
    """`ssh -p PORT jovyan@HOST`, then typing: a login shell with a terminal."""
    client = ssh.connect(box.tracked.port(box.container, 22), "jovyan", keypair)
    try:
        shell = SshShell(client)
        assert_the_image_environment(typed_in(shell, shell.close))
    finally:
        client.close()


def test_ssh_command(box: Box, keypair: KeyPair) -> None:
    """`ssh -p PORT jovyan@HOST 'python train.py'`: no terminal, no login shell."""
    client = ssh.connect(box.tracked.port(box.container, 22), "jovyan", keypair)
    try:
        code, output = ssh.run(client, PROBE)
    finally:
        client.close()
    assert code == 0, output
    assert_the_image_environment(output)


def test_start_hook(box: Box) -> None:
    """A start hook runs as root before the services, in the container's environment."""
    logs = box.tracked.logs(box.container)
    assert_the_image_environment(logs, prefix="hook-probe: ", cwd=None)

