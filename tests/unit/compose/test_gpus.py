"""compose/gpus.py, the GPU rules of `make run`, member.py and the hub: what `nvidia-smi -L` lists,
which IDs a setting may name, who holds which GPU by the containers' device requests, whom to
give which, and `make run`'s arguments. The engine side is tests/gpu, on the stand-in GPU engine."""

import pytest

from compose import gpus
from testkit.gpuengine import GPU0_UUID, GPU1_UUID, GPU2_UUID, MIG_UUIDS, TWO_GPUS, WITH_MIG

# R450/R460 printed MIG slices with the GPU's UUID and the instance numbers.
OLD_MIG = (f"GPU 0: A100-SXM4-40GB (UUID: {GPU0_UUID})\n"
           f"  MIG 3g.20gb Device 0: (UUID: MIG-{GPU0_UUID}/1/0)\n"
           f"  MIG 3g.20gb Device 1: (UUID: MIG-{GPU0_UUID}/2/0)\n")


def ids(devices: tuple[gpus.Device, ...]) -> list[str]:
    return [device.id for device in devices]


def test_whole_gpus_by_index_with_their_uuid() -> None:
    devices = gpus.parse_listing(TWO_GPUS)
    assert ids(devices) == ["0", "1"]
    assert devices[1].aliases == {"1", GPU1_UUID}
    assert (devices[0].name, devices[0].mig, devices[0].label) == (
        "NVIDIA A100-SXM4-40GB", "", "GPU 0 (NVIDIA A100-SXM4-40GB)")


def test_a_gpu_in_mig_mode_is_its_slices() -> None:
    devices = gpus.parse_listing(WITH_MIG)
    assert ids(devices) == ["0", "1", *MIG_UUIDS]
    first = devices[2]
    assert first.aliases == {MIG_UUIDS[0], "2:0"} and first.parent == {"2", GPU2_UUID}
    assert first.mig == "1g.5gb" and first.label == "MIG 1g.5gb slice 2:0 (NVIDIA A100-SXM4-40GB)"


def test_r450_mig_uuids() -> None:
    devices = gpus.parse_listing(OLD_MIG)
    assert ids(devices) == [f"MIG-{GPU0_UUID}/1/0", f"MIG-{GPU0_UUID}/2/0"]
    assert devices[1].aliases == {f"MIG-{GPU0_UUID}/2/0", "0:1"} and devices[1].mig == "3g.20gb"


@pytest.mark.parametrize("text", ["", "No devices were found\n", "nvidia-smi has failed\n"])
def test_no_gpu_lines_no_devices(text: str) -> None:
    assert gpus.parse_listing(text) == ()


@pytest.mark.parametrize(("text", "expected"), [
    ("0", ("0",)), ("0,1", ("0", "1")), (" 2 , 3 ", ("2", "3")), (GPU0_UUID, (GPU0_UUID,)),
    (f"{MIG_UUIDS[0]},1", (MIG_UUIDS[0], "1")), (f"MIG-{GPU0_UUID}/1/0", (f"MIG-{GPU0_UUID}/1/0",)),
    ("2:1", ("2:1",)),
])
def test_ids_in_every_form(text: str, expected: tuple[str, ...]) -> None:
    assert gpus.parse_ids(text, "GPUS") == expected


@pytest.mark.parametrize("text", [
    "", "0,", "GPU-123", "gpu0", "-1", "1000", "0 1", "MIG-xyz", f"{GPU0_UUID}0", "GPU-" + "g" * 8, "all", "0;1",
    "x" * 500,
])
def test_malformed_ids_are_one_line_naming_the_setting(text: str) -> None:
    with pytest.raises(gpus.GpuError) as raised:
        gpus.parse_ids(text, "HUB_GPUS")
    message = str(raised.value)
    assert message.startswith("HUB_GPUS: ") and "is not a GPU index, GPU UUID or MIG UUID" in message
    assert "\n" not in message and len(message) < 300


def test_an_id_twice_is_refused() -> None:
    with pytest.raises(gpus.GpuError, match="names a GPU twice"):
        gpus.parse_ids("1,1", "GPUS")


def test_resolve_against_the_host() -> None:
    host = gpus.parse_listing(WITH_MIG)
    assert ids(gpus.resolve(["1", GPU0_UUID, "2:1"], host, "GPUS")) == ["1", "0", MIG_UUIDS[1]]
    with pytest.raises(gpus.GpuError) as lacks:
        gpus.resolve(["7"], host, "--gpu-ids")
    assert str(lacks.value) == (f"--gpu-ids: 7 is not a GPU of this host (nvidia-smi -L lists: 0, 1, {MIG_UUIDS[0]}, "
                                f"{MIG_UUIDS[1]})")
    with pytest.raises(gpus.GpuError, match="GPU 2 is in MIG mode: name its MIG slices"):
        gpus.resolve(["2"], host, "GPUS")
    with pytest.raises(gpus.GpuError, match="names one GPU twice"):
        gpus.resolve(["0", GPU0_UUID], host, "GPUS")


