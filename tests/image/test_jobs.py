"""`job` in a running environment: a notebook or script run headless saves its output with no client
and outlives the SSH session that started it, `job stop` interrupts it, bad input is one line, and
idle kernels give their memory back while busy ones and running jobs keep the server active.
Where the container itself ends (a one-shot run, `docker stop`): test_job_lifecycle.py."""

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import requests
from docker.models.containers import Container

from testkit import ssh
from testkit.containers import LOOPBACK, TrackedContainer
from testkit.jobs import HOME, STOPPABLE, TRAINING, USER, job, job_id, notebook, read, record, wait_log, wait_state
from testkit.jupyter import put_file
from testkit.kernel import LabKernel
from testkit.ssh import KeyPair
from testkit.wait import wait_until

pytestmark = pytest.mark.image

TOKEN = "jobs-token-3e8d1f2a"
IDLE_TIMEOUT = 6  # the box's KERNEL_IDLE_TIMEOUT


# Four cells of PAUSE s each, each printing when it starts and ends.
GROWING = notebook(*[f"import time\nprint('cell {n} start', flush=True)\ntime.sleep(PAUSE)\nprint('cell {n} done')"
                     for n in range(4)], parameters="PAUSE = 0")
SILENT = "import sys, time\ntime.sleep(float(sys.argv[2]))\n"  # job run silent.py -p seconds N


def server_time(value: str) -> datetime:
    """A time as Jupyter's API or job.json writes it, as an aware datetime."""
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def last_activity(port: int) -> datetime:
    response = requests.get(f"http://{LOOPBACK}:{port}/api/status", headers={"Authorization": f"token {TOKEN}"},
                            timeout=10)
    response.raise_for_status()
    return server_time(response.json()["last_activity"])


@pytest.fixture(scope="module")
def box(module_tracked: TrackedContainer, keypair: KeyPair) -> Iterator[Container]:
    """One environment, as a person runs it, for the checks that each use jobs of their own."""
    container = module_tracked.run(environment={"JUPYTER_TOKEN": TOKEN,
                                                "KERNEL_IDLE_TIMEOUT": str(IDLE_TIMEOUT),
                                                "SSH_AUTHORIZED_KEYS": keypair.public_text})
    module_tracked.wait_healthy(container)
    port = module_tracked.port(container, 8888)
    for name, text in (("grow.ipynb", GROWING), ("stoppable.py", STOPPABLE), ("silent.py", SILENT)):
        put_file(port, TOKEN, f"work/{name}", text)
    yield container


def test_a_notebook_job_saves_its_output_cell_by_cell_with_no_client(module_tracked: TrackedContainer,
                                                                     box: Container) -> None:
    code, out = job(module_tracked, box, "run", f"{HOME}/work/grow.ipynb", "-p", "PAUSE", "4")
    assert code == 0, out
    ident = job_id(out)
    output = f"{HOME}/work/jobs/{ident}/output.ipynb"

    def outputs() -> list[str]:
        cells = json.loads(read(module_tracked, box, output))["cells"]
        return ["".join(o.get("text", "")) for c in cells if c["cell_type"] == "code" for o in c["outputs"]]

    # Nobody is connected: the notebook on disk has the first cells' output while the last still waits.
    def saved_to_cell_1() -> list[str] | None:
        found = outputs()
        return found if any("cell 1 done" in text for text in found) else None

    early = wait_until(saved_to_cell_1, timeout=120, what="cell 1's output saved")
    assert not any("cell 3 done" in text for text in early), early
    assert record(module_tracked, box, ident)["state"] == "running"
    done = wait_state(module_tracked, box, ident, "done")
    assert done["exit_code"] == 0
    assert any("cell 3 done" in text for text in outputs())
    _, log = job(module_tracked, box, "log", ident)
    assert re.search(r"cell 0 start.*cell 0 done.*cell 3 start.*cell 3 done", log, re.DOTALL), log
    # papermill put the parameter after the tagged cell, where the notebook reads it.
    cells = json.loads(read(module_tracked, box, output))["cells"]
    injected = [c for c in cells if "injected-parameters" in c["metadata"].get("tags", [])]
    assert len(injected) == 1 and "PAUSE = 4" in "".join(injected[0]["source"]), cells[:3]
    meta = json.loads(read(module_tracked, box, f"{HOME}/work/jobs/{ident}/job.json"))
    assert meta["parameters"] == {"PAUSE": 4}
    assert meta["provenance"]["tensorflow"]["version"] == "2.9.3"
    assert meta["provenance"]["image"]["name"] == "tf29-env"


