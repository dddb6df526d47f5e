"""`docker run` -> first HTTP 200 from JupyterLab's GET /api, and -> Docker's `healthy`, as a user
starts it (`make run`: JupyterLab and SSH with a key, the self-check beside them, no volumes, so
SSH host keys are made at first start). Ports are published on 127.0.0.1 only (TrackedContainer)."""

import time
from dataclasses import dataclass

import requests
from docker import DockerClient

from bench.errors import BenchError
from testkit.containers import LOOPBACK, TrackedContainer

POLL_S = 0.05
TIMEOUT_S = 120.0
TOKEN = "bench-token-not-secret"  # noqa: S105 - a throwaway container on 127.0.0.1


@dataclass(frozen=True)
class Start:
    jupyter_s: float  # docker run (create + start) -> first 200 from GET /api
    healthy_s: float  # docker run -> State.Health.Status == healthy


def jupyter_answers(port: int) -> bool:
    try:
        return bool(requests.get(f"http://{LOOPBACK}:{port}/api", timeout=1).status_code == requests.codes.ok)
    except requests.RequestException:
        return False


def start_once(client: DockerClient, image: str, ssh_public_key: str) -> Start:
    tracked = TrackedContainer(client, image)
    try:
        begin = time.monotonic()
        container = tracked.run(publish=(8888, 22), environment={"JUPYTER_TOKEN": TOKEN,
                                                                 "SSH_AUTHORIZED_KEYS": ssh_public_key})
        port = tracked.port(container, 8888)
        jupyter = healthy = 0.0
        while not (jupyter and healthy):
            now = time.monotonic() - begin
            if now > TIMEOUT_S:
                raise BenchError(f"{image}: not answering and healthy within {TIMEOUT_S:.0f} s "
                                 f"(jupyter {'yes' if jupyter else 'no'}); logs: {tracked.logs(container)[-300:]}")
            if not jupyter and jupyter_answers(port):
                jupyter = time.monotonic() - begin
            if not healthy:
                status = tracked.health(container)
                if container.status == "exited":
                    raise BenchError(f"{image}: the container exited; logs: {tracked.logs(container)[-300:]}")
                if status == "healthy":
                    healthy = time.monotonic() - begin
            time.sleep(POLL_S)
        return Start(jupyter, healthy)
    finally:
        tracked.remove_all()
