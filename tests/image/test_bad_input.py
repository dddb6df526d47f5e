"""Bad settings stop the container at once: one line naming the variable, exit 2, nothing started."""

import re
from pathlib import Path

import pytest
from docker.models.containers import Container

from testkit.containers import TrackedContainer
from testkit.ssh import KeyPair
from tf29env.paths import REPO

CASES = {
    "NB_UID": ({"NB_UID": "alice"}, "NB_UID='alice' is not a numeric id"),
    "NB_GID": ({"NB_GID": "-5"}, "NB_GID='-5' is not a numeric id"),
    "root": ({"NB_UID": "0"}, "NB_UID=0"),
    "root-group": ({"NB_GID": "0"}, "NB_GID=0 is root's group"),
    "shadow-group": ({"NB_GID": "42"}, "NB_GID=42 is the image's system group 'shadow'"),
    "adm-group": ({"NB_GID": "004"}, "NB_GID=004 is the image's system group 'adm'"),
    "switch": ({"ENABLE_SSH": "maybe"}, "ENABLE_SSH='maybe' is not a switch"),
    "jupyter-switch": ({"ENABLE_JUPYTER": "2"}, "ENABLE_JUPYTER='2' is not a switch"),
    "self-check": ({"SELF_CHECK": "loud"}, "SELF_CHECK='loud' is not a mode"),
    "port": ({"JUPYTER_PORT": "70000"}, "JUPYTER_PORT='70000' is not a TCP port"),
    "base-url": ({"JUPYTER_BASE_URL": "lab"}, "JUPYTER_BASE_URL='lab' must be a path"),
    "token-file": ({"JUPYTER_TOKEN_FILE": "/run/secrets/none"}, "JUPYTER_TOKEN_FILE=/run/secrets/none: no such"),
    "both-tokens": ({"JUPYTER_TOKEN": "a", "JUPYTER_TOKEN_FILE": "/etc/hostname"}, "are both set"),
    "token-space": ({"JUPYTER_TOKEN": "two words"}, "the token contains spaces"),
    "short-token": ({"JUPYTER_TOKEN": "a"}, "JUPYTER_TOKEN: the token is 1 characters long; at least 16"),
    "short-token-15": ({"JUPYTER_TOKEN": "abcdefghijklmno"}, "JUPYTER_TOKEN: the token is 15 characters long"),
    "no-auth-without-hosts": ({"JUPYTER_INSECURE_NO_AUTH": "1"},
                              "JUPYTER_INSECURE_NO_AUTH=1 needs JUPYTER_ALLOWED_HOSTS"),
    "allowed-host-address": ({"JUPYTER_ALLOWED_HOSTS": "jupyter.example, 10.0.0.5"},
                             "JUPYTER_ALLOWED_HOSTS: '10.0.0.5' is an address"),
    "allowed-host-v6": ({"JUPYTER_ALLOWED_HOSTS": "[fd00::1]"}, "JUPYTER_ALLOWED_HOSTS: '[fd00::1]' is an address"),
    "allowed-host-url": ({"JUPYTER_ALLOWED_HOSTS": "https://jupyter.example"},
                         "JUPYTER_ALLOWED_HOSTS: 'https://jupyter.example' is not a host name"),
    "allowed-host-port": ({"JUPYTER_ALLOWED_HOSTS": "jupyter.example:8888"},
                          "JUPYTER_ALLOWED_HOSTS: 'jupyter.example:8888' is not a host name"),
    "allowed-host-wildcard": ({"JUPYTER_ALLOWED_HOSTS": "*.example"}, "JUPYTER_ALLOWED_HOSTS: '*.example' is not"),
    "password": ({"JUPYTER_PASSWORD_HASH": "hunter2"}, "JUPYTER_PASSWORD_HASH is not a Jupyter password hash"),
    "key": ({"SSH_AUTHORIZED_KEYS": "ssh-ed25519 not-base64"}, "SSH_AUTHORIZED_KEYS: line 1 is not an SSH public key"),
    "key-file": ({"SSH_AUTHORIZED_KEYS_FILE": "/nope"}, "SSH_AUTHORIZED_KEYS_FILE=/nope: no such readable file"),
    "nothing": ({"ENABLE_JUPYTER": "0"}, "nothing to run"),
}


# Every variable the entrypoint reads has a length limit, far above any real value; 70 KB is above all.
LONG = 70_000
# Every variable with a length bound, as the planner lists them (startup/plan.py, SETTING_LIMITS): a
# setting added there is tested here without a second list to keep in step.
SETTING_LIMITS = re.search(r"SETTING_LIMITS[^=]*= \(([^=]*)\n\)",
                           (REPO / "image" / "startup" / "plan.py").read_text())
assert SETTING_LIMITS, "startup/plan.py has no SETTING_LIMITS"
BOUNDED = re.findall(r'\("([A-Z_]+)", [0-9]+\)', SETTING_LIMITS[1])


