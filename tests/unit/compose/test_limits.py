"""compose/limits.py: the shm, stack and log limits, the stop grace and the idle kernels' timeout from
a compose file's x-member and x-member-env blocks, as the hub's spawner and `make run` (docker run
arguments) take them."""

from pathlib import Path

import pytest

from compose import limits
from tf29image.jobs import store
from tf29image.startup import values

COMPOSE = """\
x-member: &member
  image: tf29-env:latest-gpu
  shm_size: ${SOME_SHM:-2g}
  ulimits:
    memlock: -1
    stack: 1048576
  logging:
    driver: local
    options:
      max-size: 5m
      max-file: "7"
  stop_grace_period: ${GRACE_PERIOD:-1m10s}
x-member-env: &member-env
  STOP_GRACE_SECONDS: ${GRACE:-65}
  KERNEL_IDLE_TIMEOUT: "600"
services:
  a: {<<: *member}
"""


def test_reads_the_member_block(tmp_path: Path) -> None:
    path = tmp_path / "docker-compose.yml"
    path.write_text(COMPOSE)
    found = limits.load(path)
    assert found == limits.Limits("2g", 1048576, "local", {"max-size": "5m", "max-file": "7"}, 65, 70, 600)
    assert limits.docker_args(found) == ["--shm-size", "2g", "--ulimit", "stack=1048576", "--log-driver", "local",
                                         "--log-opt", "max-size=5m", "--log-opt", "max-file=7",
                                         "--stop-timeout", "70", "--env", "STOP_GRACE_SECONDS=65"]
    assert limits.docker_args(found, 3)[-4:] == ["--stop-timeout", "8", "--env", "STOP_GRACE_SECONDS=3"]


def test_a_literal_shm_size_is_taken_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "docker-compose.yml"
    path.write_text(COMPOSE.replace("${SOME_SHM:-2g}", "512m"))
    assert limits.load(path).shm_size == "512m"


def test_the_shipped_file_gives_one_gib_of_shm() -> None:
    assert limits.load().shm_size == "1g"  # docs/team.md and docs/hub.md say 1 GiB


def test_the_shipped_stop_period_is_the_grace_and_the_margin() -> None:
    """compose's stop_grace_period and the entrypoint's STOP_GRACE_SECONDS are two settings that must agree."""
    shipped = limits.load()
    assert shipped.stop_period == shipped.stop_grace + limits.STOP_MARGIN
    assert limits.STOP_GRACE_MAX == store.STOP_GRACE_MAX  # the host refuses what the image would
    assert limits.KERNEL_IDLE_MAX == values.KERNEL_IDLE_MAX


@pytest.mark.parametrize(("text", "expected"), [("35s", 35), ("2m", 120), ("1m30s", 90), ("40", 40)])
def test_durations(text: str, expected: int) -> None:
    assert limits.seconds(text) == expected


@pytest.mark.parametrize("text", ["x", "0", "3601", "-5", "1.5"])
def test_a_bad_grace_is_one_line_and_exit_2(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert limits.main(["docker-args", "--stop-grace", text]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1 and "STOP_GRACE_SECONDS" in captured.err
