"""The project's speed targets (set for the 2-core build machine and the CPU stand-in base: what a
user waits for after an edit, a `docker run`, a start-up self-check), judged on a results
document: met, missed, or not measured in this run."""

from dataclasses import dataclass
from typing import Any

WARM_SHARE_LIMIT = 0.05  # a script-only rebuild: at most 5 % of the cold build
JUPYTER_LIMIT_S = 10.0
HEALTHY_LIMIT_S = 15.0
SELFCHECK_LIMIT_S = 15.0
SCRIPT_CASES = {"entrypoint": "entrypoint.sh", "selfcheck": "the self-check"}


@dataclass(frozen=True)
class Verdict:
    target: str
    variant: str
    measured: str  # "" when not measured
    met: bool | None  # None: not measured in this run

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "variant": self.variant, "measured": self.measured, "met": self.met}

    @property
    def word(self) -> str:
        return {True: "met", False: "MISSED", None: "not measured"}[self.met]


def judge_variant(variant: str, result: dict[str, Any]) -> list[Verdict]:
    verdicts = []
    build = result.get("build") or {}
    for case, what in SCRIPT_CASES.items():
        target = f"warm rebuild after changing {what} <= {WARM_SHARE_LIMIT:.0%} of the cold build"
        share = (build.get("warm_share") or {}).get(case)
        warm = (build.get("warm_s") or {}).get(case)
        if share is None or warm is None:
            verdicts.append(Verdict(target, variant, "", None))
        else:
            verdicts.append(Verdict(target, variant, f"{share:.1%} ({warm['median']:.1f} s of "
                                    f"{build['cold_docker_build_s']:.0f} s)", share <= WARM_SHARE_LIMIT))
    startup = result.get("startup") or {}
    for key, target, limit in (
        ("jupyter_s", f"docker run -> Jupyter answering <= {JUPYTER_LIMIT_S:g} s", JUPYTER_LIMIT_S),
        ("healthy_s", f"docker run -> healthy <= {HEALTHY_LIMIT_S:g} s", HEALTHY_LIMIT_S),
    ):
        verdicts.append(median_verdict(target, variant, startup.get(key), limit))
    selfcheck = result.get("selfcheck") or {}
    verdicts.append(median_verdict(f"self-check total <= {SELFCHECK_LIMIT_S:g} s on CPU (docker exec wall time)",
                                   variant, selfcheck.get("wall_s"), SELFCHECK_LIMIT_S))
    return verdicts


def median_verdict(target: str, variant: str, summary: dict[str, Any] | None, limit: float) -> Verdict:
    """Judged on the median; the max is shown beside it, since one slow run on a shared machine is noise."""
    if not summary:
        return Verdict(target, variant, "", None)
    measured = f"median {summary['median']:.2f} s, max {summary['max']:.2f} s (n={summary['runs']})"
    return Verdict(target, variant, measured, float(summary["median"]) <= limit)


def judge(document: dict[str, Any]) -> list[Verdict]:
    return [verdict for name, result in document["variants"].items() for verdict in judge_variant(name, result)]
