"""Bad settings stop the container at once: one line naming the variable, exit 2, nothing started.

Every refusal of the planner (image/python/tf29image/startup/plan.py) is a row of
tests/unit/tf29image/startup/test_plan.py; here one
real container per family of failure shows the line reaches the log and the container stops, plus the
checks that only a real container can make (ssh-keygen on the keys, the host key folder, /proc's port
floor, the image's own groups, the self-check's answer)."""

from pathlib import Path

import pytest
from docker.models.containers import Container

from testkit.containers import TrackedContainer
from testkit.ssh import KeyPair

# One per family: ids, the image's groups, switches, the self-check, server settings, secret files,
# the token, host names, the keys (ssh-keygen, in prepare_ssh), nothing to run.
CASES = {
    "NB_UID": ({"NB_UID": "alice"}, "NB_UID='alice' is not a numeric id"),
    "shadow-group": ({"NB_GID": "42"}, "NB_GID=42 is the image's system group 'shadow'"),
    "switch": ({"ENABLE_SSH": "maybe"}, "ENABLE_SSH='maybe' is not a switch"),
    "self-check": ({"SELF_CHECK": "loud"}, "SELF_CHECK='loud' is not a mode"),
    "base-url": ({"JUPYTER_BASE_URL": "lab"}, "JUPYTER_BASE_URL='lab' must be a path"),
    "token-file": ({"JUPYTER_TOKEN_FILE": "/run/secrets/none"}, "JUPYTER_TOKEN_FILE=/run/secrets/none: no such"),
    "short-token": ({"JUPYTER_TOKEN": "a"}, "JUPYTER_TOKEN: the token is 1 characters long; at least 16"),
    "allowed-host-address": ({"JUPYTER_ALLOWED_HOSTS": "jupyter.example, 10.0.0.5"},
                             "JUPYTER_ALLOWED_HOSTS: '10.0.0.5' is an address"),
    "key": ({"SSH_AUTHORIZED_KEYS": "ssh-ed25519 not-base64"}, "SSH_AUTHORIZED_KEYS: line 1 is not an SSH public key"),
    "nothing": ({"ENABLE_JUPYTER": "0"}, "nothing to run"),
}


# Every variable the entrypoint reads has a length limit, far above any real value; 70 KB is above all
# (each one's row: tests/unit/tf29image/startup/test_plan.py).
LONG = 70_000


def assert_refused(tracked: TrackedContainer, container: Container, message: str) -> None:
    """Exit 2 at once, with one line: the error, naming what is wrong."""
    assert tracked.wait_exit(container, timeout=30) == 2
    lines = tracked.logs(container).strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("tf29-env: ERROR: ") and message in lines[0], lines


def test_a_runaway_value_is_refused_without_quoting_it(tracked: TrackedContainer) -> None:
    name = "JUPYTER_BASE_URL"
    value = "/" + "a" * (LONG - 1)  # a path, so that only its length is wrong where a path is expected
    container = tracked.run(environment={name: value})
    assert_refused(tracked, container, f"{name} is {LONG} characters long; at most ")
    assert len(tracked.logs(container)) < 200


def test_a_runaway_file_is_refused_before_it_is_read(tracked: TrackedContainer, tmp_path: Path) -> None:
    """A 150 KB token once reached exec in the environment: exit 126, "Argument list too long"."""
    name, size, limit = "JUPYTER_TOKEN_FILE", 150_000, 4096
    big = tmp_path / "secret"
    big.write_text("a" * size)
    container = tracked.run(environment={name: "/run/secrets/big"},
                            volumes={str(big): {"bind": "/run/secrets/big", "mode": "ro"}})
    assert_refused(tracked, container, f"{name}=/run/secrets/big: the file is {size} bytes; at most {limit}")


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_setting(tracked: TrackedContainer, case: str) -> None:
    environment, message = CASES[case]
    assert_refused(tracked, tracked.run(environment=environment), message)


def test_bad_key_in_the_middle_of_a_file(tracked: TrackedContainer, tmp_path: Path, keypair: KeyPair) -> None:
    keys = tmp_path / "keys"
    keys.write_text(f"{keypair.public_text}\n\nnot a key\n")
    container = tracked.run(environment={"SSH_AUTHORIZED_KEYS_FILE": "/k"},
                            volumes={str(keys): {"bind": "/k", "mode": "ro"}})
    assert tracked.wait_exit(container, timeout=30) == 2
    assert "SSH_AUTHORIZED_KEYS_FILE: line 3 is not an SSH public key" in tracked.logs(container)


def test_jupyter_and_ssh_on_one_port(tracked: TrackedContainer, keypair: KeyPair) -> None:
    """Jupyter used to say it in its own words, later, with exit 1."""
    ports = {"SSH_PORT": "8888"}
    jupyter, ssh = ports.get("JUPYTER_PORT", "8888"), ports.get("SSH_PORT", "22")
    container = tracked.run(environment={**ports, "SSH_AUTHORIZED_KEYS": keypair.public_text})
    assert_refused(tracked, container, f"JUPYTER_PORT={jupyter} and SSH_PORT={ssh}: JupyterLab and sshd cannot listen "
                                       "on the same port")


def test_jupyter_on_a_port_only_root_may_use(tracked: TrackedContainer) -> None:
    """Docker lets anyone listen on any port; where only root may listen below 1024, JupyterLab
    (never root) cannot."""
    container = tracked.run(environment={"JUPYTER_PORT": "80"},
                            sysctls={"net.ipv4.ip_unprivileged_port_start": "1024"})
    assert_refused(tracked, container, "JUPYTER_PORT=80: JupyterLab runs as jovyan, never root, and here only root "
                                       "may listen below port 1024")


@pytest.mark.parametrize(("directory", "why"), [("/proc/x", "No such file or directory"),
                                                ("/etc/hostname/keys", "Not a directory"),
                                                ("/sys/keys", "Read-only file system")])
def test_a_host_key_dir_that_cannot_be(tracked: TrackedContainer, keypair: KeyPair, directory: str, why: str) -> None:
    container = tracked.run(environment={"SSH_HOST_KEY_DIR": directory, "SSH_AUTHORIZED_KEYS": keypair.public_text})
    assert_refused(tracked, container, f"SSH_HOST_KEY_DIR={directory}: no folder for host keys can be made there")
    assert why in tracked.logs(container)


def test_a_read_only_host_key_dir_without_keys(tracked: TrackedContainer, keypair: KeyPair, tmp_path: Path) -> None:
    container = tracked.run(environment={"SSH_HOST_KEY_DIR": "/keys", "SSH_AUTHORIZED_KEYS": keypair.public_text},
                            volumes={str(tmp_path): {"bind": "/keys", "mode": "ro"}})
    assert_refused(tracked, container, "SSH_HOST_KEY_DIR=/keys: holds no host keys and none can be written there")


def test_a_gid_the_image_has_no_group_for_is_allowed(tracked: TrackedContainer) -> None:
    """500: a host's own scheme, below 1000 but none of the image's system groups."""
    gid = "500"
    container = tracked.run(publish=(), environment={"NB_GID": gid}, command=["id", "-g"])
    assert tracked.wait_exit(container, timeout=30) == 0, tracked.logs(container)
    # stdout alone: the entrypoint's notes on stderr may reach the log before or after it.
    assert container.logs(stdout=True, stderr=False).decode().strip() == gid
