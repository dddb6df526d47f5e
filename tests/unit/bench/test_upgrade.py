"""bench/upgrade.py's pure parts: the downtime read from make upgrade's line, and the table."""

from __future__ import annotations

from bench import upgrade
from bench.stats import Summary, summarize

LINE = ("tf29-env: upgraded x from tf29-env:test-gpu (4e2b57324b37) to tf29-upg:newer (90fa678753a5); down 9 s; "
        "`make rollback` goes back to the snapshot /tmp/upgbk/x-20261207-022842")


def test_the_downtime_is_read_from_the_upgrade_line() -> None:
    found = upgrade.DOWN.search(LINE)
    assert found is not None and found[1] == "9"


def test_the_table_has_every_measure() -> None:
    found: dict[str, Summary | float] = {"upgrade": summarize([20.0, 22.0]), "downtime": summarize([9.0, 11.0]),
             "snapshot": summarize([4.0]), "snapshot_mib": 1027.4}
    text = upgrade.table("old", "new", 1024, found)
    assert "| snapshot size | 1027 MiB |" in text and "downtime" in text and "21.00 s" in text, text
