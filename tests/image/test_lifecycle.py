"""Start, health, stop and failure: the container's life as a restart policy sees it."""

import os
import time
from pathlib import Path

import pytest

from testkit.containers import TrackedContainer, stop_seconds
from testkit.jupyter import api_status, put_file
from testkit.ssh import KeyPair
from testkit.wait import wait_until

TOKEN = "lifecycle-token-1234"


def test_docker_stop_is_quick_and_clean(tracked: TrackedContainer, keypair: KeyPair) -> None:
    container = tracked.run(environment={"SSH_AUTHORIZED_KEYS": keypair.public_text})
    tracked.wait_healthy(container)
    assert stop_seconds(container) < 10
    assert tracked.wait_exit(container) == 0
    assert "stopping (signal received)" in tracked.logs(container)


def test_jupyter_dying_stops_the_container_non_zero(tracked: TrackedContainer) -> None:
    container = tracked.run()
    tracked.wait_healthy(container)
    code, _ = tracked.exec(container, ["pkill", "-KILL", "-f", "jupyter-lab"])
    assert code == 0
    assert tracked.wait_exit(container, timeout=30) != 0
    assert "JupyterLab exited" in tracked.logs(container)


@pytest.mark.parametrize("pkill_args", [["-f", "jupyter-lab"], ["-x", "sshd"]], ids=["jupyter", "sshd"])
def test_a_hung_service_turns_unhealthy(tracked: TrackedContainer, keypair: KeyPair, pkill_args: list[str]) -> None:
    container = tracked.run(environment={"SSH_AUTHORIZED_KEYS": keypair.public_text})
    tracked.wait_healthy(container)
    code, _ = tracked.exec(container, ["pkill", "-STOP", *pkill_args])  # alive, but answers nothing
    assert code == 0
    wait_until(lambda: tracked.health(container) == "unhealthy", timeout=60, what="unhealthy")


def test_restart_comes_back_healthy(tracked: TrackedContainer) -> None:
    container = tracked.run(environment={"JUPYTER_TOKEN": TOKEN})
    tracked.wait_healthy(container)
    container.restart(timeout=10)
    tracked.wait_healthy(container)
    assert api_status(tracked.port(container, 8888), TOKEN) == 200


def test_nb_uid_owns_files_in_a_bind_mount(tracked: TrackedContainer, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    os.chown(work, 4321, 4321)
    container = tracked.run(environment={"NB_UID": "4321", "NB_GID": "4321", "JUPYTER_TOKEN": TOKEN},
                            volumes={str(work): {"bind": "/home/jovyan/work", "mode": "rw"}})
    tracked.wait_healthy(container)
    put_file(tracked.port(container, 8888), TOKEN, "work/notes.txt", "hello")
    made = work / "notes.txt"
    assert made.read_text() == "hello"
    assert (made.stat().st_uid, made.stat().st_gid) == (4321, 4321)
    assert (work.stat().st_uid, work.stat().st_gid) == (4321, 4321)  # the mount itself untouched
    code, out = tracked.exec(container, ["id", "jovyan"])
    assert code == 0 and out.startswith("uid=4321(jovyan) gid=4321")


def test_bind_mount_of_another_owner_is_not_chowned(tracked: TrackedContainer, tmp_path: Path) -> None:
    work = tmp_path / "shared"
    work.mkdir()
    (work / "data.csv").write_text("a,b\n")
    os.chown(work / "data.csv", 1000, 100)
    container = tracked.run(environment={"NB_UID": "4321"},
                            volumes={str(work): {"bind": "/home/jovyan/shared", "mode": "rw"}})
    tracked.wait_healthy(container)
    owner = (work / "data.csv").stat()
    assert (owner.st_uid, owner.st_gid) == (1000, 100)


@pytest.mark.parametrize("group", [100, 4242])
def test_arbitrary_user(tracked: TrackedContainer, keypair: KeyPair, group: int) -> None:
    container = tracked.run(user=f"4242:{group}",
                            environment={"SSH_AUTHORIZED_KEYS": keypair.public_text, "JUPYTER_TOKEN": TOKEN})
    tracked.wait_healthy(container)
    logs = tracked.logs(container)
    assert logs.count("SSH is off: sshd needs root") == 1
    assert api_status(tracked.port(container, 8888), TOKEN) == 200
    code, out = tracked.exec(container, ["ps", "-eo", "uid=,comm="])
    assert code == 0
    uids = {line.split()[0] for line in out.splitlines() if "jupyter" in line}
    assert uids == {"4242"}
    if group != 100:
        assert "HOME is /tmp/tf29-env-home-4242" in logs


def test_start_hooks(tracked: TrackedContainer, tmp_path: Path) -> None:
    hooks = tmp_path / "start.d"
    hooks.mkdir()
    (hooks / "10-env.sh").write_text("export HOOKED=from-a-sourced-hook\n")
    failing = hooks / "20-fail"
    failing.write_text("#!/bin/sh\necho hook ran >&2\nexit 3\n")
    failing.chmod(0o755)
    (hooks / "30-notes.txt").write_text("not a hook\n")
    container = tracked.run(volumes={str(hooks): {"bind": "/etc/tf29-env/start.d", "mode": "ro"}},
                            command=["bash", "-c", "echo HOOKED=$HOOKED; sleep 1"], publish=())
    assert tracked.wait_exit(container) == 0
    logs = tracked.logs(container)
    assert "HOOKED=from-a-sourced-hook" in logs
    assert "start hook /etc/tf29-env/start.d/20-fail failed (exit 3); continuing" in logs
    assert "ignoring /etc/tf29-env/start.d/30-notes.txt" in logs


def test_healthy_soon_after_start(tracked: TrackedContainer) -> None:
    container = tracked.run()
    started = time.monotonic()
    tracked.wait_healthy(container, timeout=60)
    assert time.monotonic() - started < 60
