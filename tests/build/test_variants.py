"""Both variants built by the real build.py on the stand-in base: tags computed from the image and
applied, labels present and true, manifest files complete, tag claims verified by `build.py test`."""

import json
import re
from pathlib import Path
from typing import Any

import pytest
from docker import DockerClient

from tests.build.conftest import REPOSITORY, build_py, ca_args, untag_repository
from tf29env.core import engine, labels
from tf29env.core.variants import VARIANTS as BUILD_VARIANTS

# What the stand-in bases hold: Debian 11's python3 (3.9), TF 2.9.3 built for CUDA 11.2 / cuDNN 8.
FULL_TAGS = {"gpu": "2.9.3-gpu-cuda11.2-cudnn8-py3.9-debian11", "cpu": "2.9.3-cpu-py3.9-debian11"}
BASES = {name: variant.standin_base for name, variant in BUILD_VARIANTS.items()}
VARIANTS = ["cpu", "gpu"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_tags_are_computed_and_applied(variant: str, built: dict[str, dict[str, Any]],
                                       docker_client: DockerClient) -> None:
    record = built[variant]
    day = record["created"][:10]
    expected = [f"{REPOSITORY}:{tag}" for tag in (FULL_TAGS[variant], f"2.9-{variant}", f"latest-{variant}",
                                                    f"{variant}-{day}")]
    revision = record["revision"]
    assert re.fullmatch(r"[0-9a-f]{40}(-dirty)?", revision), revision
    if not revision.endswith("-dirty"):
        expected.append(f"{REPOSITORY}:{variant}-{revision[:12]}")
    assert record["refs"] == expected
    assert record["image"] == expected[0]
    repo_tags = engine.inspect(docker_client, record["id"])["RepoTags"]
    assert set(expected) <= set(repo_tags)


@pytest.mark.parametrize("variant", VARIANTS)
def test_labels_are_present_and_true(variant: str, built: dict[str, dict[str, Any]],
                                     docker_client: DockerClient) -> None:
    record = built[variant]
    found = engine.inspect(docker_client, record["id"])["Config"]["Labels"]
    for name in labels.KEYS:
        assert name in found, name
    assert found["org.opencontainers.image.version"] == FULL_TAGS[variant]
    assert found["org.opencontainers.image.revision"] == record["revision"]
    assert found["org.opencontainers.image.base.name"] == BASES[variant]
    assert found["org.opencontainers.image.base.digest"] == engine.inspect(docker_client, BASES[variant])["Id"]
    assert found["io.tf29-env.variant"] == variant
    assert found["io.tf29-env.tensorflow.version"] == "2.9.3"
    # Asked of the image directly, not through the tool's probe.
    status, python = engine.run_command(docker_client, record["id"], ["/opt/venv/bin/python", "--version"])
    assert status == 0 and python.strip() == f"Python {found['io.tf29-env.python.version']}"
    status, cudnn = engine.run_command(docker_client, record["id"], ["bash", "-c", "ls /usr/local/cuda/lib64/ || true"])
    if variant == "gpu":
        assert found["io.tf29-env.tensorflow.cuda"] == "11.2" and found["io.tf29-env.cudnn.runtime"].startswith("8.")
        assert "libcudnn.so.8" in cudnn
    else:
        assert found["io.tf29-env.cuda.runtime"] == "" and "libcudnn" not in cudnn


@pytest.mark.parametrize("variant", VARIANTS)
def test_manifest_files_are_complete(variant: str, built: dict[str, dict[str, Any]], output_dir: Path,
                                     docker_client: DockerClient) -> None:
    record = built[variant]
    directory = output_dir / variant
    data = json.loads((directory / "manifest.json").read_text())
    attrs = engine.inspect(docker_client, record["id"])
    assert data["image_id"] == attrs["Id"] and data["size_bytes"] == attrs["Size"]
    assert data["refs"] == record["refs"]
    assert data["base"] == BASES[variant] and data["base_digest"].startswith("sha256:")
    package = "tensorflow" if variant == "gpu" else "tensorflow-cpu"
    assert f"{package}==2.9.3" in data["pip_freeze"]
    assert {"openssh-server", "tini", "python3"} <= {p["name"] for p in data["dpkg"]}
    assert data["selfcheck_output"], "no self-check output recorded"
    markdown = (directory / "manifest.md").read_text()
    for ref in record["refs"]:
        assert f"`{ref}`" in markdown
    assert f"{package}==2.9.3" in markdown and "| openssh-server |" in markdown
    assert (directory / "tags.txt").read_text().split() == record["refs"]
    assert json.loads((directory / "build.json").read_text())["id"] == record["id"]


def test_build_py_test_verifies_the_tags(built: dict[str, dict[str, Any]], docker_client: DockerClient) -> None:
    image = built["cpu"]["image"]
    # --collect-only: the claim check is what is under test here, not the image suite.
    good = build_py("test", image, "--", "--collect-only", "-q")
    assert good.code == 0, good.stderr[-2000:]
    assert f"tags of {image} verified against the image" in good.stdout
    lie = f"{REPOSITORY}:2.8-cpu"
    engine.tag(docker_client, built["cpu"]["id"], lie)
    try:
        bad = build_py("test", image, "--", "--collect-only", "-q")
    finally:
        docker_client.images.remove(lie)
    assert bad.code == 5
    assert bad.stderr.strip() == f"error: {image} is not what it claims: {lie}: TensorFlow 2.9.3 is not 2.8.x"


def test_proxies_do_not_persist(built: dict[str, dict[str, Any]], output_dir: Path,
                                docker_client: DockerClient) -> None:
    proxy = "http://127.0.0.1:9"
    repository = f"{REPOSITORY}-proxy"
    try:
        run = build_py("build", "--variant", "cpu", "--base", "standin", *ca_args(), "--repository", repository,
                       "--output-dir", str(output_dir / "proxy"), "--http-proxy", proxy, "--https-proxy", proxy,
                       "--no-proxy", "localhost", "--json")
        assert run.code == 0, run.stderr[-2000:]
        record = json.loads(run.stdout)
        env = engine.inspect(docker_client, record["id"])["Config"]["Env"]
        history = docker_client.api.history(record["id"])
    finally:
        untag_repository(docker_client, repository)
    assert not [item for item in env if "proxy" in item.lower()], env
    assert not [h for h in history if "127.0.0.1:9" in str(h.get("CreatedBy"))]
    shown = json.loads((output_dir / "proxy" / "cpu" / "manifest.json").read_text())["build_inputs"]
    assert shown["http_proxy"] == proxy


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_login_shell_has_the_images_python(variant: str, built: dict[str, dict[str, Any]],
                                              docker_client: DockerClient) -> None:
    """Both variants: a login shell as the dev user (a Lab terminal, `docker exec ... bash -l`, SSH)
    finds the venv's tools first and imports TensorFlow (tests/image/test_shells.py: every entry point)."""
    probe = "command -v python pip jupyter tensorboard; python -c 'import tensorflow as tf; print(tf.__version__)'"
    out = docker_client.containers.run(built[variant]["id"], entrypoint=["bash", "-lc", probe], user="jovyan",
                                       remove=True).decode()
    assert out.split() == ["/opt/venv/bin/python", "/opt/venv/bin/pip", "/opt/venv/bin/jupyter",
                           "/opt/venv/bin/tensorboard", "2.9.3"], out
