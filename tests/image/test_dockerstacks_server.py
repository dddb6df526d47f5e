"""docker-stacks' server-side habits on the real engine (issue 16): where the services listen (IPv4,
and IPv6 when the container has it), docker-stacks' start commands as files, and its server options
(DOCKER_STACKS_JUPYTER_CMD, NOTEBOOK_ARGS, JUPYTER_ENV_VARS_TO_UNSET, GEN_CERT), with the image's
auth kept throughout."""

from docker.models.containers import Container

from testkit.containers import TrackedContainer
from testkit.jupyter import api_status
from testkit.ssh import KeyPair

TOKEN = "tok-5d0e3b8c1a7f4e92"
QUIET = {"SELF_CHECK": "off"}  # spare the 2-core host TensorFlow's import where it is not tested
IPV6_ON = {"net.ipv6.conf.all.disable_ipv6": "0"}
IPV6_OFF = {"net.ipv6.conf.all.disable_ipv6": "1"}

# Run inside the container with its system python3: connect to HOST PORT, send a request for
# Jupyter's unauthenticated {base_url}api (sshd ignores it and greets first), print the first line
# of the answer, or the error's name.
FIRST_LINE = """
import socket, sys
try:
    with socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=5) as conn:
        conn.sendall(b"GET /api HTTP/1.0\\r\\nHost: localhost\\r\\n\\r\\n")
        print(conn.recv(200).decode(errors="replace").splitlines()[0])
except OSError as error:
    print(type(error).__name__)
"""


def first_line(tracked: TrackedContainer, container: Container, host: str, port: int) -> str:
    code, out = tracked.exec(container, ["/usr/bin/python3", "-c", FIRST_LINE, host, str(port)])
    assert code == 0, out
    return out.strip()


def tcp6_listeners(tracked: TrackedContainer, container: Container) -> set[int]:
    """The ports something listens on over IPv6 in the container (/proc/net/tcp6, state 0A)."""
    code, out = tracked.exec(container, ["cat", "/proc/net/tcp6"])
    assert code == 0, out
    return {int(fields[1].rsplit(":", 1)[1], 16)
            for fields in (line.split() for line in out.splitlines()[1:]) if fields[3] == "0A"}


def start_services(tracked: TrackedContainer, keypair: KeyPair, sysctls: dict[str, str]) -> Container:
    container = tracked.run(environment={**QUIET, "SSH_AUTHORIZED_KEYS": keypair.public_text},
                            sysctls=sysctls)
    tracked.wait_healthy(container)
    return container


def test_with_ipv6_jupyter_and_sshd_answer_on_both(tracked: TrackedContainer, keypair: KeyPair) -> None:
    container = start_services(tracked, keypair, IPV6_ON)
    for host in ("127.0.0.1", "::1"):
        assert first_line(tracked, container, host, 8888) == "HTTP/1.1 200 OK", host
        assert first_line(tracked, container, host, 22).startswith("SSH-2.0-"), host
    assert "WARNING" not in tracked.logs(container)


def test_without_ipv6_they_listen_on_ipv4_alone_and_quietly(tracked: TrackedContainer, keypair: KeyPair) -> None:
    container = start_services(tracked, keypair, IPV6_OFF)
    assert first_line(tracked, container, "127.0.0.1", 8888) == "HTTP/1.1 200 OK"
    assert first_line(tracked, container, "127.0.0.1", 22).startswith("SSH-2.0-")
    assert first_line(tracked, container, "::1", 8888) != "HTTP/1.1 200 OK"  # no ::1 at all here
    assert not {8888, 22} & tcp6_listeners(tracked, container)
    logs = tracked.logs(container)
    assert "WARNING" not in logs and "Cannot assign" not in logs, logs


def test_start_notebook_py_as_the_entrypoint_runs_the_services_under_tini(tracked: TrackedContainer) -> None:
    container = tracked.run(entrypoint=["/usr/local/bin/start-notebook.py"], command=["--ServerApp.base_url=/x/"],
                            environment={**QUIET, "JUPYTER_TOKEN": TOKEN}, publish=(8888,))
    tracked.wait_healthy(container)
    port = tracked.port(container, 8888)
    assert api_status(port, TOKEN, "/x/") == 200 and api_status(port, None, "/x/") == 403
    code, pid1 = tracked.exec(container, ["cat", "/proc/1/cmdline"])
    assert code == 0 and pid1.split("\0")[:4] == ["/usr/bin/tini", "--", "/opt/tf29-env/entrypoint.sh",
                                                  "start-notebook.py"], pid1
    # Beside the running services: start.sh runs a command once as the dev user, through the entrypoint
    # (docker exec runs as root); a second start of the services is refused in one line.
    code, out = tracked.exec(container, ["start.sh", "id", "-un"])
    assert (code, out.splitlines()[-1]) == (0, "jovyan"), out
    code, out = tracked.exec(container, ["/usr/local/bin/start-singleuser.sh"])
    assert code == 2 and out.startswith("tf29-env: ERROR: start-singleuser.sh: this container's services already run")
    assert api_status(port, TOKEN, "/x/") == 200
