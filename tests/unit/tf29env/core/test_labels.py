"""Label sets: what the build writes in the final layer, and how wrong labels are found."""

import re

from tests.unit.tf29env.facts_data import CPU_STANDIN, GPU_STANDIN
from tf29env import finallayer
from tf29env.core import labels
from tf29env.core.paths import REPO
from tf29env.supplychain import sbom

META = labels.BuildMeta("0123456789abcdef0123456789abcdef01234567", "2026-12-02T15:04:05Z",
                        "https://example.org/tf29-env.git", "tf29-env-standin:bullseye-cuda11", "sha256:" + "a" * 64)


def test_gpu_label_set() -> None:
    values = labels.expected(GPU_STANDIN, META, "2.9.3-gpu-cuda11.2-cudnn8-py3.9-debian11")
    assert values["org.opencontainers.image.version"] == "2.9.3-gpu-cuda11.2-cudnn8-py3.9-debian11"
    assert values["org.opencontainers.image.base.name"] == "tf29-env-standin:bullseye-cuda11"
    assert values["io.tf29-env.tensorflow.cuda"] == "11.2"
    assert values["io.tf29-env.cuda.runtime"] == "11.8"
    assert values["io.tf29-env.cudnn.runtime"] == "8.9.6"
    assert set(values) == set(labels.KEYS) - {labels.SBOM}


def test_cpu_label_set_has_no_cuda() -> None:
    values = labels.expected(CPU_STANDIN, META, "2.9.3-cpu-py3.9-debian11")
    assert [values[f"io.tf29-env.{name}"] for name in ("tensorflow.cuda", "tensorflow.cudnn", "cuda.runtime")] == [
        "", "", ""]


def test_the_dockerfile_sets_no_label_of_labels_py() -> None:
    """labels.py is the one home of the label keys: the Dockerfile sets none of them (only the Dev
    Containers label, whose key is that spec's)."""
    dockerfile = (REPO / "Dockerfile").read_text()
    assert re.findall(r"^LABEL (\S+?)=", dockerfile, re.MULTILINE) == ["devcontainer.metadata"]
    for key in labels.KEYS:
        assert key not in dockerfile, key


def test_final_layer_writes_every_label_quoted() -> None:
    values = {**labels.expected(GPU_STANDIN, META, "v"), labels.SOURCE: 'https://x.org/a"b\\c$HOME'}
    text = finallayer.dockerfile("sha256:" + "b" * 64, {**values, labels.SBOM: sbom.SBOM_PATH})
    assert text.startswith("FROM sha256:" + "b" * 64 + "\n")
    for key in labels.KEYS:
        assert f"{key}=" in text, key
    # Dockerfile quoting: no variable expansion, the quote and the backslash escaped.
    assert 'org.opencontainers.image.source="https://x.org/a\\"b\\\\c\\$HOME"' in text


def test_facts_problems() -> None:
    good = {**labels.expected(GPU_STANDIN, META, "v"), labels.SBOM: sbom.SBOM_PATH}
    assert labels.facts_problems(GPU_STANDIN, good) == []
    bad = {**good, "io.tf29-env.python.version": "3.8.10"}
    del bad["org.opencontainers.image.created"]
    problems = labels.facts_problems(GPU_STANDIN, bad)
    assert "label org.opencontainers.image.created is missing" in problems
    assert any("python.version is '3.8.10'" in p for p in problems)
    assert labels.facts_problems(CPU_STANDIN, good)  # a cpu image with gpu labels


def test_docs_describe_every_label() -> None:
    """docs/build.md's label table names exactly labels.py's keys (a row may name two: `a`, `.b`)."""
    section = (REPO / "docs" / "build.md").read_text().split("## Labels", 1)[1].split("\n## ", 1)[0]
    documented: set[str] = set()
    for row in re.findall(r"^\| (`[^|]+) \|", section, re.MULTILINE):
        names = re.findall(r"`([^`]+)`", row)
        documented.update(name if not name.startswith(".") else names[0].rsplit(".", 1)[0] + name for name in names)
    assert documented == set(labels.KEYS)
