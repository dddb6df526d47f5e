"""docker-stacks' user options on the real engine (issue 16): NB_USER renames the dev user (services
mode with SSH, command mode, --user, a restart), an arbitrary uid gets a passwd entry without root
and on a read-only root (libnss-wrapper), NB_GROUP, NB_UMASK, CHOWN_HOME(_OPTS), CHOWN_EXTRA(_OPTS),
GRANT_SUDO and the rootless-engine triplet NB_USER=root NB_UID=0 NB_GID=0; each bad value is one
line and exit 2. Most cases run a command (no Jupyter: quick); SELF_CHECK=off where it is not tested."""

import os
from pathlib import Path
from typing import Any

import paramiko
import pytest
from docker.models.containers import Container

from testkit import ssh
from testkit.containers import TrackedContainer
from testkit.jupyter import api_status, put_file
from testkit.ssh import KeyPair
from tests.image.test_hardened import MINIMAL

TOKEN = "dockerstacks-users-token"
TMP = "/tmp"  # noqa: S108 - the container's /tmp, a tmpfs of its own
READ_ONLY: dict[str, Any] = {"read_only": True, "tmpfs": {TMP: "", "/run/tf29-env": ""}}
# What the tools that need a passwd entry say about the uid: whoami, Python's two ways, git's
# author (the name from the entry; an email given, as the container has no domain), ssh-keygen.
IDENTITY = ("whoami; python3 -c 'import getpass, os, pwd; print(getpass.getuser(), pwd.getpwuid(os.getuid()).pw_name)';"
            " git -c user.email=a@example.org var GIT_AUTHOR_IDENT | cut -d' ' -f1;"
            f" ssh-keygen -q -t ed25519 -N '' -f {TMP}/k && echo keygen-ok; echo HOME=$HOME")


def run_command(tracked: TrackedContainer, script: str, env: dict[str, str] | None = None,
                **kwargs: Any) -> tuple[int, str, str]:
    """Run SCRIPT in the command mode; its exit code, stdout, and the entrypoint's (stderr) lines."""
    container = tracked.run(command=["bash", "-c", script], environment=env or {},
                            publish=(), **kwargs)
    code = tracked.wait_exit(container, timeout=60)
    out = container.logs(stdout=True, stderr=False).decode(errors="replace")
    err = container.logs(stdout=False, stderr=True).decode(errors="replace")
    return code, out, err


def warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("tf29-env: WARNING: ")]


# --- 1. NB_USER -------------------------------------------------------------------------------------

def test_nb_user_renames_the_dev_user_and_its_home(tracked: TrackedContainer) -> None:
    code, out, err = run_command(tracked, "id -un; echo $HOME; stat -c '%n %U' ~ ~/.bashrc ~/work ~/.nv;"
                                 " getent passwd jovyan || echo no-jovyan; test -e /home/jovyan || echo no-old-home",
                                 {"NB_USER": "alice"})
    assert code == 0, err
    assert out.splitlines() == ["alice", "/home/alice", "/home/alice alice", "/home/alice/.bashrc alice",
                                "/home/alice/work alice", "/home/alice/.nv alice", "no-jovyan", "no-old-home"]
    assert "dev user jovyan is now alice, home /home/alice" in err
    assert warnings(err) == []


