"""The SBOM without an engine: the in-image probe run by this host's own Python on this host (the same
stdlib code, a real dpkg database and loader cache), the CycloneDX document made from its report
and checked against CycloneDX's schema, its reproducibility, and the license summary."""

import hashlib
import json
import os
import subprocess
import sys
from typing import Any

import pytest
from cyclonedx.contrib.this.builders import this_component

from testkit.sbom import normalized
from tf29env.core import labels
from tf29env.core.errors import EXIT_BUILD, UserError
from tf29env.core.facts import INVENTORY_PROBE
from tf29env.core.paths import REPO
from tf29env.pipeline import source_date
from tf29env.supplychain import licenses, sbom

LIBC = "libc.so.6"
REFS = ["tf29-env:2.9.3-cpu-py3.9-debian11", "tf29-env:latest-cpu", "tf29-env:cpu-2026-12-03"]
LABELS = {"org.opencontainers.image.revision": "0123456789abcdef0123456789abcdef01234567",
          labels.CREATED: "2026-12-03T10:00:00Z", "org.opencontainers.image.base.name": "debian:11",
          "org.opencontainers.image.base.digest": "sha256:" + "ab" * 32, "io.tf29-env.variant": "cpu"}


@pytest.fixture(scope="module")
def host_probe() -> dict[str, Any]:
    """image/python/tf29image/probes/inventory.py's report on this host (the venv's Python packages, dpkg,
    libc); image/python on PYTHONPATH stands in for the image's tf29-env.pth."""
    proc = subprocess.run([sys.executable, str(INVENTORY_PROBE), LIBC], capture_output=True, text=True,
                          check=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO / "image" / "python")})
    data: dict[str, Any] = json.loads(proc.stdout)
    return data


@pytest.fixture(scope="module")
def probed(host_probe: dict[str, Any]) -> dict[str, Any]:
    """The host's report with 100 dpkg packages of its many (the schema check takes seconds per
    thousand components; an image has a few hundred)."""
    return {**host_probe, "dpkg": host_probe["dpkg"][:100]}


def make(data: dict[str, Any], refs: list[str] = REFS) -> dict[str, Any]:
    bom = sbom.make_bom(data, name="tf29-env", version=refs[0].split(":")[1], refs=refs, image_labels=LABELS)
    document: dict[str, Any] = json.loads(sbom.to_json(bom))
    return document


def test_probe_reads_packages_licenses_and_libraries(host_probe: dict[str, Any]) -> None:
    python = {dist["name"].lower(): dist for dist in host_probe["python"]}
    assert python["cyclonedx-python-lib"]["version"] == this_component().version
    assert "Apache" in python["cyclonedx-python-lib"]["license"] + python["cyclonedx-python-lib"]["license_expression"]
    assert {"dpkg", "libc6"} <= {package["name"] for package in host_probe["dpkg"]}
    assert host_probe["os"]["id"] and host_probe["os"]["version_id"]
    (libc,) = host_probe["libraries"]
    with open(libc["real_path"], "rb") as handle:
        assert libc["sha256"] == hashlib.sha256(handle.read()).hexdigest()
    assert libc["dpkg_owner"] == "libc6"


def test_the_document_is_valid_cyclonedx_with_every_component(probed: dict[str, Any]) -> None:
    document = make(probed)
    assert document["bomFormat"] == "CycloneDX" and document["specVersion"] == sbom.SCHEMA.to_version()
    components = document["components"]
    assert len(components) == len(probed["python"]) + len(probed["dpkg"]) + len(probed["libraries"])
    refs = [c["bom-ref"] for c in components]
    assert len(set(refs)) == len(refs)
    root = document["metadata"]["component"]
    assert root["type"] == "container" and root["version"] == "2.9.3-cpu-py3.9-debian11"
    assert sorted(p["value"] for p in root["properties"] if p["name"] == sbom.PROP_TAG) == sorted(REFS)
    assert {"org.opencontainers.image.base.digest", "org.opencontainers.image.revision"} <= {
        p["name"] for p in root["properties"]}
    by_purl = {c["purl"]: c for c in components}
    assert f"pkg:pypi/cyclonedx-python-lib@{this_component().version}" in by_purl
    os_info = probed["os"]
    debs = [c for c in components if c["purl"].startswith(f"pkg:deb/{os_info['id']}/")]
    assert len(debs) == len(probed["dpkg"])
    assert all(f"distro={os_info['id']}-{os_info['version_id']}" in c["purl"] for c in debs)
    (libc,) = [c for c in components if c.get("group") == "nvidia"]  # the probed libraries' group
    assert libc["hashes"] == [{"alg": "SHA-256", "content": probed["libraries"][0]["sha256"]}]
    # One dependency edge from the image to every component, so the graph is complete.
    (image_deps,) = [d for d in document["dependencies"] if d["ref"] == "image"]
    assert len(image_deps["dependsOn"]) == len(components)


