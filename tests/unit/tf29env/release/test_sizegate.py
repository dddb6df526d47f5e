"""The size gate's arithmetic, baseline file handling and failure report."""

from pathlib import Path

import pytest

from tf29env.core.errors import EXIT_BUILD, EXIT_INPUT, UserError
from tf29env.core.paths import SIZE_BASELINE
from tf29env.release import sizegate


def test_judge() -> None:
    assert sizegate.judge(120, 100, 20).ok
    assert not sizegate.judge(121, 100, 20).ok
    assert sizegate.judge(10**12, None, 20).ok  # no baseline: nothing to gate on
    assert sizegate.judge(150, 100, 20).growth_percent == 50


def test_limit_flag_then_file_then_default() -> None:
    assert sizegate.limit({"max_growth_percent": 5}, 7.5) == 7.5
    assert sizegate.limit({"max_growth_percent": 5}, None) == 5.0
    assert sizegate.limit({"images": {}}, None) == sizegate.DEFAULT_MAX_GROWTH
    assert sizegate.limit({}, 0.0) == 0.0  # --max-growth 0 is a limit, not "unset"


def test_record_and_load(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    sizegate.record(path, "gpu", "tf29-env-standin:bullseye-cuda11", 4_000, "tf29-env:x")
    data = sizegate.load(path)
    assert data["images"]["gpu@tf29-env-standin:bullseye-cuda11"]["bytes"] == 4_000
    assert data["max_growth_percent"] == 20


def test_unreadable_baseline(tmp_path: Path) -> None:
    path = tmp_path / "baseline.json"
    path.write_text("{not json")
    with pytest.raises(UserError) as info:
        sizegate.load(path)
    assert info.value.exit_code == EXIT_INPUT and "--size-baseline" in str(info.value)


def test_failure_lists_layers_and_packages() -> None:
    inventory = {"python": [{"name": "tensorflow", "version": "2.9.3", "bytes": 1_400_000_000, "pyc_bytes": 60_000_000,
                             "header_bytes": 40_000_000}],
                 "dpkg": [{"name": "libc6", "version": "2.31", "bytes": 12_000_000}]}
    error = sizegate.failure(sizegate.judge(300, 100, 20), ["  4.0 GiB  RUN pip install"],
                             sizegate.largest_packages(inventory))
    text = str(error)
    assert error.exit_code == EXIT_BUILD
    assert "+200.0 %" in text and "largest layers" in text
    assert text.index("pip tensorflow") < text.index("deb libc6")


def test_committed_baseline_is_valid() -> None:
    data = sizegate.load(SIZE_BASELINE)
    assert data["images"], "size-baseline.json records no image"
    assert all(int(entry["bytes"]) > 100 * 1024**2 for entry in data["images"].values())
