"""compose/limits.py: the shm, stack and log limits from a compose file's x-member block, as the
hub's spawner and `make run` (docker run arguments) take them."""

from pathlib import Path

import limits

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
services:
  a: {<<: *member}
"""


def test_reads_the_member_block(tmp_path: Path) -> None:
    path = tmp_path / "docker-compose.yml"
    path.write_text(COMPOSE)
    found = limits.load(path)
    assert found == limits.Limits("2g", 1048576, "local", {"max-size": "5m", "max-file": "7"})
    assert limits.docker_args(found) == ["--shm-size", "2g", "--ulimit", "stack=1048576", "--log-driver", "local",
                                         "--log-opt", "max-size=5m", "--log-opt", "max-file=7"]


def test_a_literal_shm_size_is_taken_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "docker-compose.yml"
    path.write_text(COMPOSE.replace("${SOME_SHM:-2g}", "512m"))
    assert limits.load(path).shm_size == "512m"


def test_the_shipped_file_gives_one_gib_of_shm() -> None:
    assert limits.load().shm_size == "1g"  # docs/team.md and docs/hub.md say 1 GiB
