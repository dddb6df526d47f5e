"""The healthcheck's decisions, against real local servers (an HTTP server standing in for
Jupyter's API, a TCP server sending an SSH greeting) and real runtime files: no engine needed."""

import http.server
import importlib.util
import json
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "image" / "healthchecks" / "healthcheck.py"


def load(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.setenv("TFENV_RUN_DIR", str(run_dir))
    # Where the runtime files are is the services file's to say, not this variable's.
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(run_dir / "not-here"))
    spec = importlib.util.spec_from_file_location("healthcheck", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Api(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        found = self.path == "/team/api"
        body = json.dumps({"version": "2.14.2"}).encode() if found else b"{}"
        self.send_response(200 if found else 404)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


@pytest.fixture
def api_port() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Api)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield int(server.server_address[1])
    server.shutdown()


def greeting_server(greeting: bytes) -> int:
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        with listener:
            conn, _ = listener.accept()
            with conn:
                conn.sendall(greeting)

    threading.Thread(target=serve, daemon=True).start()
    return int(listener.getsockname()[1])


def write_runtime(run_dir: Path, port: int, pid: int, base_url: str = "/team/", runtime_name: str = "jupyter") -> None:
    """A runtime file of the server, and the services file naming its folder as the entrypoint does."""
    runtime = run_dir / runtime_name
    runtime.mkdir(parents=True, exist_ok=True)
    (run_dir / "services").write_text(f"jupyter {runtime}\n")
    (runtime / f"jpserver-{pid}.json").write_text(
        json.dumps({"port": port, "base_url": base_url, "secure": False, "pid": pid, "url": "ignored"}))


def test_starting_until_services_are_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert load(tmp_path, monkeypatch).main() == 1
    assert "starting" in capsys.readouterr().out


@pytest.mark.parametrize("value", [None, ""])
def test_no_run_dir_in_the_environment_is_one_unhealthy_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], value: str | None) -> None:
    (tmp_path / "services").write_text("")  # healthy, were the run directory known
    module = load(tmp_path, monkeypatch)
    if value is None:
        monkeypatch.delenv("TFENV_RUN_DIR")
    else:
        monkeypatch.setenv("TFENV_RUN_DIR", value)
    assert module.main() == 1
    assert capsys.readouterr().out.splitlines() == [
        "unhealthy: TFENV_RUN_DIR is not set (the image's ENV sets it: run the healthcheck in the container's "
        "environment)"]


def test_jupyter_found_through_its_runtime_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                api_port: int) -> None:
    write_runtime(tmp_path, api_port, os.getpid())
    assert load(tmp_path, monkeypatch).main() == 0
    write_runtime(tmp_path, api_port, os.getpid(), base_url="/elsewhere/")  # API not there: 404
    assert load(tmp_path, monkeypatch).main() == 1


def test_runtime_folder_named_by_the_services_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  api_port: int) -> None:
    write_runtime(tmp_path, api_port, os.getpid(), runtime_name="moved by -e JUPYTER_RUNTIME_DIR")
    assert load(tmp_path, monkeypatch).main() == 0


def test_jupyter_without_its_runtime_folder_is_unhealthy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         api_port: int, capsys: pytest.CaptureFixture[str]) -> None:
    write_runtime(tmp_path, api_port, os.getpid())
    (tmp_path / "services").write_text("jupyter\n")
    assert load(tmp_path, monkeypatch).main() == 1
    assert capsys.readouterr().out.splitlines() == [
        "unhealthy: jupyter: the services file does not say where Jupyter's runtime files are"]


def test_runtime_file_of_a_dead_server_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  api_port: int, capsys: pytest.CaptureFixture[str]) -> None:
    write_runtime(tmp_path, api_port, pid=2**22 + 12345)  # above the kernel's pid_max default
    assert load(tmp_path, monkeypatch).main() == 1
    assert "no runtime file of a running Jupyter server" in capsys.readouterr().out


@pytest.mark.parametrize(("greeting", "healthy"), [(b"SSH-2.0-OpenSSH_8.4p1 Debian-5\r\n", True),
                                                   (b"HTTP/1.1 400 Bad Request\r\n", False)])
def test_ssh_greeting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, greeting: bytes, healthy: bool) -> None:
    (tmp_path / "services").write_text(f"ssh {greeting_server(greeting)}\n")
    assert (load(tmp_path, monkeypatch).main() == 0) is healthy


def test_nothing_listening_is_unhealthy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    (tmp_path / "services").write_text(f"ssh {port}\n")
    assert load(tmp_path, monkeypatch).main() == 1


def test_command_mode_has_nothing_to_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "services").write_text("")
    assert load(tmp_path, monkeypatch).main() == 0
