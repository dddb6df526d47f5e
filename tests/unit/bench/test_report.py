"""bench.sizes / bench.incontainer parsing, bench.targets and bench.report, on recorded output.

DU_OUTPUT is what bench.sizes.du_script() printed in tf29-env:bench-cpu (sha256:bdc4b3f3b7e4, the
cpu variant of commit 484b31c's tree on tf29-env-standin:bullseye) on 2026-12-02. SELFCHECK_JSON is `selfcheck
--json` in the same image on the same day (2 cores, no GPU), its checks cut to one per layer."""

import json
from typing import Any

import pytest

from bench import incontainer, report, sizes, targets
from bench.errors import BenchError

DU_OUTPUT = """106470709\tbytecode: __pycache__ in /opt/venv
41632690\ttests folders in site-packages
99351258\tTensorFlow C++ headers (tensorflow/include)
748902\tstatic libraries (*.a) in /opt/venv
101187532\tapt caches (/var/cache/apt)
0\tpip caches (/root/.cache, venv share/python-wheels)
11470837\tthe project's own files (/opt/tf29-env)
"""

LAYERS = [(1, "driver", "FAIL", 0.018), (2, "cuda_libs", "FAIL", 0.002), (3, "tensorflow", "FAIL", 6.616),
          (4, "mixed_precision", "PASS", 1.598), (5, "performance", "SKIP", 0.006), (6, "environment", "WARN", 0.029)]
SELFCHECK_JSON = json.dumps({
    "schema": "tf29-env/selfcheck/v1", "tool_version": "1.0.0", "mode": "warn",
    "started_at": "2026-12-02T16:21:51+00:00", "seconds": 8.606, "time_limit": 15.0,
    "host": {"hostname": "5c3c4b0a2f97", "python": "3.9.2", "uid": 1000}, "gpu_visible": False,
    "summary": {"pass": 8, "warn": 3, "fail": 11, "skip": 3}, "exit_code": 0,
    "layers": [{"layer": n, "name": name, "title": name, "status": status, "seconds": secs, "timed_out": False,
                "checks": [{"id": f"{name}.x", "status": status, "what": "recorded", "fix": None, "data": {}}]}
               for n, name, status, secs in LAYERS],
}, indent=2)


def summary(median: float, low: float, high: float, runs: int = 3) -> dict[str, Any]:
    return {"median": median, "min": low, "max": high, "runs": runs}


def document(jupyter: float = 3.96, warm: float = 4.0) -> dict[str, Any]:
    return {
        "schema": report.SCHEMA, "argv": ["--variant", "cpu"],
        "machine": {"date": "2026-12-02T16:20:21Z", "engine_cpus": 2, "memory_bytes": 25275973632,
                    "engine_version": "20.10.24+dfsg1", "storage_driver": "overlay2", "os": "Debian GNU/Linux 12",
                    "kernel": "6.1", "load_average_at_start": [2.0, 1.5, 1.0]},
        "variants": {"cpu": {
            "image": "tf29-env:bench-cpu",
            "size": {"total_bytes": 1722199513, "base_bytes": 126215968, "ours_bytes": 1595983545,
                     "largest_layers": [{"bytes": 1343779278, "step": "RUN case ..."}],
                     "largest_packages": [{"name": "tensorflow-cpu", "version": "2.9.3", "bytes": 774175043}],
                     "candidates_bytes": sizes.parse_du(DU_OUTPUT)},
            "build": {"cold_docker_build_s": 140.0, "cold_tool_s": 160.0, "tool_nochange_s": 15.0,
                      "warm_s": {"entrypoint": summary(warm, warm - 1, warm + 1),
                                 "selfcheck": summary(9.0, 8.0, 10.0),
                                 "requirements": summary(120.0, 120.0, 120.0, 1)},
                      "warm_share": {"entrypoint": warm / 140, "selfcheck": 9 / 140, "requirements": 120 / 140}},
            "startup": {"jupyter_s": summary(jupyter, 3.5, 12.0), "healthy_s": summary(6.0, 5.9, 11.0)},
            "selfcheck": {"wall_s": summary(8.9, 8.5, 9.8), "report_s": summary(8.6, 8.2, 9.5),
                          "layers": {f"{n} {name}": summary(s, s, s) for n, name, _, s in LAYERS},
                          "statuses": {f"{n} {name}": status for n, name, status, _ in LAYERS}},
            "slim": {"ours_bytes": 1360570180, "saved_bytes": 235417048,
                     "checks": [{"name": "pip check", "exit": 0}, {"name": "imports", "exit": 1}],
                     "selfcheck_statuses": {f"{n} {name}": status for n, name, status, _ in LAYERS}},
        }},
    }


