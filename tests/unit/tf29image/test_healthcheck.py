"""The healthcheck's decisions, against real local servers (an HTTP server standing in for
Jupyter's API, a TCP server sending an SSH greeting or sshd's refusal, a process titled as sshd's
listener) and real runtime files: no engine needed."""

import http.server
import importlib.util
import json
import os
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest

from testkit.wait import wait_until
from tf29env.core.paths import REPO
from tf29image import healthcheck
from tf29image.startup import server

SCRIPT = Path(healthcheck.__file__)  # loaded afresh by each test, which sets its PROC
SSHD_CONFIG = REPO / "image" / "ssh" / "sshd_config"


def load(run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.setenv("TFENV_RUN_DIR", str(run_dir))
    # Where the runtime files are is the services file's to say, not this variable's.
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(run_dir / "not-here"))
    spec = importlib.util.spec_from_file_location("healthcheck", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    # The processes of a container whose entrypoint runs (services or hub mode), as /proc lists them.
    module.PROC = fake_proc(run_dir / "proc", ["/usr/bin/tini", "--", module.ENTRYPOINT],  # type: ignore[attr-defined]
                            ["bash", module.ENTRYPOINT])
    return module


def fake_proc(root: Path, *processes: list[str]) -> Path:
    for pid, args in enumerate(processes, start=1):
        (root / str(pid)).mkdir(parents=True, exist_ok=True)
        (root / str(pid) / "cmdline").write_bytes(b"\0".join(arg.encode() for arg in args) + b"\0")
    return root


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


# OpenSSH 8.4 answers a connection past MaxStartups with "Exceeded MaxStartups": sshd is busy
# (logins in progress, or a port scanner's idle connections), not broken.
@pytest.mark.parametrize(("greeting", "healthy"), [(b"SSH-2.0-OpenSSH_8.4p1 Debian-5\r\n", True),
                                                   (b"Exceeded MaxStartups\r\n", True),
                                                   (b"HTTP/1.1 400 Bad Request\r\n", False)])
def test_ssh_greeting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, greeting: bytes, healthy: bool) -> None:
    (tmp_path / "services").write_text(f"ssh {greeting_server(greeting)}\n")
    assert (load(tmp_path, monkeypatch).main() == 0) is healthy


def test_nothing_listening_is_unhealthy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    (tmp_path / "services").write_text(f"ssh {port}\n")
    assert load(tmp_path, monkeypatch).main() == 1
    assert capsys.readouterr().out == f"unhealthy: ssh: nothing listens on port {port}\n"


def test_a_hung_sshd_is_unhealthy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    """A stopped or hung sshd: the kernel completes the connection for it, and nothing is read."""
    with socket.create_server(("127.0.0.1", 0)) as never_accepts:
        (tmp_path / "services").write_text(f"ssh {never_accepts.getsockname()[1]}\n")
        assert load(tmp_path, monkeypatch).main() == 1
    assert "did not answer within 1s (sshd hung?)" in capsys.readouterr().out


@pytest.fixture
def sshd_listener(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[ModuleType, str], None]]:
    """Point a loaded healthcheck at a real process titled as sshd's listener is, through a pid file."""
    started: list[subprocess.Popen[bytes]] = []

    def start(module: ModuleType, startups: str) -> None:
        title = f"sshd: /usr/sbin/sshd -D -e [listener] {startups} startups"
        process = subprocess.Popen([title, "60"], executable="/bin/sleep")
        started.append(process)
        # Popen returns once exec has begun, before the kernel has set the new argument area: for a
        # moment /proc/PID/cmdline reads empty. A real sshd titled itself long before any probe.
        cmdline = Path(f"/proc/{process.pid}/cmdline")
        wait_until(lambda: title.encode() in cmdline.read_bytes(), timeout=10, interval=0.01,
                   what=f"the title of pid {process.pid}")
        pid_file = tmp_path / "sshd.pid"
        pid_file.write_text(f"{process.pid}\n")
        config = tmp_path / "sshd_config"
        config.write_text(f"PidFile {pid_file}\n")
        monkeypatch.setattr(module, "SSHD_CONFIG", config)

    yield start
    for process in started:
        process.kill()
        process.wait()


