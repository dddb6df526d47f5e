"""The Apptainer mode (issue 28, image/entrypoint.d/config.sh) on the real engine, with Docker
doing what Apptainer does to a container: APPTAINER_CONTAINER set, the calling user's uid (--user),
a read-only image (--read-only, a tmpfs on /tmp), the host user's home bind-mounted with HOME
pointing at it, and a node's network shared by every user's server on it. Tests may not use the
host's network, so a "node" is one container's network namespace, published on loopback, that the
second user's container joins (network_mode container:NODE). tests/hpc runs the same under real
Apptainer and Slurm.

Also the Docker recipe that Apptainer's documentation gives to try an image for it:
`docker run --read-only --tmpfs /run --tmpfs /tmp --user 1000:100 IMAGE` starts JupyterLab."""

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
from docker import DockerClient
from docker.models.containers import Container

from testkit.containers import LOOPBACK, TrackedContainer, stop_seconds
from testkit.jupyter import api_status
from testkit.terminal import LabTerminal, type_command

ALICE, BOB = 2001, 2002
TUNNEL = re.compile(r"^tf29-env: JupyterLab listens on (\S+):(\d+)\. On your laptop run: (ssh -N -L .+)$", re.M)
URL = re.compile(r"^tf29-env: then open (http://localhost:8888/lab\?token=([0-9a-f]{48}))$", re.M)
SHADOW = "import sys; sys.exit('numpy from ~/.local shadows the image')\n"
PROBE = "import numpy, os; print('numpy from', os.path.dirname(numpy.__file__))"


@dataclass
class User:
    name: str
    uid: int
    home: Path
    scratch: Path


def make_user(root: Path, name: str, uid: int) -> User:
    """A host user's home (with work/ and a package in ~/.local that would shadow the image's
    numpy) and a TMPDIR of their own, as Slurm gives each job: both owned by the uid."""
    home, scratch = root / f"home-{uid}", root / f"tmp-{uid}"
    site = home / ".local/lib/python3.9/site-packages/numpy"
    site.mkdir(parents=True)
    (site / "__init__.py").write_text(SHADOW)
    (home / "work").mkdir()
    scratch.mkdir()
    for path in [home, scratch, *home.rglob("*")]:
        os.chown(path, uid, uid)
    return User(name, uid, home, scratch)


def apptainer_like(user: User, **environment: str) -> dict[str, Any]:
    """containers.run arguments for the image as Apptainer starts it for USER. The container has no
    passwd entry for the uid (Apptainer adds one): the entrypoint's libnss-wrapper entry names it
    NB_USER."""
    return {
        "user": f"{user.uid}:{user.uid}", "read_only": True, "tmpfs": {"/tmp": ""},  # noqa: S108 - the container's
        "environment": {"APPTAINER_CONTAINER": "/shared/tf29-env.sif", "HOME": "/home/user",
                        "TMPDIR": "/scratch", "NB_USER": user.name, **environment},
        "volumes": {str(user.home): {"bind": "/home/user", "mode": "rw"},
                    str(user.scratch): {"bind": "/scratch", "mode": "rw"}},
    }


def tunnel_of(tracked: TrackedContainer, container: Container) -> tuple[str, int, str, str]:
    """(node, port, ssh command, token) from the two lines the start prints once JupyterLab listens."""
    logs = tracked.wait_log(container, "tf29-env: then open ", timeout=120)
    tunnels, urls = TUNNEL.findall(logs), URL.findall(logs)
    assert len(tunnels) == 1 and len(urls) == 1, logs
    node, port, command = tunnels[0]
    return node, int(port), command, urls[0][1]


@pytest.fixture(scope="module")
def users(tmp_path_factory: pytest.TempPathFactory) -> tuple[User, User]:
    root = tmp_path_factory.mktemp("apptainer-homes")
    return make_user(root, "alice", ALICE), make_user(root, "bob", BOB)


@pytest.fixture(scope="module")
def node(docker_client: DockerClient, image: str) -> Iterator[TrackedContainer]:
    containers = TrackedContainer(docker_client, image)
    yield containers
    containers.remove_all()


@pytest.fixture(scope="module")
def alice(node: TrackedContainer, users: tuple[User, User]) -> Container:
    """Alice's server, the first on the node, in a Slurm job on node7 submitted from login1; SSH keys
    given change nothing."""
    container = node.run(publish=(8888, 8889), quiet=False, **apptainer_like(
        users[0], SLURMD_NODENAME="node7", SLURM_SUBMIT_HOST="login1", SSH_AUTHORIZED_KEYS="ssh-ed25519 AAAA x"))
    node.wait_healthy(container, timeout=120)
    return container


