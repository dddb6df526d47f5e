"""Which profiles the hub offers and which GPUs a server gets (docs/hub.md, "Profiles and GPUs").

The plan is made once per hub start from the settings, the engine (can it hand out GPUs at all)
and the box's GPUs (`nvidia-smi -L`, or HUB_GPUS); ctl makes it to check it and print its notes,
the hub process makes it again to use it. What each server holds is never stored: at every spawn
the device requests of the running containers say who holds which GPU (compose/gpus.py), so the
answer survives hub restarts and a stopped server's GPUs are free at once.

A server asking for n GPUs gets n specific ones, the least used first: whole GPUs for the gpuN
profiles, one slice of its MIG profile for mig-PROFILE. GPUs pinned to users (HUB_GPU_PINS) go to
them only, and a pinned user gets GPUs from their pin only. With HUB_GPU_POLICY=exclusive (the
default) a GPU serves one server at a time and a spawn with none free is refused in one line;
with share, the least used are shared. A GPU profile's memory budget (HUB_GPU_MEMORY_MB) becomes
its servers' GPU_MEMORY_LIMIT_MB: TensorFlow in them takes at most that much of each GPU. Standard
library only, like settings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from compose import gpus
from hub.settings import (
    GPU_SHARE,
    GPUS_AUTO,
    GPUS_NONE,
    MIG_PREFIX,
    MIG_PROFILES,
    PROFILES,
    HubConfigError,
    Settings,
)

TF_MIG_NOTE = "TensorFlow uses one MIG device per process"
NO_RUNTIME = "this Docker engine has no NVIDIA runtime: offering the CPU profile only"


class GpuUnavailable(Exception):
    """A spawn that cannot have its GPUs now: one line for the spawn page."""


@dataclass(frozen=True)
class Profile:
    name: str
    label: str  # what the spawn form says
    count: int = 0  # devices given: 0 for the CPU profile
    mig: str = ""  # the MIG profile of the slices given; "" for whole GPUs
    memory_mb: int = 0  # what TensorFlow may take of each of its GPUs (GPU_MEMORY_LIMIT_MB); 0: no cap


@dataclass(frozen=True)
class Plan:
    profiles: tuple[Profile, ...]
    devices: tuple[gpus.Device, ...]  # what the hub hands out, in the box's order
    pins: Mapping[str, tuple[gpus.Device, ...]] = field(default_factory=dict)
    share: bool = False
    notes: tuple[str, ...] = ()  # one line each, for ctl to print

    def profile(self, name: str) -> Profile | None:
        return next((profile for profile in self.profiles if profile.name == name), None)

    def candidates(self, user: str, profile: Profile) -> tuple[gpus.Device, ...]:
        """The devices that USER's PROFILE may get: of its kind, theirs if pinned, unpinned otherwise."""
        if user in self.pins:
            return tuple(device for device in self.pins[user] if device.mig == profile.mig)
        pinned = {device for devices in self.pins.values() for device in devices}
        return tuple(device for device in self.devices if device.mig == profile.mig and device not in pinned)

    def assign(self, user: str, profile: Profile, held: Sequence[Sequence[str]]) -> tuple[gpus.Device, ...]:
        """The devices USER's server gets, given what the running containers HELD; GpuUnavailable."""
        candidates = self.candidates(user, profile)
        what = f"the {profile.label} profile"
        if len(candidates) < profile.count:
            mine = "pinned to you" if user in self.pins else "the hub hands out"
            raise GpuUnavailable(f"{what} needs {profile.count} GPU(s); {mine}: {len(candidates)} of this kind; "
                                 "choose another profile")
        try:
            return gpus.choose(profile.count, candidates, gpus.usage(held, candidates), self.share)
        except gpus.NoFreeGpu as short:
            whose = "your pinned GPUs (HUB_GPU_PINS)" if user in self.pins else f"the {short.total} GPUs for it"
            raise GpuUnavailable(f"no free GPU for {what}: {short.total - short.free} of {whose} are in use by "
                                 "other servers; try again when one stops, or choose another profile") from None

    def availability(self, user: str, profile: Profile, held: Sequence[Sequence[str]]) -> str:
        """One line for the spawn form: how many of the profile's GPUs are free now."""
        candidates = self.candidates(user, profile)
        used = gpus.usage(held, candidates)
        free = sum(1 for device in candidates if not used[device.id])
        if free >= profile.count:
            return f"{free} of {len(candidates)} free"
        if self.share and len(candidates) >= profile.count:
            return f"{free} of {len(candidates)} free: you would share the least used"
        return f"no free GPU now: {len(candidates) - free} of {len(candidates)} in use"


