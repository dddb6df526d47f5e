"""bench.pullsize: compressed sizes from registry manifests, on recorded real data.

Recorded on 2026-12-03 on the 2-core build machine (Docker 20.10.24, Debian's docker-registry
2.8 on 127.0.0.1) by bench.pullsize.measure itself, with the registry's answers saved as they came:

- BASE, IMAGE, UPDATE: the layers of the schema2 manifests (GET /v2/NAME/manifests/bench) of
  tf29-env-standin:bullseye-cuda11, of the gpu image build.py built from the checkout of commit
  1ce56ff (with the Dockerfile being edited then), and of that image rebuilt after a comment was
  appended to image/entrypoint.sh (cache_from the image). HISTORY and DIFF_IDS are the update's
  image config (its blob in the registry): every history entry, created_by cut to 160 characters,
  diff_ids to 19.
- TEST_GPU and STALE_UPDATE: an earlier run on tf29-env:test-gpu (built from commit c02ca25), whose
  rebuild came from the engine's own cache, which took another build's pip layer
  (the Dockerfile had changed since): what check_update is there to catch."""

from collections.abc import Iterator
from typing import Any

import pytest

from bench import pullsize
from bench.errors import BenchError
from bench.pullsize import Blob

BASE = [
    ("sha256:5f51ae149334a5f61f22a8c7753442986ad3c1fdb8eef4d3ff440e38c379e38c", 56708884),
    ("sha256:d1c7bb1ee0a9166898a2fc6d57348ce62059503e74669bf09d30bccdfea1d56d", 1636269702),
    ("sha256:47e6096e51d8d778f069c267bb90fc97a5d55c7def31f4ce709c3c569bb44a1b", 3274),
]
IMAGE = [
    *BASE,
    ("sha256:09e86bb802d424574ec75352bec8b2bf4ba08a818b706923f1ec38d74323d23d", 43395493),
    ("sha256:7a4de1ef48fe6b1c37814f6435b56f1cb6b250bf9f4e1339ad5cbd9231ddbaa6", 4224),
    ("sha256:6ab19633dbbe6a9c0bacfd8b4c03b9ca86c77e3844015b528ebfbb669615c164", 2593),
    ("sha256:f4fd5534cc950b0dcb13f7f1c0a932583d201ffe1e5615241d68d7d898f5eb84", 667168782),
    ("sha256:fbbb944948094a9f170239462b54ae03d7f433ea241717f389b976396ff0d1d1", 1207476),
    ("sha256:b6613ffac000a2e673f683db88f12bfb9b48a040c528f9c5e43ee0802febe29b", 21391608),
    ("sha256:87e4e0a15c814bd0e135f9174b6e37ad4f901ffc3f95fd0b1a901b9de009d95e", 851),
    ("sha256:7fc52082b7116b4699c96f5675b6a960765455f8acb7f8ecfcf95773eaa38ff8", 212),
    ("sha256:db3aa3eb500a9c79de45e2d2875e4dc4e05f5b8e008b1de1986636ffdbed6de0", 68622),
    ("sha256:35ff3886b9764d06c6014f2bea89802e61ee48d89d41f41c4a71e349253e3e3e", 844),
    ("sha256:a1b9abbf276161d3cdb8caadb62f16e89501973aee548b14dc9c792cc95abedb", 7468),
    ("sha256:3bbee4c97512dbb802ed53b05434f42f62a2fb61e61b9928e05b3f350d7893cf", 101236),
]
UPDATE = [
    *IMAGE[:11],  # shared with IMAGE up to COPY image/
    ("sha256:b3164088db8ecfc33482b94c61e31ed0a5d676dd7b25048110f7bebaba86456d", 68654),
    ("sha256:75aff6170ed385c070088a4be03cd9b8467d967a713eb6f18672edc11c0a543f", 845),
    ("sha256:d17fab7c0b0f3e46856a9afbbb46f766427ec4ef045f00e0567da63c9c9cbc69", 7468),
]
TEST_GPU = [
    ("sha256:5f51ae149334a5f61f22a8c7753442986ad3c1fdb8eef4d3ff440e38c379e38c", 56708884),
    ("sha256:d1c7bb1ee0a9166898a2fc6d57348ce62059503e74669bf09d30bccdfea1d56d", 1636269702),
    ("sha256:47e6096e51d8d778f069c267bb90fc97a5d55c7def31f4ce709c3c569bb44a1b", 3274),
    ("sha256:e971e858134fcf5e50898d47d64defbfa0874701b4bc4a17b3feafd83f651272", 52598864),
    ("sha256:09e331c01b7ce6fac3349fb2d40e381debc45925d2fe14f3a11601a5126ab54a", 4224),
    ("sha256:0117a3159eb5334026816fe6d8ee88e7a654b5188332e51b8da9ada74aac42d5", 2597),
    ("sha256:94389e8207a33053d7daaf7af77dd8df36766d59943a510b7ee20573a5a5e9d7", 717352317),
    ("sha256:12c927277cb172e9577ee412bed3a57b6583054b95e391372df9a8cca2a2a971", 2238519),
    ("sha256:e6b4eb9999219abf2bef0e2e0c605e526754016afb500c99bf584cbb7bd00dc3", 33316505),
    ("sha256:3eab33f58e8867d8486e741cc9a1db1af838743b5cc49207493e9f336ebab7b6", 849),
    ("sha256:31f465ec8b754081375f82de7a9ec2305c2cef49711235b09b8c5c3dc8daab52", 212),
    ("sha256:450042da9edb486ae4f82de386bfe4fb5a8b86428683158fd27c3c4397ea5099", 68621),
    ("sha256:85d9a99006b207d314210155fa37aca41941ed30bb1c14fce5edf19b9d37c9fa", 845),
    ("sha256:76300102bb54ce201297de85b375f38b3bb4980f9bbd4efc6c08142212c5dc03", 7466),
    ("sha256:02ea1b2c6684433f98344ecc33ada928cefbb0e9164eea594b5d9acfd876fc16", 101245),
]
STALE_UPDATE = [
    ("sha256:5f51ae149334a5f61f22a8c7753442986ad3c1fdb8eef4d3ff440e38c379e38c", 56708884),
    ("sha256:d1c7bb1ee0a9166898a2fc6d57348ce62059503e74669bf09d30bccdfea1d56d", 1636269702),
    ("sha256:47e6096e51d8d778f069c267bb90fc97a5d55c7def31f4ce709c3c569bb44a1b", 3274),
    ("sha256:e971e858134fcf5e50898d47d64defbfa0874701b4bc4a17b3feafd83f651272", 52598864),
    ("sha256:09e331c01b7ce6fac3349fb2d40e381debc45925d2fe14f3a11601a5126ab54a", 4224),
    ("sha256:0117a3159eb5334026816fe6d8ee88e7a654b5188332e51b8da9ada74aac42d5", 2597),
    ("sha256:282664165ef854c63c992f39519d4673f2f4d07b7f560ca65b819645c921b46b", 667161539),
    ("sha256:1c564e9c06d4a5c8f3b96169c01c7250711d13f39aed8dc0f1dce4be2a9d887f", 2238602),
    ("sha256:52f02fab715919e826ab0f0ade8337b03461ce88bdf63450cb617db324ebf87f", 21391583),
    ("sha256:098f8fc1181a99611e18be1741e0a0019751156450e86ac7936c9952dadf18d4", 851),
    ("sha256:97bf00b121345ce5872719a39d41f64a0bc068a3e0c19372d788c9e46a97bb96", 210),
    ("sha256:40178a0f0d8acb3b74d3c9cc13adee84e07333269ca4746ec1afbcb6dbe2f94b", 68653),
    ("sha256:593be3fb249143f01961bc7379c4fd127197d560d8e465c3d750690de652c349", 847),
    ("sha256:57421708e4f25ce2e594e7c5051d73bbd1cab081d15fa37345b838ec4c0efee5", 7469),
]
HISTORY = [
    (False, ""),
    (False, "/bin/sh -c #(nop) COPY dir:1fe0a3ce2382e63839d48923d15f5ce78c745669edfec6a1459131d3fc462bf"
            "e in /usr/local/cuda-11/lib64/ "),
    (False, "/bin/sh -c ln -s /usr/local/cuda-11 /usr/local/cuda  && echo /usr/local/cuda-11/lib64 > /e"
            "tc/ld.so.conf.d/000-cuda-11.conf  && ldconfig"),
    (True, "/bin/sh -c #(nop)  ARG CUDA_VERSION=11.8.89"),
    (True, "/bin/sh -c #(nop)  ARG CUDNN_VERSION=8.9.6.50"),
    (True, "/bin/sh -c #(nop)  ENV CUDA_VERSION=11.8.89 NV_CUDNN_VERSION=8.9.6.50 NVIDIA_REQUIRE_CUDA="
            "cuda>=11.0 NVIDIA_VISIBLE_DEVICES=all NVIDIA_DRIVER_CAPABILITIES=compu"),
    (True, "/bin/sh -c #(nop)  LABEL org.opencontainers.image.title=tf29-env stand-in CUDA base org.op"
            "encontainers.image.base.name= io.tf29-env.cuda=11.8.89 io.tf29-env.cud"),
    (True, "/bin/bash -o pipefail -c #(nop)  SHELL [/bin/bash -o pipefail -c]"),
    (True, "/bin/bash -o pipefail -c #(nop)  ARG NB_USER=jovyan"),
    (True, "/bin/bash -o pipefail -c #(nop)  ARG NB_UID=1000"),
    (True, "/bin/bash -o pipefail -c #(nop)  ARG NB_GID=100"),
    (True, "/bin/bash -o pipefail -c #(nop)  ARG APT_MIRROR="),
    (False, "|4 APT_MIRROR= NB_GID=100 NB_UID=1000 NB_USER=jovyan /bin/bash -o pipefail -c if [[ \"${FTP"
            "_PROXY:-}\" == *\"-----BEGIN CERTIFICATE-----\"* ]]; then       { cat /et"),
    (False, "|4 APT_MIRROR= NB_GID=100 NB_UID=1000 NB_USER=jovyan /bin/bash -o pipefail -c useradd --cr"
            "eate-home --shell /bin/bash --uid \"${NB_UID}\" --gid \"${NB_GID}\" \"${NB_"),
    (True, "/bin/bash -o pipefail -c #(nop)  ENV VIRTUAL_ENV=/opt/venv PATH=/opt/venv/bin:/usr/local/n"
            "vidia/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin"),
    (True, "/bin/bash -o pipefail -c #(nop)  ARG VARIANT=gpu"),
    (True, "/bin/bash -o pipefail -c #(nop)  ARG PIP_INDEX_URL="),
    (True, "/bin/bash -o pipefail -c #(nop)  ARG PIP_EXTRA_INDEX_URL="),
    (False, "/bin/bash -o pipefail -c #(nop) COPY file:e85c7190c476861f614a6b45be1353b5898639cb4f664bd3"
            "41776dcb686007ae in /opt/tf29-env/requirements.txt "),
    (False, "|7 APT_MIRROR= NB_GID=100 NB_UID=1000 NB_USER=jovyan PIP_EXTRA_INDEX_URL= PIP_INDEX_URL= V"
            "ARIANT=gpu /bin/bash -o pipefail -c case \"${VARIANT}\" in       gpu) cp"),
    (False, "|7 APT_MIRROR= NB_GID=100 NB_UID=1000 NB_USER=jovyan PIP_EXTRA_INDEX_URL= PIP_INDEX_URL= V"
            "ARIANT=gpu /bin/bash -o pipefail -c if [[ \"${FTP_PROXY:-}\" == *\"-----B"),
    (False, "|7 APT_MIRROR= NB_GID=100 NB_UID=1000 NB_USER=jovyan PIP_EXTRA_INDEX_URL= PIP_INDEX_URL= V"
            "ARIANT=gpu /bin/bash -o pipefail -c if [ \"${VARIANT}\" = gpu ]; then   "),
    (True, "/bin/bash -o pipefail -c #(nop)  ENV TFENV_IMAGE_USER=jovyan"),
    (True, "/bin/bash -o pipefail -c #(nop)  ENV NB_USER=jovyan NB_UID=1000 NB_GID=100 SHELL=/bin/bash"
            " NVIDIA_VISIBLE_DEVICES=all NVIDIA_DRIVER_CAPABILITIES=compute,utility"),
    (True, "/bin/bash -o pipefail -c #(nop)  ENV JUPYTER_RUNTIME_DIR=/run/tf29-env/jupyter"),
    (True, "/bin/bash -o pipefail -c #(nop)  EXPOSE 22 8888"),
    (False, "/bin/bash -o pipefail -c #(nop) COPY dir:2e254d95cc7c34f77775ebf61c86c0ee3ae346a6fa020b97a"
            "af8530070c025ec in /usr/local/share/ca-certificates/tf29-env/ "),
    (True, "/bin/bash -o pipefail -c #(nop)  ARG TRUST_CA_CERTS="),
    (False, "|5 APT_MIRROR= PIP_EXTRA_INDEX_URL= PIP_INDEX_URL= TRUST_CA_CERTS= VARIANT=gpu /bin/bash -"
            "o pipefail -c dir=/usr/local/share/ca-certificates/tf29-env  && find \""),
    (False, "/bin/bash -o pipefail -c #(nop) COPY dir:89bc5f76079a4072ba9ffca1887d57323dcfc780030c7cf01"
            "5567375ce81c4d0 in /opt/tf29-env/ "),
    (False, "|5 APT_MIRROR= PIP_EXTRA_INDEX_URL= PIP_INDEX_URL= TRUST_CA_CERTS= VARIANT=gpu /bin/bash -"
            "o pipefail -c ln -s /opt/tf29-env/entrypoint.sh /usr/local/bin/entrypo"),
    (False, "/bin/bash -o pipefail -c #(nop) COPY dir:4aaf1b718c5203d739a0505ee929810968dd12da3461f48a7"
            "45c73b9fb643b4c in /home/jovyan/quickstart/ "),
    (True, "/bin/bash -o pipefail -c #(nop)  HEALTHCHECK &{[\"CMD\" \"/usr/bin/python3\" \"-I\" \"/opt/tf29-e"
            "nv/healthchecks/healthcheck.py\"] \"5s\" \"3s\" \"1m0s\" '\\x03'}"),
    (True, "/bin/bash -o pipefail -c #(nop)  ENTRYPOINT [\"/usr/bin/tini\" \"--\" \"/opt/tf29-env/entrypoin"
            "t.sh\"]"),
    (True, "/bin/bash -o pipefail -c #(nop)  LABEL devcontainer.metadata=[{\"remoteUser\": \"jovyan\", \"ho"
            "stRequirements\": {\"gpu\": \"optional\"}, \"forwardPorts\": [8888], \"portsAt"),
    (True, "/bin/bash -o pipefail -c #(nop)  ARG BASE_IMAGE"),
    (True, "/bin/bash -o pipefail -c #(nop)  ARG BASE_DIGEST="),
    (True, "/bin/bash -o pipefail -c #(nop)  ARG VERSION=dev"),
    (True, "/bin/bash -o pipefail -c #(nop)  ARG REVISION=unknown"),
    (True, "/bin/bash -o pipefail -c #(nop)  ARG CREATED=unknown"),
    (True, "/bin/bash -o pipefail -c #(nop)  ARG SOURCE="),
    (True, "/bin/bash -o pipefail -c #(nop)  ARG LABEL_TF_VERSION="),
    (True, "/bin/bash -o pipefail -c #(nop)  ARG LABEL_TF_CUDA="),
    (True, "/bin/bash -o pipefail -c #(nop)  ARG LABEL_TF_CUDNN="),
    (True, "/bin/bash -o pipefail -c #(nop)  ARG LABEL_CUDA_RUNTIME="),
    (True, "/bin/bash -o pipefail -c #(nop)  ARG LABEL_CUDNN_RUNTIME="),
    (True, "/bin/bash -o pipefail -c #(nop)  ARG LABEL_PYTHON="),
    (True, "/bin/bash -o pipefail -c #(nop)  ARG LABEL_OS="),
    (True, "/bin/bash -o pipefail -c #(nop)  ARG LABEL_CA_TRUSTED="),
    (True, "/bin/bash -o pipefail -c #(nop)  LABEL org.opencontainers.image.title=tf29-env org.opencon"
            "tainers.image.description=TensorFlow 2.9 with JupyterLab, SSH and a GP"),
]
DIFF_IDS = [
    "sha256:e0b034a53228", "sha256:d986220eb58b", "sha256:d4aaf3154e8a", "sha256:c175d5263e82",
    "sha256:e4035ee4425f", "sha256:401f01ddf074", "sha256:b5b7ee2ef2f4", "sha256:784781154867",
    "sha256:b973c98a7f2a", "sha256:71b7d4eaca63", "sha256:8ece1495a00d", "sha256:243de65e9c1f",
    "sha256:aa852174d17c", "sha256:b6f327f7cd61",
]


