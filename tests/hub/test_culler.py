"""The idle culler on hubs with a 30 s timeout. With the image under test an idle server is stopped,
while one running a silent job and one whose kernel runs a long, silent cell are kept: the image
reports them as active (jobs/activity.py); the job's server is stopped once the job has ended.
With an image from before that report, the culler's own hook keeps the busy kernel's server
although the hub has seen no activity from it for longer than the timeout (hub/culler_config.py)."""

import io
import secrets
import tarfile
import threading
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

import pytest
import requests
from docker import DockerClient

from testkit.wait import wait_until
from tests.hub.conftest import start_hub
from tests.hub.hubrun import ADMIN, HubRun, User

pytestmark = pytest.mark.image

TIMEOUT = 30
EVERY = 5
# The servers' reports to the hub; the image marks a run active every 10 s (jobs/activity.py).
ACTIVITY = 5
# Long enough for a culler round past the timeout, on a loaded 2-core machine: as the spawn, a few minutes.
CULL_WAIT = TIMEOUT + 6 * EVERY + 60
SERVER_CONFIG = "/opt/tf29-env/jupyter/jupyter_server_config.py"
ACTIVITY_LINE = "    activity.watch(self.web_app.settings)"

# Run in the server's container: a kernel client (jupyter_client, in the image) sends the kernel a
# cell that sleeps, the way a training loop without output keeps it busy, and leaves.
BUSY_CELL = """
import sys, time
from jupyter_client import BlockingKernelClient
client = BlockingKernelClient(connection_file=sys.argv[1])
client.load_connection_file()
client.start_channels()
msg_id = client.execute("import time; time.sleep(3600)")
while True:  # leave once the kernel says it is busy with the cell (get_iopub_msg raises after 60 s)
    msg = client.get_iopub_msg(timeout=60)
    if (msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "status"
            and msg["content"]["execution_state"] == "busy"):
        break
"""

# The same client with a cell that ends at once: it leaves when the kernel is idle again.
PING_CELL = """
import sys
from jupyter_client import BlockingKernelClient
client = BlockingKernelClient(connection_file=sys.argv[1])
client.load_connection_file()
client.start_channels()
client.execute_interactive("pass", timeout=20)
"""

# A job that prints nothing, as a training run with verbose=0, and runs until the test lets it end
# (a file appears in ~/work); it ends by itself after 10 minutes should the test never get there.
RELEASE = "/home/jovyan/work/release-the-silent-job"
SILENT_JOB = f"""
import os, time
deadline = time.monotonic() + 600
while not os.path.exists({RELEASE!r}) and time.monotonic() < deadline:
    time.sleep(0.5)
"""


@pytest.fixture(scope="module")
def culling_hub(hub_tools: None, docker_client: DockerClient, image: str,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubRun]:
    yield from start_hub(docker_client, image, tmp_path_factory.mktemp("hub-cull"),
                         HUB_CULL_TIMEOUT=str(TIMEOUT), HUB_CULL_EVERY=str(EVERY), HUB_ACTIVITY_INTERVAL=str(ACTIVITY))


@pytest.fixture(scope="module")
def older_image(docker_client: DockerClient, image: str) -> Iterator[str]:
    """The image under test without its activity report: a server as images from before jobs ran it,
    whose busy, silent kernel the hub sees no activity from. The build fails if the line has moved."""
    tag = f"tf29-hubtest-older-{secrets.token_hex(3)}:latest"
    dockerfile = (f"FROM {image}\n"
                  f"RUN grep -qx '{ACTIVITY_LINE}' {SERVER_CONFIG} \\\n"
                  f" && sed -i 's/^{ACTIVITY_LINE}$/    pass/' {SERVER_CONFIG} \\\n"
                  f" && ! grep -q 'activity.watch' {SERVER_CONFIG}\n").encode()
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as archive:
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(dockerfile)
        archive.addfile(info, io.BytesIO(dockerfile))
    context.seek(0)
    docker_client.images.build(fileobj=context, custom_context=True, tag=tag, rm=True, forcerm=True)
    try:
        yield tag
    finally:
        docker_client.images.remove(tag, force=True)


@pytest.fixture(scope="module")
def older_culling_hub(hub_tools: None, docker_client: DockerClient, older_image: str,
                      tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubRun]:
    yield from start_hub(docker_client, older_image, tmp_path_factory.mktemp("hub-cull-older"),
                         HUB_CULL_TIMEOUT=str(TIMEOUT), HUB_CULL_EVERY=str(EVERY), HUB_ACTIVITY_INTERVAL=str(ACTIVITY))


Server = dict[str, Any]  # the hub's model of a server (GET /hub/api/users/NAME: servers[""])


def last_activity(server: Server) -> datetime:
    return datetime.fromisoformat(str(server["last_activity"]).replace("Z", "+00:00"))


def active_after(mark: datetime) -> Callable[[Server], bool]:
    return lambda server: last_activity(server) > mark


def inactive_for(seconds: float) -> Callable[[Server], bool]:
    return lambda server: (datetime.now(UTC) - last_activity(server)).total_seconds() > seconds


def culled_or(hub: HubRun, user: User, reached: str, check: Callable[[Server], bool]) -> str | None:
    """'culled' once USER's server is gone, REACHED once CHECK holds for it, None until either."""
    server = hub.server_model(user)
    if server is None:
        return "culled"
    return reached if check(server) else None


