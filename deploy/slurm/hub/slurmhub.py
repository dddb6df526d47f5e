"""The Slurm hub's settings (jupyterhub_config.py beside it), read from its environment and checked
once at its start: a bad one is one line (SettingError) and the hub does not start. Standard library
only: the hub's venv on the login node and the host tools' unit tests import it alike.

HUB_TEAM_DATA and HUB_GPU_MEMORY_MB are the team hub's names and syntax (hub/settings.py), not imported
from there: this hub needs only deploy/slurm on the login node, and that parser knows the team hub's
profiles only. tests/unit/deploy/test_slurmhub.py keeps the two alike."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

# HUB_GPU_MEMORY_MB: the key of the budget of every GPU profile not named, and the largest budget
# taken (1 TiB, as the team hub: more than any GPU has; a typo of a few digits is refused).
GPU_MEMORY_DEFAULT = "*"
GPU_MEMORY_MAX_MB = 1 << 20
# The lines of jupyter.sbatch that bind TEAM_DATA at ~/data and pass GPU_MEMORY_LIMIT_MB on.
TEAM_LINES_BEGIN = "# >>> team data and GPU budget"
TEAM_LINES_END = "# <<< team data and GPU budget"


class SettingError(Exception):
    """A setting that cannot work: one line for the admin, nothing started."""


@dataclass(frozen=True)
class Settings:
    kernel_idle: int  # the servers' KERNEL_IDLE_TIMEOUT
    stop_grace: int  # the servers' STOP_GRACE_SECONDS
    team_data: str = ""  # a folder the nodes share, read-only at ~/data in every server; "": none
    gpu_memory: Mapping[str, int] = field(default_factory=dict)  # GPU profile -> its GPU_MEMORY_LIMIT_MB


def seconds(name: str, value: str, least: int, most: int) -> int:
    if not re.fullmatch(r"[0-9]{1,7}", value) or not least <= int(value) <= most:
        raise SettingError(f"{name}={value!r} must be a number of seconds from {least} to {most}")
    return int(value)


def team_data(name: str, value: str) -> str:
    """A folder of this host that the compute nodes see at the same path (a shared file system); "": none."""
    if not value:
        return ""
    if any(char in value for char in ":,"):
        raise SettingError(f"{name}={value} has a ':' or ',', which Apptainer's --bind cannot take")
    if not value.startswith("/"):
        raise SettingError(f"{name}={value!r} is not an absolute path (the folder as the nodes see it, "
                           "e.g. /shared/datasets)")
    if not Path(value).is_dir():
        raise SettingError(f"{name}={value} is not a folder on this host")
    if not os.access(value, os.R_OK | os.X_OK):
        raise SettingError(f"{name}={value} is not readable here (its mode or owner)")
    return value


def gpu_memory(name: str, value: str, profiles: Mapping[str, Mapping[str, str]]) -> dict[str, int]:
    """MiB per GPU profile: `8192` (every GPU profile), `gpu=8192`, or both (`4096 a100=40000`), as
    the team hub reads it; the budget of each GPU profile that gets one (a profile without gres, none)."""
    budgets: dict[str, int] = {}
    for entry in value.replace(",", " ").split():
        profile, sep, mib = entry.rpartition("=")
        key = profile if sep else GPU_MEMORY_DEFAULT
        if sep and key not in profiles:
            raise SettingError(f"{name}: {key!r} is not one of the hub's profiles ({', '.join(profiles)})")
        if sep and not profiles[key].get("gres"):
            raise SettingError(f"{name}: the {key} profile has no GPU to budget")
        if not mib.isdigit() or not 1 <= int(mib) <= GPU_MEMORY_MAX_MB:
            raise SettingError(f"{name}: {entry!r} is not a whole number of MiB from 1 to {GPU_MEMORY_MAX_MB} "
                               "(e.g. 8192, or gpu=8192)")
        if key in budgets:
            raise SettingError(f"{name} gives {'a default' if key == GPU_MEMORY_DEFAULT else key} twice")
        budgets[key] = int(mib)
    default = budgets.get(GPU_MEMORY_DEFAULT, 0)
    return {profile: budgets.get(profile, default) for profile, request in profiles.items()
            if request.get("gres") and budgets.get(profile, default)}


def profiles(name: str, text: str, example: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """The profiles as JSON: an object of profile name -> an object with EXAMPLE's keys, all strings."""
    try:
        found = json.loads(text)
    except ValueError as exc:
        raise SettingError(f"{name} is not JSON ({exc})") from None
    if not isinstance(found, dict) or not found:
        raise SettingError(f"{name} must be a JSON object of profiles, e.g. {{\"gpu\": {{...}}}}")
    keys = sorted(example)
    for profile, fields in found.items():
        if not re.fullmatch(r"[A-Za-z0-9_.-]{1,40}", profile):
            raise SettingError(f"{name}: the profile name {profile!r} must be letters, digits, '.', '_' or '-'")
        if not isinstance(fields, dict) or sorted(fields) != keys:
            raise SettingError(f"{name}: the profile {profile!r} must have the keys {', '.join(keys)}")
        if not all(isinstance(value, str) for value in fields.values()):
            raise SettingError(f"{name}: the profile {profile!r} must have strings only (e.g. \"nprocs\": \"8\")")
    return found


def team_lines(script: str) -> str:
    """The lines between the markers of SCRIPT (jupyter.sbatch): the hub's jobs run them as its jobs do."""
    _, begin, rest = script.partition(TEAM_LINES_BEGIN)
    lines, end, _ = rest.partition(TEAM_LINES_END)
    if not begin or not end:
        raise SettingError(f"jupyter.sbatch has no lines between {TEAM_LINES_BEGIN!r} and {TEAM_LINES_END!r}")
    return lines.split("\n", 1)[1]


def load(environ: Mapping[str, str], profiles: Mapping[str, Mapping[str, str]]) -> Settings:
    """The settings in ENVIRON (unset or empty: the default), all checked; the team's defaults, and the
    most each may be is the image's own (image/python/tf29image/startup/settings.py)."""

    def get(name: str, default: str = "") -> str:
        return environ.get(name, "").strip() or default

    return Settings(
        kernel_idle=seconds("TF29_HUB_KERNEL_IDLE_TIMEOUT", get("TF29_HUB_KERNEL_IDLE_TIMEOUT", "3600"), 0, 604800),
        stop_grace=seconds("TF29_HUB_STOP_GRACE_SECONDS", get("TF29_HUB_STOP_GRACE_SECONDS", "30"), 1, 3600),
        team_data=team_data("HUB_TEAM_DATA", get("HUB_TEAM_DATA")),
        gpu_memory=gpu_memory("HUB_GPU_MEMORY_MB", get("HUB_GPU_MEMORY_MB"), profiles),
    )
