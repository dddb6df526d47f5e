"""Hardened runtimes (issue 11, finding 3): the modes README's "Security" section documents work on
the real engine, and a start that lacks a capability or a writable path stops at once with one
line naming it (exit 2), not with a raw error halfway through or a container never healthy.

(a) non-root, read-only root, no capabilities, no-new-privileges: JupyterLab, no SSH;
(b) root with only the minimal capability set: JupyterLab, SSH (terminal sessions too), NB_UID fitting;
    root with a read-only root file system (and the minimal set, no-new-privileges): the same.
"""

import io
import tarfile
import time
from typing import Any

import docker.types
import pytest
from docker.models.containers import Container

from testkit import ssh
from testkit.containers import TrackedContainer, stop_seconds
from testkit.jupyter import api_status, put_file
from testkit.ssh import KeyPair

TOKEN = "hardened-token-5678"
HOME = "/home/jovyan"
WORK = f"{HOME}/work"
RUN_DIR = "/run/tf29-env"
TMP = "/tmp"  # noqa: S108 - the container's /tmp, a tmpfs of its own
SCRATCH_HOME = f"{TMP}/tf29-env-home-1000"
# README "Security": what root needs with --cap-drop ALL for JupyterLab, SSH and NB_UID fitting.
MINIMAL_CAPS = ("AUDIT_WRITE", "CHOWN", "DAC_READ_SEARCH", "FOWNER", "KILL", "SETGID", "SETUID", "SYS_CHROOT")
HARDENED: dict[str, Any] = {"cap_drop": ["ALL"], "security_opt": ["no-new-privileges"]}
MINIMAL: dict[str, Any] = {"cap_drop": ["ALL"], "cap_add": list(MINIMAL_CAPS)}
READ_ONLY_SCRATCH: dict[str, Any] = {"read_only": True, "tmpfs": {TMP: ""}}
# Docker sets net.ipv4.ip_unprivileged_port_start to 0; Kubernetes and most other runtimes do not.
PRIVILEGED_PORTS: dict[str, Any] = {"sysctls": {"net.ipv4.ip_unprivileged_port_start": "1024"}}


def anonymous_volumes(*targets: str) -> list[docker.types.Mount]:
    """Fresh volumes, removed with the container (TrackedContainer removes with v=True)."""
    return [docker.types.Mount(target=target, source=None, type="volume") for target in targets]


def lines_with(logs: str, text: str) -> list[str]:
    return [line for line in logs.splitlines() if text in line]


def assert_stops_with_one_line(tracked: TrackedContainer, container: Container, *fragments: str) -> str:
    assert tracked.wait_exit(container, timeout=60) == 2, tracked.logs(container)
    lines = tracked.logs(container).strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("tf29-env: ERROR: "), lines
    for fragment in fragments:
        assert fragment in lines[0], lines
    return lines[0]


def assert_jupyter_saves_to_work(tracked: TrackedContainer, container: Container) -> None:
    """The token is needed and works; JupyterLab's root is the home folder, and ~/work (a volume)
    takes a file saved through the contents API."""
    port = tracked.port(container, 8888)
    assert api_status(port) == 403
    assert api_status(port, TOKEN) == 200
    put_file(port, TOKEN, "work/hardened.txt", "saved")
    assert tracked.exec(container, ["cat", f"{WORK}/hardened.txt"]) == (0, "saved")


def assert_ssh_login(tracked: TrackedContainer, container: Container, key: KeyPair, uid: int) -> None:
    """A command and a terminal session (sshd hands the pty to the user: CHOWN, AUDIT_WRITE)."""
    with ssh.connect(tracked.port(container, 22), "jovyan", key) as client:
        assert ssh.run(client, "id -u; id -un") == (0, f"{uid}\njovyan\n")
        _, stdout, _ = client.exec_command("tty", timeout=30, get_pty=True)
        out = stdout.read().decode()
        assert (stdout.channel.recv_exit_status(), out.startswith("/dev/pts/")) == (0, True), out


def assert_stops_cleanly(container: Container) -> None:
    """docker stop reaches JupyterLab and sshd (root signals jovyan's processes: KILL) at once."""
    assert stop_seconds(container) < 8
    container.reload()
    assert container.attrs["State"]["ExitCode"] == 0


