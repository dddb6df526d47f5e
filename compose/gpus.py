#!/usr/bin/env python3
"""The GPUs of this box and who holds which: the one home of the GPU rules that `make run`,
compose/member.py and the team hub share.

- What the box has: `nvidia-smi -L` (whole GPUs by index and UUID; MIG slices by UUID, each with
  its profile). A GPU in MIG mode is handed out as its slices, never whole.
- Which IDs a setting may name: a GPU index (0), a GPU UUID (GPU-...), a MIG UUID (MIG-...,
  or R450/R460's MIG-GPU-.../GI/CI) or a slice as GPU:SLICE (0:1). Anything else, or an ID the box
  does not list, is one line naming the setting (GpuError).
- Who holds which: the device requests of the running containers (Docker's HostConfig), so the
  answer survives restarts and never goes stale. A request for a count holds GPUs 0..n-1, as
  Docker hands them out; `all` holds every one.
- Whom to give which: the least used first, in the box's order; with `share` off, only unused ones.

`python3 compose/gpus.py docker-args` prints the GPU arguments of `make run` (GPUS in the
environment). Standard library only: it runs on the host's python3 (3.8 or newer), like member.py.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

EXIT_BAD = 2
_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_ID_FORMS = (
    re.compile(r"[0-9]{1,3}"),  # a GPU's index
    re.compile(rf"GPU-{_UUID}"),
    re.compile(rf"MIG-{_UUID}"),  # R470 and later
    re.compile(rf"MIG-GPU-{_UUID}/[0-9]{{1,3}}/[0-9]{{1,3}}"),  # R450, R460
    re.compile(r"[0-9]{1,3}:[0-9]{1,3}"),  # a MIG slice as GPU:SLICE
)
ID_EXAMPLE = "e.g. 0,1 or the GPU-.../MIG-... UUIDs that nvidia-smi -L prints"
_GPU_LINE = re.compile(r"GPU ([0-9]+): (.*?) \(UUID: (GPU-[^)\s]+)\)")
_MIG_LINE = re.compile(r"MIG (\S+)\s+Device\s+([0-9]+): \(UUID: (MIG-[^)\s]+)\)")
ALL = "all"
# GPUS values of `make run` that are not device lists.
RUN_AUTO, RUN_NONE = "", "none"
# What hides every GPU even where the engine's default runtime is nvidia (the image says all).
NO_GPU_ENV = "NVIDIA_VISIBLE_DEVICES=void"


class GpuError(Exception):
    """A GPU setting that cannot work: one line for the user, exit 2, nothing started."""


@dataclass(frozen=True)
class Device:
    """One GPU or MIG slice that a container can be given."""

    id: str  # what a device request names: a GPU's index, a slice's UUID, or an ID as configured
    aliases: frozenset[str]  # every spelling of it (the id too): index, UUID, GPU:SLICE
    parent: frozenset[str] = frozenset()  # a slice's GPU (index and UUID): a request for it holds the slice
    name: str = ""  # the model, e.g. NVIDIA A100-SXM4-40GB
    mig: str = ""  # a slice's MIG profile, e.g. 1g.5gb; "" for a whole GPU

    @property
    def label(self) -> str:
        """How people see it: GPU 1 (NVIDIA A100-SXM4-40GB), MIG 1g.5gb slice 2:0 (...)."""
        index = next((alias for alias in sorted(self.aliases) if re.fullmatch(r"[0-9:]+", alias)), None)
        kind = self.id if index is None else f"MIG {self.mig} slice {index}" if self.mig else f"GPU {index}"
        return f"{kind} ({self.name})" if self.name else kind


def parse_listing(text: str) -> tuple[Device, ...]:
    """The devices in `nvidia-smi -L` output: whole GPUs, or the MIG slices of a GPU in MIG mode."""
    devices: list[Device] = []
    gpu: tuple[str, str, str] | None = None  # index, name, UUID of the GPU being read
    slices: list[Device] = []

    def flush() -> None:
        if gpu is not None:
            devices.extend(slices or [Device(gpu[0], frozenset({gpu[0], gpu[2]}), name=gpu[1])])

    for line in text.splitlines():
        if found := _GPU_LINE.match(line.strip()):
            flush()
            gpu, slices = (found.group(1), found.group(2), found.group(3)), []
        elif (found := _MIG_LINE.match(line.strip())) and gpu is not None:
            profile, number, uuid = found.groups()
            slices.append(Device(uuid, frozenset({uuid, f"{gpu[0]}:{number}"}), frozenset({gpu[0], gpu[2]}),
                                 gpu[1], profile))
    flush()
    return tuple(devices)


def host_listing() -> str | None:
    """What `nvidia-smi -L` prints on this host ("" without GPUs); None where there is no nvidia-smi."""
    path = shutil.which("nvidia-smi")
    if path is None:
        return None
    try:
        done = subprocess.run([path, "-L"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GpuError(f"nvidia-smi -L did not answer: {exc}") from None
    if done.returncode != 0:
        said = (done.stdout + done.stderr).strip().splitlines() or [f"exit {done.returncode}"]
        if "No devices were found" in said[-1]:
            return ""
        raise GpuError(f"nvidia-smi -L failed: {said[-1]}; fix the driver (nvidia-smi on this host must work)")
    return done.stdout


def parse_ids(text: str, what: str) -> tuple[str, ...]:
    """The IDs of a comma-separated list, each in one of the forms above, none twice."""
    ids = tuple(part.strip() for part in text.split(","))
    for item in ids:
        if not any(form.fullmatch(item) for form in _ID_FORMS):
            shown = item if len(item) <= 80 else item[:77] + "..."
            raise GpuError(f"{what}: {shown!r} is not a GPU index, GPU UUID or MIG UUID ({ID_EXAMPLE})")
    if len(set(ids)) != len(ids):
        raise GpuError(f"{what}={text!r} names a GPU twice")
    return ids


def resolve(ids: Sequence[str], devices: Sequence[Device] | None, what: str) -> tuple[Device, ...]:
    """The devices the IDs name: found in DEVICES (the host's), or taken as given when the host's
    list is unknown (None). An ID the host lacks, or a GPU in MIG mode, is a GpuError."""
    if devices is None:
        return tuple(Device(item, frozenset({item}), mig="?" if item.startswith("MIG-") or ":" in item else "")
                     for item in ids)
    found = []
    for item in ids:
        match = next((d for d in devices if item in d.aliases), None)
        if match is None:
            if any(item in d.parent for d in devices):
                raise GpuError(f"{what}: GPU {item} is in MIG mode: name its MIG slices (nvidia-smi -L lists them)")
            listed = ", ".join(d.id for d in devices) or "none"
            raise GpuError(f"{what}: {item} is not a GPU of this host (nvidia-smi -L lists: {listed})")
        found.append(match)
    if len(set(found)) != len(found):
        raise GpuError(f"{what} names one GPU twice (by index and by UUID)")
    return tuple(found)


def request_ids(request: Mapping[str, Any]) -> tuple[str, ...]:
    """What one Docker device request (HostConfig.DeviceRequests) holds: its IDs, 0..n-1 for a
    count, ALL for -1; nothing for a request that is not for GPUs."""
    capabilities = [cap for group in request.get("Capabilities") or [] for cap in group]
    if request.get("Driver") != "nvidia" and "gpu" not in capabilities:
        return ()
    if request.get("DeviceIDs"):
        return tuple(str(item) for item in request["DeviceIDs"])
    count = int(request.get("Count") or 0)
    return (ALL,) if count < 0 else tuple(str(index) for index in range(count))


def usage(held: Iterable[Sequence[str]], devices: Sequence[Device]) -> dict[str, int]:
    """How many holders (one ID list per container) hold each device, by device id."""
    counts = {device.id: 0 for device in devices}
    for ids in held:
        for device in devices:
            if ALL in ids or any(item in device.aliases or item in device.parent for item in ids):
                counts[device.id] += 1
    return counts


class NoFreeGpu(GpuError):
    """Fewer unused devices than asked for (the caller says what to do in its own words)."""

    def __init__(self, wanted: int, free: int, total: int) -> None:
        super().__init__(f"{wanted} GPU(s) asked for, {free} of {total} free")
        self.wanted, self.free, self.total = wanted, free, total


def choose(wanted: int, candidates: Sequence[Device], used: Mapping[str, int], share: bool) -> tuple[Device, ...]:
    """WANTED devices of CANDIDATES, the least used first (ties in the host's order); unused ones
    only unless SHARE. NoFreeGpu when there are not enough."""
    ranked = sorted(candidates, key=lambda device: used.get(device.id, 0))
    free = [device for device in ranked if not used.get(device.id, 0)]
    if len(free if not share else ranked) < wanted:
        raise NoFreeGpu(wanted, len(free), len(candidates))
    return tuple(ranked[:wanted])


def gpu_capable(runtimes: Mapping[str, Any] | None) -> bool:
    """Whether an engine can hand containers GPUs: the NVIDIA runtime is registered (docker info's
    Runtimes, as `nvidia-ctk runtime configure` leaves it; the Dev Containers CLI asks the same)."""
    return "nvidia" in (runtimes or {})


def docker_args(setting: str, capable: bool, devices: Sequence[Device] | None) -> list[str]:
    """`docker run` arguments for GPUS=SETTING: unset gives every GPU where the engine can
    (--gpus all) and none elsewhere; all; none; or a list of IDs, checked against the host's."""
    value = setting.strip()
    if value == RUN_AUTO:
        return ["--gpus", ALL] if capable else []
    if value == RUN_NONE:
        return ["-e", NO_GPU_ENV]
    ids = (ALL,) if value == ALL else parse_ids(value, "GPUS")
    if not capable:
        raise GpuError(f"GPUS={value}: this Docker engine has no NVIDIA runtime (install the NVIDIA Container "
                       "Toolkit and restart dockerd), or use GPUS=none")
    if ids == (ALL,):
        return ["--gpus", ALL]
    chosen = resolve(ids, devices, "GPUS")
    # The CLI reads --gpus as CSV: the quotes keep a list of several IDs in one field.
    return ["--gpus", f'"device={",".join(device.id for device in chosen)}"']


def engine_runtimes() -> dict[str, Any]:
    """docker info's Runtimes of the engine the docker CLI talks to ({} when it does not answer)."""
    try:
        done = subprocess.run(["docker", "info", "--format", "{{json .Runtimes}}"], capture_output=True, text=True,
                              timeout=60, check=False)
        loaded = json.loads(done.stdout) if done.returncode == 0 else {}
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("docker-args",),
                        help="docker-args: the GPU arguments of `make run` for GPUS (environment), one a line")
    parser.parse_args(argv)
    try:
        setting = os.environ.get("GPUS", "")
        listing = host_listing() if setting.strip() not in (RUN_AUTO, RUN_NONE, ALL) else None
        devices = parse_listing(listing) if listing is not None else None
        args = docker_args(setting, gpu_capable(engine_runtimes()), devices)
    except GpuError as exc:
        print(f"tf29-env: ERROR: {exc}", file=sys.stderr)
        return EXIT_BAD
    print("\n".join(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
