"""`make upgrade` and `make rollback` as an admin uses them (issue 40, docs/upgrade.md): a person's
environment started by `make run` on the image of an earlier commit, their work in it (a notebook,
a package, a Lab setting, git's identity, a kernel of their own environment), then the upgrade to
the image under test, the way back, an upgrade to a broken image that rolls itself back, and the
bad input that must leave the running environment as it was. On the main engine, in a container
and volumes of this test's own name (the Makefile's CONTAINER)."""

from __future__ import annotations

import base64
import contextlib
import io
import json
import secrets
import subprocess
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import docker.errors
import pytest
import requests
from docker import DockerClient

from testkit import makerun
from testkit.makerun import Lab
from testkit.net import free_host_port
from testkit.ssh import KeyPair, run_as
from testkit.wheels import build_wheel, module_files

DARK = "JupyterLab Dark"
NOTEBOOK = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": "a night's notes"}],
            "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
BROKEN = "tf29-env-test-upgrade:broken"
# TensorFlow that no longer imports: JupyterLab and SSH start and the container turns healthy, and
# only the self-check's container checks can tell (a kernel would fail at the first `import`).
BROKEN_DOCKERFILE = ("FROM {image}\nRUN for f in /opt/venv/lib/python3.*/site-packages/tensorflow/__init__.py; "
                     "do echo 'raise ImportError(\"broken on purpose\")' >> \"$f\"; done\n")


@dataclass
class Environment:
    client: DockerClient
    name: str
    jupyter_port: int
    ssh_port: int
    backups: Path

    def lab(self) -> Lab:
        return Lab(self.client, self.name, self.jupyter_port)

    def make(self, target: str, *variables: str) -> subprocess.CompletedProcess[str]:
        return makerun.make(target, f"CONTAINER={self.name}", f"BACKUP_DIR={self.backups}", *variables)

    def image_id(self) -> str:
        return str(self.client.containers.get(self.name).attrs["Image"])

    def started(self) -> tuple[str, str]:
        """The container's id and start time: what an untouched environment keeps."""
        container = self.client.containers.get(self.name)
        return container.id, container.attrs["State"]["StartedAt"]

    def snapshots(self) -> list[Path]:
        return sorted(self.backups.glob(f"{self.name}-*"))


def members(tar_path: Path) -> set[str]:
    with tarfile.open(tar_path) as archive:
        return {name.removeprefix("./") for name in archive.getnames()}


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    """A refusal: non-zero, and the tool's one error line (make adds its own after it)."""
    assert done.returncode != 0, done.stdout[-2000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("tf29-env: error: ")]
    assert len(errors) == 1, done.stderr
    return errors[0]


@pytest.fixture(scope="module")
def env(docker_client: DockerClient, previous_image: str, keypair: KeyPair,
        tmp_path_factory: pytest.TempPathFactory) -> Iterator[Environment]:
    environment = Environment(docker_client, f"tf29-upgrade-{secrets.token_hex(3)}", free_host_port(),
                              free_host_port(), tmp_path_factory.mktemp("backups"))
    try:
        ok(makerun.make("run", f"IMAGE={previous_image}", f"CONTAINER={environment.name}", "HOST_ADDRESS=127.0.0.1",
                        f"JUPYTER_HOST_PORT={environment.jupyter_port}", f"SSH_HOST_PORT={environment.ssh_port}",
                        f"SSH_PUBLIC_KEY={keypair.private}.pub", "GPUS=none"))
        yield environment
    finally:
        for suffix in ("", "-before-upgrade", "-before-rollback"):
            with contextlib.suppress(docker.errors.NotFound):
                docker_client.containers.get(environment.name + suffix).remove(force=True)
        for volume in docker_client.volumes.list(filters={"name": environment.name}):
            volume.remove(force=True)
        with contextlib.suppress(docker.errors.ImageNotFound):
            docker_client.images.remove(BROKEN, force=True)