def test_non_root_read_only_root_without_capabilities(tracked: TrackedContainer, keypair: KeyPair) -> None:
    # A tmpfs on /run would be root's with mode 755 (it takes the image's /run's): the run
    # directory gets its own, which keeps the image's mode 1777.
    container = tracked.run(
        user="1000:100", read_only=True, tmpfs={TMP: "", RUN_DIR: ""}, mounts=anonymous_volumes(WORK),
        environment={"JUPYTER_TOKEN": TOKEN, "SSH_AUTHORIZED_KEYS": keypair.public_text}, **HARDENED,
    )
    tracked.wait_healthy(container, timeout=120)
    assert_jupyter_saves_to_work(tracked, container)
    logs = tracked.logs(container)
    assert len(lines_with(logs, "SSH is off: sshd needs root")) == 1, logs
    assert len(lines_with(logs, f"HOME is {SCRATCH_HOME}")) == 1, logs
    assert not lines_with(logs, "ERROR"), logs
    code, out = tracked.exec(container, ["sh", "-c", f"grep CapEff /proc/1/status; stat -c '%u %a' {SCRATCH_HOME}; "
                                         f"touch {HOME}/x"])
    assert code != 0 and "Read-only file system" in out, out
    assert "CapEff:\t0000000000000000" in out and "1000 700" in out, out
    assert_stops_cleanly(container)


@pytest.mark.parametrize("ids", [(1000, 100), (4321, 4321)], ids=["as-built", "nb-uid-fitting"])
def test_root_with_the_minimal_capabilities(
    tracked: TrackedContainer, keypair: KeyPair, ids: tuple[int, int]
) -> None:
    uid, gid = ids
    container = tracked.run(
        environment={"JUPYTER_TOKEN": TOKEN, "SSH_AUTHORIZED_KEYS": keypair.public_text,
                     "NB_UID": str(uid), "NB_GID": str(gid)},
        mounts=anonymous_volumes(WORK), **MINIMAL,
    )
    tracked.wait_healthy(container, timeout=120)
    assert_jupyter_saves_to_work(tracked, container)
    assert_ssh_login(tracked, container, keypair, uid)
    # The saved file is the dev user's (its group is the volume's setgid folder's); the image's own
    # files in the home folder follow NB_UID/NB_GID.
    code, out = tracked.exec(container, ["stat", "-c", "%u", f"{WORK}/hardened.txt"])
    assert (code, out.strip()) == (0, str(uid)), out
    code, out = tracked.exec(container, ["stat", "-c", "%u:%g", f"{HOME}/.bashrc"])
    assert (code, out.strip()) == (0, f"{uid}:{gid}"), out
    code, out = tracked.exec(container, ["id", "-Gn", "jovyan"])
    assert code == 0 and "users" in out.split(), out
    assert_stops_cleanly(container)


def test_root_with_a_read_only_root(tracked: TrackedContainer, keypair: KeyPair) -> None:
    # Together with the minimal set and no-new-privileges: the modes combine.
    container = tracked.run(
        read_only=True, tmpfs={TMP: "", "/run": ""}, mounts=anonymous_volumes(WORK, "/etc/ssh/host-keys"),
        environment={"JUPYTER_TOKEN": TOKEN, "SSH_AUTHORIZED_KEYS": keypair.public_text},
        security_opt=["no-new-privileges"], cap_drop=["ALL"], cap_add=list(MINIMAL_CAPS),
    )
    tracked.wait_healthy(container, timeout=120)
    assert_jupyter_saves_to_work(tracked, container)
    assert_ssh_login(tracked, container, keypair, 1000)
    logs = tracked.logs(container)
    assert len(lines_with(logs, f"HOME is {SCRATCH_HOME}")) == 1, logs
    assert not lines_with(logs, "usermod"), logs
    code, out = tracked.exec(container, ["stat", "-c", "%U %a", SCRATCH_HOME, RUN_DIR])
    assert (code, out.splitlines()) == (0, ["jovyan 700", "root 1777"]), out
    assert_stops_cleanly(container)