MANIFEST_V2 = "application/vnd.docker.distribution.manifest.v2+json"
LAYER = "application/vnd.docker.image.rootfs.diff.tar.gzip"
MIB = 1024 * 1024


def manifest(layers: list[tuple[str, int]]) -> dict[str, Any]:
    """A manifest as the registry served it (its config entry is IMAGE's)."""
    return {"schemaVersion": 2, "mediaType": MANIFEST_V2,
            "config": {"mediaType": "application/vnd.docker.container.image.v1+json", "size": 25466,
                       "digest": "sha256:009924c76bb6ce5d6120fd1dea84a5c28ae35dd0bf12604d9a908fe179937d17"},
            "layers": [{"mediaType": LAYER, "size": size, "digest": digest} for digest, size in layers]}


def blobs(layers: list[tuple[str, int]]) -> list[Blob]:
    return pullsize.blobs(manifest(layers))


def config() -> dict[str, Any]:
    history = [{"created_by": text, **({"empty_layer": True} if empty else {})} for empty, text in HISTORY]
    history[0].pop("created_by")  # the base's imported root filesystem has no created_by at all
    return {"history": history, "rootfs": {"type": "layers", "diff_ids": DIFF_IDS}}


def test_manifest_layers_in_order() -> None:
    image = blobs(IMAGE)
    assert len(image) == 15
    assert image[0] == Blob("sha256:5f51ae149334a5f61f22a8c7753442986ad3c1fdb8eef4d3ff440e38c379e38c", 56708884)
    assert image[-1].size == 101236  # build.py's final layer (labels, SBOM), on top


