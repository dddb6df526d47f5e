"""Median, minimum and maximum of repeated timings: the median is quoted, min and max show the noise."""

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Summary:
    median: float
    minimum: float
    maximum: float
    runs: int

    def to_json(self) -> dict[str, Any]:
        return {"median": round(self.median, 3), "min": round(self.minimum, 3), "max": round(self.maximum, 3),
                "runs": self.runs}

    def cell(self, unit: str = "s") -> str:
        """`3.21 s (2.90-3.50, n=5)`, or just the value for a single run."""
        if self.runs == 1:
            return f"{self.median:.2f} {unit}"
        return f"{self.median:.2f} {unit} ({self.minimum:.2f}-{self.maximum:.2f}, n={self.runs})"


def summarize(values: Sequence[float]) -> Summary:
    if not values:
        raise ValueError("no values to summarize")
    return Summary(statistics.median(values), min(values), max(values), len(values))


def ratio(part: float, whole: float) -> float:
    """part/whole, e.g. a warm rebuild's share of the cold build; whole must be positive."""
    if whole <= 0:
        raise ValueError(f"cannot take a share of {whole}")
    return part / whole
