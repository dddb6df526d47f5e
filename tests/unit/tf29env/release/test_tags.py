"""The tag scheme: tags computed from facts, and every claim a tag makes checked against facts."""

import dataclasses
import datetime

import pytest

from tests.unit.tf29env.facts_data import CPU_STANDIN, GPU_STANDIN, OFFICIAL_GPU
from tf29env.core import labels
from tf29env.core.errors import EXIT_INPUT, UserError
from tf29env.core.facts import ImageFacts
from tf29env.release import tags

SHA = "0123456789abcdef0123456789abcdef01234567"
WHEN = datetime.datetime(2026, 12, 2, 15, 4, 5)
LABELS = {labels.REVISION: SHA, labels.CREATED: "2026-12-02T15:04:05Z"}


def test_gpu_standin_tags() -> None:
    assert tags.compute(GPU_STANDIN, revision=SHA, created=WHEN) == [
        "2.9.3-gpu-cuda11.2-cudnn8-py3.9-debian11", "2.9-gpu", "latest-gpu", "gpu-2026-12-02", "gpu-0123456789ab",
    ]


def test_official_and_cpu_full_tags() -> None:
    assert tags.full_tag(OFFICIAL_GPU) == "2.9.3-gpu-cuda11.2-cudnn8-py3.8-ubuntu20.04"
    assert tags.full_tag(CPU_STANDIN) == "2.9.3-cpu-py3.9-debian11"


@pytest.mark.parametrize("revision", ["unknown", SHA + "-dirty", "abc"])
def test_no_sha_tag_without_a_clean_revision(revision: str) -> None:
    computed = tags.compute(CPU_STANDIN, revision=revision, created=WHEN)
    assert computed == ["2.9.3-cpu-py3.9-debian11", "2.9-cpu", "latest-cpu", "cpu-2026-12-02"]


@pytest.mark.parametrize("facts", [GPU_STANDIN, CPU_STANDIN, OFFICIAL_GPU])
def test_every_computed_tag_claims_only_the_truth(facts: ImageFacts) -> None:
    for tag in tags.compute(facts, revision=SHA, created=WHEN):
        claim = tags.check(tag, facts, LABELS)
        assert claim is not None, tag
        assert claim.problems == [], (tag, claim.problems)


def test_gpu_tags_lie_about_a_cpu_image() -> None:
    for tag in tags.compute(GPU_STANDIN, revision=SHA, created=WHEN):
        claim = tags.check(tag, CPU_STANDIN, LABELS)
        assert claim is not None and claim.problems, tag
        assert "claims gpu" in claim.problems[0]


@pytest.mark.parametrize(("change", "words"), [
    ({"tensorflow": "2.9.2"}, "claims TensorFlow 2.9.3"),
    ({"python": "3.8.10"}, "claims Python 3.9"),
    ({"os_id": "ubuntu", "os_version": "20.04"}, "claims debian 11"),
    ({"tf_cuda": "11.8"}, "build info says 11.8"),
    ({"cuda_runtime": "11.1"}, "CUDA runtime is 11.1"),
    ({"cuda_runtime": "12.2"}, "CUDA runtime is 12.2"),
    ({"cuda_runtime": ""}, "CUDA runtime is missing"),
    ({"cudnn_runtime": "9.1.0"}, "libcudnn is 9.1.0"),
])
def test_full_tag_claims_are_checked(change: dict[str, str], words: str) -> None:
    other = dataclasses.replace(GPU_STANDIN, **change)  # type: ignore[arg-type]
    claim = tags.check("2.9.3-gpu-cuda11.2-cudnn8-py3.9-debian11", other, LABELS)
    assert claim is not None
    assert any(words in problem for problem in claim.problems), claim.problems


def test_moving_date_and_sha_claims() -> None:
    assert tags.check("2.8-gpu", GPU_STANDIN, LABELS).problems  # type: ignore[union-attr]
    assert tags.check("gpu-2026-12-01", GPU_STANDIN, LABELS).problems  # type: ignore[union-attr]
    assert tags.check("gpu-fedcba987654", GPU_STANDIN, LABELS).problems  # type: ignore[union-attr]
    assert tags.check("latest-cpu", GPU_STANDIN, LABELS).problems  # type: ignore[union-attr]
    assert tags.check("dev-gpu", GPU_STANDIN, LABELS) is None  # a user's own name claims nothing


@pytest.mark.parametrize(("ref", "expected"), [
    ("tf29-env:dev-gpu", ("tf29-env", "dev-gpu")),
    ("127.0.0.1:5000/team/tf29-env:2.9-gpu", ("127.0.0.1:5000/team/tf29-env", "2.9-gpu")),
    ("registry.example.com/tf29-env", ("registry.example.com/tf29-env", "latest")),
])
def test_split_reference(ref: str, expected: tuple[str, str]) -> None:
    assert tags.split_reference(ref) == expected


@pytest.mark.parametrize("ref", ["TF29:x", "tf29-env:bad tag", "tf29-env:-x", "tf29-env:" + "x" * 129, "a//b:c", ""])
def test_bad_references_are_one_line_input_errors(ref: str) -> None:
    with pytest.raises(UserError) as info:
        tags.split_reference(ref)
    assert info.value.exit_code == EXIT_INPUT
    assert "\n" not in str(info.value) and "--tag" in str(info.value)