@pytest.mark.parametrize("document", [
    {"schemaVersion": 1, "name": "tf29-env-bench/gpu", "tag": "bench", "fsLayers": []},
    {"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.list.v2+json", "manifests": []},
])
def test_not_a_schema2_image_manifest(document: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="not a schema2 image manifest"):
        pullsize.blobs(document)


def test_split_whole_base_ours() -> None:
    whole = pullsize.split(blobs(IMAGE), blobs(BASE))
    assert whole.to_json() == {"whole_bytes": 2426331269, "base_bytes": 1692981860, "ours_bytes": 733349409,
                               "layers": 15, "base_layers": 3}
    # Compressed, about half of what `docker images` shows (4.6 GiB for this image).
    assert round(whole.whole / MIB) == 2314 and round(whole.ours / MIB) == 699


def test_split_needs_the_base_first() -> None:
    with pytest.raises(ValueError, match="not the first layers"):
        pullsize.split(blobs(IMAGE), blobs(IMAGE)[1:4])
    with pytest.raises(ValueError, match="not the first layers"):
        pullsize.split(blobs(BASE), blobs(IMAGE))


def test_update_after_a_script_only_change() -> None:
    old, new = blobs(IMAGE), blobs(UPDATE)
    # COPY image/, the RUN after it (its symlinks have new times) and COPY notebooks/: 75 KiB.
    assert [blob.size for blob in pullsize.new_blobs(old, new)] == [68654, 845, 7468]
    assert pullsize.update(old, new) == 76967
    assert pullsize.first_new(old, new) == 11


