"""Cuts of the Dockerfile's pip step that no user of the image should notice: the hub's own web
pages (share/jupyterhub), debugpy's Windows and macOS attach helpers, JupyterLab's second copy of
its built app and widgetsnbextension's copy for a manual classic-Notebook install. Each test checks
that the cut is in place, that the reason it is safe still holds for the pinned packages, and that
what users do with the package still works: JupyterLab's debugger stops at a breakpoint in a cell,
JupyterLab serves its app in the normal and the core mode. The hub mode itself (a real JupyterHub
talking to the image's single-user server) is test_hub_mode.py's and tests/hub's."""

import json
import re

import pytest
import requests

from testkit.containers import LOOPBACK, TrackedContainer

pytestmark = pytest.mark.image

# Runs in the image: what of JupyterHub's data files is left, which of the package's modules would
# read them (jupyterhub._data finds share/jupyterhub), and whether a proxy that a whole hub needs is
# there at all.
HUB_FACTS = r"""
import json, os, re, shutil, sys
import jupyterhub
package = os.path.dirname(jupyterhub.__file__)
readers = []
for folder, _, files in os.walk(package):
    for name in files:
        if name.endswith(".py"):
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8") as f:
                if re.search(r"\b_data\b|DATA_FILES_PATH", f.read()) and name != "_data.py":
                    readers.append(os.path.relpath(path, package))
import jupyterhub.singleuser
print(json.dumps({"share": os.path.exists(os.path.join(sys.prefix, "share", "jupyterhub")),
                  "readers": sorted(readers), "proxy": shutil.which("configurable-http-proxy")}))
"""

# Runs in the image: JupyterLab's debugger as JupyterLab drives it (the Debug Adapter Protocol in
# debug_request messages on the kernel's control channel): attach, put a breakpoint in a cell, run
# it, and read a value in the stopped frame. Everything in main(), so that the clients are gone
# before the interpreter tears its modules down.
DEBUG = r"""
import json
from jupyter_client.manager import start_new_kernel

CELL = "a = 1\nb = a + 41\nprint(b)\n"


def main():
    km, kc = start_new_kernel(kernel_name="python3")
    seq = iter(range(1, 100))

    def send(command, arguments=None):
        msg = kc.session.msg("debug_request", {"type": "request", "seq": next(seq), "command": command,
                                               "arguments": arguments or {}})
        kc.control_channel.send(msg)
        return msg

    def request(command, arguments=None):
        msg = send(command, arguments)
        while True:
            reply = kc.control_channel.get_msg(timeout=60)
            if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
                assert reply["content"].get("success"), (command, reply["content"])
                return reply["content"].get("body", {})

    def stopped():
        while True:
            msg = kc.iopub_channel.get_msg(timeout=60)
            if msg["msg_type"] == "debug_event" and msg["content"].get("event") == "stopped":
                return msg["content"]["body"]["threadId"]

    try:
        request("initialize", {"clientID": "tests", "adapterID": "python", "pathFormat": "path",
                               "linesStartAt1": True, "columnsStartAt1": True, "locale": "en"})
        request("attach")
        path = request("dumpCell", {"code": CELL})["sourcePath"]
        breakpoint = request("setBreakpoints", {"source": {"path": path}, "breakpoints": [{"line": 2}],
                                                "sourceModified": False})["breakpoints"][0]
        request("configurationDone")
        kc.execute(CELL)
        thread = stopped()
        frame = request("stackTrace", {"threadId": thread})["stackFrames"][0]
        value = request("evaluate", {"expression": "a + 1", "frameId": frame["id"], "context": "watch"})
        # The cell running to its end is the answer to "continue" (its own reply once never came).
        send("continue", {"threadId": thread})
        status = kc.get_shell_msg(timeout=120)["content"]["status"]
        print(json.dumps({"verified": breakpoint["verified"], "line": frame["line"],
                          "value": value["result"], "status": status}))
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


main()
"""

