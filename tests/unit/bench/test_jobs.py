"""bench/jobs.py's table and its refusal of bad input (the measuring itself needs the engine)."""

import pytest

from bench import jobs
from bench.stats import summarize


def test_the_table_quotes_each_median_and_the_overhead() -> None:
    found = {"stop_with_job": summarize([3.0, 4.0, 5.0]), "stop_without_job": summarize([0.5]),
             "script_direct": summarize([0.1, 0.1, 0.1]), "script_as_job": summarize([0.3, 0.35, 0.4])}
    table = jobs.table("img:1", found)
    assert "| docker stop -> exited, a job mid-fit (then reads `stopped`) | 4.00 s (3.00-5.00, n=3) |" in table
    assert "| docker stop -> exited, nothing running | 0.50 s |" in table
    assert "| what a job adds (difference of the medians) | 0.25 s |" in table
    assert table.startswith("Jobs on `img:1`\n")


def test_no_runs_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert jobs.main(["--image", "x", "--runs", "0"]) == 2
    assert capsys.readouterr().err == "bench.jobs: --runs must be 1 or more\n"