def test_resolve_without_a_host_list_takes_ids_as_given() -> None:
    resolved = gpus.resolve(["3", MIG_UUIDS[0]], None, "GPUS")
    assert ids(resolved) == ["3", MIG_UUIDS[0]]
    assert [device.mig for device in resolved] == ["", "?"]


@pytest.mark.parametrize(("request_", "expected"), [
    ({"Driver": "nvidia", "DeviceIDs": ["1", "2"], "Capabilities": [["gpu"]]}, ("1", "2")),
    ({"Driver": "", "Count": 2, "Capabilities": [["gpu"]]}, ("0", "1")),
    ({"Driver": "", "Count": -1, "Capabilities": [["gpu", "utility"]]}, (gpus.ALL,)),
    ({"Driver": "nvidia", "Count": 0, "DeviceIDs": None, "Capabilities": None}, ()),
    ({"Driver": "other", "DeviceIDs": ["/dev/fuse"], "Capabilities": [["fuse"]]}, ()),
])
def test_what_a_device_request_holds(request_: dict[str, object], expected: tuple[str, ...]) -> None:
    assert gpus.request_ids(request_) == expected


def test_usage_counts_holders_by_any_spelling() -> None:
    devices = gpus.parse_listing(WITH_MIG)
    held = [("0",), (GPU0_UUID,), ("2:1",), ("2",), (gpus.ALL,), ("9",)]
    # GPU 0 by index and by UUID, slice 2:1 by itself and by its GPU, everything by `all`.
    assert gpus.usage(held, devices) == {"0": 3, "1": 1, MIG_UUIDS[0]: 2, MIG_UUIDS[1]: 3}


@pytest.mark.parametrize(("wanted", "used", "share", "expected"), [
    (1, {}, False, ["0"]),  # nothing held: the host's order
    (1, {"0": 1}, False, ["1"]),
    (2, {"1": 1}, False, ["0", "2"]),
    (1, {"0": 2, "1": 1, "2": 1}, True, ["1"]),  # sharing: the least used, ties in order
    (2, {"0": 1, "1": 1, "2": 1}, True, ["0", "1"]),
])
def test_choose_the_least_used(wanted: int, used: dict[str, int], share: bool, expected: list[str]) -> None:
    devices = gpus.parse_listing(TWO_GPUS + f"GPU 2: NVIDIA A100-SXM4-40GB (UUID: {GPU2_UUID})\n")
    assert ids(gpus.choose(wanted, devices, used, share)) == expected


def test_none_free_without_sharing() -> None:
    devices = gpus.parse_listing(TWO_GPUS)
    with pytest.raises(gpus.NoFreeGpu) as short:
        gpus.choose(1, devices, {"0": 1, "1": 1}, share=False)
    assert (short.value.wanted, short.value.free, short.value.total) == (1, 0, 2)
    with pytest.raises(gpus.NoFreeGpu):
        gpus.choose(3, devices, {}, share=True)


@pytest.mark.parametrize(("runtimes", "capable"), [
    ({"runc": {"path": "runc"}}, False), (None, False),
    ({"runc": {"path": "runc"}, "nvidia": {"path": "nvidia-container-runtime"}}, True),
])
def test_gpu_capable_engine(runtimes: dict[str, object] | None, capable: bool) -> None:
    assert gpus.gpu_capable(runtimes) is capable


@pytest.mark.parametrize(("setting", "capable", "expected"), [
    ("", True, ["--gpus", "all"]),
    ("", False, []),  # an engine without the runtime: the CPU, as before
    ("all", True, ["--gpus", "all"]),
    ("none", True, ["-e", "NVIDIA_VISIBLE_DEVICES=void"]),
    ("none", False, ["-e", "NVIDIA_VISIBLE_DEVICES=void"]),
    ("1", True, ["--gpus", '"device=1"']),
    (f"{GPU0_UUID},1", True, ["--gpus", '"device=0,1"']),
])
def test_make_run_arguments(setting: str, capable: bool, expected: list[str]) -> None:
    assert gpus.docker_args(setting, capable, gpus.parse_listing(TWO_GPUS)) == expected


@pytest.mark.parametrize(("setting", "capable", "words"), [
    ("7", True, "GPUS: 7 is not a GPU of this host (nvidia-smi -L lists: 0, 1)"),
    ("GPU-12", True, "GPUS: 'GPU-12' is not a GPU index, GPU UUID or MIG UUID"),
    ("all", False, "GPUS=all: this Docker engine has no NVIDIA runtime"),
    ("0", False, "GPUS=0: this Docker engine has no NVIDIA runtime"),
])
def test_bad_make_run_gpus(setting: str, capable: bool, words: str) -> None:
    with pytest.raises(gpus.GpuError) as raised:
        gpus.docker_args(setting, capable, gpus.parse_listing(TWO_GPUS))
    assert words in str(raised.value) and "\n" not in str(raised.value)
