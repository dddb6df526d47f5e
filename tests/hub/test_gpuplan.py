"""The hub's GPU plan without an engine (hub/gpuplan.py): which profiles a box gets, who gets which
GPU from what the running containers hold, pins, the policy, and bad GPU settings as one line.
The same on the stand-in GPU engine, with real servers: tests/gpu/test_hub_gpus.py."""

import pytest

from hub import gpuplan
from hub import settings as hub_settings
from hub.gpuplan import GpuUnavailable, Plan
from hub.settings import HubConfigError
from testkit.gpuengine import GPU1_UUID, MIG_UUIDS, TWO_GPUS, WITH_MIG

ONE_GPU = TWO_GPUS.splitlines(keepends=True)[0]


def plan(listing: str | None, capable: bool = True, **settings: str) -> Plan:
    return gpuplan.make_plan(hub_settings.load(settings), capable, listing)



def names(made: Plan) -> list[str]:
    return [profile.name for profile in made.profiles]


@pytest.mark.parametrize(("listing", "capable", "settings", "offered", "notes"), [
    (TWO_GPUS, True, {}, ["cpu", "gpu1", "gpu2"], []),
    (WITH_MIG, True, {}, ["cpu", "gpu1", "gpu2", "mig-1g.5gb"], []),
    (ONE_GPU, True, {}, ["cpu", "gpu1"],
     ["the gpu2 profile is not offered: it needs 2 GPUs, the hub has 1 whole GPU(s)"]),
    (TWO_GPUS, False, {}, ["cpu"], [gpuplan.NO_RUNTIME]),
    (None, True, {}, ["cpu"],
     ["nvidia-smi is not on this host (list the GPUs in HUB_GPUS): offering the CPU profile only"]),
    ("", True, {}, ["cpu"], ["nvidia-smi -L lists no GPU: offering the CPU profile only"]),
    (TWO_GPUS, True, {"HUB_GPUS": "none"}, ["cpu"], ["HUB_GPUS=none: offering the CPU profile only"]),
    (None, True, {"HUB_GPUS": "0,1"}, ["cpu", "gpu1", "gpu2"], []),  # a configured list needs no nvidia-smi
    (TWO_GPUS, True, {"HUB_PROFILES": "gpu1,mig-2g.10gb"}, ["gpu1"],
     ["the mig-2g.10gb profile is not offered: no MIG slice of profile 2g.10gb here"]),
    (TWO_GPUS, True, {"HUB_PROFILES": "cpu"}, ["cpu"], []),
    (TWO_GPUS, False, {"HUB_PROFILES": "cpu"}, ["cpu"], []),  # nothing dropped, nothing to say
])
def test_profiles_offered(listing: str | None, capable: bool, settings: dict[str, str], offered: list[str],
                          notes: list[str]) -> None:
    made = gpuplan.make_plan(hub_settings.load(settings), capable, listing)
    assert names(made) == offered
    assert list(made.notes) == notes


def test_mig_profile_says_tensorflow_uses_one_device() -> None:
    mig = plan(WITH_MIG).profile("mig-1g.5gb")
    assert mig is not None and (mig.count, mig.mig) == (1, "1g.5gb")
    assert mig.label == "1 MIG slice 1g.5gb (TensorFlow uses one MIG device per process)"


@pytest.mark.parametrize(("settings", "words"), [
    ({"HUB_GPUS": "0,7"}, f"HUB_GPUS: 7 is not a GPU of this host (nvidia-smi -L lists: 0, 1, {MIG_UUIDS[0]}, "),
    ({"HUB_GPUS": "2"}, "HUB_GPUS: GPU 2 is in MIG mode"),
    ({"HUB_GPU_PINS": "ann=5"}, "HUB_GPU_PINS ann: 5 is not a GPU of this host"),
    ({"HUB_GPUS": "0", "HUB_GPU_PINS": "ann=1"}, "HUB_GPU_PINS ann: 1 is not a GPU of this host (nvidia-smi -L "
                                                 "lists: 0); a pin names GPUs the hub hands out (HUB_GPUS)"),
])
def test_bad_gpu_lists_are_one_line(settings: dict[str, str], words: str) -> None:
    with pytest.raises(HubConfigError) as raised:
        gpuplan.make_plan(hub_settings.load(settings), True, WITH_MIG)
    assert words in str(raised.value) and "\n" not in str(raised.value)


