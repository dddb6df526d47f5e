"""The SBOM of real builds (`build.py build`, both variants on the stand-in): written next to the
manifest and the same document in the image at the path its label names, valid CycloneDX, listing
what the image holds (the manifest's pip and dpkg lists, the NVIDIA libraries with the wheels'
license files in the gpu image), with a license summary beside it; made again from the same image
it differs only in its timestamp and serial number."""

import json
import re
from pathlib import Path
from typing import Any

import pytest
from docker import DockerClient

from testkit.sbom import normalized
from tests.build.conftest import build_py
from tf29env.core import engine, labels
from tf29env.core.errors import EXIT_NO_DATABASE
from tf29env.core.facts import inventory
from tf29env.core.records import SBOM_FILE
from tf29env.core.variants import CUDA_SONAMES
from tf29env.supplychain import licenses, nvidia, sbom

VARIANTS = ["cpu", "gpu"]


def in_image(client: DockerClient, image: str, *argv: str) -> tuple[int, str]:
    return engine.run_command(client, image, list(argv))


def stored(output_dir: Path, variant: str) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((output_dir / variant / SBOM_FILE).read_text())
    return document


def pypi_names(document: dict[str, Any]) -> set[str]:
    return {f"{c['purl'].split('/', 1)[1].split('@')[0]}=={c['version']}" for c in document["components"]
            if c["purl"].startswith("pkg:pypi/")}


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_sbom_is_beside_the_manifest_and_in_the_image(variant: str, built: dict[str, dict[str, Any]],
                                                          output_dir: Path, docker_client: DockerClient) -> None:
    record = built[variant]
    path = output_dir / variant / SBOM_FILE
    assert record["sbom"] == str(path)
    text = path.read_text()
    sbom.validate(text, str(path))
    image_labels = labels.of_image(engine.inspect(docker_client, record["id"]))
    assert image_labels[labels.SBOM] == sbom.SBOM_PATH
    status, inside = in_image(docker_client, record["id"], "cat", image_labels[labels.SBOM])
    assert status == 0 and inside == text
    root = json.loads(text)["metadata"]["component"]
    assert root["version"] == record["version"]
    properties = root["properties"]
    assert sorted(p["value"] for p in properties if p["name"] == sbom.PROP_TAG) == sorted(record["refs"])
    shown = {p["name"]: p["value"] for p in properties if p["name"] != sbom.PROP_TAG}
    assert shown[labels.BASE] == record["base"] and shown[labels.BASE_DIGEST] == record["base_digest"]
    assert shown["org.opencontainers.image.revision"] == record["revision"]
    # The final layer is a COPY and a LABEL (every label) on the Dockerfile's image: no RUN, nothing else.
    history = docker_client.api.history(record["id"])
    assert "LABEL " in history[0]["CreatedBy"] and "COPY" in history[1]["CreatedBy"]
    assert all(f"{key}=" in history[0]["CreatedBy"] for key in labels.KEYS), history[0]["CreatedBy"]
    assert "LABEL devcontainer.metadata" in history[2]["CreatedBy"]


@pytest.mark.parametrize("variant", VARIANTS)
def test_it_lists_what_the_image_holds(variant: str, built: dict[str, dict[str, Any]], output_dir: Path,
                                       docker_client: DockerClient) -> None:
    document = stored(output_dir, variant)
    manifest = json.loads((output_dir / variant / "manifest.json").read_text())
    freeze = {re.sub(r"[-_.]+", "-", line.split("==")[0]).lower() + "==" + line.split("==")[1]
              for line in manifest["pip_freeze"] if "==" in line}
    assert pypi_names(document) == freeze
    debs = {(c["name"], c["version"]) for c in document["components"] if c["purl"].startswith("pkg:deb/")}
    assert debs and debs <= {(p["name"], p["version"]) for p in manifest["dpkg"]}
    assert all("distro=debian-11" in c["purl"] for c in document["components"] if c["purl"].startswith("pkg:deb/"))
    libs = [c for c in document["components"] if c.get("group") == "nvidia"]
    if variant == "cpu":
        assert libs == []
        status, _ = in_image(docker_client, built[variant]["id"], "test", "-e", "/usr/share/doc/tf29-env/licenses")
        assert status != 0
        return
    assert sorted(c["name"] for c in libs) == sorted(CUDA_SONAMES)
    # The wheels' own license files, as the stand-in's cached wheels hold them.
    wheel_files = nvidia.for_base(built[variant]["base"], lambda _line: None).files
    assert wheel_files
    for component in libs:
        props = {p["name"]: p["value"] for p in component["properties"]}
        assert props[sbom.PROP_FROM].startswith("pypi:nvidia-") and props[sbom.PROP_FROM].endswith(component["version"])
        assert component["licenses"] == [{"license": {"acknowledgement": "declared",
                                                      "name": "NVIDIA Proprietary Software"}}]
        assert re.fullmatch(r"[0-9a-f]{64}", component["hashes"][0]["content"])
        status, text = in_image(docker_client, built[variant]["id"], "cat", props[sbom.PROP_LICENSE_FILE])
        assert status == 0 and text == wheel_files[props[sbom.PROP_LICENSE_FILE]].decode()


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_license_summary_is_beside_it(variant: str, built: dict[str, dict[str, Any]], output_dir: Path) -> None:
    summary = json.loads((output_dir / variant / "licenses.json").read_text())
    assert sorted(built[variant]["licenses"]) == sorted(str(output_dir / variant / name)
                                                      for name in ("licenses.json", "licenses.md"))
    assert sum(summary["counts"].values()) == summary["python_packages"] == len(pypi_names(stored(output_dir, variant)))
    assert summary == licenses.summary(stored(output_dir, variant))
    assert len(summary["nvidia"]) == (len(CUDA_SONAMES) if variant == "gpu" else 0)


@pytest.mark.parametrize("variant", VARIANTS)
def test_made_again_from_the_image_it_differs_only_in_time_and_serial(
        variant: str, built: dict[str, dict[str, Any]], output_dir: Path, docker_client: DockerClient) -> None:
    record = built[variant]
    first = stored(output_dir, variant)
    wheels = nvidia.for_base(record["base"], lambda _line: None)
    data = inventory(docker_client, record["id"], CUDA_SONAMES)
    again = sbom.make_bom(data, name=first["metadata"]["component"]["name"],
                          version=record["version"], refs=record["refs"],
                          image_labels=labels.of_image(engine.inspect(docker_client, record["id"])),
                          nvidia_sources=wheels.sources)
    second = json.loads(sbom.to_json(again))
    assert second["serialNumber"] != first["serialNumber"]
    assert normalized(second) == normalized(first)


def test_audit_of_the_last_build_without_a_database(built: dict[str, dict[str, Any]], output_dir: Path) -> None:
    run = build_py("audit", "--output-dir", str(output_dir), "--variant", "cpu",
                   env={"HTTPS_PROXY": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9"})
    assert run.code == EXIT_NO_DATABASE, run.stderr
    assert run.stderr.startswith("error: no vulnerability database answers") and run.stderr.count("\n") == 1
