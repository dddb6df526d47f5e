"""The image ships the repository's quickstart notebooks where JupyterLab's file browser shows them
at first open (~/quickstart), read-only (root's), outside ~/work: a folder mounted there is never
written to, and a renamed NB_USER's home takes them along."""

import hashlib
from pathlib import Path
from typing import Any

import pytest
import requests

from testkit.containers import LOOPBACK, TrackedContainer
from tests.notebooks.runner import SOURCE, USER, notebooks

pytestmark = pytest.mark.image

SHIPPED = "/home/jovyan/quickstart"
TOKEN = "quickstart-token-5d2a91c7"


def digests_in(tracked: TrackedContainer, folder: str, **run: Any) -> dict[str, str]:
    """{file name: sha256} of the .ipynb files in FOLDER, from a throwaway container's command."""
    container = tracked.run(command=["sh", "-c", f"cd {folder} && sha256sum *.ipynb"], publish=(), **run)
    code = tracked.wait_exit(container, timeout=120)
    out = tracked.logs(container)
    assert code == 0, out
    found = {}
    for line in out.splitlines():
        digest, _, name = line.partition("  ")
        if name.endswith(".ipynb"):
            found[name] = digest
    return found


def repository_digests() -> dict[str, str]:
    return {name: hashlib.sha256((SOURCE / name).read_bytes()).hexdigest() for name in notebooks()}


def test_image_ships_the_repositorys_notebooks(tracked: TrackedContainer) -> None:
    assert digests_in(tracked, SHIPPED) == repository_digests()


def test_read_only_for_the_dev_user(tracked: TrackedContainer) -> None:
    container = tracked.run(command=["sleep", "infinity"], publish=())
    code, out = tracked.exec(container, ["stat", "-c", "%U %a %n", SHIPPED, f"{SHIPPED}/1-environment.ipynb"])
    assert code == 0, out
    for line in out.splitlines():
        owner, mode, _ = line.split(" ", 2)
        assert owner == "root" and not int(mode, 8) & 0o022, line
    code, out = tracked.exec(container, ["sh", "-c", f"touch {SHIPPED}/new.ipynb || "
                                         f"echo > {SHIPPED}/1-environment.ipynb"], user=USER)
    assert code != 0, out


def test_lab_shows_them_at_first_open_read_only(tracked: TrackedContainer) -> None:
    container = tracked.run(environment={"JUPYTER_TOKEN": TOKEN}, publish=(8888,))
    tracked.wait_healthy(container)
    api = f"http://{LOOPBACK}:{tracked.port(container, 8888)}/api/contents"
    auth = {"Authorization": f"token {TOKEN}"}
    root = requests.get(api, headers=auth, timeout=30).json()
    assert {"quickstart", "work"} <= {entry["name"] for entry in root["content"]}, root
    folder = requests.get(f"{api}/quickstart", headers=auth, timeout=30).json()
    assert sorted(entry["name"] for entry in folder["content"]) == notebooks(), folder
    model = requests.get(f"{api}/quickstart/1-environment.ipynb", headers=auth, params={"content": "0"},
                         timeout=30).json()
    assert model["type"] == "notebook" and model["writable"] is False, model  # Lab opens it read-only
    saved = requests.put(f"{api}/quickstart/1-environment.ipynb", headers=auth, timeout=30,
                         json={"type": "notebook", "format": "json", "content": {
                             "cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}})
    assert saved.status_code >= 400, saved.text  # a save cannot overwrite the shipped copy


def test_a_mounted_work_folder_is_not_written(tracked: TrackedContainer, tmp_path: Path) -> None:
    work = tmp_path / "notebooks"
    work.mkdir()
    container = tracked.run(environment={"JUPYTER_TOKEN": TOKEN}, publish=(8888,),
                            volumes={str(work): {"bind": "/home/jovyan/work", "mode": "rw"}})
    tracked.wait_healthy(container)
    assert not list(work.rglob("*.ipynb")), sorted(work.rglob("*"))


def test_renamed_user_keeps_them(tracked: TrackedContainer) -> None:
    found = digests_in(tracked, "/home/alice/quickstart", environment={"NB_USER": "alice"})
    assert found == repository_digests()