def test_du_output_parsed() -> None:
    found = sizes.parse_du(DU_OUTPUT)
    assert found["tests folders in site-packages"] == 41632690
    assert found["pip caches (/root/.cache, venv share/python-wheels)"] == 0
    assert set(found) == set(sizes.WEIGHT)


def test_du_output_missing_a_line_is_refused() -> None:
    with pytest.raises(ValueError, match="static libraries"):
        sizes.parse_du("\n".join(line for line in DU_OUTPUT.splitlines() if "static" not in line))


def test_selfcheck_report_per_layer() -> None:
    run = incontainer.selfcheck_run(9.1, incontainer.parse_report("noise before\n" + SELFCHECK_JSON))
    assert run.report_s == 8.606 and run.wall_s == 9.1
    assert run.layers["3 tensorflow"] == 6.616
    assert run.statuses == {f"{n} {name}": status for n, name, status, _ in LAYERS}
    assert sum(run.layers.values()) <= run.report_s


def test_selfcheck_report_of_another_schema_is_refused() -> None:
    with pytest.raises(BenchError, match="unknown schema"):
        incontainer.parse_report(json.dumps({"schema": "other/v9"}))
    with pytest.raises(BenchError, match="no JSON"):
        incontainer.parse_report("Traceback ...")


def test_targets_met_missed_and_not_measured() -> None:
    verdicts = {v.target: v for v in targets.judge(document(jupyter=3.96, warm=4.0))}
    warm = verdicts["warm rebuild after changing entrypoint.sh <= 5% of the cold build"]
    assert warm.met is True and warm.measured.startswith("2.9%")
    assert verdicts["warm rebuild after changing the self-check <= 5% of the cold build"].met is False  # 6.4 %
    assert verdicts["docker run -> Jupyter answering <= 10 s"].met is True  # the median counts, not the 12 s max
    assert verdicts["self-check total <= 15 s on CPU (docker exec wall time)"].met is True
    slow = {v.target: v for v in targets.judge(document(jupyter=10.5, warm=7.1))}
    assert slow["docker run -> Jupyter answering <= 10 s"].met is False
    assert slow["warm rebuild after changing entrypoint.sh <= 5% of the cold build"].word == "MISSED"
    bare = document()
    del bare["variants"]["cpu"]["build"], bare["variants"]["cpu"]["selfcheck"]
    unmeasured = [v for v in targets.judge(bare) if v.met is None]
    assert len(unmeasured) == 3 and all(v.word == "not measured" and not v.measured for v in unmeasured)


def test_markdown_table() -> None:
    text = report.markdown(document())
    lines = text.splitlines()
    assert lines[0] == "# tf29-env benchmarks"
    assert "2 cores, 23.5 GiB, Docker 20.10.24+dfsg1" in lines[2]
    table = [line for line in lines if line.startswith("|")]
    main = table[:len(report.ROWS) + 2]
    assert len({len(line) for line in main}) == 1  # aligned columns
    row = {line.split("|")[1].strip(): line.split("|")[2].strip() for line in main[2:]}
    assert row["- our layers on top"] == "1522.0 MiB"  # 1595983545 / 2**20
    assert row["image size, total"] == "1642.4 MiB"
    assert row["warm rebuild, entrypoint.sh changed"] == "4.00 s (3.00-5.00, n=3); 2.9% of cold"
    assert row["warm rebuild, requirements.txt changed"] == "120.00 s; 85.7% of cold"
    assert row["- layer 3 tensorflow"] == "6.62 s (6.62-6.62, n=3) FAIL"
    assert row["import tensorflow, fresh container (cold)"] == "-"  # not in this document
    assert row["--slim: our layers without apt caches, tests folders, TF headers"] == (
        "1297.5 MiB (-224.5 MiB; pip check exit 0, imports exit 1; self-check same)")
    assert "| tests folders in site-packages" in text and "39.7 MiB" in text
