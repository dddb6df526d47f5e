"""Fixtures for the engine tests of build.py itself: the real command line run as a process, both
variants built on the stand-in base into a private repository, and a real local registry.

The builds reuse the engine's layer cache (only the label layer is new), so after the first build
of a variant on this engine they take seconds. Everything tagged here is untagged afterwards.
"""

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker.errors
import pytest
from docker import DockerClient

from testkit.registry import local_registry
from tests.conftest import host_ca_certs
from tf29env.commands import BUILDER_TESTS_ENV
from tf29env.core.paths import REPO

REPOSITORY = "tf29-env-buildtest"
# The default index, named explicitly: the build works as without it, and the history shows it. The
# cpu build names it too, so that test_ca's kept-CA build reuses its Python stack's layer.
INDEX = "https://pypi.org/simple"


@dataclass(frozen=True)
class Run:
    code: int
    stdout: str
    stderr: str


def build_py(*args: str, env: dict[str, str] | None = None, timeout: float = 3600) -> Run:
    """Run `python build.py ARGS` as CI would; its exit code and output."""
    proc = subprocess.run([sys.executable, str(REPO / "build.py"), *args], capture_output=True, text=True,
                          cwd=REPO, env={**os.environ, "CI": "true", **(env or {})}, timeout=timeout, check=False)
    return Run(proc.returncode, proc.stdout, proc.stderr)


def ca_args() -> list[str]:
    return [arg for path in host_ca_certs() for arg in ("--ca-cert", str(path))]


def untag_repository(client: DockerClient, repository: str) -> None:
    """Only the tags go: the layers stay as the engine's build cache, so the next run's builds of
    the same steps take seconds (the classic builder's cache is its untagged parent images)."""
    for image in client.images.list(name=repository):
        for ref in image.tags:
            if ref.rsplit(":", 1)[0] == repository:
                with contextlib.suppress(docker.errors.APIError):
                    client.images.remove(ref, noprune=True)


@pytest.fixture(scope="session")
def output_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("build-output")


@pytest.fixture(scope="session")
def built(docker_client: DockerClient, output_dir: Path) -> Iterator[dict[str, dict[str, Any]]]:
    """variant -> the JSON record `build.py build --json` printed; both built once per session."""
    records: dict[str, dict[str, Any]] = {}
    try:
        for variant in ("cpu", "gpu"):
            index = ["--pip-index-url", INDEX] if variant == "cpu" else []
            run = build_py("build", "--variant", variant, "--base", "standin", *ca_args(), *index, "--repository",
                           REPOSITORY, "--output-dir", str(output_dir), "--json")
            assert run.code == 0, f"build.py build --variant {variant} failed ({run.code}): {run.stderr[-3000:]}"
            records[variant] = json.loads(run.stdout)
        yield records
    finally:
        untag_repository(docker_client, REPOSITORY)


@pytest.fixture(scope="session")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Debian's docker-registry on 127.0.0.1:<free port>, storing into a temporary directory."""
    with local_registry(tmp_path_factory.mktemp("registry")) as address:
        yield address


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A 127.0.0.1 port that is bound (so nothing else takes it) but never listens."""
    import socket  # noqa: PLC0415 - only this fixture needs it

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """`build.py test IMAGE` checks one image: these tests, which build build.py itself, are left out."""
    return True if os.environ.get(BUILDER_TESTS_ENV) == "0" else None
