"""A team hub started for a test module: `make hub` with its own state folder, free loopback
ports, Docker network and name prefix, driven the way people and the browser drive it (sign-up,
an admin's approval, log-in, the REST API with the user's own token, OAuth into the server) and
always taken down with every container, volume and network it made."""

import contextlib
import json
import os
import secrets
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker.errors
import requests
from docker import DockerClient
from docker.models.containers import Container

from hub import settings as hub_settings
from testkit.net import free_host_port, free_port_range
from testkit.ssh import KeyPair
from testkit.wait import wait_until

REPO = Path(__file__).resolve().parents[2]
HUB_PYTHON = REPO / "hub" / ".venv" / "bin" / "python"
LOOPBACK = "127.0.0.1"
ADMIN = "boss"
# A spawn pulls nothing but starts the image's entrypoint (user setup, sshd, the self-check
# beside Jupyter): well under a minute on the 2-core build machine, with room to spare.
SPAWN_TIMEOUT = 180


def install_tools() -> None:
    """The hub's venv and proxy, made by hub.mk's own targets as on a fresh clone (fail, never skip)."""
    made = subprocess.run(["make", "hub-venv", "hub-proxy"], cwd=REPO, capture_output=True, text=True,
                          timeout=900, check=False)
    assert made.returncode == 0, f"make hub-venv hub-proxy failed:\n{made.stdout[-3000:]}\n{made.stderr[-3000:]}"


def hub_environment(image: str, state: Path, **overrides: str) -> dict[str, str]:
    """os.environ plus the HUB_* settings of a hub that touches nothing but its own things."""
    tag = f"tf29-hubtest-{secrets.token_hex(3)}"
    ssh_ports = free_port_range(21)
    settings = {
        "HUB_IMAGE": image, "HUB_STATE_DIR": str(state), "HUB_ADDRESS": LOOPBACK, "HUB_SSH_ADDRESS": LOOPBACK,
        "HUB_PORT": str(free_host_port()), "HUB_PROXY_API_PORT": str(free_host_port()),
        "HUB_INTERNAL_PORT": str(free_host_port()), "HUB_SSH_PORTS": f"{ssh_ports.start}-{ssh_ports.stop - 1}",
        "HUB_NETWORK": tag, "HUB_NAME_PREFIX": tag, "HUB_ADMIN_USERS": ADMIN,
    }
    environ = {key: value for key, value in os.environ.items() if not key.startswith("HUB_")}
    return {**environ, **settings, **overrides}


def ctl(env: dict[str, str], command: str) -> subprocess.CompletedProcess[str]:
    """hub/ctl.py in the hub's venv, as hub.mk runs it."""
    return subprocess.run([str(HUB_PYTHON), "-m", "hub.ctl", command], cwd=REPO, env={**env, "PYTHONPATH": str(REPO)},
                          capture_output=True, text=True, timeout=300, check=False)


@dataclass
class User:
    name: str
    password: str
    key: KeyPair | None = None
    session: requests.Session = field(default_factory=requests.Session)
    token: str = ""


