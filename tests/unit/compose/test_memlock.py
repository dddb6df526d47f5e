"""compose/memlock.py's decisions, from what the engine grants and what the team asked for. The
engine side (a probe container, `make up` adapting or stopping) is in tests/compose/test_compose.py."""

from pathlib import Path

import pytest

from compose import memlock

MIB8 = 8 * 1024 * 1024  # what this build machine's engine grants: `ulimit -H -l` printed 8192


@pytest.mark.parametrize(("wanted", "granted", "expected"), [
    (-1, -1, -1),  # an engine that may raise limits gives what is asked
    (1 << 40, -1, 1 << 40),
    (MIB8, MIB8, MIB8),
    (65536, MIB8, 65536),
    (0, MIB8, 0),
])
def test_granted_settings_pass_unchanged(wanted: int, granted: int, expected: int) -> None:
    assert memlock.decide(wanted, granted) == (expected, None)


def test_unlimited_becomes_the_engines_limit_with_one_line() -> None:
    limit, note = memlock.decide(-1, MIB8)
    assert limit == MIB8
    assert note is not None and "TF29ENV_MEMLOCK=8388608" in note and "\n" not in note


def test_too_much_names_the_variable_and_the_value_to_use() -> None:
    with pytest.raises(memlock.MemlockError, match=r"TF29ENV_MEMLOCK=8388609 .* set TF29ENV_MEMLOCK=8388608 in \.env"):
        memlock.decide(MIB8 + 1, MIB8)


@pytest.mark.parametrize(("printed", "expected"), [("unlimited\n", -1), ("8192\n", MIB8), ("64", 65536)])
def test_probe_output_in_bytes(printed: str, expected: int) -> None:
    assert memlock.parse_probe(printed) == expected


@pytest.mark.parametrize("value", ["abc", "-2", "1.5", "", "8m"])
def test_bad_setting_is_refused(value: str) -> None:
    with pytest.raises(memlock.MemlockError, match="TF29ENV_MEMLOCK="):
        memlock.parse_bytes(value)


def test_environment_wins_over_env_file_which_wins_over_the_default(tmp_path: Path) -> None:
    env_file = tmp_path / ".env"
    env_file.write_text("# comment\n\nTF29ENV_MEMLOCK='65536'\nTF29ENV_IMAGE=\"reg.example:5000/tf:1\"\nJUNK\n")
    read = memlock.read_env_file(env_file)
    assert read == {"TF29ENV_MEMLOCK": "65536", "TF29ENV_IMAGE": "reg.example:5000/tf:1"}
    assert memlock.setting("TF29ENV_MEMLOCK", {"TF29ENV_MEMLOCK": "4096"}, read) == "4096"
    assert memlock.setting("TF29ENV_MEMLOCK", {}, read) == "65536"
    assert memlock.setting("TF29ENV_MEMLOCK", {}, memlock.read_env_file(tmp_path / "missing")) == "-1"