def test_the_first_server_takes_8888_and_says_how_to_reach_it(node: TrackedContainer, alice: Container) -> None:
    name, port, command, token = tunnel_of(node, alice)
    assert (name, port) == ("node7", 8888)
    assert command == "ssh -N -L 8888:node7:8888 alice@login1"
    published = node.port(alice, 8888)
    assert api_status(published) == 403
    assert api_status(published, token) == 200
    logs = node.logs(alice)
    assert "no sshd (it needs root): reach JupyterLab through the login node with ssh -L" in logs, logs
    assert "ERROR" not in logs and "WARNING" not in logs, logs
    code, processes = node.exec(alice, ["ps", "-eo", "comm="])
    assert code == 0 and "sshd" not in processes.split(), processes


def autograph_leftover(path: Path) -> bool:
    """What TensorFlow's autograph (the self-check's tf.function) writes to TMPDIR: its generated modules
    and their bytecode, the user's scratch as any TensorFlow program of theirs would use it."""
    prefix = "__autograph_generated_file"
    if path.name == "__pycache__":
        return all(entry.name.startswith(prefix) for entry in path.iterdir())
    return path.name.startswith(prefix)


def test_the_run_directory_is_the_runs_own_and_the_image_is_not_written(
    node: TrackedContainer, alice: Container, users: tuple[User, User]
) -> None:
    # The self-check ran as the user and wrote its report there (waited for: it uses TMPDIR too).
    report = node.wait_log(alice, "selfcheck: ", timeout=120)
    made = [path.name for path in users[0].scratch.iterdir() if not autograph_leftover(path)]
    assert len(made) == 1 and re.fullmatch(rf"tf29-env-{ALICE}-\d+", made[0]), made
    run_dir = users[0].scratch / made[0]
    assert (run_dir.stat().st_mode & 0o777, run_dir.stat().st_uid) == (0o700, ALICE)
    assert (run_dir / "jupyter").is_dir(), report
    _, out = node.exec(alice, ["sh", "-c", "touch /opt/x /home/jovyan/x /run/tf29-env/x 2>&1"],
                       user=f"{ALICE}:{ALICE}")
    assert out.count("Read-only file system") == 3, out


def test_the_home_is_the_hosts_with_the_quickstart_notebooks_and_work(
    node: TrackedContainer, alice: Container, users: tuple[User, User]
) -> None:
    _, _, _, token = tunnel_of(node, alice)
    base = f"http://{LOOPBACK}:{node.port(alice, 8888)}"
    headers = {"Authorization": f"token {token}"}
    listing = requests.get(f"{base}/api/contents/tf29-env-quickstart", headers=headers, timeout=10)
    assert listing.status_code == 200
    assert "1-environment.ipynb" in {item["name"] for item in listing.json()["content"]}
    saved = requests.put(f"{base}/api/contents/work/kept.txt", headers=headers, timeout=10,
                         json={"type": "file", "format": "text", "content": "kept"})
    assert saved.status_code == 201, saved.text
    assert (users[0].home / "work/kept.txt").read_text() == "kept"
    assert (users[0].home / "work/kept.txt").stat().st_uid == ALICE


def test_a_terminal_does_not_import_packages_from_the_hosts_local(node: TrackedContainer, alice: Container) -> None:
    _, _, _, token = tunnel_of(node, alice)
    terminal = LabTerminal(f"http://{LOOPBACK}:{node.port(alice, 8888)}/", token)
    try:
        code, out = type_command(terminal, f'python -c "{PROBE}"; echo "site=$PYTHONNOUSERSITE home=$HOME"')
    finally:
        terminal.close()
    assert code == 0, out
    assert "numpy from /opt/venv/lib/python3.9/site-packages/numpy" in out and "site=1 home=/home/user" in out, out


