"""docker-stacks' server-side habits on the real engine (issue 16): where the services listen (IPv4,
and IPv6 when the container has it), docker-stacks' start commands as files, and its server options
(DOCKER_STACKS_JUPYTER_CMD, NOTEBOOK_ARGS, JUPYTER_ENV_VARS_TO_UNSET, GEN_CERT), with the image's
auth kept throughout."""

from pathlib import Path

import pytest
import requests
from docker.models.containers import Container

from testkit.containers import TrackedContainer
from testkit.jupyter import api_status
from testkit.ssh import KeyPair

TOKEN = "tok-5d0e3b8c1a7f4e92"
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
    container = tracked.run(environment={"SSH_AUTHORIZED_KEYS": keypair.public_text},
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
                            environment={"JUPYTER_TOKEN": TOKEN}, publish=(8888,))
    tracked.wait_healthy(container)
    port = tracked.port(container, 8888)
    assert api_status(port, TOKEN, "/x/") == 200 and api_status(port, None, "/x/") == 403
    code, pid1 = tracked.exec(container, ["cat", "/proc/1/cmdline"])
    assert code == 0 and pid1.split("\0")[:4] == ["/usr/bin/tini", "--", "/opt/tf29-env/entrypoint.sh",
                                                  "start-notebook.py"], pid1
    # Beside the running services: start.sh runs a command once as the dev user, through the entrypoint
    # (docker exec runs as root); a second start of the services is refused in one line.
    code, out = tracked.exec(container, ["start.sh", "id", "-un"])
    # A line of its own: the entrypoint's notes on stderr may come before or after it in exec's stream.
    assert code == 0 and "jovyan" in out.splitlines(), out
    code, out = tracked.exec(container, ["/usr/local/bin/start-singleuser.sh"])
    assert code == 2 and out.startswith("tf29-env: ERROR: start-singleuser.sh: this container's services already run")
    assert api_status(port, TOKEN, "/x/") == 200


def process_environment(tracked: TrackedContainer, container: Container,
                        pattern: str) -> tuple[list[str], dict[str, str]]:
    """(argv, environment) of the oldest process whose command line matches PATTERN (read as the dev user:
    root without CAP_SYS_PTRACE may not read another uid's environ)."""
    code, pid = tracked.exec(container, ["pgrep", "-o", "-f", pattern])
    assert code == 0, pid
    code, argv = tracked.exec(container, ["cat", f"/proc/{pid.strip()}/cmdline"], user="jovyan")
    assert code == 0, argv
    code, text = tracked.exec(container, ["cat", f"/proc/{pid.strip()}/environ"], user="jovyan")
    assert code == 0, text
    return argv.split("\0")[:-1], dict(entry.split("=", 1) for entry in text.split("\0") if "=" in entry)


def test_server_app_notebook_args_and_unset_variables(tracked: TrackedContainer, tmp_path: Path) -> None:
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    # Hooks run before the variables go, so they may use them (as docker-stacks' do).
    (hooks / "10-uses-secret.sh").write_text('export FROM_SECRET="seen:${TF29_SECRET_A}"\n')
    container = tracked.run(environment={
        "JUPYTER_TOKEN": TOKEN, "DOCKER_STACKS_JUPYTER_CMD": "server",
        "NOTEBOOK_ARGS": "--ServerApp.base_url=/nb/ --ServerApp.custom_display_url='http://example.org/a b'",
        "TF29_SECRET_A": "a", "TF29_SECRET_B": "b", "TF29_KEPT": "c",
        "JUPYTER_ENV_VARS_TO_UNSET": "TF29_SECRET_A, TF29_SECRET_B,TF29_NEVER_SET",
    }, volumes={str(hooks): {"bind": "/usr/local/bin/before-notebook.d", "mode": "ro"}}, publish=(8888,))
    tracked.wait_healthy(container)
    assert api_status(tracked.port(container, 8888), TOKEN, "/nb/") == 200
    argv, environment = process_environment(tracked, container, "jupyter-server")
    assert "--ServerApp.custom_display_url=http://example.org/a b" in argv  # one word, quotes gone
    assert "--ServerApp.base_url=/nb/" in argv and "--ServerApp.base_url=/" not in argv
    code, _ = tracked.exec(container, ["pgrep", "-f", "jupyter-lab"])
    assert code == 1, "DOCKER_STACKS_JUPYTER_CMD=server started JupyterLab's app"
    assert environment["FROM_SECRET"] == "seen:a" and environment["TF29_KEPT"] == "c"
    assert not {"TF29_SECRET_A", "TF29_SECRET_B", "JUPYTER_ENV_VARS_TO_UNSET"} & environment.keys()
    assert "JUPYTER_ENV_VARS_TO_UNSET: TF29_SECRET_A TF29_SECRET_B taken out" in tracked.logs(container)