@contextmanager
def kept_active(hub: HubRun) -> Iterator[set[str]]:
    """While the test sets its servers up, ask the servers of the names added to the yielded set for
    their kernels every few seconds: an API request the server reports to the hub as activity, so
    that a slow spawn or kernel start on a loaded machine does not let the culler take a server
    before its run has begun. Nothing is asked once the block ends."""
    names: set[str] = set()
    done = threading.Event()

    def ping() -> None:
        while not done.wait(3):
            for name in list(names):
                with suppress(requests.RequestException):  # the next round asks again
                    hub.server_get(hub.users[name], name, "api/kernels")

    thread = threading.Thread(target=ping, daemon=True)
    thread.start()
    try:
        yield names
    finally:
        done.set()
        thread.join()


def start_servers(hub: HubRun, *names: str, keep: set[str] | None = None, kept: Collection[str] = ()) -> list[User]:
    """Start NAMES' servers; each one in KEPT joins KEEP (see kept_active) the moment it is ready."""
    hub.signup(ADMIN)
    assert hub.login(hub.users[ADMIN])
    users = [hub.enrol(name) for name in names]
    for user in users:
        hub.start(user, profile="cpu")
    for user in users:
        hub.wait_ready(user)
        if keep is not None and user.name in kept:
            keep.add(user.name)
    return users


def make_kernel_busy(hub: HubRun, user: User) -> None:
    kernel = requests.post(f"{hub.url}/user/{user.name}/api/kernels", timeout=60,
                           headers={"Authorization": f"token {user.token}"}, json={"name": "python3"})
    assert kernel.status_code == 201, kernel.text
    kernel_id = kernel.json()["id"]

    def state() -> str:
        kernels = hub.server_get(user, user.name, "api/kernels").json()
        return next((k["execution_state"] for k in kernels if k["id"] == kernel_id), "")

    container = hub.container(user.name)
    code, found = container.exec_run(["find", "/", "-xdev", "-name", f"kernel-{kernel_id}.json"])
    paths = found.decode().split()
    assert paths, f"no connection file for kernel {kernel_id}"

    def server_sees_status() -> bool:
        # The server learns a kernel's state from an IOPub subscription of its own, which may join
        # after the kernel started: a quick cell until the server has seen one ("idle", not "starting").
        code, out = container.exec_run(["/opt/venv/bin/python", "-c", PING_CELL, paths[0]])
        assert code == 0, out.decode()
        return state() == "idle"

    wait_until(server_sees_status, timeout=180, interval=1, what="the server following the new kernel's state")
    code, out = container.exec_run(["/opt/venv/bin/python", "-c", BUSY_CELL, paths[0]])
    assert code == 0, out.decode()

    assert wait_until(lambda: state() == "busy", timeout=30, what="the kernel busy")


def test_idle_server_culled_servers_with_silent_runs_kept(culling_hub: HubRun) -> None:
    hub = culling_hub
    with kept_active(hub) as keep:  # ida's server is not kept: it may go while the others start
        idle, busy, runner = start_servers(hub, "ida", "bea", "joe", keep=keep, kept={"bea", "joe"})
        job_id = hub.run_job(runner.name, SILENT_JOB)
        make_kernel_busy(hub, busy)
    runs_started = datetime.now(UTC)
    # From here on nothing reaches bea's or joe's server through the hub or the proxy: only the hub's
    # API is asked about them, and joe's job is read with docker exec, which Jupyter does not see.
    wait_until(lambda: hub.server_model(idle) is None, timeout=CULL_WAIT, interval=2, what="the idle server culled")
    assert "Culling server ida" in hub.hub_log()
    # Silent runs would have been culled by now; each server reports activity past that point instead.
    past_the_timeout = active_after(runs_started + timedelta(seconds=TIMEOUT + 2 * EVERY))
    for user in (runner, busy):
        outcome = wait_until(partial(culled_or, hub, user, "active", past_the_timeout), timeout=CULL_WAIT,
                             interval=2, what=f"{user.name}'s server active past the timeout")
        assert outcome == "active", f"{user.name}'s server was culled during its run"
    assert hub.job(runner.name, job_id)["state"] == "running"

    # Once the job ends, joe's server is idle and goes, one timeout later.
    hub.shell(runner.name, "touch", RELEASE)
    wait_until(lambda: hub.job(runner.name, job_id)["state"] == "done", timeout=60, interval=1,
               what="joe's job done")
    wait_until(lambda: hub.server_model(runner) is None, timeout=CULL_WAIT, interval=2,
               what="joe's server culled after its job")
    assert "Culling server joe" in hub.hub_log()
    assert hub.server_model(busy) is not None, "bea's server was culled while her kernel was busy"


def test_busy_kernel_keeps_an_older_images_server(older_culling_hub: HubRun) -> None:
    hub = older_culling_hub
    with kept_active(hub) as keep:
        (busy,) = start_servers(hub, "bea", keep=keep, kept={"bea"})
        make_kernel_busy(hub, busy)
    # From here on nothing touches bea's server: only the hub's API is asked about her. Her server
    # reports no activity, so the hub's idea of it ages past the timeout plus two culler rounds.
    outcome = wait_until(partial(culled_or, hub, busy, "inactive", inactive_for(TIMEOUT + 2 * EVERY)),
                         timeout=CULL_WAIT, interval=2, what="bea's server inactive past the timeout")
    assert outcome == "inactive", "the server with a busy kernel was culled"
    server = hub.server_model(busy)
    assert server is not None and server["ready"], "the server with a busy kernel was culled"
    assert "not culling /user/bea/" in hub.hub_log()
    assert hub.container("bea").status == "running"
