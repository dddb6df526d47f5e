"""JupyterLab against what a user's browser, a kernel or a full disk can do to it: only the allowed
host names are served (DNS rebinding), the token stays out of kernels, terminals and other users'
reach, and a save that fails leaves no broken file."""

import requests

from testkit.containers import LOOPBACK, TrackedContainer

TOKEN = "hardening-token-7c41e0a9"
ALLOWED = "jupyter.example.test"
# A web page's own name, which DNS rebinding makes point at the port published to localhost.
REBOUND = "rebind.attacker.test"


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
