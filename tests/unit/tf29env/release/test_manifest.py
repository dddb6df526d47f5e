"""Manifest rendering: JSON and Markdown carry every part (tags, size, base, pip, dpkg, self-check)."""

import json
from pathlib import Path

from tests.unit.tf29env.facts_data import GPU_STANDIN
from tf29env.release import manifest

SAMPLE = manifest.Manifest(
    image="tf29-env:2.9.3-gpu-cuda11.2-cudnn8-py3.9-debian11", image_id="sha256:" + "b" * 64, variant="gpu",
    refs=["tf29-env:2.9.3-gpu-cuda11.2-cudnn8-py3.9-debian11", "tf29-env:latest-gpu"], size_bytes=5_312_000_000,
    base="tf29-env-standin:bullseye-cuda11", base_digest="sha256:" + "c" * 64,
    labels={"org.opencontainers.image.version": "2.9.3-gpu-cuda11.2-cudnn8-py3.9-debian11"},
    facts=GPU_STANDIN.to_dict(), build_inputs={"apt_mirror": "http://mirror.example/debian"},
    pip_freeze=["numpy==1.23.5", "tensorflow==2.9.3"], dpkg=[{"name": "openssh-server", "version": "1:8.4p1-5"}],
    selfcheck_exit=0,
    # Lines the self-check printed in a cpu-variant container (tf29-env-i4:latest-cpu, 2026-12-02).
    selfcheck_output=["selfcheck: [3 tensorflow] PASS tf.version: TensorFlow 2.9.3",
                      "selfcheck: 9 PASS, 1 WARN, 0 FAIL, 5 SKIP in 6.2 s; GPU visible: no",
                      "selfcheck: report: /run/tf29-env/selfcheck.json"],
)


def test_json_round_trips_every_field() -> None:
    data = json.loads(manifest.to_json(SAMPLE))
    assert data["refs"] == SAMPLE.refs and data["size_bytes"] == 5_312_000_000
    assert data["pip_freeze"] == ["numpy==1.23.5", "tensorflow==2.9.3"]
    assert data["facts"]["cudnn_runtime"] == "8.9.6"
    assert data["selfcheck_output"] == SAMPLE.selfcheck_output
    assert data["selfcheck_summary"] == "selfcheck: 9 PASS, 1 WARN, 0 FAIL, 5 SKIP in 6.2 s; GPU visible: no"


def test_markdown_has_every_section() -> None:
    text = manifest.to_markdown(SAMPLE)
    for part in ("# Build manifest: tf29-env:2.9.3-gpu", "4.9 GiB (5312000000 bytes)", "`tf29-env:latest-gpu`",
                 "tf29-env-standin:bullseye-cuda11", "## pip freeze (2 packages)", "tensorflow==2.9.3",
                 "| openssh-server | 1:8.4p1-5 |", "TensorFlow 2.9.3",
                 "## Self-check (CPU run, exit 0)\n\nselfcheck: 9 PASS, 1 WARN",
                 "runtime CUDA 11.8 (from CUDA_VERSION), cuDNN 8.9.6", "apt_mirror: `http://mirror.example/debian`"):
        assert part in text, part


def test_write(tmp_path: Path) -> None:
    paths = manifest.write(tmp_path, SAMPLE)
    assert [p.name for p in paths] == ["manifest.json", "manifest.md"]
    assert json.loads(paths[0].read_text())["image_id"] == SAMPLE.image_id


def test_human_size() -> None:
    assert [manifest.human_size(n) for n in (512, 2048, 5 * 1024**3)] == ["512 B", "2.0 KiB", "5.0 GiB"]
