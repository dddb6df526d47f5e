"""JupyterLab: always behind auth, never root, on the configured port and base URL; offline-quiet
(no news prompt, no update check) and its kernel named for what it runs."""

import re
from pathlib import Path
from typing import Any

import pytest
import requests
from docker.models.containers import Container

from testkit.containers import LOOPBACK, TrackedContainer
from testkit.jupyter import api_status

TOKEN = "tok-3f1c9a7e52b04d8e"
NOTIFICATION_PLUGIN = "@jupyterlab/apputils-extension:notification"
KERNEL_DISPLAY_NAME = "Python 3 (TensorFlow 2.9)"


def get_json(port: int, path: str) -> dict[str, Any]:
    """GET a JSON document from the server with the test token, as the JupyterLab frontend does."""
    response = requests.get(f"http://{LOOPBACK}:{port}/{path}", headers={"Authorization": f"token {TOKEN}"},
                            timeout=10)
    response.raise_for_status()
    document: dict[str, Any] = response.json()
    return document


@pytest.fixture(scope="module")
def lab(module_tracked: TrackedContainer) -> Container:
    """One server with TOKEN for the checks that only read from it."""
    container = module_tracked.run(environment={"JUPYTER_TOKEN": TOKEN})
    module_tracked.wait_healthy(container)
    return container


def test_token_required(module_tracked: TrackedContainer, lab: Container) -> None:
    port = module_tracked.port(lab, 8888)
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
    container = tracked.run(environment={"JUPYTER_INSECURE_NO_AUTH": "1", "JUPYTER_ALLOWED_HOSTS": "localhost"})
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


def test_jupyter_runs_as_the_dev_user(module_tracked: TrackedContainer, lab: Container) -> None:
    code, out = module_tracked.exec(lab, ["ps", "-eo", "user:16,args"])
    assert code == 0
    servers = [line for line in out.splitlines() if "jupyter-lab" in line or "jupyter lab" in line]
    assert servers, out
    assert all(line.split()[0] == "jovyan" for line in servers), servers


def test_frontend_neither_asks_for_news_nor_checks_for_updates(module_tracked: TrackedContainer,
                                                               lab: Container) -> None:
    """The server is started without a news feed or update check, but the frontend follows its own
    settings: by default it asks every new user "Would you like to get notified about official
    Jupyter news?" (fetchNews "none") and would check for updates. The image's settings overrides
    make "false" and false the defaults, which is what the frontend composes with the (empty) user
    settings; a user's own setting still wins."""
    plugin = get_json(module_tracked.port(lab, 8888), f"lab/api/settings/{NOTIFICATION_PLUGIN}")
    defaults = {name: spec.get("default") for name, spec in plugin["schema"]["properties"].items()}
    assert plugin["settings"] == {}, "a fresh container has no user settings"
    composite = defaults | plugin["settings"]
    assert composite["fetchNews"] == "false"
    assert composite["checkForUpdates"] is False


def test_kernel_is_named_for_what_it_runs_under_its_old_name(module_tracked: TrackedContainer,
                                                             lab: Container) -> None:
    """The launcher and the kernel picker show the display name; notebooks store the kernelspec's
    name, so it stays python3 (ipykernel's), or every existing notebook would ask for a kernel."""
    specs = get_json(module_tracked.port(lab, 8888), "api/kernelspecs")
    assert specs["default"] == "python3"
    assert set(specs["kernelspecs"]) == {"python3"}
    assert specs["kernelspecs"]["python3"]["spec"]["display_name"] == KERNEL_DISPLAY_NAME


KERNEL_ROUND_TRIP = """
from jupyter_client.manager import start_new_kernel
km, kc = start_new_kernel(kernel_name="python3", startup_timeout=60)
out = []
kc.execute_interactive("import sys; print(sys.prefix)", timeout=60,
                       output_hook=lambda msg: out.append(msg["content"].get("text", "")))
print(km.kernel_spec.display_name, "|", "".join(out).strip())
kc.stop_channels()
km.shutdown_kernel(now=True)
del kc, km  # now, not at interpreter exit, where KernelClient.__del__ fails with a TypeError
"""


def test_the_shipped_kernelspec_starts_a_kernel_in_the_venv(tracked: TrackedContainer) -> None:
    """The image replaces ipykernel's kernel.json with its own copy (for the display name): that copy
    must still start ipykernel, from the venv, as Jupyter does when a notebook opens."""
    container = tracked.run(publish=(), command=["python", "-c", KERNEL_ROUND_TRIP])
    assert tracked.wait_exit(container, timeout=120) == 0, tracked.logs(container)[-2000:]
    assert f"{KERNEL_DISPLAY_NAME} | /opt/venv" in tracked.logs(container).splitlines()
