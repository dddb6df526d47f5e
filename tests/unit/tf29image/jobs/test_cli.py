"""tf29image.jobs.cli: what `job` makes of its arguments (parameters typed as papermill types them).
Its runs themselves are tested in the image: tests/image/test_jobs.py."""

import pytest

from tf29image.jobs import cli, store


@pytest.mark.parametrize(("text", "value"), [
    ("8", 8), ("-3", -3), ("0.5", 0.5), ("1e-3", 0.001), ("true", True), ("False", False), ("none", None),
    ("adam", "adam"), ("", ""), ("1,2", "1,2")])
def test_parameter_values_are_typed_as_papermills(text: str, value: object) -> None:
    found = cli.parameter_value(text)
    assert found == value and type(found) is type(value)


def test_parameter_names_must_be_identifiers() -> None:
    assert cli.parameters([["epochs", "3"], ["lr", "0.1"]]) == {"epochs": 3, "lr": 0.1}
    with pytest.raises(store.JobError) as refused:
        cli.parameters([["learning-rate", "0.1"]])
    assert refused.value.code == 2 and "'learning-rate'" in str(refused.value)
