"""JupyterLab: always behind auth, never root, on the configured port and base URL."""

import re
from pathlib import Path

import requests

from tests.helpers.containers import LOOPBACK, TrackedContainer
from tests.helpers.jupyter import api_status

TOKEN = "tok-3f1c9a7e52b04d8e"


def test_token_required(tracked: TrackedContainer) -> None:
    container = tracked.run(environment={"JUPYTER_TOKEN": TOKEN})
    tracked.wait_healthy(container)
    port = tracked.port(container, 8888)
    assert api_status(port) == 403
    assert api_status(port, "wrong-token") == 403
    assert api_status(port, TOKEN) == 200


def test_generated_token_logged_once_and_works(tracked: TrackedContainer) -> None:
    container = tracked.run()
    tracked.wait_healthy(container)
    found = re.findall(r"lab\?token=([0-9a-f]{48})\b", tracked.logs(container))
    assert len(found) == 1, "the generated token's login URL must be printed exactly once"
    port = tracked.port(container, 8888)
    assert api_status(port) == 403
    assert api_status(port, found[0]) == 200


def test_token_file_keeps_token_out_of_the_container_config(tracked: TrackedContainer, tmp_path: Path) -> None:
    secret = tmp_path / "token"
    secret.write_text(TOKEN + "\n")
    container = tracked.run(
        environment={"JUPYTER_TOKEN_FILE": "/run/secrets/jupyter_token"},
        volumes={str(secret): {"bind": "/run/secrets/jupyter_token", "mode": "ro"}},
    )
    tracked.wait_healthy(container)
    assert api_status(tracked.port(container, 8888), TOKEN) == 200
    assert TOKEN not in str(container.attrs["Config"]["Env"])
    assert TOKEN not in tracked.logs(container)


def test_hashed_password_login(tracked: TrackedContainer) -> None:
    helper = tracked.run(publish=(), command=["python", "-c",
                         "from jupyter_server.auth import passwd; print(passwd('correct horse'))"])
    assert tracked.wait_exit(helper) == 0
    hashed = tracked.logs(helper).strip().splitlines()[-1]
    container = tracked.run(environment={"JUPYTER_PASSWORD_HASH": hashed})
    tracked.wait_healthy(container)
    base = f"http://{LOOPBACK}:{tracked.port(container, 8888)}"
    assert api_status(tracked.port(container, 8888)) == 403
    for password, expected in (("wrong", False), ("correct horse", True)):
        session = requests.Session()
        session.get(f"{base}/login", timeout=10)
        session.post(f"{base}/login", data={"password": password, "_xsrf": session.cookies["_xsrf"]},
                     timeout=10, allow_redirects=False)
        assert (session.get(f"{base}/api/status", timeout=10).status_code == 200) is expected


def test_no_auth_only_by_explicit_opt_in_and_with_a_warning(tracked: TrackedContainer) -> None:
    container = tracked.run(environment={"JUPYTER_INSECURE_NO_AUTH": "1"})
    tracked.wait_healthy(container)
    assert api_status(tracked.port(container, 8888)) == 200
    assert "WARNING: JUPYTER_INSECURE_NO_AUTH=1" in tracked.logs(container)


def test_empty_token_does_not_disable_auth(tracked: TrackedContainer) -> None:
    container = tracked.run(environment={"JUPYTER_TOKEN": ""})
    tracked.wait_healthy(container)
    assert api_status(tracked.port(container, 8888)) == 403


def test_port_and_base_url(tracked: TrackedContainer) -> None:
    container = tracked.run(publish=(9999,),
                            environment={"JUPYTER_PORT": "9999", "JUPYTER_BASE_URL": "/team/ada",
                                         "JUPYTER_TOKEN": TOKEN})
    tracked.wait_healthy(container)
    port = tracked.port(container, 9999)
    assert api_status(port, TOKEN, base_url="/team/ada/") == 200
    assert api_status(port, TOKEN, base_url="/") == 404


def test_jupyter_runs_as_the_dev_user(tracked: TrackedContainer) -> None:
    container = tracked.run()
    tracked.wait_healthy(container)
    code, out = tracked.exec(container, ["ps", "-eo", "user:16,args"])
    assert code == 0
    servers = [line for line in out.splitlines() if "jupyter-lab" in line or "jupyter lab" in line]
    assert servers, out
    assert all(line.split()[0] == "jovyan" for line in servers), servers
