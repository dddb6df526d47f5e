"""bench.layers: our layers versus the base's, on recorded `docker history` data.

HISTORY is the engine's answer to GET /images/tf29-env:dev-gpu/history (the docker SDK's
client.api.history), recorded on 2026-12-02 on the 2-core build machine (Docker 20.10.24) for image
sha256:3aff1fff209e, built from commit 55c0568 on tf29-env-standin:bullseye-cuda11
(sha256:6062ff038ab1, 7 history entries). Ids are cut to 12 hex digits, CreatedBy to its start;
sizes are exact. The engine reported Size 4957151833 for the image and 2875240218 for the base."""

from typing import Any

import pytest

from bench import layers

IMAGE_SIZE = 4957151833
BASE_SIZE = 2875240218
BASE_ID = "sha256:6062ff038ab1"
BASE_ENTRIES = 7
RECORDED = [
    ("3aff1fff209e", 0, "/bin/bash -o pipefail -c #(nop)  LABEL org.opencontainers.image.title=tf29-env"),
    ("455480713411", 0, "/bin/bash -o pipefail -c #(nop)  ARG LABEL_OS="),
    ("b079302f359f", 0, "/bin/bash -o pipefail -c #(nop)  ARG LABEL_PYTHON="),
    ("96fa8c3d72e3", 0, "/bin/bash -o pipefail -c #(nop)  ARG LABEL_CUDNN_RUNTIME="),
    ("593e1fb90404", 0, "/bin/bash -o pipefail -c #(nop)  ARG LABEL_CUDA_RUNTIME="),
    ("b0fd136c077f", 0, "/bin/bash -o pipefail -c #(nop)  ARG LABEL_TF_CUDNN="),
    ("1cca458cfe02", 0, "/bin/bash -o pipefail -c #(nop)  ARG LABEL_TF_CUDA="),
    ("94f6a9d03a88", 0, "/bin/bash -o pipefail -c #(nop)  ARG LABEL_TF_VERSION="),
    ("9352e05023cc", 0, "/bin/bash -o pipefail -c #(nop)  ARG SOURCE="),
    ("bb1659575fc2", 0, "/bin/bash -o pipefail -c #(nop)  ARG CREATED=unknown"),
    ("61e3b4a1b09d", 0, "/bin/bash -o pipefail -c #(nop)  ARG REVISION=unknown"),
    ("93e58bfd0019", 0, "/bin/bash -o pipefail -c #(nop)  ARG VERSION=dev"),
    ("f1166a3ca065", 0, "/bin/bash -o pipefail -c #(nop)  ARG BASE_DIGEST="),
    ("1e07262cb66c", 0, "/bin/bash -o pipefail -c #(nop)  ARG BASE_IMAGE"),
    ("8cdc0fe94a98", 0, '/bin/bash -o pipefail -c #(nop)  ENTRYPOINT ["/usr/bin/tini" "--" "/opt/tf29-env/en'),
    ("2239f7b06611", 0, '/bin/bash -o pipefail -c #(nop)  HEALTHCHECK &{["CMD" "/usr/bin/python3" "-I"'),
    ("8468dea3819e", 111, "/bin/bash -o pipefail -c ln -s /opt/tf29-env/entrypoint.sh /usr/local/bin/entr"),
    ("fcb769704c59", 11264460, "/bin/bash -o pipefail -c #(nop) COPY dir:e489b0b274a2d74f35c3 in /opt/tf29-env/"),
    ("027b4ae38c6c", 0, "/bin/bash -o pipefail -c #(nop)  EXPOSE 22 8888"),
    ("2e3fedc8ad49", 0, "/bin/bash -o pipefail -c #(nop)  ENV NB_USER=jovyan NB_UID=1000 NB_GID=100"),
    ("f36d4f4c76fa", 1829802187, '|7 APT_MIRROR= NB_GID=100 NB_UID=1000 NB_USER=jovyan PIP_EXTRA_INDEX_URL= '
                                 'PIP_INDEX_URL= VARIANT=gpu /bin/bash -o pipefail -c case "${VARIANT}" in'),
    ("c1ca9cfc5b1b", 3679, "/bin/bash -o pipefail -c #(nop) COPY file:29b942e1cb72 in /opt/tf29-env/requirements.txt"),
    ("b48aec7e6ee3", 0, "/bin/bash -o pipefail -c #(nop)  ARG PIP_EXTRA_INDEX_URL="),
    ("c579a50d59f0", 0, "/bin/bash -o pipefail -c #(nop)  ARG PIP_INDEX_URL="),
    ("12d887205efa", 0, "/bin/bash -o pipefail -c #(nop)  ARG VARIANT=gpu"),
    ("2483b76d7296", 0, "/bin/bash -o pipefail -c #(nop)  ENV VIRTUAL_ENV=/opt/venv PATH=/opt/venv/bin:/usr/"),
    ("ad8f91714941", 8562, "|4 APT_MIRROR= NB_GID=100 NB_UID=1000 NB_USER=jovyan /bin/bash -o pipefail -c useradd"),
    ("1406e3800f35", 240829321, "|4 APT_MIRROR= NB_GID=100 NB_UID=1000 NB_USER=jovyan /bin/bash -o pipefail -c find"),
    ("31be583136e0", 0, "/bin/bash -o pipefail -c #(nop)  ARG APT_MIRROR="),
    ("c1c6e609adc3", 3295, "/bin/bash -o pipefail -c #(nop) COPY dir:d2fd9e510837 in /usr/local/share/ca-certif"),
    ("235ca011ef86", 0, "/bin/bash -o pipefail -c #(nop)  ARG NB_GID=100"),
    ("aecd09b9945e", 0, "/bin/bash -o pipefail -c #(nop)  ARG NB_UID=1000"),
    ("fbc5a3f7cc79", 0, "/bin/bash -o pipefail -c #(nop)  ARG NB_USER=jovyan"),
    ("b42df61c65cb", 0, "/bin/bash -o pipefail -c #(nop)  SHELL [/bin/bash -o pipefail -c]"),
    # The base, tf29-env-standin:bullseye-cuda11: its top entry carries its image id.
    ("6062ff038ab1", 0, "/bin/sh -c #(nop)  LABEL org.opencontainers.image.title=tf29-env stand-in CUDA"),
    ("bcafd3b24774", 0, "/bin/sh -c #(nop)  ENV CUDA_VERSION=11.8.89 NV_CUDNN_VERSION=8.9.6.50"),
    ("be1bbfb2eda4", 0, "/bin/sh -c #(nop)  ARG CUDNN_VERSION=8.9.6.50"),
    ("96a2d2cfe577", 0, "/bin/sh -c #(nop)  ARG CUDA_VERSION=11.8.89"),
    ("81fe6ccddaf0", 13282, "/bin/sh -c ln -s /usr/local/cuda-11 /usr/local/cuda  && echo /usr/local/cuda-11/"),
    ("5101dbb76945", 2749010968, "/bin/sh -c #(nop) COPY dir:1fe0a3ce2382 in /usr/local/cuda-11/lib64"),
    ("fc9fba368e90", 126215968, ""),  # the imported Debian 11 root filesystem
]