def test_job_stop_interrupts_the_run_and_it_reads_stopped(module_tracked: TrackedContainer, box: Container) -> None:
    code, out = job(module_tracked, box, "run", f"{HOME}/work/stoppable.py", "-p", "epochs", "3", "--name", "loop")
    assert code == 0, out
    ident = job_id(out)
    assert ident.endswith("-loop")
    wait_log(module_tracked, box, ident, "started ['--epochs', '3']")
    code, out = job(module_tracked, box, "stop", ident)
    assert code == 0, out
    assert f"{ident}: stopped" in out
    found = record(module_tracked, box, ident)
    assert (found["state"], found["exit_code"]) == ("stopped", 130)
    assert f"job resume {ident}" in found["message"]
    _, log = job(module_tracked, box, "log", ident)
    assert "interrupted: saving" in log  # KeyboardInterrupt reached the run: its handler ran


def test_a_job_outlives_the_ssh_session_that_started_it(module_tracked: TrackedContainer, box: Container,
                                                       keypair: KeyPair) -> None:
    client = ssh.connect(module_tracked.port(box, 22), USER, keypair)
    try:
        code, out = ssh.run(client, "cd ~/work && job run stoppable.py --name over-ssh")
    finally:
        client.close()
    assert code == 0, out
    ident = job_id(out)
    # The session's processes are gone (sshd hung it up); the job is not.
    wait_until(lambda: module_tracked.exec(box, ["pgrep", "-u", USER, "-f", "sshd: jovyan"])[0] == 1,
               timeout=30, what="the SSH session gone")
    wait_log(module_tracked, box, ident, "started")
    assert record(module_tracked, box, ident)["state"] == "running"
    code, out = job(module_tracked, box, "stop", ident)
    assert code == 0, out


def test_job_log_follows_a_run_to_its_end(module_tracked: TrackedContainer, box: Container) -> None:
    code, out = job(module_tracked, box, "run", f"{HOME}/work/grow.ipynb", "-p", "PAUSE", "1")
    assert code == 0, out
    ident = job_id(out)
    code, out = job(module_tracked, box, "log", "-f", ident[:-2])  # a unique start of the id will do
    assert code == 0, out
    assert out.index("cell 0 start") < out.index("cell 3 done"), out  # all of it: -f returned at the end
    assert record(module_tracked, box, ident)["state"] == "done"


def test_the_self_check_reports_the_idle_timeout(module_tracked: TrackedContainer, box: Container) -> None:
    code, out = module_tracked.exec(box, ["selfcheck", "--json", "--layers", "6"], user=USER, demux=False,
                                    stderr=False)
    assert code == 0, out
    (check,) = [c for layer in json.loads(out)["layers"] for c in layer["checks"] if c["id"] == "env.kernel_idle"]
    assert check["status"] == "PASS" and check["data"] == {"KERNEL_IDLE_TIMEOUT": str(IDLE_TIMEOUT)}, check
    assert check["what"].startswith(f"kernels idle for {IDLE_TIMEOUT} s are shut down"), check


def test_two_runs_of_one_file_never_share_a_folder(module_tracked: TrackedContainer, box: Container) -> None:
    code, out = module_tracked.exec(box, ["sh", "-c", "job run ~/work/silent.py -p seconds 0 && "
                                          "job run ~/work/silent.py -p seconds 0"], user=USER)
    assert code == 0, out
    first, second = re.findall(r"^(\S+)\t", out, re.MULTILINE)
    assert first != second
    for ident in (first, second):
        assert wait_state(module_tracked, box, ident, "done")["exit_code"] == 0


def test_a_running_job_keeps_the_server_active(module_tracked: TrackedContainer, box: Container) -> None:
    """Nothing talks to the server but /api/status (which is not activity): only the job can move it."""
    port = module_tracked.port(box, 8888)
    code, out = job(module_tracked, box, "run", f"{HOME}/work/silent.py", "-p", "seconds", "60")
    assert code == 0, out
    ident = job_id(out)
    started = server_time(record(module_tracked, box, ident)["started"])
    wait_until(lambda: last_activity(port) > started + timedelta(seconds=5), timeout=60,
               what="last_activity after the job's start")
    code, out = job(module_tracked, box, "stop", ident)
    assert code == 0, out


