"""Each bad input to the real build.py process: one line naming the problem, the documented exit
code, no traceback. The engine is real; registries and bases are only ever on 127.0.0.1."""

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from docker import DockerClient

from tests.build.conftest import REPOSITORY, build_py, ca_args, untag_repository
from tf29env.core import engine
from tf29env.core.variants import STANDIN_OS
from tf29env.release import sizegate

BROKEN_BASE = f"{REPOSITORY}-broken:no-apt"


def one_line(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


@pytest.mark.parametrize(("args", "code", "words"), [
    (["build", "--variant", "tpu"], 2, "argument --variant: invalid choice: 'tpu'"),
    (["build", "--tag", "tf29-env:no spaces"], 2, "--tag tf29-env:no spaces: 'no spaces' is not a valid tag"),
    (["build", "--ca-cert", "/nonexistent/corp-ca.crt"], 2, "--ca-cert /nonexistent/corp-ca.crt: no such file"),
    (["build", "--trust-ca-cert", "/nonexistent/corp-ca.crt"], 2,
     "--trust-ca-cert /nonexistent/corp-ca.crt: no such file"),
    (["build", "--pip-index-url", "https://ci:s3cret@pypi.corp.example/simple"], 2,
     "--pip-index-url https://***@pypi.corp.example/simple: credentials in this URL would be written into the "
     "image's history"),
    (["push", "--registry", "http://127.0.0.1:5000", "x:y"], 2, "expected HOST[:PORT]"),
])
def test_bad_flags(args: list[str], code: int, words: str) -> None:
    run = build_py(*args)
    assert run.code == code
    assert words in one_line(run.stderr)


def test_no_engine(tmp_path: Path) -> None:
    run = build_py("build", "--base", "standin", env={"DOCKER_HOST": f"unix://{tmp_path}/none.sock"})
    assert run.code == 3
    assert "no Docker engine answers" in one_line(run.stderr)


def test_base_image_not_found(closed_port: int, docker_client: DockerClient) -> None:
    base = f"127.0.0.1:{closed_port}/no-such-base:1"
    run = build_py("build", "--variant", "cpu", "--base", base, *ca_args())
    assert run.code == 2
    line = one_line(run.stderr)
    assert f"base image {base} is not on this engine and cannot be pulled" in line
    assert "`--base standin`" in line
    assert not engine.image_exists(docker_client, base)


def test_image_not_on_engine() -> None:
    run = build_py("size", f"{REPOSITORY}:never-built")
    assert run.code == 2
    assert f"image {REPOSITORY}:never-built is not on this engine" in one_line(run.stderr)


@pytest.fixture
def broken_base(docker_client: DockerClient) -> Iterator[str]:
    """The stand-in Debian without apt-get: the Dockerfile's first RUN step must fail on it."""
    dockerfile = f"FROM {STANDIN_OS}\nRUN rm /usr/bin/apt-get\n".encode()
    docker_client.images.build(fileobj=io.BytesIO(dockerfile), tag=BROKEN_BASE, rm=True)
    yield BROKEN_BASE
    docker_client.images.remove(BROKEN_BASE, force=True)


def test_build_step_failure_shows_the_steps_last_lines(broken_base: str, tmp_path: Path) -> None:
    run = build_py("build", "--variant", "cpu", "--base", broken_base, *ca_args(), "--repository", REPOSITORY,
                   "--output-dir", str(tmp_path))
    assert run.code == 4
    assert "Traceback" not in run.stderr
    first, *rest = run.stderr.splitlines()
    assert first.startswith("error: build failed at Step ")
    assert "RUN . /usr/local/lib/tf29-env-build/build-ca.sh" in first
    assert "returned a non-zero code: 127" in first
    assert rest[0] == "  last lines:"
    assert any("apt-get: command not found" in line for line in rest)
    assert not (tmp_path / "latest.json").exists()  # nothing recorded for a failed build


def test_size_gate_fails_on_a_shrunken_baseline(built: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    record: dict[str, Any] = built["cpu"]
    baseline = tmp_path / "baseline.json"
    sizegate.record(baseline, "cpu", record["base"], record["size_bytes"] // 2, "shrunk")
    run = build_py("size", record["image"], "--size-baseline", str(baseline))
    assert run.code == 4
    assert "Traceback" not in run.stderr
    assert "+100.0 % against the baseline" in run.stderr and "(limit +20 %): over the limit" in run.stderr
    layers = run.stderr.split("largest layers:")[1].split("largest packages:")[0]
    assert "GiB" in layers or "MiB" in layers
    assert "pip tensorflow-cpu 2.9.3" in run.stderr.split("largest packages:")[1]
    # Within the limit, the same image passes; --max-growth moves the limit.
    assert build_py("size", record["image"], "--size-baseline", str(baseline), "--max-growth", "101").code == 0


def test_build_fails_its_size_gate(built: dict[str, dict[str, Any]], tmp_path: Path,
                                   docker_client: DockerClient) -> None:
    record: dict[str, Any] = built["cpu"]
    baseline = tmp_path / "baseline.json"
    sizegate.record(baseline, "cpu", record["base"], record["size_bytes"] // 2, "shrunk")
    # Its own repository: the session's moving tags must stay on the session's image.
    repository = f"{REPOSITORY}-gate"
    try:
        run = build_py("build", "--variant", "cpu", "--base", "standin", *ca_args(), "--repository", repository,
                       "--output-dir", str(tmp_path / "out"), "--size-baseline", str(baseline), "--json")
    finally:
        untag_repository(docker_client, repository)
    assert run.code == 4
    assert "over the limit" in run.stderr
    assert json.loads(run.stdout)["size_gate"]["ok"] is False  # scripts still get the record