def test_nb_user_leaves_bind_mounts_alone(tracked: TrackedContainer, tmp_path: Path) -> None:
    """NB_USER with NB_UID/NB_GID/NB_GROUP and a folder mounted in the new home: the image's files
    follow the new ids, the mounted folder and its files keep their owner (no CHOWN_HOME)."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.txt").write_text("host")
    os.chown(work / "notes.txt", 4242, 4242)
    code, out, err = run_command(
        tracked, "id; stat -c '%n %u:%g' ~ ~/.bashrc ~/work ~/work/notes.txt",
        {"NB_USER": "alice", "NB_UID": "4321", "NB_GID": "4321", "NB_GROUP": "team"},
        volumes={str(work): {"bind": "/home/alice/work", "mode": "rw"}})
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "uid=4321(alice) gid=4321(team) groups=4321(team),100(users)"
    assert lines[1:] == ["/home/alice 4321:4321", "/home/alice/.bashrc 4321:4321", "/home/alice/work 0:0",
                         "/home/alice/work/notes.txt 4242:4242"]


def test_nb_user_with_the_minimal_capabilities(tracked: TrackedContainer) -> None:
    """Root without DAC_OVERRIDE or FSETID (docs/security.md) still renames: the home keeps its mode
    (setgid included) and the old one is gone."""
    code, out, err = run_command(tracked, "stat -c '%n %a %U' ~ ~/work ~/.bashrc; ls /home",
                                 {"NB_USER": "alice", "NB_UID": "4321"}, **MINIMAL)
    assert code == 0, err
    assert out.splitlines() == ["/home/alice 2775 alice", "/home/alice/work 2775 alice",
                                "/home/alice/.bashrc 644 alice", "alice"]


def test_nb_user_in_services_mode_ssh_and_restart(tracked: TrackedContainer, keypair: KeyPair) -> None:
    container = tracked.run(environment={"NB_USER": "alice", "JUPYTER_TOKEN": TOKEN, "NB_UMASK": "002",
                                         "SSH_AUTHORIZED_KEYS": keypair.public_text})
    for start in ("first", "restarted"):
        tracked.wait_healthy(container)
        assert api_status(tracked.port(container, 8888), TOKEN) == 200, start
        put_file(tracked.port(container, 8888), TOKEN, f"work/{start}.txt", start)
        assert tracked.exec(container, ["stat", "-c", "%U %a", f"/home/alice/work/{start}.txt"]) == (0, "alice 664\n")
        with ssh.connect(tracked.port(container, 22), "alice", keypair) as client:
            assert ssh.run(client, "id -un; echo $HOME") == (0, "alice\n/home/alice\n")
        with pytest.raises(paramiko.AuthenticationException):
            ssh.connect(tracked.port(container, 22), "jovyan", keypair)
        assert "SSH: listening on port 22 for alice" in tracked.logs(container)
        if start == "first":
            container.restart(timeout=10)


def test_nb_user_without_root(tracked: TrackedContainer) -> None:
    """--user 1000:100 is the image user's uid: it takes NB_USER's name, and the home stays."""
    code, out, err = run_command(tracked, IDENTITY, {"NB_USER": "alice"}, user="1000:100")
    assert code == 0, err
    assert out.splitlines() == ["alice", "alice alice", "alice", "keygen-ok", "HOME=/home/jovyan"]
    assert warnings(err) == []


# --- 2. an arbitrary uid ------------------------------------------------------------------------------

@pytest.mark.parametrize(("user", "read_only", "home"), [
    ("12345:100", False, "/home/jovyan"),
    ("12345:100", True, f"{TMP}/tf29-env-home-12345"),
    ("12345", True, f"{TMP}/tf29-env-home-12345"),
])
def test_an_arbitrary_uid_has_a_passwd_entry(tracked: TrackedContainer, user: str, read_only: bool, home: str) -> None:
    code, out, err = run_command(tracked, f"{IDENTITY}; grep -c 12345 /etc/passwd", user=user,
                                 **(READ_ONLY if read_only else {}))
    assert out.splitlines() == ["jovyan", "jovyan jovyan", "jovyan", "keygen-ok", f"HOME={home}", "0"], err
    assert code == 1  # grep found nothing in /etc/passwd: the entry is libnss-wrapper's
    assert "uid 12345 is jovyan" in err


def test_without_the_entrypoint_the_uid_has_no_name(tracked: TrackedContainer) -> None:
    """What the entry fixes: the same uid, the entrypoint bypassed."""
    code, out, _ = run_command(tracked, "whoami 2>&1", user="12345", entrypoint=["/usr/bin/env"])
    assert code == 1 and "cannot find name for user ID 12345" in out


def test_an_arbitrary_uid_with_nb_user_and_nb_group(tracked: TrackedContainer) -> None:
    code, out, err = run_command(tracked, "id; whoami", {"NB_USER": "bob", "NB_GROUP": "lab"}, user="12345:23456",
                                 **READ_ONLY)
    assert code == 0, err
    assert out.splitlines() == ["uid=12345(bob) gid=23456(lab) groups=23456(lab)", "bob"]


def test_an_arbitrary_uid_runs_jupyter_hardened(tracked: TrackedContainer) -> None:
    """Non-root, read-only root, no capabilities: JupyterLab is healthy and its processes know the name."""
    container = tracked.run(user="12345:100", environment={"JUPYTER_TOKEN": TOKEN}, cap_drop=["ALL"],
                            security_opt=["no-new-privileges"], publish=(8888,), **READ_ONLY)
    tracked.wait_healthy(container)
    assert api_status(tracked.port(container, 8888), TOKEN) == 200
    # docker exec starts outside the entrypoint: it takes the server's libnss-wrapper settings.
    script = ("pid=$(pgrep -f jupyter-lab | head -1);"
              " env $(tr '\\0' '\\n' </proc/$pid/environ | grep -E '^(LD_PRELOAD|NSS_WRAPPER_)') whoami")
    code, out = tracked.exec(container, ["bash", "-c", script], user="12345:100")
    assert (code, out) == (0, "jovyan\n")


# --- 3. NB_GROUP, NB_UMASK, CHOWN_*, GRANT_SUDO, the root triplet --------------------------------------------

def test_nb_umask(tracked: TrackedContainer) -> None:
    code, out, err = run_command(tracked, f"umask; touch {TMP}/f; stat -c %a {TMP}/f", {"NB_UMASK": "002"})
    assert (code, out) == (0, "0002\n664\n"), err


def test_chown_home_and_extra(tracked: TrackedContainer, tmp_path: Path) -> None:
    work, data = tmp_path / "work", tmp_path / "data"
    for folder in (work, data):
        (folder / "sub").mkdir(parents=True)
        (folder / "sub" / "file").write_text("x")
    code, out, err = run_command(
        tracked, "stat -c '%n %u:%g' ~/work ~/work/sub/file /data /data/sub/file",
        {"NB_UID": "4321", "CHOWN_HOME": "yes", "CHOWN_HOME_OPTS": "-R", "CHOWN_EXTRA": "/data",
         "CHOWN_EXTRA_OPTS": "-R"},
        volumes={str(work): {"bind": "/home/jovyan/work", "mode": "rw"}, str(data): {"bind": "/data", "mode": "rw"}})
    assert code == 0, err
    assert out.splitlines() == ["/home/jovyan/work 4321:100", "/home/jovyan/work/sub/file 4321:100",
                                "/data 4321:100", "/data/sub/file 4321:100"]
    assert "CHOWN_HOME: /home/jovyan is now uid 4321, gid 100 (chown -R)" in err
    assert (data / "sub" / "file").stat().st_uid == 4321


def test_chown_extra_without_r_changes_the_folder_only(tracked: TrackedContainer, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    code, out, err = run_command(tracked, "stat -c '%n %u' /data /data/file", {"CHOWN_EXTRA": "/data"},
                                 volumes={str(tmp_path): {"bind": "/data", "mode": "rw"}})
    assert (code, out) == (0, "/data 1000\n/data/file 0\n"), err


def test_grant_sudo(tracked: TrackedContainer) -> None:
    code, out, err = run_command(tracked, "sudo -n id -u", {"GRANT_SUDO": "yes", "NB_USER": "alice"})
    assert (code, out) == (0, "0\n"), err
    assert len(warnings(err)) == 1 and "GRANT_SUDO=yes: alice may run anything as root" in warnings(err)[0]


def test_no_sudo_unless_granted(tracked: TrackedContainer) -> None:
    code, out, err = run_command(tracked, "sudo -n true 2>&1")
    assert code == 1 and "a password is required" in out, err
    code, out, err = run_command(tracked, "sudo -n true 2>&1", {"GRANT_SUDO": "1"}, user="1000:100")
    assert code == 1, out
    assert warnings(err) == ["tf29-env: WARNING: GRANT_SUDO=1 is ignored: it needs a container started as root, "
                             "and this one runs as uid 1000"]


def test_root_triplet_in_services_mode(tracked: TrackedContainer, keypair: KeyPair) -> None:
    container = tracked.run(environment={"NB_USER": "root", "NB_UID": "0", "NB_GID": "0",
                                         "JUPYTER_TOKEN": TOKEN, "SSH_AUTHORIZED_KEYS": keypair.public_text})
    tracked.wait_healthy(container)
    assert api_status(tracked.port(container, 8888), TOKEN) == 200
    assert api_status(tracked.port(container, 8888)) == 403  # auth stays on
    put_file(tracked.port(container, 8888), TOKEN, "work/by-root.txt", "x")
    assert tracked.exec(container, ["stat", "-c", "%u", "/home/root/work/by-root.txt"]) == (0, "0\n")
    code, out = tracked.exec(container, ["ps", "-eo", "user=,comm="])
    assert code == 0
    assert {line.split()[0] for line in out.splitlines() if "jupyter" in line} == {"root"}, out
    assert "sshd" not in out
    logs = tracked.logs(container)
    assert len(warnings(logs)) == 1 and "SSH stays off" in warnings(logs)[0], logs


def test_root_triplet_command(tracked: TrackedContainer, tmp_path: Path) -> None:
    """HOME and root's passwd entry say the same home."""
    code, out, err = run_command(tracked, "id -u; echo $HOME; getent passwd root | cut -d: -f6; touch ~/work/made",
                                 {"NB_USER": "root", "NB_UID": "0", "NB_GID": "0"},
                                 volumes={str(tmp_path): {"bind": "/home/root/work", "mode": "rw"}})
    assert (code, out) == (0, "0\n/home/root\n/home/root\n"), err
    assert (tmp_path / "made").stat().st_uid == 0


