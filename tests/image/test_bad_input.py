"""Bad settings stop the container at once: one line naming the variable, exit 2, nothing started."""

from pathlib import Path

import pytest

from testkit.containers import TrackedContainer
from testkit.ssh import KeyPair

CASES = {
    "NB_UID": ({"NB_UID": "alice"}, "NB_UID='alice' is not a numeric id"),
    "NB_GID": ({"NB_GID": "-5"}, "NB_GID='-5' is not a numeric id"),
    "root": ({"NB_UID": "0"}, "NB_UID=0"),
    "switch": ({"ENABLE_SSH": "maybe"}, "ENABLE_SSH='maybe' is not a switch"),
    "jupyter-switch": ({"ENABLE_JUPYTER": "2"}, "ENABLE_JUPYTER='2' is not a switch"),
    "self-check": ({"SELF_CHECK": "loud"}, "SELF_CHECK='loud' is not a mode"),
    "port": ({"JUPYTER_PORT": "70000"}, "JUPYTER_PORT='70000' is not a TCP port"),
    "base-url": ({"JUPYTER_BASE_URL": "lab"}, "JUPYTER_BASE_URL='lab' must be a path"),
    "token-file": ({"JUPYTER_TOKEN_FILE": "/run/secrets/none"}, "JUPYTER_TOKEN_FILE=/run/secrets/none: no such"),
    "both-tokens": ({"JUPYTER_TOKEN": "a", "JUPYTER_TOKEN_FILE": "/etc/hostname"}, "are both set"),
    "token-space": ({"JUPYTER_TOKEN": "two words"}, "the token contains spaces"),
    "password": ({"JUPYTER_PASSWORD_HASH": "hunter2"}, "JUPYTER_PASSWORD_HASH is not a Jupyter password hash"),
    "key": ({"SSH_AUTHORIZED_KEYS": "ssh-ed25519 not-base64"}, "SSH_AUTHORIZED_KEYS: line 1 is not an SSH public key"),
    "key-file": ({"SSH_AUTHORIZED_KEYS_FILE": "/nope"}, "SSH_AUTHORIZED_KEYS_FILE=/nope: no such readable file"),
    "nothing": ({"ENABLE_JUPYTER": "0"}, "nothing to run"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_setting(tracked: TrackedContainer, case: str) -> None:
    environment, message = CASES[case]
    container = tracked.run(environment=environment)
    assert tracked.wait_exit(container, timeout=30) == 2
    lines = tracked.logs(container).strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("tf29-env: ERROR: ") and message in lines[0], lines


def test_empty_token_file(tracked: TrackedContainer, tmp_path: Path) -> None:
    empty = tmp_path / "token"
    empty.write_text("\n")
    container = tracked.run(environment={"JUPYTER_TOKEN_FILE": "/run/secrets/token"},
                            volumes={str(empty): {"bind": "/run/secrets/token", "mode": "ro"}})
    assert tracked.wait_exit(container, timeout=30) == 2
    expected = "tf29-env: ERROR: JUPYTER_TOKEN_FILE=/run/secrets/token: the file is empty"
    assert tracked.logs(container).strip() == expected


def test_bad_key_in_the_middle_of_a_file(tracked: TrackedContainer, tmp_path: Path, keypair: KeyPair) -> None:
    keys = tmp_path / "keys"
    keys.write_text(f"{keypair.public_text}\n\nnot a key\n")
    container = tracked.run(environment={"SSH_AUTHORIZED_KEYS_FILE": "/k"},
                            volumes={str(keys): {"bind": "/k", "mode": "ro"}})
    assert tracked.wait_exit(container, timeout=30) == 2
    assert "SSH_AUTHORIZED_KEYS_FILE: line 3 is not an SSH public key" in tracked.logs(container)
