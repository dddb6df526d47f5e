"""JupyterLab against what a user's browser, a kernel or a full disk can do to it: only the allowed
host names are served (DNS rebinding), the token stays out of kernels, terminals and other users'
reach, notebooks save on a tmpfs, and a save that fails leaves no broken file."""

import json
from typing import Any

import pytest
import requests
from docker.models.containers import Container

from testkit.containers import LOOPBACK, TrackedContainer
from testkit.jupyter import api_status

TOKEN = "hardening-token-7c41e0a9"
ALLOWED = "jupyter.example.test"
# A web page's own name, which DNS rebinding makes point at the port published to localhost.
REBOUND = "rebind.attacker.test"
RUNTIME_DIR = "/run/tf29-env/jupyter"
OTHER_UID = "4242"
# Run in the container as the dev user: the server's children (kernels, terminals), each with its
# command line and whether its environment holds the token. Reading another user's environ needs
# CAP_SYS_PTRACE, which root in a container lacks; the process's own user may.
CHILDREN_ENVIRONMENTS = """
import json, os, subprocess, sys
server = subprocess.run(["pgrep", "-o", "-f", "jupyter-lab"], capture_output=True, text=True).stdout.split()[0]
children = subprocess.run(["pgrep", "-P", server], capture_output=True, text=True).stdout.split()
found = {}
for pid in children:
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        cmdline = f.read().replace(b"\\0", b" ").decode()
    with open(f"/proc/{pid}/environ", "rb") as f:
        environ = f.read().split(b"\\0")
    found[cmdline] = [entry.split(b"=")[0].decode() for entry in environ if sys.argv[1].encode() in entry]
print(json.dumps(found))
"""


def url(port: int, path: str) -> str:
    return f"http://{LOOPBACK}:{port}/{path}"


def host(name: str, port: int) -> dict[str, str]:
    """The Host header a browser sends for http://NAME:PORT/."""
    return {"Host": f"{name}:{port}"}


def test_no_auth_serves_only_the_allowed_host_names(tracked: TrackedContainer) -> None:
    """Without auth, a page whose name was rebound to the published port must get nothing: no page,
    no API, no kernel or terminal even with an _xsrf cookie (Jupyter's 403 page sets one too, so
    every request must be refused, not only cookie-less ones). The names listed in
    JUPYTER_ALLOWED_HOSTS (any case), localhost and 127.0.0.1 (the healthcheck's) are served."""
    container = tracked.run(environment={"JUPYTER_INSECURE_NO_AUTH": "1",
                                         "JUPYTER_ALLOWED_HOSTS": f"Proxy.Example.Test,{ALLOWED}"})
    tracked.wait_healthy(container)
    port = tracked.port(container, 8888)

    attacker = requests.Session()
    for path in ("lab", "api/status", "api/kernels", "api/terminals"):
        assert attacker.get(url(port, path), headers=host(REBOUND, port), timeout=10).status_code == 403, path

    user = requests.Session()
    assert user.get(url(port, "lab"), headers=host(ALLOWED, port), timeout=10).status_code == 200
    xsrf = user.cookies["_xsrf"]
    for path in ("api/kernels", "api/terminals"):
        response = attacker.post(url(port, path), headers={**host(REBOUND, port), "X-XSRFToken": xsrf},
                                 cookies={"_xsrf": xsrf}, json={}, timeout=30)
        assert response.status_code == 403, (path, response.text)
    assert f"Blocking request with non-local 'Host' {REBOUND}" in tracked.logs(container)

    for name in ("proxy.example.test", "localhost", LOOPBACK):
        assert user.get(url(port, "api/status"), headers=host(name, port), timeout=10).status_code == 200, name
    started = user.post(url(port, "api/terminals"), headers={**host(ALLOWED, port), "X-XSRFToken": xsrf}, timeout=30)
    assert started.status_code == 200, started.text
    terminals = user.get(url(port, "api/terminals"), headers=host(ALLOWED, port), timeout=10).json()
    assert [terminal["name"] for terminal in terminals] == [started.json()["name"]]
    assert user.get(url(port, "api/kernels"), headers=host(ALLOWED, port), timeout=10).json() == []


