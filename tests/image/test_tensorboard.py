"""TensorBoard and the GPU dashboards inside JupyterLab, behind its login (jupyter-server-proxy,
jupyterlab-nvdashboard): the launcher's TensorBoard at BASE_URL/tensorboard/, a TensorBoard that a
notebook's %tensorboard started at BASE_URL/proxy/6006/ (TENSORBOARD_PROXY_URL says so to the
magic), nothing of it without Jupyter's token, and only ports inside the container."""

import base64
import json
import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import requests
from docker import DockerClient
from docker.models.containers import Container

from testkit.containers import LOOPBACK, TrackedContainer
from testkit.wait import wait_until

pytestmark = pytest.mark.image

TOKEN = "tok-tensorboard-7c1e9b4f"
BASE = "/team/"
AUTH = {"Authorization": f"token {TOKEN}"}
# Writes a scalar the way a Keras TensorBoard callback does, into the run "demo".
WRITE_EVENTS = ("import tensorflow as tf; w = tf.summary.create_file_writer('/home/jovyan/work/logs/demo'); "
                "w.as_default().__enter__(); [tf.summary.scalar('loss', 1.0 / (s + 1), step=s) for s in range(3)]; "
                "w.flush()")


@dataclass
class Lab:
    tracked: TrackedContainer
    container: Container
    url: str  # the server's base URL on the host
    start_logs: str  # the container's logs once it was healthy, before any test's requests


@pytest.fixture(scope="module")
def lab(docker_client: DockerClient, image: str) -> Iterator[Lab]:
    """One JupyterLab under a base URL, with a TensorBoard log written as the dev user."""
    tracked = TrackedContainer(docker_client, image)
    try:
        container = tracked.run(environment={"JUPYTER_TOKEN": TOKEN, "JUPYTER_BASE_URL": BASE},
                                publish=(8888,))
        tracked.wait_healthy(container)
        start_logs = tracked.logs(container)
        code, out = tracked.exec(container, ["python", "-c", WRITE_EVENTS], user="jovyan")
        assert code == 0, out
        yield Lab(tracked, container, f"http://{LOOPBACK}:{tracked.port(container, 8888)}{BASE}", start_logs)
    finally:
        tracked.remove_all()


def get(url: str, **kwargs: object) -> requests.Response:
    return requests.get(url, timeout=120, allow_redirects=False, **kwargs)  # type: ignore[arg-type]


def test_launcher_tensorboard_behind_the_login(lab: Lab) -> None:
    tracked, container, url = lab.tracked, lab.container, lab.url
    assert get(f"{url}tensorboard/").status_code in (302, 403)  # nothing starts for a stranger
    assert "tensorboard --logdir" not in tracked.exec(container, ["ps", "-eo", "args"])[1]
    page = get(f"{url}tensorboard/", headers=AUTH)
    assert page.status_code == 200 and "<title>TensorBoard" in page.text
    assert get(f"{url}tensorboard/data/logdir", headers=AUTH).json() == {"logdir": "/home/jovyan/work/logs"}
    runs = wait_until(lambda: get(f"{url}tensorboard/data/runs", headers=AUTH).json(), timeout=60, what="runs")
    assert runs == ["demo"]
    processes = tracked.exec(container, ["ps", "-eo", "user=,args="])[1]
    line = next(row for row in processes.splitlines() if "tensorboard --logdir" in row)
    assert line.split()[0] == "jovyan" and "--host 127.0.0.1" in line, line  # reachable through the proxy only


def test_notebook_magic_through_the_proxy(lab: Lab) -> None:
    """What %tensorboard does: start TensorBoard on 6006 in the kernel's environment, then frame
    TENSORBOARD_PROXY_URL with %PORT% replaced: that URL must answer, behind the login."""
    tracked, container, url = lab.tracked, lab.container, lab.url
    # The server's environment, which its kernels copy (read as the dev user, whose process it is).
    env = tracked.exec(container, ["sh", "-c", "tr '\\0' '\\n' </proc/$(pgrep -o -f jupyter-lab)/environ"],
                       user="jovyan")[1]
    assert f"TENSORBOARD_PROXY_URL={BASE}proxy/%PORT%/" in env.splitlines()
    container.exec_run(["tensorboard", "--logdir", "/home/jovyan/work/logs", "--port", "6006"], user="jovyan",
                       detach=True)
    proxied = f"{url}proxy/6006/"
    wait_until(lambda: get(proxied, headers=AUTH).status_code == 200, timeout=90,
               what="TensorBoard on 6006 through the proxy")
    assert "<title>TensorBoard" in get(proxied, headers=AUTH).text
    assert get(proxied).status_code in (302, 403)
    assert get(f"{url}proxy/6006/data/runs").status_code in (302, 403)


def test_the_proxy_reaches_only_the_container(lab: Lab) -> None:
    """Another host, even this test host's bridge address, is refused, not proxied."""
    container, url = lab.container, lab.url
    container.reload()
    gateway = container.attrs["NetworkSettings"]["Gateway"]
    assert gateway
    assert get(f"{url}proxy/{gateway}:9/", headers=AUTH).status_code == 403


def test_gpu_dashboards_without_a_gpu(lab: Lab) -> None:
    """On a host without a GPU the dashboards' server side starts quietly and offers no GPU feed;
    its CPU feed, a websocket, tells a caller without the login no more than that."""
    url = lab.url
    assert "Registered jupyterlab_nvdashboard server extension" in lab.start_logs
    assert "Traceback" not in lab.start_logs
    assert get(f"{url}nvdashboard/gpu_utilization", headers=AUTH).status_code == 404
    answer = first_websocket_message(url, "nvdashboard/cpu_resource")
    assert answer.startswith("HTTP/1.1 403") or answer == "Unauthorized access", answer


def first_websocket_message(url: str, path: str) -> str:
    """Open a websocket without credentials (a plain RFC 6455 handshake): the refusal's status line,
    or the "error" of the first (short, unmasked) text frame the server sends."""
    host, port = url.split("//")[1].split("/")[0].split(":")
    with socket.create_connection((host, int(port)), timeout=10) as conn:
        key = base64.b64encode(os.urandom(16)).decode()
        conn.sendall((f"GET {BASE}{path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
                      f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        data = b""
        while b"\r\n\r\n" not in data:
            data += conn.recv(4096)
        head, _, rest = data.partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 101"):
            return head.decode(errors="replace")
        while len(rest) < 2 or len(rest) < 2 + (rest[1] & 0x7F):
            rest += conn.recv(4096)
        length = rest[1] & 0x7F
        return str(json.loads(rest[2:2 + length]).get("error", ""))
