"""Free TCP ports on 127.0.0.1, for publishing container ports to loopback only."""

import socket


def free_host_port() -> int:
    """A port that was free a moment ago on 127.0.0.1 (the engine binds it right after)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
