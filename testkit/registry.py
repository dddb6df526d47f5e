"""A real local registry: Debian's docker-registry on 127.0.0.1, storing into a directory, for the
push tests and the bench's pull-size measure (what a registry stores is what a node downloads).

The engine pushes to it over plain HTTP without any daemon setting: Docker treats 127.0.0.0/8 as
an insecure registry by default."""

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import requests

from testkit.net import free_host_port
from testkit.wait import wait_until

REGISTRY_BINARY = Path("/usr/bin/docker-registry")
START_TIMEOUT_S = 30
LOG_TAIL_LINES = 5


class RegistryUnavailable(RuntimeError):
    """The registry binary is missing, or it exited instead of answering."""


def config_text(data: Path, port: int) -> str:
    """The registry's config: filesystem storage under data, deletes allowed (so a caller can drop
    what it pushed), only warnings logged, listening on loopback only."""
    return (
        "version: 0.1\n"
        "log:\n  level: warn\n"
        f"storage:\n  filesystem:\n    rootdirectory: {data}\n  delete:\n    enabled: true\n"
        f"http:\n  addr: 127.0.0.1:{port}\n"
    )


def answering(address: str) -> bool:
    return requests.get(f"http://{address}/v2/", timeout=2).status_code == 200


@contextmanager
def local_registry(root: Path) -> Iterator[str]:
    """Run the registry with its config, data and log under root; yield "127.0.0.1:PORT".

    The process is terminated at exit; root is the caller's to remove (it holds the pushed blobs)."""
    if not REGISTRY_BINARY.exists():
        raise RegistryUnavailable(f"{REGISTRY_BINARY} is missing: apt-get install docker-registry")
    root.mkdir(parents=True, exist_ok=True)
    port = free_host_port()
    address = f"127.0.0.1:{port}"
    config = root / "config.yml"
    config.write_text(config_text(root / "data", port))
    log_path = root / "registry.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen([str(REGISTRY_BINARY), "serve", str(config)], stdout=log, stderr=subprocess.STDOUT)
    try:
        # Stop waiting as soon as the process has died too (a port taken in the meantime, a bad
        # config): its log says why, which beats a timeout.
        wait_until(lambda: proc.poll() is not None or answering(address), timeout=START_TIMEOUT_S,
                   what="the local registry answering")
        if proc.poll() is not None:
            tail = " | ".join(log_path.read_text(errors="replace").strip().splitlines()[-LOG_TAIL_LINES:])
            raise RegistryUnavailable(f"{REGISTRY_BINARY} exited {proc.returncode} on {address}: "
                                      f"{tail or '(no output)'}")
        yield address
    finally:
        if proc.poll() is None:
            proc.terminate()
        proc.wait(timeout=30)