def test_update_of_nothing_new_is_zero() -> None:
    assert pullsize.update(blobs(IMAGE), blobs(IMAGE)) == 0
    assert pullsize.first_new(blobs(IMAGE), blobs(IMAGE)) == 15
    # A node with nothing downloads everything.
    assert pullsize.update([], blobs(BASE)) == 1692981860


def test_layer_steps_pair_layers_with_their_steps() -> None:
    steps = pullsize.layer_steps(config())
    assert len(steps) == len(blobs(UPDATE)) == 14
    assert steps[0] == "(imported root filesystem)"
    assert steps[6] == "RUN case \"${VARIANT}\" in gpu) cp"  # the pip layer (created_by cut in HISTORY)
    # A zero-byte RUN still makes a layer: the config says so, `docker history` sizes cannot.
    assert steps[10].startswith("RUN dir=/usr/local/share/ca-certificates/tf29-env")
    assert steps[11] == "COPY dir:89bc5f76079a4072ba9ffca1887d57323dcfc780030c7cf015567375ce81c4d0 in /opt/tf29-env/"


def test_layer_steps_must_match_the_layers() -> None:
    broken = config()
    broken["rootfs"]["diff_ids"] = DIFF_IDS[:-1]
    with pytest.raises(ValueError, match="14 layer steps for 13 layers"):
        pullsize.layer_steps(broken)


