"""The most common first run: `docker run -v $(pwd)/notebooks:/home/jovyan/work IMAGE` where
./notebooks does not exist yet. Docker creates it on the host as root:root 755; the entrypoint hands
such a folder to the dev user, and warns with the fix about any other mount the user cannot write."""

import json
import os
import stat
from pathlib import Path

from testkit.containers import TrackedContainer
from testkit.jupyter import put_file

TOKEN = "work-mount-token-1234"
WORK = "/home/jovyan/work"
HANDED_OVER = "handed /home/jovyan/work to uid 1000, gid 100"
CANNOT_WRITE = "cannot write the mount"
FIX = "-e NB_UID=$(id -u) -e NB_GID=$(id -g)"
NOTEBOOK = json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def owner_and_mode(path: Path) -> tuple[int, int, int]:
    info = path.stat()
    return info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)


def bind(host: Path, target: str, mode: str = "rw") -> dict[str, dict[str, str]]:
    """A -v style bind (HostConfig.Binds): the engine creates a missing host folder, as root."""
    return {str(host): {"bind": target, "mode": mode}}


def lines_with(logs: str, text: str) -> list[str]:
    return [line for line in logs.splitlines() if text in line]


def assert_one_warning(logs: str, *fixes: str) -> None:
    """Exactly one warning line about ~/work, and it names every fix."""
    warnings = lines_with(logs, CANNOT_WRITE)
    assert len(warnings) == 1, logs
    assert warnings[0].startswith("tf29-env: WARNING: ") and WORK in warnings[0], warnings
    for fix in fixes:
        assert fix in warnings[0], warnings


def test_a_folder_docker_creates_is_handed_to_the_dev_user(tracked: TrackedContainer, tmp_path: Path) -> None:
    notebooks = tmp_path / "notebooks"
    assert not notebooks.exists()
    container = tracked.run(environment={"JUPYTER_TOKEN": TOKEN}, volumes=bind(notebooks, WORK))
    tracked.wait_healthy(container)
    put_file(tracked.port(container, 8888), TOKEN, "work/Untitled.ipynb", NOTEBOOK)
    saved = notebooks / "Untitled.ipynb"
    assert json.loads(saved.read_text())["nbformat"] == 4
    assert owner_and_mode(saved)[:2] == (1000, 100)
    assert owner_and_mode(notebooks) == (1000, 100, 0o755)
    logs = tracked.logs(container)
    assert len(lines_with(logs, HANDED_OVER)) == 1, logs
    assert not lines_with(logs, CANNOT_WRITE), logs


def test_a_second_mount_inside_the_first(tracked: TrackedContainer, tmp_path: Path) -> None:
    # Docker makes the inner mount point inside the outer folder: that alone does not make it "not empty".
    notebooks, data = tmp_path / "notebooks", tmp_path / "data"
    volumes = {**bind(notebooks, WORK), **bind(data, f"{WORK}/data")}
    container = tracked.run(environment={"JUPYTER_TOKEN": TOKEN}, volumes=volumes)
    tracked.wait_healthy(container)
    put_file(tracked.port(container, 8888), TOKEN, "work/data/notes.txt", "hello")
    assert owner_and_mode(data / "notes.txt")[:2] == (1000, 100)
    assert owner_and_mode(notebooks)[:2] == (1000, 100)
    logs = tracked.logs(container)
    assert len(lines_with(logs, HANDED_OVER)) == 1, logs
    assert len(lines_with(logs, "handed /home/jovyan/work/data to uid 1000, gid 100")) == 1, logs


def test_a_folder_with_files_is_left_alone_with_one_warning(tracked: TrackedContainer, tmp_path: Path) -> None:
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    notebooks.chmod(0o755)
    kept = notebooks / "analysis.ipynb"
    kept.write_text(NOTEBOOK)
    kept.chmod(0o644)
    assert owner_and_mode(notebooks) == (0, 0, 0o755)
    container = tracked.run(environment={"JUPYTER_TOKEN": TOKEN}, volumes=bind(notebooks, WORK))
    tracked.wait_healthy(container)
    assert owner_and_mode(notebooks) == (0, 0, 0o755)
    assert owner_and_mode(kept) == (0, 0, 0o644)
    assert kept.read_text() == NOTEBOOK
    logs = tracked.logs(container)
    assert_one_warning(logs, FIX, "chown -R 1000:100")
    assert not lines_with(logs, "handed "), logs


def test_a_read_only_mount_is_left_alone(tracked: TrackedContainer, tmp_path: Path) -> None:
    notebooks = tmp_path / "notebooks"
    notebooks.mkdir()
    notebooks.chmod(0o755)
    container = tracked.run(volumes=bind(notebooks, WORK, "ro"))
    tracked.wait_healthy(container)
    assert owner_and_mode(notebooks) == (0, 0, 0o755)
    logs = tracked.logs(container)
    assert not lines_with(logs, WORK), logs


def test_without_root_it_warns_instead(tracked: TrackedContainer, tmp_path: Path) -> None:
    notebooks = tmp_path / "notebooks"
    container = tracked.run(user="4242:100", volumes=bind(notebooks, WORK))
    tracked.wait_healthy(container)
    assert owner_and_mode(notebooks) == (0, 0, 0o755)
    logs = tracked.logs(container)
    assert_one_warning(logs, "chown -R 4242:100", FIX)
    assert not os.listdir(notebooks)