def test_allowed_hosts_with_a_token(tracked: TrackedContainer) -> None:
    """JUPYTER_ALLOWED_HOSTS also applies with auth on: the token opens nothing under another name."""
    container = tracked.run(environment={"JUPYTER_TOKEN": TOKEN, "JUPYTER_ALLOWED_HOSTS": ALLOWED})
    tracked.wait_healthy(container)
    port = tracked.port(container, 8888)
    auth = {"Authorization": f"token {TOKEN}"}
    assert requests.get(url(port, "api/status"), headers={**auth, **host(ALLOWED, port)}, timeout=10).status_code == 200
    assert requests.get(url(port, "api/status"), headers={**auth, **host(REBOUND, port)}, timeout=10).status_code == 403


def start_kernel_and_terminal(port: int) -> None:
    auth = {"Authorization": f"token {TOKEN}"}
    kernel = requests.post(url(port, "api/kernels"), headers=auth, json={"name": "python3"}, timeout=60)
    assert kernel.status_code == 201, kernel.text
    terminal = requests.post(url(port, "api/terminals"), headers=auth, timeout=30)
    assert terminal.status_code == 200, terminal.text


def children_holding(tracked: TrackedContainer, container: Container, secret: str) -> dict[str, list[str]]:
    """{command line of each child of the server: names of its environment variables holding SECRET}"""
    code, out = tracked.exec(container, ["python3", "-c", CHILDREN_ENVIRONMENTS, secret], user="jovyan")
    assert code == 0, out
    found: dict[str, list[str]] = json.loads(out)
    return found


@pytest.fixture(scope="module")
def working(module_tracked: TrackedContainer) -> Container:
    """A server with TOKEN where a kernel and a terminal were started, for the checks that only read
    what they left in the container."""
    container = module_tracked.run(environment={"JUPYTER_TOKEN": TOKEN})
    module_tracked.wait_healthy(container)
    start_kernel_and_terminal(module_tracked.port(container, 8888))
    return container


def test_the_token_stays_out_of_kernels_and_terminals(module_tracked: TrackedContainer, working: Container) -> None:
    """Kernels and terminals start with a copy of the server's environment, where Jupyter leaves
    JUPYTER_TOKEN: `env` in a terminal or os.environ in a notebook would show it."""
    tracked, container = module_tracked, working
    port = tracked.port(container, 8888)
    children = children_holding(tracked, container, TOKEN)
    assert any("ipykernel_launcher" in cmdline for cmdline in children), children
    assert any(cmdline.startswith("/bin/bash") for cmdline in children), children
    assert all(names == [] for names in children.values()), children
    assert api_status(port, TOKEN) == 200, "the token still logs in"


def stat_lines(tracked: TrackedContainer, container: Container) -> list[tuple[str, int, str]]:
    """(owner, mode, path) of the runtime folder and everything in it, as root sees them."""
    code, out = tracked.exec(container, ["sh", "-c", f"stat -c '%U %a %n' {RUNTIME_DIR} {RUNTIME_DIR}/*"])
    assert code == 0, out
    return [(owner, int(mode, 8), path) for owner, mode, path in (line.split(" ", 2) for line in out.splitlines())]


def test_runtime_files_are_the_dev_users_alone(module_tracked: TrackedContainer, working: Container) -> None:
    """jpserver-PID.json and jpserver-PID-open.html hold the token, the kernels' connection files
    their keys: no other uid in the container may read them, or even list them. Jupyter makes the
    -open.html readable by all (0644, no setting against it): the folder's mode 700 keeps it in."""
    tracked, container = module_tracked, working
    (dir_owner, dir_mode, _), *files = stat_lines(tracked, container)
    assert dir_owner == "jovyan" and dir_mode & 0o077 == 0, (dir_owner, oct(dir_mode))
    names = [path.rsplit("/", 1)[-1] for _, _, path in files]
    assert any(name.startswith("jpserver-") and name.endswith(".json") for name in names), names
    assert any(name.startswith("kernel-") for name in names), names
    for owner, mode, path in files:
        assert owner == "jovyan", (owner, path)
        assert mode & 0o077 == 0 or path.endswith("-open.html"), (oct(mode), path)
    code, out = tracked.exec(container, ["ls", RUNTIME_DIR], user=OTHER_UID)
    assert code != 0 and "Permission denied" in out, out
    for _, _, path in files:
        code, out = tracked.exec(container, ["cat", path], user=OTHER_UID)
        assert code != 0 and "Permission denied" in out and TOKEN not in out, (path, out)
    code, out = tracked.exec(container, ["jupyter", "server", "list"], user="jovyan")
    assert code == 0 and TOKEN in out, out


