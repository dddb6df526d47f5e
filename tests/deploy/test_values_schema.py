"""deploy/z2jh/values.yaml against the chart's own schema, as `helm install` checks it: merged
over the chart 4.4.0 defaults, validated with JSON Schema draft 7. A misspelled key must fail:
the schema refuses unknown keys at every level but the free-form ones (profileList entries,
extraEnv, hub.config's classes), which test_values_facts.py checks by content."""

import copy
from pathlib import Path

import pytest

from tests.deploy.chart import (
    CHART_DEFAULTS,
    CHART_SCHEMA,
    Values,
    chart_defaults,
    merge,
    merged_values,
    our_values,
    read_reference,
    schema_errors,
)


@pytest.mark.parametrize("path", [CHART_DEFAULTS, CHART_SCHEMA], ids=["values.yaml", "values.schema.json"])
def test_reference_files_are_there(path: Path) -> None:
    assert read_reference(path)


def test_chart_defaults_pass_their_own_schema() -> None:
    # Guards the reference pair and the validator: defaults and schema of one chart version agree.
    assert schema_errors(chart_defaults()) == []


def test_our_values_pass_the_chart_schema() -> None:
    assert schema_errors(merged_values()) == []


def respell(values: Values, path: tuple[str, ...], new_key: str) -> Values:
    """A copy of values with the key at path renamed to new_key (its value kept)."""
    broken = copy.deepcopy(values)
    parent = broken
    for key in path[:-1]:
        parent = parent[key]
    assert path[-1] in parent, f"{'.'.join(path)} is not in the values file: pick another key to misspell"
    parent[new_key] = parent.pop(path[-1])
    return broken


@pytest.mark.parametrize(("path", "typo"), [
    (("singleuser", "profileList"), "profilelist"),
    (("singleuser", "storage", "extraVolumeMounts"), "extraVolumesMounts"),
    (("singleuser", "storage", "dynamic", "subPath"), "subpath"),
    (("singleuser", "networkPolicy", "allowedIngressPorts"), "allowedIngressPort"),
    (("cull", "timeout"), "timeOut"),
    (("singleuser", "extraTolerations"), "tolerations"),
])
def test_a_misspelled_key_fails(path: tuple[str, ...], typo: str) -> None:
    broken = respell(our_values(), path, typo)
    errors = schema_errors(merge(chart_defaults(), broken))
    where = ".".join(path[:-1]) or "(top)"
    assert any(error.startswith(f"{where}:") and repr(typo) in error for error in errors), errors


def test_a_wrong_type_fails() -> None:
    broken = copy.deepcopy(our_values())
    broken["singleuser"]["uid"] = "root"
    assert any(error.startswith("singleuser.uid:") for error in schema_errors(merge(chart_defaults(), broken)))


def test_a_missing_reference_file_fails_and_says_where(tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match="reference files"):
        read_reference(tmp_path / "values.schema.json")