@pytest.mark.parametrize(("startups", "verdict"), [
    # OpenSSH 8.2 closes a connection past MaxStartups without a word: busy, when the listener's
    # title says that many logins are pending.
    ("130 of 128-256", "healthy: ssh busy (port {port}: 130 logins pending, MaxStartups 128:256)"),
    # Closed unanswered with slots free: sshd fails every connection before its greeting.
    ("3 of 128-256", "unhealthy: ssh: port {port} closed the connection without a greeting, with only 3 "
                     "logins pending (MaxStartups 128:256)"),
])
def test_a_connection_closed_unanswered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str],
                                        sshd_listener: Callable[[ModuleType, str], None],
                                        startups: str, verdict: str) -> None:
    module = load(tmp_path, monkeypatch)
    sshd_listener(module, startups)
    port = greeting_server(b"")
    (tmp_path / "services").write_text(f"ssh {port}\n")
    assert (module.main() == 0) is verdict.startswith("healthy")
    assert capsys.readouterr().out == verdict.format(port=port) + "\n"


def test_a_connection_closed_unanswered_without_sshd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    module = load(tmp_path, monkeypatch)
    config = tmp_path / "sshd_config"
    config.write_text(f"PidFile {tmp_path / 'no-such.pid'}\n")
    monkeypatch.setattr(module, "SSHD_CONFIG", config)
    (tmp_path / "services").write_text(f"ssh {greeting_server(b'')}\n")
    assert module.main() == 1
    assert "no sshd listener found through" in capsys.readouterr().out


def test_the_pid_file_is_sshd_configs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The healthcheck reads sshd's pid file where sshd_config has sshd write it, and the start-up plan
    makes sshd's run directory that folder."""
    pid_files = [line.split()[1] for line in SSHD_CONFIG.read_text().splitlines() if line.startswith("PidFile ")]
    assert pid_files == [str(load(tmp_path, monkeypatch).sshd_path("PidFile"))]
    assert str(Path(pid_files[0]).parent) == server.SSHD_DIR


def test_the_files_40_ssh_writes_are_sshd_configs() -> None:
    """The keys and the environment's SetEnv line go where sshd_config has sshd read them, in its run directory."""
    named = dict(line.split(None, 1) for line in SSHD_CONFIG.read_text().splitlines() if line and line[0] != "#")
    assert (named["AuthorizedKeysFile"], named["Include"]) == (server.SSHD_KEYS_FILE, server.SSHD_ENV_FILE)
    assert {str(Path(server.SSHD_KEYS_FILE).parent), str(Path(server.SSHD_ENV_FILE).parent)} == {server.SSHD_DIR}


def test_command_mode_has_nothing_to_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "services").write_text("")
    assert load(tmp_path, monkeypatch).main() == 0


@pytest.mark.parametrize("processes", [
    # `docker run IMAGE sleep 100`: the entrypoint has exec'd the command as the dev user; tini's
    # arguments still name the entrypoint (as `ps` shows in such a container).
    [["/usr/bin/tini", "--", "{entrypoint}", "sleep", "100"], ["sleep", "100"]],
    # The Dev Containers CLI's idle command in place of the entrypoint.
    [["/bin/sh", "-c", "echo Container started; trap 'exit 0' 15; sleep infinity & wait", "-"],
     ["sleep", "infinity"]],
])
def test_nothing_managed_without_the_entrypoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str], processes: list[list[str]]) -> None:
    """No services file, as in those containers: not "starting" for ever, but nothing to check."""
    module = load(tmp_path, monkeypatch)
    module.PROC = fake_proc(tmp_path / "other-proc",  # type: ignore[attr-defined]
                            *[[arg.format(entrypoint=module.ENTRYPOINT) for arg in args] for args in processes])
    assert module.main() == 0
    assert capsys.readouterr().out.startswith("healthy: nothing to check: the image's entrypoint is not running")
