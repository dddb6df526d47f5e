"""CA certificates and index URLs through the real build.py, as a pushed image would carry them.

--ca-cert serves the build only: the session's builds (tests/build/conftest.py) pass the host's
CAs that way and must keep no trace of them, in the trust store, the label, the manifest or the
history (tests/image/test_image_contents.py scans every layer of the image under test, built the
same way). --trust-ca-cert keeps a CA, and says so in the label and the manifest. And what
`docker history --no-trunc` shows for an index URL is what docs/build.md says: the URL, verbatim,
on every RUN line after its ARG (hence build.py refuses credentials in it)."""

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from docker import DockerClient

from tests.build.conftest import INDEX, REPOSITORY, build_py, untag_repository
from tests.conftest import host_ca_certs
from tests.image.test_image_contents import CA_PROBE, ca_needles, host_cas
from tests.unit.tf29env.imagebuild.test_context import TEST_CA, TEST_CA_SHA256
from tf29env.core import engine, labels
from tf29env.imagebuild import cacerts

KEPT_REPOSITORY = f"{REPOSITORY}-ca"


def history(image_id: str) -> list[str]:
    """`docker history --no-trunc`'s CREATED BY column, newest step first, as users read it."""
    out = subprocess.run(["docker", "history", "--no-trunc", "--format", "{{.CreatedBy}}", image_id],
                         capture_output=True, text=True, check=True).stdout
    return out.splitlines()


def recorded_args(line: str) -> dict[str, str]:
    """The build args a classic-builder RUN line starts with: `|N NAME=value ... /bin/bash -o ...`."""
    count, *pairs = line.split(" /bin/bash ", 1)[0].split(" ")
    assert count == f"|{len(pairs)}", line[:300]
    return dict(pair.split("=", 1) for pair in pairs)


def in_image(docker_client: DockerClient, image_id: str, lines: list[str]) -> dict[str, Any]:
    """CA_PROBE's report: ssl loads, the extra CAs' fingerprints, which `lines` the store holds."""
    status, out = engine.run_command(docker_client, image_id, ["python", "-c", CA_PROBE, *lines])
    assert status == 0, out
    report: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return report


@pytest.mark.parametrize("variant", ["cpu", "gpu"])
def test_build_only_cas_leave_no_trace(variant: str, built: dict[str, dict[str, Any]], output_dir: Path,
                                       docker_client: DockerClient) -> None:
    record = built[variant]
    cas = host_cas()
    assert engine.inspect(docker_client, record["id"])["Config"]["Labels"][labels.CA_TRUSTED] == ""
    manifest = json.loads((output_dir / variant / "manifest.json").read_text())
    assert manifest["trusted_ca_certs"] == []
    assert "## Extra CA certificates the image trusts\n\n- none\n" in (output_dir / variant / "manifest.md").read_text()
    report = in_image(docker_client, record["id"], [ca_needles(cert)[0].decode() for cert in cas])
    assert report["loaded"] > 50 and report["local"] == [] and report["in_store"] == [False] * len(cas)
    steps = history(record["id"])
    assert not [cert.fingerprint for cert in cas if ca_needles(cert)[0].decode() in "\n".join(steps)]
    recorded = [recorded_args(line) for line in steps if line.startswith("|")]
    assert not [args for args in recorded if cacerts.CA_BUILD_ARG in args]
    # The kept-CA step and the last RUN, after `ARG TRUST_CA_CERTS=`: empty, nothing kept.
    assert [args[cacerts.TRUST_BUILD_ARG] for args in recorded if cacerts.TRUST_BUILD_ARG in args] == ["", ""]


@pytest.fixture(scope="module")
def kept(docker_client: DockerClient, output_dir: Path, tmp_path_factory: pytest.TempPathFactory,
         built: dict[str, dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """A cpu build that keeps CAs: a test CA (so that the test means the same on any machine) and
    the host's, which this build then needs no --ca-cert for; and that names the index. One build
    for both, after the session's cpu build (`built`, with the same index), whose layers it reuses
    up to the kept-CA step."""
    test_ca = tmp_path_factory.mktemp("ca") / "test-ca.crt"
    test_ca.write_text(TEST_CA)
    trust = [arg for path in [test_ca, *host_ca_certs()] for arg in ("--trust-ca-cert", str(path))]
    try:
        run = build_py("build", "--variant", "cpu", "--base", "standin", *trust, "--pip-index-url", INDEX,
                       "--repository", KEPT_REPOSITORY, "--output-dir", str(output_dir / "kept"), "--json")
        assert run.code == 0, run.stderr[-3000:]
        yield json.loads(run.stdout)
    finally:
        untag_repository(docker_client, KEPT_REPOSITORY)


def test_kept_cas_are_trusted_labelled_and_recorded(kept: dict[str, Any], output_dir: Path,
                                                    docker_client: DockerClient) -> None:
    fingerprints = [TEST_CA_SHA256, *[cert.fingerprint for cert in host_cas()]]
    label = engine.inspect(docker_client, kept["id"])["Config"]["Labels"][labels.CA_TRUSTED]
    assert label.split(",") == fingerprints
    manifest = json.loads((output_dir / "kept" / "cpu" / "manifest.json").read_text())
    assert manifest["trusted_ca_certs"] == fingerprints
    markdown = (output_dir / "kept" / "cpu" / "manifest.md").read_text()
    assert all(f"- `{fp}`" in markdown for fp in fingerprints)
    lines = [TEST_CA.splitlines()[5], *[ca_needles(cert)[0].decode() for cert in host_cas()]]
    report = in_image(docker_client, kept["id"], lines)
    assert sorted(report["local"]) == sorted(fingerprints)
    assert report["in_store"] == [True] * len(lines)
    assert report["loaded"] > 50 and report["pip_cert"] == "/etc/ssl/certs/ca-certificates.crt"


def test_history_shows_the_index_url_verbatim_and_no_ca(kept: dict[str, Any], docker_client: DockerClient) -> None:
    """docs/build.md: each RUN line after `ARG PIP_INDEX_URL` starts `|N ... PIP_INDEX_URL=<url> ...`;
    the apt step, before it, does not name it. The CAs, kept or not, are in no line."""
    runs = [line for line in history(kept["id"]) if line.startswith("|")]
    # The Python stack's step (the gpu-only step's pip install comes after it, in both variants' history).
    pip_steps = [line for line in runs if "pip install" in line and "-r /opt/tf29-env/requirements.lock" in line]
    assert len(pip_steps) == 1
    after = runs[:runs.index(pip_steps[0]) + 1]  # newest first: the pip step and every RUN after it
    assert [recorded_args(line)["PIP_INDEX_URL"] for line in after] == [INDEX] * len(after)
    assert all(recorded_args(line)["PIP_EXTRA_INDEX_URL"] == "" for line in after)
    # The first apt step, before the pip step (history lists the newest first; a later apt step,
    # after `ARG PIP_INDEX_URL`, names it like every RUN there).
    apt_step = [recorded_args(line) for line in runs if "apt-get install" in line][-1]
    assert "PIP_INDEX_URL" not in apt_step and apt_step["APT_MIRROR"] == ""
    ca_step = next(recorded_args(line) for line in runs if "update-ca-certificates" in line)
    assert ca_step[cacerts.TRUST_BUILD_ARG] == "1"
    assert not [line for line in runs if cacerts.CA_BUILD_ARG in recorded_args(line)]
    assert TEST_CA.splitlines()[5] not in "\n".join(history(kept["id"]))