def mig_profile(mig: str) -> Profile:
    return Profile(f"{MIG_PREFIX}{mig}", f"1 MIG slice {mig} ({TF_MIG_NOTE})", 1, mig)


def devices_of(team: Settings, listing: str | None) -> tuple[tuple[gpus.Device, ...], str]:
    """The devices the hub hands out (HUB_GPUS against the box's listing, None: no nvidia-smi), and
    why there are none when there are none."""
    if team.gpus == GPUS_NONE:
        return (), f"HUB_GPUS={GPUS_NONE}"
    host = gpus.parse_listing(listing) if listing is not None else None
    if team.gpus == GPUS_AUTO:
        if host is None:
            return (), "nvidia-smi is not on this host (list the GPUs in HUB_GPUS)"
        return host, "nvidia-smi -L lists no GPU"
    try:
        return gpus.resolve(team.gpu_ids, host, "HUB_GPUS"), ""
    except gpus.GpuError as exc:
        raise HubConfigError(str(exc)) from None


def load(team: Settings, capable: bool) -> Plan:
    """The plan on this box: make_plan with what its `nvidia-smi -L` prints (when HUB_GPUS needs it)."""
    try:
        listing = gpus.host_listing() if team.gpus != GPUS_NONE else None
    except gpus.GpuError as exc:
        raise HubConfigError(f"HUB_GPUS={team.gpus}: {exc}") from None
    return make_plan(team, capable, listing)


def make_plan(team: Settings, capable: bool, listing: str | None) -> Plan:
    """The plan for TEAM on an engine that can (CAPABLE) or cannot hand out GPUs, on a box whose
    `nvidia-smi -L` printed LISTING (None: no nvidia-smi). HubConfigError for settings that cannot work."""
    devices, why_none = devices_of(team, listing)
    pins: dict[str, tuple[gpus.Device, ...]] = {}
    for user, ids in team.gpu_pins:
        try:
            pins[user] = gpus.resolve(ids, devices, f"HUB_GPU_PINS {user}")
        except gpus.GpuError as exc:
            raise HubConfigError(f"{exc}; a pin names GPUs the hub hands out (HUB_GPUS)") from None
    share = team.gpu_policy == GPU_SHARE
    cpu_only = tuple(Profile(name, *PROFILES[name]) for name in team.profiles if PROFILES.get(name, ("", 1))[1] == 0)
    if not capable or not devices:
        dropped = len(cpu_only) < len(team.profiles)
        why = NO_RUNTIME if not capable else f"{why_none}: offering the CPU profile only"
        return Plan(cpu_only or (Profile("cpu", *PROFILES["cpu"]),), devices, pins, share, (why,) if dropped else ())
    whole = sum(1 for device in devices if not device.mig)
    migs = sorted({device.mig for device in devices if device.mig})
    offered: list[Profile] = []
    notes: list[str] = []
    for name in team.profiles:
        if name == MIG_PROFILES:
            offered.extend(mig_profile(mig) for mig in migs)
        elif name.startswith(MIG_PREFIX):
            mig = name.removeprefix(MIG_PREFIX)
            if mig in migs:
                offered.append(mig_profile(mig))
            else:
                notes.append(f"the {name} profile is not offered: no MIG slice of profile {mig} here")
        elif PROFILES[name][1] > whole:
            notes.append(f"the {name} profile is not offered: it needs {PROFILES[name][1]} GPUs, the hub has "
                         f"{whole} whole GPU(s)")
        else:
            offered.append(Profile(name, *PROFILES[name]))
    budgeted = tuple(replace(profile, memory_mb=team.gpu_memory_mb(profile.name)) if profile.count else profile
                     for profile in offered)
    return Plan(budgeted or (Profile("cpu", *PROFILES["cpu"]),), devices, pins, share, tuple(notes))
