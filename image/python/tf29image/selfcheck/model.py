"""Results: one Check per line of the banner, grouped into one LayerResult per layer."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PASS = "PASS"  # noqa: S105 - a status, not a password
WARN = "WARN"
FAIL = "FAIL"
SKIP = "SKIP"
STATUSES = (PASS, WARN, FAIL, SKIP)
# Worst first: a layer is as bad as its worst check; SKIP only wins when nothing ran.
_RANK = {FAIL: 3, WARN: 2, PASS: 1, SKIP: 0}


@dataclass
class Check:
    """One finding: `what` says what was seen, `fix` what to do about it (None when nothing to do)."""

    id: str
    status: str
    what: str
    fix: str | None = None
    data: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "status": self.status, "what": self.what, "fix": self.fix, "data": self.data}

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Check:
        return cls(str(raw["id"]), str(raw["status"]), str(raw["what"]), raw.get("fix"), dict(raw.get("data") or {}))


@dataclass
class LayerResult:
    layer: int
    name: str
    title: str
    checks: list[Check]
    seconds: float = 0.0
    timed_out: bool = False

    @property
    def status(self) -> str:
        return worst(c.status for c in self.checks)

    def to_json(self) -> dict[str, Any]:
        return {
            "layer": self.layer,
            "name": self.name,
            "title": self.title,
            "status": self.status,
            "seconds": round(self.seconds, 3),
            "timed_out": self.timed_out,
            "checks": [c.to_json() for c in self.checks],
        }


def worst(statuses: Any) -> str:
    result = SKIP
    for status in statuses:
        if _RANK[status] > _RANK[result]:
            result = status
    return result
