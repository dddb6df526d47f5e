"""compose/member.py's GPU choice: a member added without --gpus/--gpu-ids gets the next free GPU
(the least reserved of `nvidia-smi -L`, shared only when all are taken), --gpus N|all stays, and
a bad --gpu-ids is one line. `make up` with the result is tests/gpu/test_compose_gpus.py."""

import pytest

from compose import member
from testkit.gpuengine import GPU1_UUID, MIG_UUIDS, TWO_GPUS, WITH_MIG
from tf29env.core.paths import REPO


def test_what_the_shipped_gpu_file_reserves() -> None:
    lines = (REPO / "compose" / "gpu.yml").read_text().splitlines()
    assert member.held_gpus(lines) == [("0",), ("1",)]


def test_counts_and_ids_in_gpu_file_lines() -> None:
    lines = ["services:",
             "  a:",
             '    deploy: {resources: {reservations: {devices: [{driver: nvidia, device_ids: ["2", "3"], '
             "capabilities: [gpu]}]}}}",
             "  b:",
             "    deploy: {resources: {reservations: {devices: [{driver: nvidia, count: 2, capabilities: [gpu]}]}}}",
             "  c:",
             "    deploy: {resources: {reservations: {devices: [{driver: nvidia, count: all, capabilities: [gpu]}]}}}"]
    assert member.held_gpus(lines) == [("2", "3"), ("0", "1"), ("all",)]


@pytest.mark.parametrize(("held", "listing", "expected", "note"), [
    ([("0",)], TWO_GPUS, "1", None),
    ([], TWO_GPUS, "0", None),
    ([(GPU1_UUID,)], TWO_GPUS, "0", None),  # a UUID holds its GPU too
    ([("0",), ("1",), ("0",)], TWO_GPUS, "1", "every GPU is reserved: GPU 1 (NVIDIA A100-SXM4-40GB) is shared with 1"),
    ([("0",), ("1",)], WITH_MIG, MIG_UUIDS[0], None),  # a MIG box: the next free slice
    ([("0",), ("1",)], None, "2", "nvidia-smi is not on this host: gave GPU 2, the lowest index no member holds"),
    ([("0", "1")], "", "2", "nvidia-smi -L lists no GPU: gave GPU 2"),
])
def test_next_free_gpu(held: list[tuple[str, ...]], listing: str | None, expected: str, note: str | None) -> None:
    chosen, said = member.next_free_gpu(held, listing)
    assert chosen == expected
    if note is None:
        assert said is None
    else:
        assert said is not None and said.startswith(note) and "\n" not in said


@pytest.mark.parametrize(("gpus_option", "gpu_ids", "expected"), [
    (None, None, 'device_ids: ["1"]'),  # the default: the next free GPU
    ("all", None, "count: all"),  # every GPU, on request
    ("2", None, "count: 2"),
    (None, f"{GPU1_UUID},0", 'device_ids: ["1", "0"]'),  # by the host's index
])
def test_selector(gpus_option: str | None, gpu_ids: str | None, expected: str) -> None:
    assert member.gpu_selector(gpus_option, gpu_ids, [("0",)], TWO_GPUS)[0] == expected


@pytest.mark.parametrize(("gpus_option", "gpu_ids", "words"), [
    (None, "0,7", "--gpu-ids: 7 is not a GPU of this host (nvidia-smi -L lists: 0, 1)"),
    (None, "GPU-12", "--gpu-ids: 'GPU-12' is not a GPU index, GPU UUID or MIG UUID"),
    ("1", "0", "--gpus and --gpu-ids both given"),
    ("0", None, "--gpus '0' is not a number of GPUs or 'all'"),
])
def test_bad_gpu_options_are_one_line(gpus_option: str | None, gpu_ids: str | None, words: str) -> None:
    with pytest.raises(member.MemberError) as raised:
        member.gpu_selector(gpus_option, gpu_ids, [], TWO_GPUS)
    assert words in str(raised.value) and "\n" not in str(raised.value)
