"""The Zero to JupyterHub chart as Helm sees our values: the chart's defaults with deploy/z2jh's
file merged over them, and the chart's schema to check the result. The chart cannot be fetched
from these machines, so its 4.4.0 defaults and generated schema lie in ../shared/reference (see
the README there); a missing file fails the tests that need it, it never skips them."""

import copy
from pathlib import Path
from typing import Any

import yaml
from jsonschema import Draft7Validator

REPO = Path(__file__).resolve().parents[2]
VALUES = REPO / "deploy" / "z2jh" / "values.yaml"
MANIFESTS = REPO / "deploy" / "k8s"
REFERENCE = REPO.parent / "shared" / "reference" / "z2jh-4.4.0"
CHART_DEFAULTS = REFERENCE / "values.yaml"
CHART_SCHEMA = REFERENCE / "values.schema.json"

Values = dict[str, Any]


def read_reference(path: Path) -> str:
    assert path.is_file(), (f"{path} is missing: the Z2JH 4.4.0 reference files (chart defaults and "
                            f"schema) must lie in {REFERENCE}")
    return path.read_text()


def load_yaml_mapping(text: str, where: Path) -> Values:
    data = yaml.safe_load(text)
    assert isinstance(data, dict), f"{where}: not a YAML mapping"
    return data


def chart_defaults() -> Values:
    return load_yaml_mapping(read_reference(CHART_DEFAULTS), CHART_DEFAULTS)


def our_values() -> Values:
    return load_yaml_mapping(VALUES.read_text(), VALUES)


def schema_validator() -> Draft7Validator:
    schema = yaml.safe_load(read_reference(CHART_SCHEMA))  # JSON is YAML
    assert isinstance(schema, dict), f"{CHART_SCHEMA}: not a JSON object"
    Draft7Validator.check_schema(schema)
    return Draft7Validator(schema)


def merge(base: Values, override: Values) -> Values:
    """Helm's coalescing of a values file over the chart's defaults: maps merge key by key, a
    list or plain value replaces the default, and null deletes the key. Neither input changes."""
    merged = copy.deepcopy(base)
    for key, value in override.items():
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def merged_values() -> Values:
    return merge(chart_defaults(), our_values())


def schema_errors(values: Values) -> list[str]:
    """Each violation as 'path.to.key: message', in a stable order."""
    errors = sorted(schema_validator().iter_errors(values), key=lambda error: list(map(str, error.path)))
    return [f"{'.'.join(map(str, error.path)) or '(top)'}: {error.message}" for error in errors]