def history(missing_base_ids: bool = False) -> list[dict[str, Any]]:
    """The recorded entries as the engine returns them; a pulled base shows `<missing>` ids instead."""
    entries = []
    for index, (short_id, size, created_by) in enumerate(RECORDED):
        in_base = index >= len(RECORDED) - BASE_ENTRIES
        entries.append({"Id": "<missing>" if missing_base_ids and in_base else f"sha256:{short_id}",
                        "Size": size, "CreatedBy": created_by})
    return entries


def test_split_at_the_base_id_adds_up_to_the_engines_sizes() -> None:
    split = layers.split(history(), BASE_ID, BASE_ENTRIES)
    assert split.found_by == "base id"
    assert split.total == IMAGE_SIZE
    assert split.base == BASE_SIZE
    assert split.ours_bytes == IMAGE_SIZE - BASE_SIZE == 2081911615
    assert len(split.ours) == len(RECORDED) - BASE_ENTRIES


def test_split_by_the_base_layer_count_when_the_ids_are_missing() -> None:
    split = layers.split(history(missing_base_ids=True), BASE_ID, BASE_ENTRIES)
    assert split.found_by == "base layer count"
    assert (split.base, split.ours_bytes) == (BASE_SIZE, IMAGE_SIZE - BASE_SIZE)


def test_a_history_without_the_base_is_refused() -> None:
    with pytest.raises(ValueError, match="does not contain the base"):
        layers.split(history(missing_base_ids=True), BASE_ID, len(RECORDED) + 1)


def test_largest_of_our_layers_first_and_named_by_step() -> None:
    top = layers.largest(layers.split(history(), BASE_ID, BASE_ENTRIES), 3)
    assert [layer.size for layer in top] == [1829802187, 240829321, 11264460]
    assert top[0].step.startswith('RUN case "${VARIANT}" in')
    assert top[2].step.startswith("COPY dir:")


def test_step_names() -> None:
    assert layers.step("/bin/sh -c #(nop)  ARG CUDA_VERSION=11.8.89") == "ARG CUDA_VERSION=11.8.89"
    assert layers.step("|4 A=1 B=2 /bin/bash -o pipefail -c useradd  x") == "RUN useradd x"
    assert layers.step("") == "(imported root filesystem)"