def test_check_update_accepts_the_copy_of_image() -> None:
    steps = pullsize.layer_steps(config())
    pullsize.check_update("img", steps, pullsize.first_new(blobs(IMAGE), blobs(UPDATE)))


def test_check_update_refuses_a_rebuild_on_other_layers() -> None:
    # The stale rebuild shares the base and the apt and user layers, then has another pip layer.
    first = pullsize.first_new(blobs(TEST_GPU), blobs(STALE_UPDATE))
    assert first == 6
    assert pullsize.update(blobs(TEST_GPU), blobs(STALE_UPDATE)) == 690869754
    # Its config's steps are the same Dockerfile steps as UPDATE's (all but COPY image/'s hash).
    with pytest.raises(BenchError, match="first new layer of its script-only rebuild is `RUN case"):
        pullsize.check_update("tf29-env:test-gpu", pullsize.layer_steps(config()), first)
    with pytest.raises(BenchError, match="nothing changed"):
        pullsize.check_update("img", pullsize.layer_steps(config()), 14)


# The classic builder's output for UPDATE's rebuild (imagebuild's log lines), steps 4-23 left out.
REBUILD_LOG = [
    "Step 1/45 : ARG BASE_IMAGE=nvidia/cuda:11.2.2-cudnn8-runtime-ubuntu20.04",
    "Step 2/45 : FROM ${BASE_IMAGE}",
    " ---> 26a7ff94bbb9",
    'Step 3/45 : SHELL ["/bin/bash", "-o", "pipefail", "-c"]',
    " ---> Using cache",
    " ---> 0f30ab248a16",
    "Step 24/45 : RUN dir=/usr/local/share/ca-certificates/tf29-env  && find \"${dir}\" -type f ! -name '*.crt' "
    "-delete",
    " ---> Using cache",
    " ---> 0ea6c6455bfb",
    "Step 25/45 : COPY image/ /opt/tf29-env/",
    " ---> 4e31cd0ec955",
    "Step 26/45 : RUN ln -s /opt/tf29-env/entrypoint.sh /usr/local/bin/entrypoint.sh",
    " ---> Running in a67bedc0e5fd",
    "Removing intermediate container a67bedc0e5fd",
    " ---> 9159305c95e0",
]