BAD = {
    "umask": ({"NB_UMASK": "9"}, "NB_UMASK='9' is not a umask"),
    "umask-long": ({"NB_UMASK": "00022"}, "NB_UMASK='00022' is not a umask"),
    "group-name": ({"NB_GROUP": "Staff"}, "NB_GROUP='Staff' is not a valid group name"),
    "group-users": ({"NB_GROUP": "team"}, "NB_GROUP=team: NB_GID=100 is the image's group 'users'"),
    "group-taken": ({"NB_GID": "5000", "NB_GROUP": "shadow"}, "NB_GROUP: the group name 'shadow' is the image's group"),
    "sudo": ({"GRANT_SUDO": "please"}, "GRANT_SUDO='please' is not a switch"),
    "chown-home": ({"CHOWN_HOME": "sure"}, "CHOWN_HOME='sure' is not a switch"),
    "home-opts": ({"CHOWN_HOME": "yes", "CHOWN_HOME_OPTS": "-R --from=0:0"}, "CHOWN_HOME_OPTS: '--from=0:0' is not"),
    "extra-opts": ({"CHOWN_EXTRA": "/srv", "CHOWN_EXTRA_OPTS": "-RL"}, "CHOWN_EXTRA_OPTS: '-RL' is not allowed"),
    "extra-etc": ({"CHOWN_EXTRA": "/srv,/etc"}, "CHOWN_EXTRA: /etc is or holds the system's /etc"),
    "extra-entrypoint": ({"CHOWN_EXTRA": "/opt"}, "CHOWN_EXTRA: /opt is or holds the system's /opt/tf29-env"),
    "extra-missing": ({"CHOWN_EXTRA": "/data"}, "CHOWN_EXTRA: /data does not exist"),
    "extra-relative": ({"CHOWN_EXTRA": "data"}, "CHOWN_EXTRA: 'data' is not an absolute path"),
    "user-root": ({"NB_USER": "root"}, "NB_USER=root: JupyterLab and SSH logins never run as root"),
    "user-taken": ({"NB_USER": "sshd"}, "NB_USER=sshd is already a user of the image"),
    "half-triplet": ({"NB_USER": "root", "NB_UID": "0", "NB_GID": "100"}, "NB_UID=0: JupyterLab and SSH"),
    "uid-0": ({"NB_UID": "0", "NB_GID": "0"}, "only NB_USER=root NB_UID=0 NB_GID=0 together"),
    "group-length": ({"NB_GROUP": "g" * 40}, "NB_GROUP is 40 characters long; at most 32"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_values_stop_with_one_line(tracked: TrackedContainer, case: str) -> None:
    env, message = BAD[case]
    assert_refused(tracked, tracked.run(environment=env, publish=()), message)


READ_ONLY_ROOT = {
    "rename": ({"NB_USER": "alice"}, "NB_USER=alice means renaming jovyan in /etc/passwd"),
    "sudo": ({"GRANT_SUDO": "yes"}, "GRANT_SUDO=yes means a rule in /etc/sudoers.d, but /etc/sudoers.d is not"),
    "triplet": ({"NB_USER": "root", "NB_UID": "0", "NB_GID": "0"}, "means a home folder /home/root, but /home is not"),
    "chown-home": ({"CHOWN_HOME": "yes"}, "CHOWN_HOME=yes, but /home/jovyan is on a read-only file system"),
}


@pytest.mark.parametrize("case", sorted(READ_ONLY_ROOT))
def test_a_read_only_root_refuses_what_writes_it(tracked: TrackedContainer, case: str) -> None:
    """Root, --read-only: what would write the root file system stops the start in one line."""
    env, message = READ_ONLY_ROOT[case]
    container = tracked.run(environment=env, command=["true"], publish=(), read_only=True,
                            tmpfs={TMP: "", "/run": ""})
    assert_refused(tracked, container, message)


def test_chown_extra_refuses_a_read_only_mount(tracked: TrackedContainer, tmp_path: Path) -> None:
    container = tracked.run(environment={"CHOWN_EXTRA": "/data"}, command=["true"], publish=(),
                            volumes={str(tmp_path): {"bind": "/data", "mode": "ro"}})
    assert_refused(tracked, container, "CHOWN_EXTRA: /data is on a read-only file system")


def test_the_triplet_needs_a_root_start(tracked: TrackedContainer) -> None:
    container = tracked.run(environment={"NB_USER": "root", "NB_UID": "0", "NB_GID": "0"}, user="1000:100", publish=())
    assert_refused(tracked, container, "runs JupyterLab as the container's root, but this container runs as uid 1000")


def assert_refused(tracked: TrackedContainer, container: Container, message: str) -> None:
    assert tracked.wait_exit(container, timeout=30) == 2
    lines = tracked.logs(container).strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("tf29-env: ERROR: ") and message in lines[0], lines
