"""Talking to JupyterLab in a container over real HTTP (requests), on its 127.0.0.1 port."""

import requests

from testkit.containers import LOOPBACK


def api_status(port: int, token: str | None = None, base_url: str = "/") -> int:
    """HTTP status of GET {base_url}api/status, which needs auth (unlike {base_url}api)."""
    headers = {"Authorization": f"token {token}"} if token else {}
    response = requests.get(f"http://{LOOPBACK}:{port}{base_url}api/status", headers=headers, timeout=10,
                            allow_redirects=False)
    return response.status_code


def put_file(port: int, token: str, path: str, text: str) -> None:
    """Create a text file through Jupyter's contents API, as the browser does on save."""
    response = requests.put(
        f"http://{LOOPBACK}:{port}/api/contents/{path}",
        headers={"Authorization": f"token {token}"},
        json={"type": "file", "format": "text", "content": text},
        timeout=10,
    )
    response.raise_for_status()