def assigned(made: Plan, user: str, profile: str, held: list[tuple[str, ...]]) -> list[str]:
    chosen = made.profile(profile)
    assert chosen is not None
    return [device.id for device in made.assign(user, chosen, held)]


def test_exclusive_gives_each_server_its_own_gpus() -> None:
    made = plan(WITH_MIG)
    assert assigned(made, "ann", "gpu1", []) == ["0"]
    assert assigned(made, "ben", "gpu1", [("0",)]) == ["1"]
    assert assigned(made, "ben", "gpu1", [(GPU1_UUID,)]) == ["0"]  # held by UUID
    assert assigned(made, "cleo", "gpu1", [("2",)]) == ["0"]  # a holder of GPU 2 holds its slices, not GPU 0
    assert assigned(made, "cleo", "mig-1g.5gb", [("2:0",)]) == [MIG_UUIDS[1]]
    gpu1 = made.profile("gpu1")
    assert gpu1 is not None
    with pytest.raises(GpuUnavailable) as none_free:
        made.assign("carl", gpu1, [("0",), ("1",)])
    assert str(none_free.value) == ("no free GPU for the 1 GPU profile: 2 of the 2 GPUs for it are in use by other "
                                    "servers; try again when one stops, or choose another profile")
    gpu2 = made.profile("gpu2")
    assert gpu2 is not None
    with pytest.raises(GpuUnavailable, match="no free GPU"):
        made.assign("carl", gpu2, [("all",)])  # a container with every GPU (--gpus all, count: all)


def test_share_gives_the_least_used() -> None:
    made = plan(TWO_GPUS, HUB_GPU_POLICY="share")
    assert assigned(made, "carl", "gpu1", [("0",), ("1",), ("1",)]) == ["0"]
    assert assigned(made, "carl", "gpu2", [("0",), ("0",)]) == ["1", "0"]


def test_pinned_users_get_their_gpus_and_others_do_not() -> None:
    made = plan(WITH_MIG, HUB_GPU_PINS=f"dora={MIG_UUIDS[1]} eli=1")
    assert assigned(made, "dora", "mig-1g.5gb", []) == [MIG_UUIDS[1]]
    assert assigned(made, "ann", "mig-1g.5gb", []) == [MIG_UUIDS[0]]  # the pinned slice is dora's
    assert assigned(made, "eli", "gpu1", [("0",)]) == ["1"]
    assert assigned(made, "ann", "gpu1", []) == ["0"]
    gpu1, gpu2 = made.profile("gpu1"), made.profile("gpu2")
    assert gpu1 is not None and gpu2 is not None
    with pytest.raises(GpuUnavailable) as taken:
        made.assign("ann", gpu1, [("0",)])
    assert "1 of the 1 GPUs for it are in use" in str(taken.value)
    with pytest.raises(GpuUnavailable) as pinned_taken:
        made.assign("eli", gpu1, [("1",)])
    assert "your pinned GPUs (HUB_GPU_PINS) are in use" in str(pinned_taken.value)
    with pytest.raises(GpuUnavailable) as too_few:
        made.assign("eli", gpu2, [])
    assert str(too_few.value) == ("the 2 GPUs profile needs 2 GPU(s); pinned to you: 1 of this kind; choose "
                                  "another profile")


def test_availability_line_for_the_form() -> None:
    made = plan(TWO_GPUS)
    gpu1 = made.profile("gpu1")
    assert gpu1 is not None
    assert made.availability("ann", gpu1, []) == "2 of 2 free"
    assert made.availability("ann", gpu1, [("0",), ("1",)]) == "no free GPU now: 2 of 2 in use"
    shared = plan(TWO_GPUS, HUB_GPU_POLICY="share")
    assert shared.availability("ann", gpu1, [("0",), ("1",)]) == "0 of 2 free: you would share the least used"