def test_first_rebuilt_step() -> None:
    assert pullsize.first_rebuilt(REBUILD_LOG) == "COPY image/ /opt/tf29-env/"
    pullsize.check_rebuilt("img", pullsize.first_rebuilt(REBUILD_LOG))


def test_a_rebuild_from_an_earlier_step_is_refused() -> None:
    # Steps 24 and on not from the cache, as when the image came from another Dockerfile.
    lines = [*REBUILD_LOG[:6], "Step 24/45 : RUN dir=/usr/local/share/ca-certificates/tf29-env", " ---> Running in 1",
             " ---> 2"]
    assert pullsize.first_rebuilt(lines) == "RUN dir=/usr/local/share/ca-certificates/tf29-env"
    with pytest.raises(BenchError, match=r"ran `RUN dir=.*` afresh, where `COPY image/` should come first"):
        pullsize.check_rebuilt("img", pullsize.first_rebuilt(lines))
    assert pullsize.first_rebuilt(REBUILD_LOG[:6]) == ""


def test_repository_names() -> None:
    assert pullsize.repository("gpu") == "tf29-env-bench/gpu"
    assert pullsize.repository("Official CUDA base") == "tf29-env-bench/official-cuda-base"
    with pytest.raises(ValueError, match="makes no repository name"):
        pullsize.repository("--")


