"""compose/rollout.py's decisions: which members `make up` starts at once and which it upgrades one
at a time (in the compose file's order), each service's image as both compose implementations print
it, and the options. The rollout on the real engine: tests/compose/test_rollout.py."""

from __future__ import annotations

import pytest

from compose import rollout

OLD, NEW = "sha256:" + "a" * 64, "sha256:" + "b" * 64

# `docker-compose config` (1.29): top-level keys sorted, secrets first, `version:` added.
V1_CONFIG = """\
secrets:
  ana-jupyter-token:
    file: /p/compose/secrets/ana/jupyter_token
services:
  ana:
    environment:
      NB_UID: '1101'
    image: tf29-env:b
    ports:
    - 127.0.0.1:18801:8888/tcp
  ben:
    image: 'sha256:bbbb'
    volumes:
    - ben-work:/home/jovyan/work:rw
version: '3.9'
volumes:
  ana-work: {}
"""
# `docker compose config` (v2): the project's name first, and the x- templates at the end, with an image of their own.
V2_CONFIG = """\
name: tf29cmp1234
services:
  ana:
    environment:
      NB_UID: "1101"
    image: tf29-env:b
    networks:
      default: null
  ben:
    image: tf29-env:b
networks:
  default:
    name: tf29cmp1234_default
x-member:
  image: tf29-env:template
"""


@pytest.mark.parametrize(("current", "targets", "start", "upgrade"), [
    ({}, {"ana": NEW, "ben": NEW}, ["ana", "ben"], []),  # the first start: compose starts everyone at once
    ({"ana": NEW, "ben": NEW}, {"ana": NEW, "ben": NEW}, ["ana", "ben"], []),  # already on the image
    ({"ana": OLD, "ben": OLD}, {"ana": NEW, "ben": NEW}, [], ["ana", "ben"]),  # both move, in the file's order
    ({"ben": OLD}, {"ana": NEW, "ben": NEW}, ["ana"], ["ben"]),  # a new member starts, the old one moves
    ({"ana": NEW, "ben": OLD}, {"ana": NEW, "ben": NEW}, ["ana"], ["ben"]),  # one moved already (a stopped rollout)
])
def test_the_members_on_another_image_are_upgraded_the_rest_started(
        current: dict[str, str], targets: dict[str, str], start: list[str], upgrade: list[str]) -> None:
    plan = rollout.make_plan(["ana", "ben"], dict(targets), dict(current))
    assert (plan.start, plan.upgrade, plan.missing) == (start, upgrade, [])


def test_the_order_is_the_compose_files_and_a_name_given_twice_is_one_member() -> None:
    names = ["cyd", "ana", "ben", "ana"]
    plan = rollout.make_plan(names, dict.fromkeys(names, NEW), dict.fromkeys(names, OLD))
    assert plan.upgrade == ["cyd", "ana", "ben"]
    assert plan.start == []


def test_a_new_image_not_on_the_engine_is_missing_for_a_running_member_only() -> None:
    """Without the new image's id nothing can be compared; a first start lets compose fetch it as ever."""
    plan = rollout.make_plan(["ana", "ben"], {"ana": None, "ben": None}, {"ben": OLD})
    assert (plan.start, plan.upgrade, plan.missing) == (["ana"], [], ["ben"])


@pytest.mark.parametrize("config", [V1_CONFIG, V2_CONFIG], ids=["v1", "v2"])
def test_each_services_image_from_compose_config(config: str) -> None:
    images = rollout.service_images(config)
    assert images["ana"] == "tf29-env:b"
    assert set(images) == {"ana", "ben"}, "the x-member template is not a service"


def test_quoted_images_lose_their_quotes() -> None:
    assert rollout.service_images(V1_CONFIG)["ben"] == "sha256:bbbb"


def test_members_whose_image_does_not_follow_the_variable_are_named() -> None:
    """With TF29ENV_IMAGE set to the probe, a member that names its image itself still shows its own."""
    probed = {"ana": rollout.PROBE, "ben": "tf29-env:pinned"}
    assert rollout.not_following(["ana", "ben"], probed) == ["ben"]
    assert rollout.not_following(["ana"], probed) == []


@pytest.mark.parametrize("argv", [["--keep", "0", "ana"], ["--timeout", "soon", "ana"], ["--timeout", "-1", "ana"],
                                  []])
def test_bad_options_are_refused_before_anything_runs(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        rollout.parse_args(argv)
    assert stopped.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith("make up: error: ")


def test_the_makefiles_settings_reach_the_options() -> None:
    args = rollout.parse_args(["--compose", "docker-compose", "--backup-dir", "/b", "--keep", "2", "--timeout", "60",
                               "ana", "ben"])
    assert (args.compose, str(args.backup_dir), args.keep, args.timeout, args.names) == (
        "docker-compose", "/b", 2, 60.0, ["ana", "ben"])
