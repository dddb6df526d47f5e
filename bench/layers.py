"""Which of an image's layers are ours and which are the base's, from `docker history` records
(the engine's /images/{id}/history answer: newest first, each with Id, Size and CreatedBy)."""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Layer:
    size: int
    step: str  # the Dockerfile step, shortened: `RUN apt-get ...`, `COPY dir:...`


@dataclass(frozen=True)
class LayerSplit:
    total: int
    base: int
    ours: list[Layer]  # newest first, as docker history lists them
    found_by: str  # "base id" (the base's top entry is in the history) or "base layer count"

    @property
    def ours_bytes(self) -> int:
        return sum(layer.size for layer in self.ours)


def step(created_by: str) -> str:
    """`/bin/sh -c #(nop) COPY x` -> `COPY x`; `|4 A=1 /bin/bash -o pipefail -c apt-get ...` -> `RUN apt-get ...`."""
    text = " ".join(created_by.split())
    if "#(nop)" in text:
        return text.split("#(nop)", 1)[1].strip()
    if " -c " in text:
        return "RUN " + text.split(" -c ", 1)[1]
    return text or "(imported root filesystem)"


def split(history: Sequence[dict[str, Any]], base_id: str, base_entries: int) -> LayerSplit:
    """Split an image's history at its base: by the base's image id where the history shows it
    (a locally built or pulled base), else by the number of entries the base's own history has."""
    ids = [str(entry.get("Id", "")) for entry in history]
    if base_id in ids:
        cut, found_by = ids.index(base_id), "base id"
    elif 0 < base_entries <= len(history):
        cut, found_by = len(history) - base_entries, "base layer count"
    else:
        raise ValueError(f"the history ({len(history)} entries) does not contain the base {base_id[:19]}")
    ours = [Layer(int(entry.get("Size") or 0), step(str(entry.get("CreatedBy", "")))) for entry in history[:cut]]
    base = sum(int(entry.get("Size") or 0) for entry in history[cut:])
    return LayerSplit(total=base + sum(layer.size for layer in ours), base=base, ours=ours, found_by=found_by)


def largest(layer_split: LayerSplit, count: int) -> list[Layer]:
    """Our non-empty layers, largest first."""
    return sorted((layer for layer in layer_split.ours if layer.size), key=lambda layer: layer.size,
                  reverse=True)[:count]