def assert_refused(tracked: TrackedContainer, container: Container, message: str) -> None:
    """Exit 2 at once, with one line: the error, naming what is wrong."""
    assert tracked.wait_exit(container, timeout=30) == 2
    lines = tracked.logs(container).strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("tf29-env: ERROR: ") and message in lines[0], lines


@pytest.mark.parametrize("name", BOUNDED)
def test_a_runaway_value_is_refused_without_quoting_it(tracked: TrackedContainer, name: str) -> None:
    value = "/" + "a" * (LONG - 1)  # a path, so that only its length is wrong where a path is expected
    container = tracked.run(environment={name: value})
    assert_refused(tracked, container, f"{name} is {LONG} characters long; at most ")
    assert len(tracked.logs(container)) < 200


@pytest.mark.parametrize(("name", "size", "limit"), [("JUPYTER_TOKEN_FILE", 150_000, 4096),
                                                     ("SSH_AUTHORIZED_KEYS_FILE", 3_000_000, 2_097_152)])
def test_a_runaway_file_is_refused_before_it_is_read(tracked: TrackedContainer, tmp_path: Path, name: str,
                                                     size: int, limit: int) -> None:
    """A 150 KB token once reached exec in the environment: exit 126, "Argument list too long"."""
    big = tmp_path / "secret"
    big.write_text("a" * size)
    container = tracked.run(environment={name: "/run/secrets/big"},
                            volumes={str(big): {"bind": "/run/secrets/big", "mode": "ro"}})
    assert_refused(tracked, container, f"{name}=/run/secrets/big: the file is {size} bytes; at most {limit}")


def test_a_token_file_with_a_runaway_token(tracked: TrackedContainer, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("a" * 2000 + "\n")
    container = tracked.run(environment={"JUPYTER_TOKEN_FILE": "/run/secrets/token"},
                            volumes={str(token): {"bind": "/run/secrets/token", "mode": "ro"}})
    assert_refused(tracked, container, "JUPYTER_TOKEN_FILE=/run/secrets/token: the token is 2000 characters long; "
                                       "at most 1024")


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_setting(tracked: TrackedContainer, case: str) -> None:
    environment, message = CASES[case]
    assert_refused(tracked, tracked.run(environment=environment), message)


def test_empty_token_file(tracked: TrackedContainer, tmp_path: Path) -> None:
    empty = tmp_path / "token"
    empty.write_text("\n")
    container = tracked.run(environment={"JUPYTER_TOKEN_FILE": "/run/secrets/token"},
                            volumes={str(empty): {"bind": "/run/secrets/token", "mode": "ro"}})
    assert tracked.wait_exit(container, timeout=30) == 2
    expected = "tf29-env: ERROR: JUPYTER_TOKEN_FILE=/run/secrets/token: the file is empty"
    assert tracked.logs(container).strip() == expected


def test_short_token_in_a_file(tracked: TrackedContainer, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("secret\n")
    container = tracked.run(environment={"JUPYTER_TOKEN_FILE": "/run/secrets/token"},
                            volumes={str(token): {"bind": "/run/secrets/token", "mode": "ro"}})
    assert_refused(tracked, container, "JUPYTER_TOKEN_FILE: the token is 6 characters long; at least 16")


def test_bad_key_in_the_middle_of_a_file(tracked: TrackedContainer, tmp_path: Path, keypair: KeyPair) -> None:
    keys = tmp_path / "keys"
    keys.write_text(f"{keypair.public_text}\n\nnot a key\n")
    container = tracked.run(environment={"SSH_AUTHORIZED_KEYS_FILE": "/k"},
                            volumes={str(keys): {"bind": "/k", "mode": "ro"}})
    assert tracked.wait_exit(container, timeout=30) == 2
    assert "SSH_AUTHORIZED_KEYS_FILE: line 3 is not an SSH public key" in tracked.logs(container)


@pytest.mark.parametrize("ports", [{"JUPYTER_PORT": "22"}, {"SSH_PORT": "8888"},
                                   {"JUPYTER_PORT": "2222", "SSH_PORT": "02222"}])
def test_jupyter_and_ssh_on_one_port(tracked: TrackedContainer, keypair: KeyPair, ports: dict[str, str]) -> None:
    """Jupyter used to say it in its own words, later, with exit 1."""
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


@pytest.mark.parametrize("gid", ["100", "500", "4321"])
def test_the_gids_that_are_allowed(tracked: TrackedContainer, gid: str) -> None:
    """users (100), a gid the image has no group for (500: a host's own scheme) and any from 1000 up."""
    container = tracked.run(publish=(), environment={"NB_GID": gid}, command=["id", "-g"])
    assert tracked.wait_exit(container, timeout=30) == 0, tracked.logs(container)
    assert tracked.logs(container).strip().splitlines()[-1] == gid
