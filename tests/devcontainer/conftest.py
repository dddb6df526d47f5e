"""The real Dev Containers CLI (@devcontainers/cli, pinned in package-lock.json beside this file,
installed with `npm ci` when missing, in a root-owned folder every user can read) against the image
under test, run as a throwaway non-root host user: the CLI matches the container user's uid to the
uid it runs as (updateRemoteUserUID), which as root it leaves alone, and it looks that user up
(`id -un`), so the user must exist."""

import hashlib
import json
import os
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from docker import DockerClient

from testkit import docblocks
from testkit.wait import wait_until

HERE = Path(__file__).resolve().parent
LOCK = HERE / "package-lock.json"
MIN_NODE = 20  # the CLI's package says engines.node >= 20
USERS_GID = 100  # "users", the group of the image's venv and home folder
DOCKER_SOCKET = Path("/var/run/docker.sock")
# The CLI runs as another host user, who may not enter the checkout (a mode-700 home or mktemp -d
# folder): it is installed where every user can read it, root's, one folder per lock file.
SHARED_ROOT = Path("/var/tmp")  # noqa: S108 - root-owned and checked below, not a guessable temp file


@pytest.fixture(scope="session")
def devcontainer_cli() -> Path:
    node = subprocess.run(["node", "--version"], capture_output=True, text=True, check=False)
    assert node.returncode == 0, f"node is missing (scripts/host-setup.sh installs it): {node.stderr}"
    assert int(node.stdout.strip().lstrip("v").split(".")[0]) >= MIN_NODE, f"node {node.stdout.strip()} < {MIN_NODE}"
    folder = SHARED_ROOT / f"tf29-env-devcontainer-cli-{hashlib.sha256(LOCK.read_bytes()).hexdigest()[:12]}"
    cli = folder / "node_modules" / ".bin" / "devcontainer"
    if folder.is_symlink() or (folder.exists() and folder.stat().st_uid != 0):
        raise AssertionError(f"{folder} is not root's own folder: remove it, then run the tests again")
    if not cli.exists():
        folder.mkdir(mode=0o755, exist_ok=True)
        folder.chmod(0o755)
        for name in ("package.json", "package-lock.json"):
            shutil.copyfile(HERE / name, folder / name)
        done = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=folder,
                              capture_output=True, text=True, timeout=600, check=False)
        assert done.returncode == 0, f"npm ci failed: {done.stderr[-2000:]}"
    return cli


@dataclass
class HostUser:
    name: str
    uid: int
    home: Path


@pytest.fixture(scope="session")
def host_user() -> Iterator[HostUser]:
    """A host user of its own (the suite runs as root), removed afterwards."""
    uid = next(candidate for candidate in range(23450, 23550) if not _uid_taken(candidate))
    name = f"tf29dc{uid}"
    home = Path(tempfile.mkdtemp(prefix="tf29-env-dc-home-"))
    subprocess.run(["useradd", "--no-create-home", "--home-dir", str(home), "--uid", str(uid), "--gid",
                    str(USERS_GID), "--shell", "/usr/sbin/nologin", name], check=True)
    os.chown(home, uid, USERS_GID)
    try:
        yield HostUser(name, uid, home)
    finally:
        # The CLI may leave a process of the user's behind for a moment; userdel refuses while one runs.
        subprocess.run(["pkill", "-KILL", "-u", str(uid)], check=False)
        wait_until(lambda: subprocess.run(["userdel", name], capture_output=True, check=False).returncode == 0,
                   timeout=10, what=f"userdel {name}")
        shutil.rmtree(home, ignore_errors=True)


def _uid_taken(uid: int) -> bool:
    return subprocess.run(["getent", "passwd", str(uid)], capture_output=True, check=False).returncode == 0


@dataclass
class Workspace:
    folder: Path
    user: HostUser
    cli: Path
    volumes: list[str] = field(default_factory=list)  # named volumes the config asks for, removed afterwards

    def run(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        """The CLI as the host user, with access to the engine's socket as the docker group has."""
        return subprocess.run(
            ["setpriv", f"--reuid={self.user.uid}", f"--regid={USERS_GID}",
             f"--groups={DOCKER_SOCKET.stat().st_gid}", "env", f"HOME={self.user.home}", str(self.cli), *args,
             "--workspace-folder", str(self.folder)],
            capture_output=True, text=True, timeout=timeout, cwd=self.folder, check=False)

    def prompt(self) -> docblocks.Execute:
        """The host user's bash prompt in the project folder, with the CLI on PATH as npm -g puts it."""
        user = ["setpriv", f"--reuid={self.user.uid}", f"--regid={USERS_GID}",
                f"--groups={DOCKER_SOCKET.stat().st_gid}"]
        env = {**os.environ, "HOME": str(self.user.home), "PATH": f"{self.cli.parent}:{os.environ['PATH']}"}
        return docblocks.bash(self.folder, env, prefix=user)

    def run_json(self, *args: str) -> dict[str, Any]:
        done = self.run(*args)
        lines = done.stdout.strip().splitlines()
        assert lines, f"devcontainer {args[0]}: no output; stderr: {done.stderr[-3000:]}"
        result: dict[str, Any] = json.loads(lines[-1])
        return result


def project_folder(user: HostUser, prefix: str) -> Path:
    """An empty project with a .devcontainer folder, the host user's (outside pytest's root-only temp folders)."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    folder.chmod(0o755)
    (folder / ".devcontainer").mkdir()
    for path in (folder, folder / ".devcontainer"):
        os.chown(path, user.uid, USERS_GID)
    return folder


@pytest.fixture
def workspace(devcontainer_cli: Path, host_user: HostUser, docker_client: DockerClient) -> Iterator[Workspace]:
    """A project folder of the host user's (outside pytest's root-only temp folders); what the CLI
    made for it (containers, the uid-matching image, volumes) is removed afterwards."""
    folder = project_folder(host_user, "tf29-env-dc-project-")
    workspace_state = Workspace(folder, host_user, devcontainer_cli)
    try:
        yield workspace_state
    finally:
        images = set()
        for container in docker_client.containers.list(
                all=True, filters={"label": f"devcontainer.local_folder={folder}"}):
            images.add(container.attrs["Config"]["Image"])
            container.remove(force=True, v=True)
        for image in images:
            if image.startswith("vsc-"):
                docker_client.images.remove(image, force=True)
        for volume in workspace_state.volumes:
            docker_client.volumes.get(volume).remove(force=True)
        shutil.rmtree(folder, ignore_errors=True)


def unique_volume() -> str:
    return f"tf29-env-dctest-{secrets.token_hex(4)}"
