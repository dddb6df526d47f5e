"""Registry addresses and which push failures are worth a retry."""

import socket

import pytest

from tf29env.core.errors import EXIT_INPUT, EXIT_PUSH, UserError
from tf29env.release import push


@pytest.mark.parametrize(("value", "expected"), [
    ("127.0.0.1:5000", ("127.0.0.1", 5000)), ("registry.example.com", ("registry.example.com", 443)),
    ("[::1]:5000", ("::1", 5000)),
])
def test_parse_registry(value: str, expected: tuple[str, int]) -> None:
    assert push.parse_registry(value) == expected


@pytest.mark.parametrize("value", ["http://127.0.0.1:5000", "127.0.0.1:5000/path", "host:0", "host:99999", ""])
def test_bad_registry(value: str) -> None:
    with pytest.raises(UserError) as info:
        push.parse_registry(value)
    assert info.value.exit_code == EXIT_INPUT and "HOST[:PORT]" in str(info.value)


def test_unreachable_registry_is_one_line() -> None:
    with socket.socket() as sock:  # a port nothing listens on: bound, never listening
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        with pytest.raises(UserError) as info:
            push.check_reachable(f"127.0.0.1:{port}")
    assert info.value.exit_code == EXIT_PUSH
    assert str(info.value) == f"registry 127.0.0.1:{port} is unreachable (Connection refused); nothing was pushed"


@pytest.mark.parametrize(("message", "transient"), [
    # The first three are the engine's words as seen on Docker 20.10 pushes.
    ("push of x failed: received unexpected HTTP status: 503 Service Unavailable", True),
    ("push of x failed: Put http://127.0.0.1:5000/v2/x/blobs/uploads/1: EOF", True),
    ("push of x failed: denied: requested access to the resource is denied", False),
    ("push of x failed: unauthorized: authentication required", False),
])
def test_transient(message: str, transient: bool) -> None:
    assert push.is_transient(message) is transient


def test_path_of() -> None:
    assert push.path_of("127.0.0.1:5000/team/tf29-env") == "team/tf29-env"
    assert push.path_of("team/tf29-env") == "team/tf29-env"
    assert push.path_of("tf29-env") == "tf29-env"