def test_runtime_folder_link_left_by_the_dev_user(tracked: TrackedContainer) -> None:
    """The runtime folder is the dev user's and outlives a restart: a link put in its place must
    not turn root's chown and chmod at the next start onto its target."""
    container = tracked.run(environment={"JUPYTER_TOKEN": TOKEN})
    tracked.wait_healthy(container)
    code, out = tracked.exec(container, ["sh", "-c", f"mv {RUNTIME_DIR} {RUNTIME_DIR}.old && ln -s /etc {RUNTIME_DIR}"],
                             user="jovyan")
    assert code == 0, out
    container.restart(timeout=10)
    tracked.wait_healthy(container)
    code, out = tracked.exec(container, ["stat", "-c", "%U %a %F", "/etc", RUNTIME_DIR])
    assert code == 0 and out.splitlines() == ["root 755 directory", "jovyan 700 directory"], out


WORK = "/home/jovyan/work"


def notebook(text: str) -> dict[str, Any]:
    return {"cells": [{"cell_type": "markdown", "id": "c1", "metadata": {}, "source": text}],
            "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def save(port: int, path: str, text: str) -> requests.Response:
    """Save a notebook through the contents API, as JupyterLab's save does."""
    return requests.put(url(port, f"api/contents/{path}"), headers={"Authorization": f"token {TOKEN}"},
                        json={"type": "notebook", "content": notebook(text)}, timeout=60)


def load(port: int, path: str) -> requests.Response:
    return requests.get(url(port, f"api/contents/{path}"), headers={"Authorization": f"token {TOKEN}"}, timeout=30)


def test_a_tmpfs_at_work_takes_notebooks(tracked: TrackedContainer) -> None:
    """--tmpfs ~/work is a root-owned mount point (mode 2775, copied from the image's folder): it
    is handed to the dev user like an empty bind mount, and saving there works."""
    container = tracked.run(environment={"JUPYTER_TOKEN": TOKEN}, tmpfs={WORK: "size=16m"})
    tracked.wait_healthy(container)
    port = tracked.port(container, 8888)
    response = save(port, "work/Untitled.ipynb", "saved on a tmpfs")
    assert response.status_code == 201, response.text
    assert load(port, "work/Untitled.ipynb").json()["content"]["cells"][0]["source"] == "saved on a tmpfs"
    code, out = tracked.exec(container, ["stat", "-c", "%U %G %n", WORK, f"{WORK}/Untitled.ipynb"])
    assert code == 0 and out.splitlines() == [f"jovyan users {WORK}", f"jovyan users {WORK}/Untitled.ipynb"], out
    assert f"handed {WORK} to uid 1000, gid 100" in tracked.logs(container)


def test_a_save_that_does_not_fit_leaves_no_broken_file(tracked: TrackedContainer) -> None:
    """On a full disk Jupyter's own save answered "No such file or directory" and left an empty or
    cut-off notebook ("Unreadable Notebook"). Now the error is the real one, the earlier version
    stays as it was, a new notebook is not made at all, and no partial file takes up the space."""
    container = tracked.run(environment={"JUPYTER_TOKEN": TOKEN}, tmpfs={WORK: "size=1m"})
    tracked.wait_healthy(container)
    port = tracked.port(container, 8888)
    assert save(port, "work/analysis.ipynb", "the good version").status_code == 201
    too_big = "x" * 2_000_000
    for path in ("work/analysis.ipynb", "work/new.ipynb"):
        response = save(port, path, too_big)
        assert response.status_code == 500, response.text
        assert "No space left on device" in response.json()["message"], response.text
    assert load(port, "work/analysis.ipynb").json()["content"]["cells"][0]["source"] == "the good version"
    assert load(port, "work/new.ipynb").status_code == 404
    code, out = tracked.exec(container, ["ls", "-A", WORK])
    assert code == 0 and sorted(out.split()) == [".ipynb_checkpoints", "analysis.ipynb"], out
    response = save(port, "work/new.ipynb", "x" * 300_000)  # fits, now that nothing partial is left
    assert response.status_code == 201, response.text
