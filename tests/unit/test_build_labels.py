"""Label sets: what the build passes to the Dockerfile, and how wrong labels are found."""

from tests.unit.facts_data import CPU_STANDIN, GPU_STANDIN
from tf29env.paths import REPO
from tf29env.release import labels

META = labels.BuildMeta("0123456789abcdef0123456789abcdef01234567", "2026-12-02T15:04:05Z",
                        "https://example.org/tf29-env.git", "tf29-env-standin:bullseye-cuda11", "sha256:" + "a" * 64)


def test_gpu_label_set() -> None:
    values = labels.expected(GPU_STANDIN, META, "2.9.3-gpu-cuda11.2-cudnn8-py3.9-debian11")
    assert values["org.opencontainers.image.version"] == "2.9.3-gpu-cuda11.2-cudnn8-py3.9-debian11"
    assert values["org.opencontainers.image.base.name"] == "tf29-env-standin:bullseye-cuda11"
    assert values["io.tf29-env.tensorflow.cuda"] == "11.2"
    assert values["io.tf29-env.cuda.runtime"] == "11.8"
    assert values["io.tf29-env.cudnn.runtime"] == "8.9.6"
    assert set(values) == set(labels.LABEL_ARGS)


def test_cpu_label_set_has_no_cuda() -> None:
    values = labels.expected(CPU_STANDIN, META, "2.9.3-cpu-py3.9-debian11")
    assert [values[f"io.tf29-env.{name}"] for name in ("tensorflow.cuda", "tensorflow.cudnn", "cuda.runtime")] == [
        "", "", ""]


def test_every_label_arg_is_declared_in_the_dockerfiles_last_block() -> None:
    last_block = (REPO / "Dockerfile").read_text().split("# Labels last", 1)[1]
    for label, arg in labels.LABEL_ARGS.items():
        assert f"ARG {arg}" in last_block, arg
        assert f'{label}="${{{arg}}}"' in last_block, label
    for label in labels.FIXED_LABELS:
        assert label in last_block


def test_buildargs_map_labels_to_args() -> None:
    args = labels.buildargs(labels.expected(GPU_STANDIN, META, "v"))
    assert args["LABEL_TF_VERSION"] == "2.9.3" and args["VERSION"] == "v" and args["BASE_DIGEST"].startswith("sha256:")


def test_facts_problems() -> None:
    good = {**labels.expected(GPU_STANDIN, META, "v"), "org.opencontainers.image.title": "tf29-env",
            "org.opencontainers.image.description": "d", "io.tf29-env.variant": "gpu"}
    assert labels.facts_problems(GPU_STANDIN, good) == []
    bad = {**good, "io.tf29-env.python.version": "3.8.10"}
    del bad["org.opencontainers.image.created"]
    problems = labels.facts_problems(GPU_STANDIN, bad)
    assert "label org.opencontainers.image.created is missing" in problems
    assert any("python.version is '3.8.10'" in p for p in problems)
    assert labels.facts_problems(CPU_STANDIN, good)  # a cpu image with gpu labels