# Runs in the image: debugpy's attach helpers by platform.
HELPERS = r"""
import json, os
import debugpy
found = []
for folder, _, files in os.walk(os.path.dirname(debugpy.__file__)):
    found += [name for name in files if name.endswith((".so", ".dll", ".exe", ".dylib", ".pdb"))
              and "attach" in folder]
print(json.dumps(sorted(found)))
"""


def last_json(tracked: TrackedContainer, script: str) -> object:
    return json.loads(tracked.last_line_of(["python", "-c", script]))


def test_the_hub_pages_are_left_to_the_hub(tracked: TrackedContainer) -> None:
    facts = last_json(tracked, HUB_FACTS)
    assert isinstance(facts, dict)
    assert facts["share"] is False  # the cut is in place
    # Only the hub application reads its data files; the single-user server never does. A later
    # jupyterhub whose single-user code reads them would show up here, not in a user's browser.
    assert facts["readers"] == ["app.py"]
    # And the image cannot run a whole hub anyway: JupyterHub's default proxy is not in it.
    assert facts["proxy"] is None


def test_debugpy_keeps_only_its_linux_helpers(tracked: TrackedContainer) -> None:
    helpers = last_json(tracked, HELPERS)
    assert isinstance(helpers, list)
    assert [name for name in helpers if not name.endswith(".so")] == []
    assert any(name.startswith("attach_linux_") for name in helpers), helpers


def test_the_debugger_stops_at_a_breakpoint_in_a_cell(tracked: TrackedContainer) -> None:
    result = last_json(tracked, DEBUG)
    assert result == {"verified": True, "line": 2, "value": "2", "status": "ok"}


# Runs in the image: where JupyterLab's two app folders and widgetsnbextension's files are.
LAYOUT = r"""
import json, os, sys
import jupyterlab, widgetsnbextension
core = os.path.join(os.path.dirname(jupyterlab.__file__), "static")
served = os.path.join(sys.prefix, "share", "jupyter", "lab", "static")
print(json.dumps({
    "core_is_link": os.path.islink(core), "served_is_link": os.path.islink(served),
    "same": os.path.realpath(core) == os.path.realpath(served),
    "core_index": os.path.isfile(os.path.join(core, "index.html")),
    "nbextension_source": os.path.exists(os.path.join(os.path.dirname(widgetsnbextension.__file__), "static")),
    "nbextension_installed": os.path.isfile(
        os.path.join(sys.prefix, "share", "jupyter", "nbextensions", "jupyter-js-widgets", "extension.js")),
}))
"""
TOKEN = "tok-5d0e7b1c94a3f268"


def test_jupyterlab_keeps_one_copy_of_its_app(tracked: TrackedContainer) -> None:
    assert last_json(tracked, LAYOUT) == {
        "core_is_link": True, "served_is_link": False, "same": True, "core_index": True,
        # The classic Notebook's installed copy of the widgets stays; the source of a manual install goes.
        "nbextension_source": False, "nbextension_installed": True,
    }


@pytest.mark.parametrize("args", ["", "--core-mode"])
def test_jupyterlab_serves_its_app(tracked: TrackedContainer, args: str) -> None:
    """The page and the scripts it loads, from the folder each mode serves (--core-mode: the link)."""
    container = tracked.run(environment={"JUPYTER_TOKEN": TOKEN, "NOTEBOOK_ARGS": args})
    tracked.wait_healthy(container)
    base = f"http://{LOOPBACK}:{tracked.port(container, 8888)}"
    headers = {"Authorization": f"token {TOKEN}"}
    page = requests.get(f"{base}/lab", headers=headers, timeout=10)
    assert page.status_code == 200
    scripts = re.findall(r'src="(/static/lab/[^"?]+\.js)', page.text)
    assert scripts, page.text[:2000]
    for script in scripts:
        response = requests.get(f"{base}{script}", headers=headers, timeout=10)
        assert response.status_code == 200 and len(response.content) > 1000, script
    assert ("Running JupyterLab in core mode" in tracked.logs(container)) is bool(args)
