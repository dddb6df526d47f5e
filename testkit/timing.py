"""A pytest plugin: the suite's summary ends with the wall time each test folder took (setup, call
and teardown of its tests, session fixtures such as the image build included where first used),
so that the cost of every change shows in every run. The slowest tests come from --durations; every
test's time is written to build-output/test-times.json, to see where a folder's time goes."""

import json
from collections import defaultdict
from pathlib import Path

import pytest

_spent: defaultdict[str, float] = defaultdict(float)
_counted: defaultdict[str, set[str]] = defaultdict(set)
_per_test: defaultdict[str, float] = defaultdict(float)
TIMES_FILE = Path(__file__).resolve().parent.parent / "build-output" / "test-times.json"


def _folder(nodeid: str) -> str:
    parts = Path(nodeid.split("::", 1)[0]).parts
    return "/".join(parts[:2]) if len(parts) > 2 else parts[0]


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    folder = _folder(report.nodeid)
    _spent[folder] += report.duration
    _counted[folder].add(report.nodeid)
    _per_test[report.nodeid] += report.duration


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _spent:
        return
    TIMES_FILE.parent.mkdir(exist_ok=True)
    slowest_first = sorted(_per_test.items(), key=lambda item: -item[1])
    TIMES_FILE.write_text(json.dumps({nodeid: round(seconds, 2) for nodeid, seconds in slowest_first}, indent=1))
    # Under -n the folders run side by side: their times add up to more than the run's wall time.
    terminalreporter.write_sep("=", "time in tests per folder")
    for folder, seconds in sorted(_spent.items(), key=lambda item: -item[1]):
        terminalreporter.write_line(f"{seconds:8.1f}s  {len(_counted[folder]):4d} tests  {folder}")
    terminalreporter.write_line(f"{sum(_spent.values()):8.1f}s  {sum(map(len, _counted.values())):4d} tests  in all")
