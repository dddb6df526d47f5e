"""The hub mode: the image as JupyterHub's single-user server, against a real JupyterHub (the
image's own jupyterhub, testkit/hubapi.py). Started as DockerSpawner starts it (root, no command,
the hub's variables) and as Zero to JupyterHub does (uid 1000:100, the command
jupyterhub-singleuser); the hub's login is the only one, its secrets stay out of SSH sessions,
start hooks, the logs and the self-check's report, and a hub user name never becomes the Unix user.
The whole hub (proxy, DockerSpawner, OAuth in a browser session, the culler) is tests/hub's."""

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from docker import DockerClient
from docker.models.containers import Container

from testkit import ssh
from testkit.containers import LOOPBACK, TrackedContainer
from testkit.hubapi import SERVER_PORT, MiniHub
from testkit.jupyter import api_status
from testkit.ssh import KeyPair
from testkit.terminal import LabTerminal, type_command

pytestmark = pytest.mark.image

# A name as an identity provider hands them out: '@', '.', and capitals (which the hub folds).
USER = "Ada.Lovelace@example.org"
HUB_USER = USER.lower()
SECRETS = ("JUPYTERHUB_API_TOKEN", "JPY_API_TOKEN", "JUPYTERHUB_CLIENT_ID", "JUPYTERHUB_OAUTH_CALLBACK_URL",
           "JUPYTERHUB_OAUTH_ACCESS_SCOPES", "JUPYTERHUB_OAUTH_SCOPES")


@pytest.fixture(scope="module")
def hub(docker_client: DockerClient, image: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MiniHub]:
    minihub = MiniHub(docker_client, image, tmp_path_factory.mktemp("hub"))
    try:
        minihub.start()
        yield minihub
    finally:
        minihub.stop()


@pytest.fixture(scope="module")
def user_token(hub: MiniHub) -> str:
    return hub.add_user(HUB_USER)


def prefix(hub: MiniHub, token: str) -> str:
    return hub.server_env(HUB_USER, token)["JUPYTERHUB_SERVICE_PREFIX"]


def spawn(tracked: TrackedContainer, hub: MiniHub, token: str, **kwargs: Any) -> Container:
    environment = {**hub.server_env(HUB_USER, token), **kwargs.pop("environment", {})}
    assert hub.network is not None
    container = tracked.run(environment=environment, network=hub.network.name, publish=(SERVER_PORT, 22), **kwargs)
    tracked.wait_healthy(container, timeout=90)
    return container


def server_process(tracked: TrackedContainer, container: Container) -> tuple[str, str]:
    """(uid, command line) of the single-user server."""
    code, out = tracked.exec(container, ["ps", "-eo", "uid=,args="])
    assert code == 0, out
    lines = [line.split(None, 1) for line in out.splitlines() if "/opt/venv/bin/jupyterhub-singleuser" in line]
    assert len(lines) == 1, out
    return lines[0][0], lines[0][1]


def test_as_spawned_by_dockerspawner(tracked: TrackedContainer, hub: MiniHub, user_token: str,
                                     keypair: KeyPair, tmp_path: Path) -> None:
    """Root, no command: the hub's variables alone select the hub mode; sshd as well, and a start
    hook that prints its whole environment."""
    hooks = tmp_path / "start.d"
    hooks.mkdir()
    (hooks / "10-env.sh").write_text("env\n")
    container = spawn(tracked, hub, user_token, environment={"SSH_AUTHORIZED_KEYS": keypair.public_text},
                      volumes={str(hooks): {"bind": "/etc/tf29-env/start.d", "mode": "ro"}})
    port = tracked.port(container, SERVER_PORT)
    base = prefix(hub, user_token)

    # The hub's login is the only one: the hub vouches for the user's token; nothing else gets in.
    assert api_status(port, user_token, base) == 200
    assert api_status(port, None, base) == 403
    assert api_status(port, "0" * 48, base) == 403
    uid, args = server_process(tracked, container)
    assert uid == "1000", args  # jovyan, whatever the hub calls the user
    assert "--ServerApp.root_dir=/home/jovyan" in args  # the file browser opens at home

    logs = tracked.logs(container)
    assert "hub mode" in logs
    assert user_token not in logs  # not from the entrypoint, Jupyter, nor the hook's `env`
    assert "JUPYTERHUB_USER=" in logs  # ... which did run, and saw the hub's other variables
    assert "JupyterLab token" not in logs

    client = ssh.connect(tracked.port(container, 22), "jovyan", keypair)
    try:
        code, env = ssh.run(client, "whoami; env")
    finally:
        client.close()
    assert code == 0, env
    assert env.splitlines()[0] == "jovyan"
    assert user_token not in env
    assert not [name for name in SECRETS if f"\n{name}=" in env], env
    assert f"JUPYTERHUB_USER={HUB_USER}" in env  # not a secret: the variables that are not stay
    # %tensorboard's iframe goes through the server's proxy under the hub's prefix.
    assert f"\nTENSORBOARD_PROXY_URL={base}proxy/%PORT%/\n" in env

    # A terminal of the hub's server (a login shell): the venv's python, in the folder Lab opens.
    terminal = LabTerminal(f"http://{LOOPBACK}:{port}{base}", user_token, {"cwd": ""})
    try:
        code, shown = type_command(terminal, "command -v python tensorboard; pwd")
    finally:
        terminal.close()
    assert (code, shown.split()) == (0, ["/opt/venv/bin/python", "/opt/venv/bin/tensorboard", "/home/jovyan"]), shown

    code, report = tracked.exec(container, ["selfcheck", "--json", "--mode", "warn", "--layers", "6"], user="jovyan",
                                environment={"JUPYTERHUB_API_TOKEN": user_token})
    assert user_token not in report
    assert json.loads(report)["layers"], report