@dataclass
class HubRun:
    client: DockerClient
    env: dict[str, str]
    users: dict[str, User] = field(default_factory=dict)

    @property
    def url(self) -> str:
        scheme = hub_settings.load(self.env).scheme  # https when the settings turn TLS on (test_hub_https.py)
        return f"{scheme}://{LOOPBACK}:{self.env['HUB_PORT']}"

    @property
    def prefix(self) -> str:
        return self.env["HUB_NAME_PREFIX"]

    @property
    def state(self) -> Path:
        return Path(self.env["HUB_STATE_DIR"])

    def make(self, target: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["make", target], cwd=REPO, env=self.env, capture_output=True, text=True, timeout=300,
                              check=False)

    def up(self) -> None:
        started = self.make("hub")
        assert started.returncode == 0, f"make hub: {started.stdout[-2000:]}\n{started.stderr[-2000:]}"
        assert f"the hub is up: {self.url}/" in started.stdout, started.stdout

    def hub_log(self) -> str:
        return (hub_settings.logs_dir(self.state) / "hub.log").read_text(errors="replace")

    # --- people
    def browser(self) -> requests.Session:
        """A session holding the hub's _xsrf cookie, as a browser has after opening the login page."""
        session = requests.Session()
        assert session.get(f"{self.url}/hub/login", timeout=30).status_code == 200
        return session

    def signup(self, name: str, key: KeyPair | None = None) -> User:
        user = User(name, secrets.token_urlsafe(18), key)
        session = self.browser()
        page = session.post(f"{self.url}/hub/signup", timeout=30, data={
            "username": name, "signup_password": user.password, "signup_password_confirmation": user.password,
            "_xsrf": session.cookies.get("_xsrf")})
        assert page.status_code == 200, page.text[-1000:]
        self.users[name] = user
        return user

    def login(self, user: User) -> bool:
        """Log USER in (their session keeps the cookie); whether the hub let them in."""
        session = self.browser()
        page = session.post(f"{self.url}/hub/login", timeout=30, data={
            "username": user.name, "password": user.password, "_xsrf": session.cookies.get("_xsrf")})
        if page.url.rstrip("/").endswith("/hub/login"):
            return False
        user.session = session
        return True

    def approve(self, name: str) -> None:
        """The admin approves NAME on NativeAuthenticator's page (a toggle: call once per user)."""
        admin = self.users[ADMIN]
        page = admin.session.get(f"{self.url}/hub/authorize/{name}", timeout=30)
        assert page.status_code == 200, page.status_code

    def make_token(self, user: User) -> str:
        """An API token of USER's own, asked for with their browser session (cookie + XSRF header)."""
        response = user.session.post(f"{self.url}/hub/api/users/{user.name}/tokens", timeout=30,
                                     headers={"X-XSRFToken": user.session.cookies.get("_xsrf") or ""},
                                     json={"note": "tests/hub", "expires_in": 3600})
        assert response.status_code == 201, response.text
        user.token = str(response.json()["token"])
        return user.token

    def enrol(self, name: str, key: KeyPair | None = None) -> User:
        """Sign up, be approved by the admin, log in, get a token: what a new team member does."""
        user = self.signup(name, key)
        self.approve(name)
        assert self.login(user), f"{name} could not log in after approval"
        self.make_token(user)
        return user

    # --- the REST API with a user's own token
    def api(self, user: User, method: str, path: str, **kwargs: Any) -> requests.Response:
        return requests.request(method, f"{self.url}/hub/api{path}", timeout=60,
                                headers={"Authorization": f"token {user.token}"}, **kwargs)

    def server_get(self, user: User, owner: str, path: str, **kwargs: Any) -> requests.Response:
        """GET /user/OWNER/PATH through the proxy with USER's token."""
        return requests.get(f"{self.url}/user/{owner}/{path}", headers={"Authorization": f"token {user.token}"},
                            timeout=30, allow_redirects=False, **kwargs)

    def server_model(self, user: User) -> dict[str, Any] | None:
        model = self.api(user, "GET", f"/users/{user.name}").json()
        server: dict[str, Any] | None = model["servers"].get("")
        return server

    def start(self, user: User, **options: str) -> None:
        response = self.api(user, "POST", f"/users/{user.name}/server", json=options)
        # The API's 500 says only "error": the hub's log says why.
        assert response.status_code in (201, 202), \
            f"{response.status_code} {response.text}; the hub's log ends:\n{self.hub_log()[-3000:]}"

    def wait_ready(self, user: User) -> dict[str, Any]:
        def ready() -> dict[str, Any] | None:
            server = self.server_model(user)
            if server is None:
                raise AssertionError(f"{user.name}'s server stopped while starting:\n{self.hub_log()[-3000:]}")
            return server if server.get("ready") else None

        return wait_until(ready, timeout=SPAWN_TIMEOUT, interval=1, what=f"{user.name}'s server ready")

    def stop(self, user: User) -> None:
        response = self.api(user, "DELETE", f"/users/{user.name}/server")
        assert response.status_code in (202, 204), f"{response.status_code} {response.text}"
        wait_until(lambda: self.server_model(user) is None, timeout=60, interval=0.1,
                   what=f"{user.name}'s server stopped")

    # --- the containers
    def container(self, name: str) -> Container:
        return self.client.containers.get(f"{self.prefix}-{name}")

    def shell(self, name: str, *command: str) -> str:
        """COMMAND in NAME's server as jovyan, beside Jupyter (docker exec, as an SSH login would be): its stdout."""
        code, (out, err) = self.container(name).exec_run(list(command), user="jovyan", demux=True)
        assert code == 0, f"{command} in {name}'s server: exit {code}: {(out or b'') + (err or b'')!r}"
        return (out or b"").decode()

    def run_job(self, name: str, script: str) -> str:
        """`job run` of SCRIPT (a file in NAME's ~/work) in NAME's server: the job's id."""
        path = f"/home/jovyan/work/{secrets.token_hex(4)}.py"
        self.shell(name, "python", "-c", "import sys; open(sys.argv[1], 'w').write(sys.argv[2])", path, script)
        return self.shell(name, "job", "run", path).split("\t")[0]

    def job(self, name: str, job_id: str) -> dict[str, Any]:
        """The job's line of `job list --json` in NAME's server."""
        jobs = {job["id"]: job for job in json.loads(self.shell(name, "job", "list", "--json"))}
        found: dict[str, Any] = jobs[job_id]
        return found

    def ssh_port(self, name: str) -> int:
        bindings = self.container(name).attrs["NetworkSettings"]["Ports"]["22/tcp"]
        return int(bindings[0]["HostPort"])

    def wait_healthy(self, name: str) -> None:
        def healthy() -> bool:
            container = self.container(name)
            return str(container.attrs["State"].get("Health", {}).get("Status")) == "healthy"

        wait_until(healthy, timeout=120, interval=1, what=f"{name}'s container healthy")

    def remove_everything(self) -> None:
        """Stop the hub and proxy, then remove every container, volume and the network it made."""
        down = self.make("hub-down")
        for container in self.client.containers.list(all=True, filters={"name": self.prefix}):
            with contextlib.suppress(docker.errors.NotFound):
                container.remove(force=True)
        deadline = time.monotonic() + 30
        for volume in self.client.volumes.list(filters={"name": self.prefix}):
            while True:
                try:
                    volume.remove(force=True)
                    break
                except docker.errors.NotFound:
                    break
                except docker.errors.APIError:  # still in use by a container being removed
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.5)
        for network in self.client.networks.list(names=[self.env["HUB_NETWORK"]]):
            network.remove()
        assert down.returncode == 0, down.stderr
