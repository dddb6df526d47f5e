"""tf29image.startup.apptainer, the Apptainer mode's planning (issue 28): the port on a node that
other users' servers share, and the tunnel line from Jupyter's runtime file; and the healthcheck's
way to the run directory of a run's own. On real sockets, files and processes; the image tests
(tests/image/test_apptainer_mode.py) and tests/hpc run the same code in the container."""

import http.server
import json
import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from tests.unit.tf29image import command, environment
from tf29image import healthcheck
from tf29image.startup import apptainer


@pytest.fixture
def listener() -> Iterator[int]:
    """A server listening on every address, on a port of the kernel's choosing."""
    with socket.socket() as sock:
        sock.bind(("0.0.0.0", 0))  # noqa: S104 - as a server on a node does; closed at once
        sock.listen()
        yield int(sock.getsockname()[1])


def test_a_listening_port_is_taken_and_a_closed_one_free(listener: int) -> None:
    assert not apptainer.port_free(listener)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        unused = int(sock.getsockname()[1])
    assert apptainer.port_free(unused)


def test_the_default_port_moves_on_to_the_first_free_one() -> None:
    taken = {8888, 8889}
    assert apptainer.plan_port(None, lambda port: port not in taken) == (8890, apptainer.RETRIES)
    assert apptainer.plan_port("8888", lambda port: True) == (8888, apptainer.RETRIES)


def test_a_port_asked_for_is_that_port_or_one_line() -> None:
    assert apptainer.plan_port("9000", lambda port: True) == (9000, 0)
    with pytest.raises(apptainer.Refused, match=r"^JUPYTER_PORT=9000 is in use on this node"):
        apptainer.plan_port("9000", lambda port: port != 9000)


def test_no_free_port_is_one_line() -> None:
    with pytest.raises(apptainer.Refused, match=r"^no free port from 8888 to 8987 on this node"):
        apptainer.plan_port(None, lambda port: False)


def test_the_command_line_says_the_port_or_one_line(listener: int) -> None:
    run = command("startup.apptainer", "port")
    ok = subprocess.run(run, capture_output=True, text=True, check=False, env=environment({"JUPYTER_PORT": "8888"}))
    assert ok.returncode == 0 and ok.stdout.split()[1] == str(apptainer.RETRIES), ok
    taken = subprocess.run(run, capture_output=True, text=True, check=False,
                           env=environment({"JUPYTER_PORT": str(listener)}))
    assert (taken.returncode, taken.stdout, taken.stderr.count("\n")) == (2, "", 1), taken
    assert taken.stderr.startswith(f"JUPYTER_PORT={listener} is in use on this node"), taken


INFO = {"port": 8890, "base_url": "/", "token": "ab" * 24, "secure": False, "pid": 1}


def test_the_tunnel_goes_through_the_login_node_to_the_node() -> None:
    lines = apptainer.tunnel_lines(INFO, "gpu07", "login.example.org", "ann", show_token=True)
    assert lines == [
        "JupyterLab listens on gpu07:8890. On your laptop run: ssh -N -L 8888:gpu07:8890 ann@login.example.org",
        f"then open http://localhost:8888/lab?token={'ab' * 24}",
    ]


def test_without_a_login_node_the_tunnel_ends_on_this_host_and_a_chosen_token_stays_out() -> None:
    info = {**INFO, "base_url": "/jupyter/", "secure": True}
    lines = apptainer.tunnel_lines(info, "box", "", "ann", show_token=False)
    assert lines[0].endswith("ssh -N -L 8888:localhost:8890 ann@box")
    assert lines[1] == "then open https://localhost:8888/jupyter/lab (log in with your JUPYTER_TOKEN or password)"


def test_announce_waits_for_the_runtime_file_of_that_server(tmp_path: Path) -> None:
    # A partial file (no port yet) is not taken; the announcement comes from the complete one.
    (tmp_path / f"jpserver-{os.getpid()}.json").write_text("{")
    assert apptainer.runtime_info(str(tmp_path), os.getpid()) is None
    (tmp_path / f"jpserver-{os.getpid()}.json").write_text(json.dumps(INFO))
    run = subprocess.run(command("startup.apptainer", "announce", str(tmp_path), str(os.getpid()), "n1", "login1",
                                 "ann", "1"), env=environment(os.environ), capture_output=True, text=True, check=False,
                         timeout=30)
    assert run.returncode == 0 and run.stdout == "", run
    assert run.stderr.splitlines()[0] == "tf29-env: JupyterLab listens on n1:8890. On your laptop run: " \
                                         "ssh -N -L 8888:n1:8890 ann@login1", run


def test_announce_gives_up_quietly_when_the_server_is_gone(tmp_path: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    run = subprocess.run(command("startup.apptainer", "announce", str(tmp_path), str(dead.pid), "n1", "", "ann",
                                 "1"), env=environment(os.environ), capture_output=True, text=True, check=False,
                         timeout=30)
    assert (run.returncode, run.stdout, run.stderr) == (0, "", "")


def test_the_healthcheck_finds_the_runs_own_run_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The name the planner gives it (per_run_path): the entrypoint's TMPDIR (else /tmp), uid and pid."""
    proc = tmp_path / "proc"
    (proc / "42").mkdir(parents=True)
    (proc / "42" / "status").write_text("Name:\tbash\nUid:\t2001\t2001\t2001\t2001\n")
    (proc / "42" / "environ").write_bytes(b"HOME=/home/ann\0TMPDIR=/scratch/job9/\0")
    monkeypatch.setattr(healthcheck, "PROC", proc)
    assert healthcheck.per_run_dir(42) == Path("/scratch/job9/tf29-env-2001-42")
    (proc / "42" / "environ").write_bytes(b"TMPDIR=relative\0")
    assert healthcheck.per_run_dir(42) == Path("/tmp/tf29-env-2001-42")  # noqa: S108 - the paired default


class _Hub(http.server.BaseHTTPRequestHandler):
    """batchspawner's API handler, as the hub serves it: POST /hub/api/batchspawner with a token."""

    received: ClassVar[list[tuple[str, str, dict[str, object]]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Hub.received.append((self.path, self.headers["Authorization"], body))
        self.send_response(201 if self.headers["Authorization"] == "token server-token" else 403)
        self.end_headers()

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def hub_api() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Hub.received.clear()
    yield f"http://127.0.0.1:{server.server_address[1]}/hub/api"
    server.shutdown()


def test_the_port_is_reported_to_batchspawners_hub_with_the_servers_token(hub_api: str) -> None:
    run = command("startup.apptainer", "report-port", "8890")
    ok = subprocess.run(run, capture_output=True, text=True, check=False,
                        env=environment({"JUPYTERHUB_API_URL": hub_api, "JUPYTERHUB_API_TOKEN": "server-token"}))
    assert (ok.returncode, ok.stdout, ok.stderr) == (0, "", "")
    assert _Hub.received == [("/hub/api/batchspawner", "token server-token", {"port": 8890})]
    refused = subprocess.run(run, capture_output=True, text=True, check=False,
                             env=environment({"JUPYTERHUB_API_URL": hub_api, "JUPYTERHUB_API_TOKEN": "wrong"}))
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused
    assert refused.stderr.startswith(f"the hub at {hub_api} was not told the port 8890 (batchspawner): "), refused
    missing = subprocess.run(run, capture_output=True, text=True, check=False, env=environment({}))
    assert missing.returncode == 2 and "needs JUPYTERHUB_API_URL and JUPYTERHUB_API_TOKEN" in missing.stderr