@pytest.mark.parametrize("command", [["jupyterhub-singleuser"], ["/usr/local/bin/start-singleuser.sh"]])
def test_as_spawned_by_zero_to_jupyterhub(tracked: TrackedContainer, hub: MiniHub, user_token: str,
                                          keypair: KeyPair, command: list[str]) -> None:
    """uid 1000, gid 100 (Z2JH's default securityContext) and the hub's command: no root, so no
    SSH, said once; the server all the same. docker-stacks' start-singleuser.sh means the same."""
    container = spawn(tracked, hub, user_token, user="1000:100", command=command,
                      environment={"SSH_AUTHORIZED_KEYS": keypair.public_text})
    assert api_status(tracked.port(container, SERVER_PORT), user_token, prefix(hub, user_token)) == 200
    assert server_process(tracked, container)[0] == "1000"
    assert tracked.logs(container).count("SSH is off: sshd needs root") == 1


def test_hub_args_pass_through(tracked: TrackedContainer, hub: MiniHub, user_token: str) -> None:
    """The hub's own args (Spawner.args) reach the server after the image's, so they win."""
    container = spawn(tracked, hub, user_token,
                      command=["jupyterhub-singleuser", "--ServerApp.root_dir=/home/jovyan/work"])
    assert server_process(tracked, container)[1].endswith("--ServerApp.root_dir=/home/jovyan/work")


@pytest.mark.parametrize(("command", "environment", "message"), [
    (["jupyterhub-singleuser"], {}, "needs JUPYTERHUB_API_TOKEN"),
    (None, {"JUPYTERHUB_API_TOKEN": "x" * 32, "JUPYTERHUB_SERVICE_URL": "not a url"},
     "JUPYTERHUB_SERVICE_URL='not a url' is not a URL"),
    (None, {"JUPYTERHUB_API_TOKEN": "x" * 32}, "JUPYTERHUB_SERVICE_URL is not set"),
    (None, {"JUPYTERHUB_API_TOKEN": "x" * 32, "JUPYTERHUB_SERVICE_URL": "http://0.0.0.0:8888/",
            "JUPYTER_TOKEN": "y" * 32}, "JUPYTER_TOKEN is set, but in the hub mode"),
    (["start-singleuser.py", "--ServerApp.token="],
     {"JUPYTERHUB_API_TOKEN": "x" * 32, "JUPYTERHUB_SERVICE_URL": "http://0.0.0.0:8888/"},
     "the server's argument '--ServerApp.token'"),
    (["start-notebook.sh", "--IdentityProvider.token="], {}, "the server's argument '--IdentityProvider.token'"),
    (["start.sh"], {}, "start.sh needs a command"),
])
def test_bad_hub_settings(tracked: TrackedContainer, command: list[str] | None, environment: dict[str, str],
                          message: str) -> None:
    container = tracked.run(command=command, environment=environment, publish=())
    assert tracked.wait_exit(container) == 2
    logs = tracked.logs(container)
    assert logs.strip().splitlines() == [logs.strip()], logs  # one line
    assert message in logs
    assert "x" * 32 not in logs and "y" * 32 not in logs


def test_cpu_profile_sees_no_gpu_and_says_so(tracked: TrackedContainer, variant: str) -> None:
    """A hub's CPU profile on a GPU node sets NVIDIA_VISIBLE_DEVICES=void (the image's default, all,
    would show the container every GPU of the node): the self-check takes that as meant, not as a
    broken GPU start, and strict mode passes. (Without a GPU here, the Toolkit's part is not run.)"""
    container = tracked.run(command=["selfcheck", "--mode", "strict", "--json", "--layers", "1,2,5,6"],
                            environment={"NVIDIA_VISIBLE_DEVICES": "void"}, publish=())
    assert tracked.wait_exit(container, timeout=120) == 0, tracked.logs(container)[-2000:]
    report = json.loads(container.logs(stderr=False).decode())
    checks = {check["id"]: check for layer in report["layers"] for check in layer["checks"]}
    suffix = "cpu_variant" if variant == "cpu" else "cpu_only"
    for check_id in (f"driver.{suffix}", f"lib.{suffix}", f"perf.{suffix}", "env.nvidia_runtime"):
        assert checks[check_id]["status"] == "SKIP", checks[check_id]
    if variant == "gpu":
        assert "NVIDIA_VISIBLE_DEVICES=void starts this container without GPUs" in checks["driver.cpu_only"]["what"]