def test_a_command_as_root_needs_only_the_user_switch(tracked: TrackedContainer) -> None:
    # The command mode writes no run directory and starts no service: a read-only root with a
    # tmpfs on /tmp only, and SETUID, SETGID and KILL (docker stop's signal to jovyan) suffice.
    container = tracked.run(
        command=["sh", "-c", 'id -un; echo "HOME=$HOME"'], publish=(), read_only=True, tmpfs={TMP: ""},
        cap_drop=["ALL"], cap_add=["SETUID", "SETGID", "KILL"], security_opt=["no-new-privileges"],
    )
    assert tracked.wait_exit(container) == 0, tracked.logs(container)
    logs = tracked.logs(container)
    assert "jovyan\n" in logs and f"HOME={SCRATCH_HOME}\n" in logs, logs
    assert not lines_with(logs, "ERROR"), logs


# name: (containers.run arguments, environment, what the one line must say)
STOPS: dict[str, tuple[dict[str, Any], dict[str, str], tuple[str, ...]]] = {
    "no-caps-nb-uid": ({"cap_drop": ["ALL"]}, {"NB_UID": "4321"},
                       ("missing capabilities: ", "CHOWN (for NB_UID=4321/NB_GID=100", "SETUID, SETGID (")),
    "read-only-no-run": ({**READ_ONLY_SCRATCH, "mounts": anonymous_volumes("/etc/ssh/host-keys")}, {},
                         (f"TFENV_RUN_DIR={RUN_DIR} is not a writable folder (read-only file system)",
                          f"--tmpfs {RUN_DIR}")),
    # Without root, a /run of root's is no stop: the run directory is the run's own under /tmp
    # (tests/image/test_apptainer_mode.py).
    "read-only-no-tmp": ({"read_only": True, "tmpfs": {"/run": ""}}, {},
                         (f"{TMP} is not writable (read-only file system)", f"--tmpfs {TMP}")),
    "read-only-nb-uid": ({"read_only": True, "tmpfs": {TMP: "", "/run": ""},
                          "mounts": anonymous_volumes("/etc/ssh/host-keys")}, {"NB_UID": "4321"},
                         ("NB_UID=4321/NB_GID=100 means rewriting /etc/passwd", "read-only file system",
                          "use NB_UID/NB_GID as built")),
    **{f"minimal-without-{cap.lower()}": (
        {"cap_drop": ["ALL"], "cap_add": [c for c in MINIMAL_CAPS if c != cap]}, {}, (f" {cap} (",))
       for cap in MINIMAL_CAPS},
    "ssh-low-port": ({**MINIMAL, **PRIVILEGED_PORTS}, {},
                     ("missing capabilities: NET_BIND_SERVICE (for sshd to listen on SSH_PORT=22, below 1024",)),
    "read-only-run-for-sshd": ({"read_only": True, "tmpfs": {TMP: "", RUN_DIR: ""},
                                "mounts": anonymous_volumes("/etc/ssh/host-keys")}, {},
                               ("SSH needs /run/tf29-env-sshd and /run/sshd", "--tmpfs /run")),
}


@pytest.mark.parametrize("case", sorted(STOPS))
def test_a_missing_capability_or_path_stops_with_one_line(
    tracked: TrackedContainer, keypair: KeyPair, case: str
) -> None:
    run_args, environment, fragments = STOPS[case]
    # SSH is wanted in every case: what it needs is checked (and, for the low port, missing).
    container = tracked.run(environment={"SSH_AUTHORIZED_KEYS": keypair.public_text, **environment}, **run_args)
    line = assert_stops_with_one_line(tracked, container, *fragments)
    if case.startswith("minimal-without-"):
        # Exactly the one left out is missing: the documented set is what the check asks for.
        listed = line.split("missing capabilities: ", 1)[1].split(". Add them", 1)[0]
        assert listed.startswith(case.removeprefix("minimal-without-").upper() + " (") and ");" not in listed, line


def test_the_stop_comes_before_anything_starts(tracked: TrackedContainer, keypair: KeyPair) -> None:
    """Without SETUID nothing could run as jovyan, so nothing is tried: no host key is made."""
    started = time.monotonic()
    container = tracked.run(cap_drop=["ALL"], environment={"SSH_AUTHORIZED_KEYS": keypair.public_text},
                            mounts=anonymous_volumes("/etc/ssh/host-keys"))
    assert_stops_with_one_line(tracked, container, "SETUID, SETGID (to run JupyterLab and the self-check as jovyan)")
    assert time.monotonic() - started < 30
    chunks, _ = container.get_archive("/etc/ssh/host-keys")
    with tarfile.open(fileobj=io.BytesIO(b"".join(chunks))) as archive:
        assert archive.getnames() == ["host-keys"]