@pytest.mark.parametrize("user_site", ["", "1"], ids=["default", "enable-user-site"])
def test_the_hosts_pythonpath_is_dropped_unless_asked_for(
    node: TrackedContainer, users: tuple[User, User], user_site: str
) -> None:
    """A PYTHONPATH from the host (a module system, a shell profile) naming ~/.local's packages: the
    image's numpy wins, unless ENABLE_USER_SITE=1 keeps the host's setting as it is."""
    container = node.run(publish=(), command=["python", "-c", PROBE], **apptainer_like(
        users[1], PYTHONPATH="/home/user/.local/lib/python3.9/site-packages", ENABLE_USER_SITE=user_site))
    code = node.wait_exit(container, timeout=120)
    logs = node.logs(container)
    if user_site:
        assert code == 1 and "numpy from ~/.local shadows the image" in logs, logs
        assert "ENABLE_USER_SITE=1: the host's PYTHONPATH and ~/.local" in logs, logs
    else:
        assert code == 0 and "numpy from /opt/venv/lib/python3.9/site-packages/numpy" in logs, logs
        assert "WARNING: PYTHONPATH from the host is not passed on" in logs, logs


def test_a_second_user_on_the_node_gets_the_next_port(
    node: TrackedContainer, alice: Container, users: tuple[User, User]
) -> None:
    bob = node.run(publish=(), network_mode=f"container:{alice.id}", **apptainer_like(users[1]))
    name, port, command, token = tunnel_of(node, bob)
    assert port == 8889
    hostname = node.exec(bob, ["hostname"])[1].strip()
    assert (name, command) == (hostname, f"ssh -N -L 8888:localhost:8889 bob@{hostname}")
    published = node.port(alice, 8889)
    assert api_status(published, token) == 200
    assert api_status(published, tunnel_of(node, alice)[3]) == 403  # alice's token is not bob's
    # A port asked for that bob holds: one line, exit 2, nothing started.
    third = node.run(publish=(), network_mode=f"container:{alice.id}",
                     **apptainer_like(users[1], JUPYTER_PORT="8889"))
    assert node.wait_exit(third, timeout=60) == 2
    assert node.logs(third).strip().splitlines() == [
        "tf29-env: ERROR: JUPYTER_PORT=8889 is in use on this node (another server?): choose another port, "
        "or unset JUPYTER_PORT to take 8888 or the first free port after it"]
    # SIGTERM (Slurm's end of a job) ends bob's server within seconds, exit 0, its run directory gone.
    assert stop_seconds(bob) < 8
    bob.reload()
    assert bob.attrs["State"]["ExitCode"] == 0
    assert not [path for path in users[1].scratch.iterdir() if path.name.startswith("tf29-env-")]


# Servers started at once on a node, as the jobs of several users starting together: each token's,
# its runtime file's port and the ports that then answer with that token. A config that delays the
# start by 3 s stands for a loaded node's cold start: it holds each server between choosing its port
# and the moment Jupyter Server's own code would have listened on it (then a server whose listen
# failed answers nowhere, however long one waits; a file written after listening answers at once).
AT_ONCE = """
import glob, json, os, subprocess, tempfile, time, urllib.error, urllib.request
SLOW = "import time\\nfrom jupyter_server.serverapp import ServerApp\\nstart = ServerApp.start_app\\n" \\
       "ServerApp.start_app = lambda self: time.sleep(3) or start(self)\\n"
def status(port, token):
    request = urllib.request.Request(f"http://127.0.0.1:{port}/api/status", headers={"Authorization": f"token {token}"})
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:
            return answer.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return 0
runtime = tempfile.mkdtemp()
with open(f"{runtime}/jupyter_server_config.py", "w") as config:  # a user's own, loaded after the image's
    config.write(SLOW)
tokens = [f"{n:048x}" for n in range(1, 4)]
servers = [subprocess.Popen(["jupyter", "server", "--ip=0.0.0.0", "--port=8888", "--ServerApp.port_retries=10"],
                            env={**os.environ, "JUPYTER_TOKEN": token, "JUPYTER_RUNTIME_DIR": runtime,
                                 "JUPYTER_CONFIG_DIR": runtime,
                                 "PYTHONNOUSERSITE": "1"}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
           for token in tokens]
deadline = time.monotonic() + 90
while len(glob.glob(f"{runtime}/jpserver-*.json")) < len(servers) and time.monotonic() < deadline:
    time.sleep(0.2)
infos = [json.load(open(path)) for path in glob.glob(f"{runtime}/jpserver-*.json")]
ports = sorted({info["port"] for info in infos} | {8888})
print(json.dumps({info["token"]: [info["port"], [p for p in ports if status(p, info["token"]) == 200]]
                  for info in infos}))
for server in servers:
    server.terminate()
"""