# The engine's answer to a push to a port nobody listens at (recorded the same day, same engine).
REFUSED = {"errorDetail": {"message": "Get \"http://127.0.0.1:37279/v2/\": dial tcp 127.0.0.1:37279: connect: "
                                      "connection refused"},
           "error": "Get \"http://127.0.0.1:37279/v2/\": dial tcp 127.0.0.1:37279: connect: connection refused"}


class FakeApi:
    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    def tag(self, image: str, repository: str, tag: str, force: bool = False) -> None:
        self.calls.append(("tag", image, f"{repository}:{tag}"))

    def remove_image(self, ref: str) -> None:
        self.calls.append(("remove", ref))


class FakeImages:
    def push(self, repository: str, tag: str, stream: bool, decode: bool) -> Iterator[dict[str, Any]]:
        assert stream and decode
        yield {"status": f"The push refers to repository [{repository}]"}
        yield REFUSED


class FakeClient:
    def __init__(self) -> None:
        self.api = FakeApi()
        self.images = FakeImages()


def test_a_push_error_is_one_line_and_the_tag_goes() -> None:
    client = FakeClient()
    with pytest.raises(BenchError) as caught:
        pullsize.push_layers(client, "127.0.0.1:37279", "tf29-env:bench-gpu", "tf29-env-bench/gpu")
    assert str(caught.value) == ("push of 127.0.0.1:37279/tf29-env-bench/gpu:bench failed: Get "
                                 "\"http://127.0.0.1:37279/v2/\": dial tcp 127.0.0.1:37279: connect: "
                                 "connection refused")
    assert client.api.calls == [("tag", "tf29-env:bench-gpu", "127.0.0.1:37279/tf29-env-bench/gpu:bench"),
                                ("remove", "127.0.0.1:37279/tf29-env-bench/gpu:bench")]


def test_push_layers_wants_a_name() -> None:
    with pytest.raises(ValueError, match="not its id"):
        pullsize.push_layers(FakeClient(), "127.0.0.1:1", "sha256:8f166fe30db1", "x")
