"""compose/recreate.py on recorded engine data: tests/fixtures/upgrade/make-run-container.json is
`docker inspect` of a container that `make run` started (Docker 20.10, IMAGE=tf29-env:test-gpu,
GPUS=none, ports on 127.0.0.1), image.json the Id and Config of `docker image inspect` of its image."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from compose import recreate

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "upgrade"


@pytest.fixture
def container() -> dict[str, Any]:
    return dict(json.loads((FIXTURES / "make-run-container.json").read_text()))


@pytest.fixture
def image() -> dict[str, Any]:
    return dict(json.loads((FIXTURES / "image.json").read_text()))


def test_what_make_run_chose_is_kept(container: dict[str, Any], image: dict[str, Any]) -> None:
    body = recreate.create_body(container, image, "tf29-env:new")
    assert body["Image"] == "tf29-env:new"
    assert body["HostConfig"] == container["HostConfig"]  # ports, volumes, limits, restart policy, GPUs
    assert body["HostConfig"]["RestartPolicy"]["Name"] == "unless-stopped"
    assert body["StopTimeout"] == container["Config"]["StopTimeout"] == 35
    assert sorted(body["Env"]) == sorted(["NVIDIA_VISIBLE_DEVICES=void", "STOP_GRACE_SECONDS=30",
                                          *(e for e in container["Config"]["Env"] if e.startswith("SSH_AUTH"))])
    assert list(body["NetworkingConfig"]["EndpointsConfig"]) == ["bridge"]


def test_what_came_from_the_old_image_is_left_to_the_new_one(container: dict[str, Any],
                                                              image: dict[str, Any]) -> None:
    body = recreate.create_body(container, image, "tf29-env:new")
    assert not any(entry.startswith("PATH=") for entry in body["Env"])
    assert body["Labels"] == {}
    for key in ("Cmd", "Entrypoint", "Healthcheck", "User", "WorkingDir", "ExposedPorts"):
        assert key not in body, key
    assert "Hostname" not in body  # the engine's (the short id), not one the person chose


@pytest.mark.parametrize(("field", "value"), [
    ("Cmd", ["start-notebook.py", "--ServerApp.base_url=/x"]),
    ("User", "1000:100"),
    ("Hostname", "gpu-box"),
    ("Entrypoint", ["/bin/bash"]),
])
def test_a_value_the_person_set_is_kept(container: dict[str, Any], image: dict[str, Any], field: str,
                                        value: Any) -> None:
    changed = copy.deepcopy(container)
    changed["Config"][field] = value
    assert recreate.create_body(changed, image, "new")[field] == value


def test_own_labels_and_variables_stay_and_inherited_ones_go() -> None:
    assert recreate.env_without(["PATH=/a", "MINE=1", "LANG=C"], ["PATH=/a", "LANG=C.UTF-8"]) == ["MINE=1", "LANG=C"]
    assert recreate.labels_without({"a": "1", "b": "2", "c": "3"}, {"a": "1", "b": "x"}) == {"b": "2", "c": "3"}
    assert recreate.env_without(None, None) == []


def test_endpoints_lose_what_the_engine_assigned() -> None:
    settings = {"IPAddress": "172.17.0.2", "MacAddress": "02:42", "NetworkID": "n", "EndpointID": "e",
                "Aliases": ["abc123def456", "jupyter"], "Links": None, "IPAMConfig": None}
    assert recreate.endpoint(settings, "abc123def456") == {"Aliases": ["jupyter"], "Links": None, "IPAMConfig": None}


def test_extra_networks_are_joined_after_the_create(container: dict[str, Any], image: dict[str, Any]) -> None:
    two = copy.deepcopy(container)
    two["NetworkSettings"]["Networks"]["team"] = {"Aliases": [two["Id"][:12], "alice"], "IPAddress": "10.0.0.2"}
    assert list(recreate.create_body(two, image, "new")["NetworkingConfig"]["EndpointsConfig"]) == ["bridge"]
    assert recreate.extra_networks(two) == {"team": {"Aliases": ["alice"]}}


def test_the_named_volumes_are_the_snapshots_and_binds_are_not(container: dict[str, Any]) -> None:
    name = container["Name"].lstrip("/")
    assert recreate.named_volumes(container) == sorted([
        (f"{name}-hostkeys", "/etc/ssh/host-keys"), (f"{name}-local", "/home/jovyan/.local"),
        (f"{name}-nv", "/home/jovyan/.nv"), (f"{name}-work", "/home/jovyan/work")])
    mounts = [{"Type": "bind", "Source": "/data", "Destination": "/data"},
              {"Type": "bind", "Source": "/srv/shared", "Destination": "/home/jovyan/shared", "RW": True},
              {"Type": "volume", "Name": "f" * 64, "Destination": "/anon"},
              {"Type": "volume", "Name": "tf29_team-data", "Destination": "/home/jovyan/data", "RW": False}]
    assert recreate.named_volumes({"Mounts": mounts}) == []