def test_an_idle_kernel_is_shut_down_and_a_busy_one_kept(module_tracked: TrackedContainer, box: Container) -> None:
    port = module_tracked.port(box, 8888)
    base = f"http://{LOOPBACK}:{port}/"
    idle, busy = LabKernel(base, TOKEN), LabKernel(base, TOKEN)
    try:
        def kernels() -> dict[str, str]:
            response = requests.get(f"{base}api/kernels", headers={"Authorization": f"token {TOKEN}"}, timeout=10)
            return {k["id"]: k["execution_state"] for k in response.json()}

        def server_follows() -> bool:
            # The server learns a kernel's state from an IOPub subscription of its own, which may join after
            # the kernel started (under load): quick cells until it has seen one, or it would miss "busy".
            status, shown = busy.execute("import time")
            assert status == "ok", shown
            return kernels().get(busy.id) == "idle"

        wait_until(server_follows, timeout=90, interval=1, what="the server following the kernel's state")
        busy.send("time.sleep(300)")  # silent and busy, as a fit with verbose=0
        wait_until(lambda: kernels().get(busy.id) == "busy", timeout=30, what="the busy kernel busy")
        # Within twice the timeout, and some for a loaded host.
        def gone() -> datetime | None:
            return None if idle.id in kernels() else datetime.now(UTC)

        culled = wait_until(gone, timeout=2 * IDLE_TIMEOUT + 30, what="the idle kernel shut down")
        assert kernels().get(busy.id) == "busy"
        # The busy kernel prints nothing, and the culled one's last messages came before it went: only the
        # busy kernel, counted as activity, moves the server's last_activity past that.
        wait_until(lambda: last_activity(port) > culled + timedelta(seconds=3), timeout=40,
                   what="activity from the busy kernel")
        assert kernels().get(busy.id) == "busy"
    finally:
        idle.socket.close()
        busy.close()


@pytest.mark.parametrize(("args", "message"), [
    (["run", f"{HOME}/work/missing.ipynb"], "job: /home/jovyan/work/missing.ipynb: no such file"),
    (["run", f"{HOME}/work/stoppable.py", "-p", "1x", "2"], "a parameter's name must be a Python identifier"),
    (["run", f"{HOME}/work/stoppable.py", "-p", "a"], "job: argument -p/--parameter: expected 2 arguments"),
    (["run", "/etc/hostname"], "a job runs a notebook (.ipynb) or a Python script (.py)"),
    (["log", "no-such-job"], "job: no job 'no-such-job' in /home/jovyan/work/jobs"),
    (["stop", "no-such-job"], "job: no job 'no-such-job'"),
    (["resume", "no-such-job"], "job: no job 'no-such-job'"),
], ids=["missing file", "bad parameter name", "parameter without value", "not a notebook", "unknown log",
        "unknown stop", "unknown resume"])
def test_bad_input_is_one_line_and_exit_2(module_tracked: TrackedContainer, box: Container, args: list[str],
                                         message: str) -> None:
    before = job(module_tracked, box, "list", "--json")[1]
    code, out = job(module_tracked, box, *args)
    assert code == 2, out
    assert out.count("\n") == 1 and message in out, out
    assert job(module_tracked, box, "list", "--json")[1] == before  # no job folder was left


def test_a_done_job_is_not_resumed(module_tracked: TrackedContainer, box: Container) -> None:
    code, out = job(module_tracked, box, "run", f"{HOME}/work/silent.py", "-p", "seconds", "0")
    assert code == 0, out
    ident = job_id(out)
    wait_state(module_tracked, box, ident, "done")
    code, out = job(module_tracked, box, "resume", ident)
    assert (code, out.count("\n")) == (2, 1), out
    assert "is done" in out


@pytest.mark.parametrize(("mount", "problem"), [
    ({"volumes": {"RO": {"bind": f"{HOME}/work", "mode": "ro"}}}, "Read-only file system"),
    ({"tmpfs": {f"{HOME}/work": "size=64k,uid=1000,gid=100"}}, "No space left on device"),
], ids=["read-only", "full"])
def test_a_work_folder_that_cannot_take_a_job_is_one_line(tracked: TrackedContainer, tmp_path: Path,
                                                          mount: dict[str, Any], problem: str) -> None:
    if "volumes" in mount:
        tmp_path.chmod(0o777)  # the dev user could write it, but for the mount
        mount = {"volumes": {str(tmp_path): mount["volumes"]["RO"]}}
    container = tracked.run(command=["sleep", "infinity"], publish=(), **mount)
    wait_until(lambda: tracked.exec(container, ["true"], user=USER)[0] == 0, timeout=60, what="the command runs")
    # A full disk: the notebook itself fits in /tmp, the job folder under ~/work does not.
    code, out = tracked.exec(container, ["sh", "-c", "head -c 60000 /dev/zero 2>/dev/null >~/work/filler; "
                                         f"cp {TRAINING} /tmp/train.ipynb && job run /tmp/train.ipynb"], user=USER)
    assert code == 1, out
    assert out.count("\n") == 1 and out.startswith("job: cannot ") and problem in out, out
