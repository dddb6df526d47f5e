"""TrackedContainer: runs containers of the image under test and removes them afterwards."""

import contextlib
import time
from typing import Any

import docker.errors
from docker import DockerClient
from docker.models.containers import Container

from testkit.net import free_host_port
from testkit.wait import wait_until

LOOPBACK = "127.0.0.1"
# Containers of the tests probe their health every second with the image's own check (an empty test
# inherits it); the image's 5 s would make every wait for "healthy" wait up to 5 s more.
# `run(healthcheck=SHIPPED_HEALTH)` keeps the image's as it ships.
FAST_HEALTH = {"interval": 1_000_000_000}
SHIPPED_HEALTH = None
# The self-check imports TensorFlow in the background at every start (about 2.5 s of CPU on the test
# host, on a CPU-bound suite): off unless a test names SELF_CHECK, or asks for the image's defaults.
QUIET_START = {"SELF_CHECK": "off"}


class TrackedContainer:
    """Starts containers of one image and owns their cleanup (force-removed, volumes too).

    Every published port is bound to 127.0.0.1 on a free host port; `port(c, 8888)` says which.
    """

    def __init__(self, client: DockerClient, image: str) -> None:
        self.client = client
        self.image = image
        self.containers: list[Container] = []
        self.ports: dict[str, dict[int, int]] = {}

    def run(self, *, publish: tuple[int, ...] = (8888, 22), quiet: bool = True, **kwargs: Any) -> Container:
        """Start a detached container; kwargs go to containers.create (environment, user, command, ...).
        quiet=False keeps the image's own SELF_CHECK default."""
        kwargs.setdefault("healthcheck", FAST_HEALTH)
        kwargs["environment"] = {**(QUIET_START if quiet else {}), **kwargs.get("environment", {})}
        for attempt in range(5):
            ports = {container_port: free_host_port() for container_port in publish}
            container = self.client.containers.create(
                self.image,
                ports={f"{cport}/tcp": (LOOPBACK, hport) for cport, hport in ports.items()},
                **kwargs,
            )
            try:
                container.start()
                break
            except docker.errors.APIError as exc:
                with contextlib.suppress(docker.errors.NotFound):
                    container.remove(force=True, v=True)
                # Another process bound a port between the check and the engine's bind: new ports.
                if "port is already allocated" not in str(exc) or attempt == 4:
                    raise
        self.containers.append(container)
        self.ports[container.id] = ports
        return container

    def port(self, container: Container, container_port: int) -> int:
        return self.ports[container.id][container_port]

    def health(self, container: Container) -> str:
        container.reload()
        return str(container.attrs["State"].get("Health", {}).get("Status", "none"))

    def wait_healthy(self, container: Container, timeout: float = 60) -> None:
        def probe() -> bool:
            status = self.health(container)
            if container.status == "exited":
                raise AssertionError(f"container exited: {self.logs(container)[-2000:]}")
            return status == "healthy"

        wait_until(probe, timeout=timeout, what=f"container {container.short_id} healthy")

    def wait_exit(self, container: Container, timeout: float = 60) -> int:
        result = container.wait(timeout=timeout)
        return int(result["StatusCode"])

    def last_line_of(self, command: list[str], timeout: float = 300, **kwargs: Any) -> str:
        """Run COMMAND in a new container without ports to its end, assert that it exits 0, and return
        the last line it printed on stdout: where the probes that tests run in the image print their result."""
        container = self.run(publish=(), command=command, **kwargs)
        code = self.wait_exit(container, timeout=timeout)
        assert code == 0, self.logs(container)[-3000:]
        # Stdout alone: the entrypoint's notes go to stderr, and the engine's log copy orders the two
        # streams by when it read them, which a loaded host can delay (seen once: a note came last).
        out = wait_until(lambda: container.logs(stdout=True, stderr=False).decode(errors="replace").strip() or None,
                         timeout=30, what="the command's output in the logs")
        return str(out).splitlines()[-1]

    def logs(self, container: Container, stderr: bool = True) -> str:
        """What the container wrote; stderr=False keeps to stdout, where TensorFlow's C++ notices never go."""
        return str(container.logs(stdout=True, stderr=stderr).decode(errors="replace"))

    def wait_log(self, container: Container, text: str, timeout: float = 60) -> str:
        return wait_until(
            lambda: self.logs(container) if text in self.logs(container) else None,
            timeout=timeout,
            what=f"{text!r} in the logs",
        )

    def exec(self, container: Container, cmd: list[str] | str, user: str = "", **kwargs: Any) -> tuple[int, str]:
        code, output = container.exec_run(cmd, user=user, **kwargs)
        return int(code), output.decode(errors="replace")

    def remove_all(self) -> None:
        for container in self.containers:
            with contextlib.suppress(docker.errors.NotFound):
                container.remove(force=True, v=True)
        self.containers.clear()


def stop_seconds(container: Container, timeout: int = 10) -> float:
    """How long `docker stop` took."""
    start = time.monotonic()
    container.stop(timeout=timeout)
    return time.monotonic() - start