def test_two_documents_of_the_same_image_differ_only_in_time_and_serial(probed: dict[str, Any]) -> None:
    first = make(probed)
    later = make(probed, [*REFS[:2], "tf29-env:cpu-2026-12-04"])  # built a day later
    assert first["serialNumber"] != later["serialNumber"]
    assert first != later
    assert normalized(first) == normalized(later)
    # ... and only those: another package version is a difference.
    changed = json.loads(json.dumps(probed))
    changed["python"][0]["version"] += ".post1"
    assert normalized(make(changed)) != normalized(first)


def test_with_source_date_epoch_the_same_image_gives_the_same_document(probed: dict[str, Any]) -> None:
    at = source_date({"SOURCE_DATE_EPOCH": "1764892800"})
    assert at is not None

    def text(described: str) -> str:
        bom = sbom.make_bom(probed, name="tf29-env", version=REFS[0].split(":")[1], refs=REFS, image_labels=LABELS)
        sbom.make_reproducible(bom, at, described)
        return sbom.to_json(bom)

    first = json.loads(text("sha256:1 labels"))
    assert text("sha256:1 labels") == text("sha256:1 labels")
    assert first["metadata"]["timestamp"].startswith("2025-12-05T00:00:00")
    assert json.loads(text("sha256:2 labels"))["serialNumber"] != first["serialNumber"]


@pytest.mark.parametrize(("value", "seconds"), [("", None), ("0", 0), ("1764892800", 1764892800)])
def test_source_date_epoch(value: str, seconds: int | None) -> None:
    at = source_date({"SOURCE_DATE_EPOCH": value})
    assert (None if at is None else int(at.timestamp())) == seconds


@pytest.mark.parametrize("value", ["yesterday", "-5", "1.5", "99999999999999"])
def test_a_bad_source_date_epoch_is_one_line_exit_2(value: str) -> None:
    with pytest.raises(UserError) as error:
        source_date({"SOURCE_DATE_EPOCH": value})
    assert error.value.exit_code == 2 and "SOURCE_DATE_EPOCH=" in str(error.value) and "\n" not in str(error.value)


def test_a_document_that_fails_the_schema_is_one_line_exit_4(probed: dict[str, Any]) -> None:
    document = make(probed)
    document["components"][0]["type"] = "not-a-type"
    with pytest.raises(UserError) as caught:
        sbom.validate(json.dumps(document), "broken.json")
    assert caught.value.exit_code == EXIT_BUILD
    assert str(caught.value).startswith("broken.json fails CycloneDX 1.6 schema validation: ")
    assert "\n" not in str(caught.value)


def dist(**fields: Any) -> dict[str, Any]:
    return {"name": "x", "version": "1", "license_expression": "", "license": "", "license_text_in_metadata": False,
            "classifiers": [], **fields}


@pytest.mark.parametrize(("fields", "label"), [
    ({"license_expression": "MIT OR Apache-2.0"}, "MIT OR Apache-2.0"),
    ({"license": "BSD-3-Clause"}, "BSD-3-Clause"),
    ({"license": "Apache 2.0", "classifiers": ["License :: OSI Approved :: Apache Software License"]}, "Apache-2.0"),
    ({"license": "Apache 2.0"}, "Apache 2.0"),
    ({"license_text_in_metadata": True, "classifiers": ["License :: OSI Approved :: BSD License"]}, "BSD License"),
    ({"license": "UNKNOWN"}, licenses.UNKNOWN),
    ({}, licenses.UNKNOWN),
])
def test_python_license_metadata(fields: dict[str, Any], label: str) -> None:
    component = json.loads(sbom.to_json(sbom.make_bom(
        {"os": {"id": "debian", "version_id": "11"}, "python": [dist(**fields)], "dpkg": [], "libraries": []},
        name="t", version="v", refs=[], image_labels={})))["components"][0]
    assert licenses.license_label(component) == label


def test_license_summary() -> None:
    data = {"os": {"id": "debian", "version_id": "11"}, "dpkg": [], "libraries": [], "python": [
        dist(name="a", license="MIT"), dist(name="b", license="MIT"), dist(name="c", license="LGPL-3.0-or-later"),
        dist(name="d", license_expression="MPL-2.0"), dist(name="e")]}
    summary = licenses.summary(make(data))
    assert summary["python_packages"] == 5
    assert summary["counts"] == {"MIT": 2, "LGPL-3.0-or-later": 1, "MPL-2.0": 1, licenses.UNKNOWN: 1}
    assert summary["unknown"] == ["e==1"]
    assert summary["copyleft"] == {"LGPL-3.0-or-later": ["c==1"], "MPL-2.0": ["d==1"]}
    markdown = licenses.to_markdown(summary)
    assert "| MIT | 2 |" in markdown and "- c==1: LGPL-3.0-or-later" in markdown