def test_an_upgrade_keeps_what_the_person_made(env: Environment, image: str, previous_image: str,
                                                keypair: KeyPair, tmp_path: Path) -> None:
    lab = env.lab()
    requests.put(f"{lab.url}api/contents/work/notes.ipynb", headers=lab.headers, timeout=30,
                 json={"type": "notebook", "content": NOTEBOOK}).raise_for_status()
    wheel = build_wheel(tmp_path, "tf29probe", "1.0", module_files("tf29probe", "1.0"))
    requests.put(f"{lab.url}api/contents/work/{wheel.name}", headers=lab.headers, timeout=30, json={
        "type": "file", "format": "base64", "content": base64.b64encode(wheel.read_bytes()).decode()}
    ).raise_for_status()
    assert "Successfully installed tf29probe-1.0" in lab.cell(f"%pip install --no-index ~/work/{wheel.name}")
    lab.set_theme(DARK)
    # An environment of one's own with the image's packages behind it (docs/packages.md), as a kernel.
    lab.terminal("git config --global user.email ada@example.org && python -m venv ~/envs/mine && "
                 "echo /opt/venv/lib/python3.*/site-packages > "
                 "$(echo ~/envs/mine/lib/python3.*/site-packages)/image.pth && "
                 "~/envs/mine/bin/python -m ipykernel install --user --name mine")

    # What the new image may not read: a setting its JupyterLab rejects, a kernel whose Python is gone.
    lab.terminal("cd ${JUPYTERLAB_SETTINGS_DIR:-~/.jupyter/lab/user-settings} && "
                 "mkdir -p @jupyterlab/notebook-extension && echo '{\"noSuchSetting\": 1}' > "
                 "@jupyterlab/notebook-extension/tracker.jupyterlab-settings && python -m venv ~/envs/gone && "
                 "echo /opt/venv/lib/python3.*/site-packages > $(echo ~/envs/gone/lib/python3.*/site-packages)/i.pth"
                 " && ~/envs/gone/bin/python -m ipykernel install --user --name gone && rm -r ~/envs/gone")

    out = ok(env.make("upgrade", f"IMAGE={image}"))
    assert env.image_id() == env.client.images.get(image).id
    assert f"upgraded {env.name} from " in out, out
    summary = out[out.index(f"upgraded {env.name} from "):]
    assert "tf29-env: kept aside Lab settings @jupyterlab/notebook-extension/tracker: " in summary, summary
    assert "tf29-env: kernel gone " in summary and "tf29-env: kernel mine" not in summary, summary

    lab = env.lab()
    assert lab.theme() == DARK
    notes = requests.get(f"{lab.url}api/contents/work/notes.ipynb", headers=lab.headers, timeout=30)
    assert notes.status_code == 200 and notes.json()["content"]["cells"][0]["source"] == "a night's notes"
    assert lab.cell("import tf29probe; print(tf29probe.__version__)").strip() == "1.0"
    assert lab.cell("import sys; print(sys.prefix)", kernel_name="mine").strip().endswith("/envs/mine")
    code, email = run_as(env.ssh_port, "jovyan", keypair, "git config user.email")
    assert (code, email.strip()) == (0, "ada@example.org")

    (snapshot,) = env.snapshots()
    check = subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=snapshot, capture_output=True, text=True,
                           check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "notes.ipynb" in members(snapshot / f"{env.name}-work.tar")
    assert json.loads((snapshot / "snapshot.json").read_text())["image"] == previous_image


def test_rollback_brings_back_the_previous_image_and_keeps_what_came_since(env: Environment,
                                                                           previous_image: str) -> None:
    lab = env.lab()
    requests.put(f"{lab.url}api/contents/work/since.txt", headers=lab.headers, timeout=30,
                 json={"type": "file", "format": "text", "content": "made after the upgrade"}).raise_for_status()

    out = ok(env.make("rollback"))
    assert f"rolled back {env.name} to " in out, out
    assert env.image_id() == previous_image

    lab = env.lab()
    names = {entry["name"] for entry in requests.get(f"{lab.url}api/contents/work", headers=lab.headers,
                                                     timeout=30).json()["content"]}
    assert "notes.ipynb" in names and "since.txt" not in names, names
    newest = env.snapshots()[-1]
    assert json.loads((newest / "snapshot.json").read_text())["kind"] == "rollback"
    assert "since.txt" in members(newest / f"{env.name}-work.tar")  # what the rollback replaced is kept


def test_an_upgrade_to_a_broken_image_rolls_itself_back(env: Environment, image: str, previous_image: str) -> None:
    env.client.images.build(fileobj=io.BytesIO(BROKEN_DOCKERFILE.format(image=image).encode()), tag=BROKEN, rm=True)

    line = one_error_line(env.make("upgrade", f"IMAGE={BROKEN}", "UPGRADE_TIMEOUT=240"))
    assert "the self-check failed" in line and "ImportError: broken on purpose" in line, line
    assert "rolled back to" in line, line
    assert env.image_id() == previous_image
    lab = env.lab()
    assert requests.get(f"{lab.url}api/contents/work/notes.ipynb", headers=lab.headers, timeout=30).status_code == 200
    newest = env.snapshots()[-1]
    (log,) = newest.glob("failed-*.log")
    assert log.stat().st_size > 0 and str(log) in line


def test_bad_input_leaves_the_running_environment_as_it_was(env: Environment, image: str, tmp_path: Path) -> None:
    before = env.started()

    assert "is not on this engine" in one_error_line(env.make("upgrade", "IMAGE=tf29-env:no-such-image"))

    empty = tmp_path / "empty"
    assert "no snapshot of" in one_error_line(makerun.make("rollback", f"CONTAINER={env.name}", f"BACKUP_DIR={empty}"))

    damaged = tmp_path / "damaged"
    damaged.mkdir()
    upgrades = [folder for folder in env.snapshots()
                if json.loads((folder / "snapshot.json").read_text())["kind"] == "upgrade"]
    copy = damaged / upgrades[-1].name
    subprocess.run(["cp", "-a", str(upgrades[-1]), str(copy)], check=True)
    work = copy / f"{env.name}-work.tar"
    data = bytearray(work.read_bytes())
    data[600] ^= 0xFF  # one bit pattern in the tar: what a bad disk or a partial copy does
    work.write_bytes(bytes(data))
    line = one_error_line(makerun.make("rollback", f"CONTAINER={env.name}", f"BACKUP_DIR={damaged}"))
    assert f"{work} does not match its checksum" in line, line

    full = tmp_path / "full"
    full.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(full)], check=True)
    try:
        line = one_error_line(makerun.make("upgrade", f"CONTAINER={env.name}", f"BACKUP_DIR={full}",
                                           f"IMAGE={image}"))
    finally:
        subprocess.run(["umount", str(full)], check=True)
    assert "a snapshot needs about" in line and str(full) in line, line

    assert env.started() == before