def test_servers_started_at_once_each_listen_where_they_say(node: TrackedContainer, alice: Container) -> None:
    """Jupyter Server's own port choice tests a port, writes it in its runtime file and listens later:
    servers starting together all said 8888 and all but one listened nowhere (seen under Slurm). The
    image's server config listens when it chooses, so the file, and the tunnel line, are right."""
    code, out = node.exec(alice, ["python", "-c", AT_ONCE], user=f"{ALICE}:{ALICE}")
    assert code == 0, out
    found = json.loads(out.strip().splitlines()[-1])
    assert len(found) == 3, out
    ports = [port for port, _ in found.values()]
    assert len(set(ports)) == 3 and 8888 not in ports, out  # alice's server holds 8888
    assert all(answering == [port] for port, answering in found.values()), out


def test_no_free_port_on_the_node_is_one_line(node: TrackedContainer, users: tuple[User, User]) -> None:
    # Another process holds 8888-8987 on a node of its own.
    holder = node.run(publish=(), command=["python", "-c", (
        "import socket, signal\n"
        "held = [socket.socket() for _ in range(100)]\n"
        "[s.bind(('0.0.0.0', 8888 + i)) or s.listen() for i, s in enumerate(held)]\n"
        "print('holding', flush=True)\n"
        "signal.pause()\n")], user="1000:100")
    node.wait_log(holder, "holding")
    container = node.run(publish=(), network_mode=f"container:{holder.id}", **apptainer_like(users[1]))
    assert node.wait_exit(container, timeout=60) == 2
    assert node.logs(container).strip().splitlines() == [
        "tf29-env: ERROR: no free port from 8888 to 8987 on this node: other servers hold them all; set "
        "JUPYTER_PORT to a free port above 8987"]


BAD: dict[str, tuple[dict[str, Any], str]] = {
    "read-only-home": ({"home_mode": "ro"}, "tf29-env: ERROR: HOME=/home/user is not writable (read-only file "
                       "system): JupyterLab keeps your notebooks, its settings and the kernels' files there; give "
                       "Apptainer a writable home (--home DIR)"),
    "fakeroot": ({"user": "0:0"}, "tf29-env: ERROR: Apptainer runs this image as the calling user, but this start "
                 "runs as uid 0 (--fakeroot?): drop --fakeroot, nothing here needs root"),
    "login-host": ({"environment": {"LOGIN_HOST": "login; rm -rf"}},
                   "tf29-env: ERROR: LOGIN_HOST is not a host name (letters, digits, dots and dashes, e.g. "
                   "login.cluster.example.org)"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_one_line(node: TrackedContainer, users: tuple[User, User], case: str) -> None:
    change, line = BAD[case]
    arguments = apptainer_like(users[1])
    if "home_mode" in change:
        arguments["volumes"][str(users[1].home)]["mode"] = change["home_mode"]
    if "user" in change:
        arguments["user"] = change["user"]
    arguments["environment"].update(change.get("environment", {}))
    container = node.run(publish=(), **arguments)
    assert node.wait_exit(container, timeout=60) == 2
    assert node.logs(container).strip().splitlines() == [line]


def test_dockers_recipe_for_apptainer_starts_jupyterlab(tracked: TrackedContainer) -> None:
    """`docker run --read-only --tmpfs /run --tmpfs /tmp --user 1000:100`: /run is root's, so the run
    directory is the run's own under /tmp; healthy (the healthcheck finds it), token, clean stop."""
    token = "recipe-token-0123456789"
    container = tracked.run(publish=(8888,), user="1000:100", read_only=True,
                            tmpfs={"/run": "", "/tmp": ""},  # noqa: S108 - the container's
                            environment={"JUPYTER_TOKEN": token})
    tracked.wait_healthy(container, timeout=120)
    port = tracked.port(container, 8888)
    assert (api_status(port), api_status(port, token)) == (403, 200)
    logs = tracked.logs(container)
    lines = [line for line in logs.splitlines() if "runtime files in /tmp/tf29-env-1000-" in line]
    assert len(lines) == 1 and "ERROR" not in logs, logs
    assert "Apptainer" not in logs, logs
    code, out = tracked.exec(container, ["healthcheck"])
    assert code == 0 and out.startswith("healthy: jupyter ok"), out
    assert stop_seconds(container) < 8
    container.reload()
    assert container.attrs["State"]["ExitCode"] == 0