def test_start_sh_commands_do_not_see_unset_variables(tracked: TrackedContainer) -> None:
    container = tracked.run(command=["start.sh", "sh", "-c", 'echo "A=${TF29_SECRET_A-gone} B=$TF29_KEPT"'],
                            environment={"TF29_SECRET_A": "a", "TF29_KEPT": "c",
                                         "JUPYTER_ENV_VARS_TO_UNSET": "TF29_SECRET_A"}, publish=())
    assert tracked.wait_exit(container) == 0
    assert tracked.logs(container).splitlines()[-1] == "A=gone B=c"


def test_gen_cert_serves_https_and_keeps_the_token(tracked: TrackedContainer, tmp_path: Path) -> None:
    container = tracked.run(environment={"GEN_CERT": "yes"}, publish=(8888,))
    tracked.wait_healthy(container)  # the healthcheck speaks https from the server's runtime file
    logs = tracked.logs(container)
    assert "GEN_CERT: JupyterLab speaks HTTPS" in logs
    login = next(line for line in logs.splitlines() if "?token=" in line)
    token = login.rsplit("?token=", 1)[1]
    assert "https://127.0.0.1:8888/lab?token=" in login
    code, mode = tracked.exec(container, ["stat", "-c", "%U %a", "/run/tf29-env/jupyter/tf29-env-key.pem"])
    assert (code, mode.strip()) == (0, "jovyan 600")
    # The certificate, trusted for this test alone, names 127.0.0.1: the client checks it in full.
    code, pem = tracked.exec(container, ["cat", "/run/tf29-env/jupyter/tf29-env-cert.pem"], user="jovyan")
    assert code == 0 and "BEGIN CERTIFICATE" in pem, pem
    (tmp_path / "cert.pem").write_text(pem)
    url = f"https://127.0.0.1:{tracked.port(container, 8888)}/api/status"
    trust = str(tmp_path / "cert.pem")
    assert requests.get(url, headers={"Authorization": f"token {token}"}, verify=trust, timeout=10).status_code == 200
    assert requests.get(url, verify=trust, timeout=10).status_code == 403
    with pytest.raises(requests.ConnectionError):
        requests.get(url.replace("https:", "http:"), timeout=10)


@pytest.mark.parametrize(("environment", "line"), [
    ({"DOCKER_STACKS_JUPYTER_CMD": "notebook"}, "DOCKER_STACKS_JUPYTER_CMD=notebook: the notebook package"),
    ({"DOCKER_STACKS_JUPYTER_CMD": "retro"}, "DOCKER_STACKS_JUPYTER_CMD='retro' is not one of lab, server, notebook"),
    ({"NOTEBOOK_ARGS": "--ServerApp.base_url='/x/"}, "NOTEBOOK_ARGS cannot be split into arguments as a shell would"),
    ({"NOTEBOOK_ARGS": "--ServerApp.root_dir=/tmp --IdentityProvider.token="},
     "the server's argument '--IdentityProvider.token'"),
    ({"NOTEBOOK_ARGS": "--ServerApp.password=x"}, "the server's argument '--ServerApp.password'"),
    ({"JUPYTER_ENV_VARS_TO_UNSET": "AWS_KEY,2FA"}, "JUPYTER_ENV_VARS_TO_UNSET: '2FA' is not a variable name"),
    ({"JUPYTER_ENV_VARS_TO_UNSET": "PATH"}, "JUPYTER_ENV_VARS_TO_UNSET: PATH is needed"),
    ({"GEN_CERT": "maybe"}, "GEN_CERT='maybe' is not a switch"),
    ({"GEN_CERT": "1", "ENABLE_JUPYTER": "0", "ENABLE_SSH": "0"}, "GEN_CERT=1 with ENABLE_JUPYTER=0"),
], ids=["notebook-absent", "unknown-app", "open-quote", "empty-token", "password", "bad-name", "path", "switch",
        "no-jupyter"])
def test_bad_values_stop_the_start_in_one_line(tracked: TrackedContainer, environment: dict[str, str],
                                               line: str) -> None:
    container = tracked.run(environment=environment, publish=())
    assert tracked.wait_exit(container) == 2
    logs = tracked.logs(container).strip()
    assert logs.startswith(f"tf29-env: ERROR: {line}") and "\n" not in logs, logs
