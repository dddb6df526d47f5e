"""The size gate: an image may grow at most N percent over the committed baseline (size-baseline.json,
keyed by variant and base, since the official CUDA base and the stand-in differ by gigabytes).
When it fails it says where the bytes are: the largest layers and packages."""

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docker import DockerClient

from tf29env.core.errors import EXIT_BUILD, UserError
from tf29env.core.facts import dist_bytes
from tf29env.core.log import Log
from tf29env.release.manifest import human_size

DEFAULT_MAX_GROWTH = 20.0
SHOWN = 8


def key(variant: str, base: str) -> str:
    return f"{variant}@{base}"


def load(path: Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads(path.read_text())
    except FileNotFoundError:
        return {"max_growth_percent": DEFAULT_MAX_GROWTH, "images": {}}
    except (OSError, ValueError) as exc:
        raise UserError(f"--size-baseline {path}: unreadable ({exc})") from None
    if not isinstance(data.get("images"), dict):
        raise UserError(f"--size-baseline {path}: no 'images' object")
    return data


def limit(baseline: dict[str, Any], override: float | None) -> float:
    """The allowed growth in percent: --max-growth, else the baseline file's, else the default."""
    return override if override is not None else float(baseline.get("max_growth_percent", DEFAULT_MAX_GROWTH))


def record(path: Path, variant: str, base: str, size: int, image: str) -> None:
    data = load(path)
    data.setdefault("max_growth_percent", DEFAULT_MAX_GROWTH)
    data["images"][key(variant, base)] = {"bytes": size, "image": image}
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


@dataclass(frozen=True)
class Verdict:
    ok: bool
    size: int
    baseline: int | None
    limit_percent: float
    skipped: bool = False

    @property
    def growth_percent(self) -> float | None:
        return None if not self.baseline else (self.size - self.baseline) * 100 / self.baseline

    def line(self) -> str:
        if self.skipped:
            return "size gate: skipped (--no-size-gate)"
        if self.baseline is None:
            return f"size gate: {human_size(self.size)}; no baseline recorded (`build.py size --record` makes one)"
        return (f"size gate: {human_size(self.size)} is {self.growth_percent:+.1f} % against the baseline "
                f"{human_size(self.baseline)} (limit +{self.limit_percent:g} %)")


def judge(size: int, baseline: int | None, limit_percent: float) -> Verdict:
    ok = baseline is None or size <= baseline * (1 + limit_percent / 100)
    return Verdict(ok, size, baseline, limit_percent)


def judge_image(baseline: dict[str, Any], variant: str, base: str, size: int, max_growth: float | None, *,
                skipped: bool = False) -> Verdict:
    """The verdict on an image of this variant and base (passed when skipped)."""
    entry = baseline["images"].get(key(variant, base))
    verdict = judge(size, None if skipped or not entry else int(entry["bytes"]), limit(baseline, max_growth))
    return Verdict(verdict.ok, size, verdict.baseline, verdict.limit_percent, skipped)


def enforce(client: DockerClient, image: str, verdict: Verdict, inventory: Callable[[], dict[str, Any]],
            log: Log) -> None:
    """Log the verdict, or raise (exit 4) with the largest layers and packages (inventory: the image's,
    asked only then)."""
    if not verdict.ok:
        raise failure(verdict, largest_layers(client, image), largest_packages(inventory()))
    log(verdict.line())


def largest_layers(client: DockerClient, image: str) -> list[str]:
    history = client.api.history(image)
    layers = sorted((h for h in history if h.get("Size")), key=lambda h: int(h["Size"]), reverse=True)
    return [f"{human_size(int(h['Size'])):>10}  {' '.join(str(h.get('CreatedBy', '')).split())[:110]}"
            for h in layers[:SHOWN]]


def largest_packages(inventory: dict[str, Any]) -> list[str]:
    packages = [("pip", p, dist_bytes(p)) for p in inventory["python"]]
    packages += [("deb", p, int(p["bytes"])) for p in inventory["dpkg"]]
    packages.sort(key=lambda kpb: kpb[2], reverse=True)
    return [f"{human_size(size):>10}  {kind} {p['name']} {p['version']}" for kind, p, size in packages[:SHOWN]]


def failure(verdict: Verdict, layers: list[str], packages: list[str]) -> UserError:
    details = "\n  largest layers:\n    " + "\n    ".join(layers)
    details += "\n  largest packages:\n    " + "\n    ".join(packages)
    return UserError(f"{verdict.line()}: over the limit{details}", EXIT_BUILD)
