"""bench.stats: the median, minimum and maximum quoted for every repeated timing."""

import pytest

from bench.stats import ratio, summarize


def test_odd_number_of_runs() -> None:
    summary = summarize([4.0, 2.5, 9.0])
    assert (summary.median, summary.minimum, summary.maximum, summary.runs) == (4.0, 2.5, 9.0, 3)


def test_even_number_of_runs_takes_the_middle_pair() -> None:
    assert summarize([1.0, 3.0, 2.0, 10.0]).median == 2.5


def test_one_outlier_moves_the_max_not_the_median() -> None:
    summary = summarize([3.1, 3.0, 30.0])
    assert summary.median == 3.1 and summary.maximum == 30.0


def test_json_and_cell() -> None:
    summary = summarize([3.14159, 2.0, 5.0])
    assert summary.to_json() == {"median": 3.142, "min": 2.0, "max": 5.0, "runs": 3}
    assert summary.cell() == "3.14 s (2.00-5.00, n=3)"
    assert summarize([1.5]).cell() == "1.50 s"


def test_no_values() -> None:
    with pytest.raises(ValueError, match="no values"):
        summarize([])


def test_ratio() -> None:
    assert ratio(6.0, 150.0) == pytest.approx(0.04)
    with pytest.raises(ValueError):
        ratio(1.0, 0.0)
