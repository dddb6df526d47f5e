"""The idle culler on a hub with a 30 s timeout: an idle server is stopped; a server whose kernel
runs a long, silent cell is kept although the hub has seen no activity from it for longer than
the timeout (hub/culler_config.py asks the server about its kernels)."""

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
import requests
from docker import DockerClient

from testkit.wait import wait_until
from tests.hub.conftest import start_hub
from tests.hub.hubrun import ADMIN, HubRun, User

pytestmark = pytest.mark.image

TIMEOUT = 30
EVERY = 5

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
client.execute_interactive("pass", timeout=60)
"""


@pytest.fixture(scope="module")
def culling_hub(hub_tools: None, docker_client: DockerClient, image: str,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[HubRun]:
    yield from start_hub(docker_client, image, tmp_path_factory.mktemp("hub-cull"),
                         HUB_CULL_TIMEOUT=str(TIMEOUT), HUB_CULL_EVERY=str(EVERY), HUB_ACTIVITY_INTERVAL="5")


def seconds_inactive(hub: HubRun, user: User) -> float:
    server = hub.server_model(user)
    assert server is not None, f"{user.name}'s server was culled"
    last = datetime.fromisoformat(server["last_activity"].replace("Z", "+00:00"))
    return (datetime.now(UTC) - last).total_seconds()


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

    wait_until(server_sees_status, timeout=90, interval=1, what="the server following the new kernel's state")
    code, out = container.exec_run(["/opt/venv/bin/python", "-c", BUSY_CELL, paths[0]])
    assert code == 0, out.decode()

    assert wait_until(lambda: state() == "busy", timeout=30, what="the kernel busy")


def test_idle_server_culled_busy_server_kept(culling_hub: HubRun) -> None:
    hub = culling_hub
    hub.signup(ADMIN)
    assert hub.login(hub.users[ADMIN])
    idle, busy = hub.enrol("ida"), hub.enrol("bea")
    for user in (idle, busy):
        hub.start(user, profile="cpu")
    for user in (idle, busy):
        hub.wait_ready(user)
    make_kernel_busy(hub, busy)
    # From here on nothing touches bea's server: only the hub's API is asked about her.
    wait_until(lambda: hub.server_model(idle) is None, timeout=TIMEOUT + 6 * EVERY + 60, interval=2,
               what="the idle server culled")
    assert "Culling server ida" in hub.hub_log()
    # bea's server has been inactive, by the hub's reckoning, for longer than the timeout plus two
    # culler rounds, and is still there because its kernel is busy.
    wait_until(lambda: seconds_inactive(hub, busy) > TIMEOUT + 2 * EVERY, timeout=TIMEOUT + 6 * EVERY + 60,
               interval=2, what="bea's server inactive past the timeout")
    server = hub.server_model(busy)
    assert server is not None and server["ready"], "the server with a busy kernel was culled"
    assert "not culling /user/bea/" in hub.hub_log()
    assert hub.container("bea").status == "running"
