"""A real JupyterHub for the image's hub-mode tests: the image's own jupyterhub package (the version
its single-user servers are paired with) run as a hub in a container of the image, on a Docker
network of its own. Users and their tokens are made through its REST API, and a single-user
container gets the environment a spawner would give it. What it leaves out is the proxy: tests
reach each server on its own published port, so the hub keeps its routes in memory. The whole
hub, with configurable-http-proxy and DockerSpawner, is tests/hub's."""

import json
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import requests
from docker import DockerClient
from docker.models.containers import Container
from docker.models.networks import Network

from testkit.containers import LOOPBACK
from testkit.net import free_host_port
from testkit.wait import wait_until

API_PORT = 8081
SERVER_PORT = 8888

# A Proxy that only remembers routes: JupyterHub's API and OAuth need no proxy, its start does.
CONFIG = """
from jupyterhub.proxy import Proxy


class RoutesOnly(Proxy):
    should_start = False
    routes = {}

    async def add_route(self, routespec, target, data):
        self.routes[routespec] = {"routespec": routespec, "target": target, "data": data}

    async def delete_route(self, routespec):
        self.routes.pop(routespec, None)

    async def get_all_routes(self):
        return dict(self.routes)


c = get_config()
c.JupyterHub.proxy_class = RoutesOnly
c.JupyterHub.authenticator_class = "dummy"
c.JupyterHub.hub_ip = "0.0.0.0"
c.JupyterHub.db_url = "sqlite:////home/jovyan/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = "/home/jovyan/jupyterhub_cookie_secret"
c.JupyterHub.services = [{"name": "tests", "api_token": %(token)r}]
c.JupyterHub.load_roles = [
    {"name": "tests", "scopes": ["admin:users", "tokens", "admin:servers"], "services": ["tests"]}
]
"""


@dataclass
class MiniHub:
    client: DockerClient
    image: str
    config_dir: Path
    token: str = field(default_factory=lambda: secrets.token_hex(24))
    name: str = field(default_factory=lambda: f"tf29-env-minihub-{secrets.token_hex(4)}")
    network: Network | None = None
    container: Container | None = None
    api_port: int = 0

    def start(self) -> None:
        config = self.config_dir / "jupyterhub_config.py"
        config.write_text(CONFIG % {"token": self.token})
        # The hub runs as jovyan; pytest makes its folders for root alone. The token is a throwaway.
        self.config_dir.chmod(0o755)
        config.chmod(0o644)
        self.network = self.client.networks.create(self.name)
        self.api_port = free_host_port()
        self.container = self.client.containers.run(
            self.image, ["-f", "/hub/jupyterhub_config.py"], entrypoint="/opt/venv/bin/jupyterhub",
            name=self.name, network=self.name, user="1000:100", working_dir="/home/jovyan", detach=True,
            volumes={str(self.config_dir): {"bind": "/hub", "mode": "ro"}},
            ports={f"{API_PORT}/tcp": (LOOPBACK, self.api_port)})
        wait_until(self._answers, timeout=60, what="the hub's API")

    def _answers(self) -> bool:
        assert self.container is not None
        self.container.reload()
        assert self.container.status == "running", self.container.logs().decode(errors="replace")[-2000:]
        try:
            return requests.get(self.url, timeout=2).ok
        except requests.ConnectionError:
            return False

    @property
    def url(self) -> str:
        return f"http://{LOOPBACK}:{self.api_port}/hub/api"

    def api(self, method: str, path: str, body: Any = None) -> Any:
        response = requests.request(method, f"{self.url}{path}", timeout=10, json=body,
                                    headers={"Authorization": f"token {self.token}"})
        assert response.ok, f"{method} {path}: {response.status_code} {response.text}"
        return response.json()

    def add_user(self, name: str) -> str:
        """Make the user; return a token of theirs that may use their server (as a browser's would)."""
        self.api("POST", f"/users/{quote(name, safe='')}")
        scopes = [f"access:servers!user={name}", f"users:activity!user={name}"]
        return str(self.api("POST", f"/users/{quote(name, safe='')}/tokens", {"scopes": scopes})["token"])

    def server_env(self, name: str, token: str) -> dict[str, str]:
        """What JupyterHub's spawners give a single-user server of NAME's (Spawner.get_env)."""
        prefix = f"/user/{quote(name, safe='')}/"
        access = json.dumps([f"access:servers!server={name}/", f"access:servers!user={name}"])
        return {
            "JUPYTERHUB_API_TOKEN": token, "JPY_API_TOKEN": token,
            "JUPYTERHUB_API_URL": f"http://{self.name}:{API_PORT}/hub/api",
            "JUPYTERHUB_BASE_URL": "/", "JUPYTERHUB_USER": name, "JUPYTERHUB_SERVER_NAME": "",
            "JUPYTERHUB_SERVICE_URL": f"http://0.0.0.0:{SERVER_PORT}{prefix}",
            "JUPYTERHUB_SERVICE_PREFIX": prefix,
            "JUPYTERHUB_CLIENT_ID": f"jupyterhub-user-{quote(name, safe='')}",
            "JUPYTERHUB_OAUTH_CALLBACK_URL": f"{prefix}oauth_callback",
            "JUPYTERHUB_OAUTH_ACCESS_SCOPES": access, "JUPYTERHUB_OAUTH_SCOPES": access,
        }

    def stop(self) -> None:
        if self.container is not None:
            self.container.remove(force=True, v=True)
        if self.network is not None:
            self.network.remove()
