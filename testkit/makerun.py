"""`make run`'s environment as a person reaches it: its JupyterLab (the token from its log, a Lab
terminal, a kernel, the settings API) and the make targets that start, upgrade and roll it back."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Mapping

import requests
from docker import DockerClient

from testkit.kernel import LabKernel
from testkit.terminal import LabTerminal, type_command
from testkit.wait import wait_until
from tf29env.core.paths import REPO

THEMES = "lab/api/settings/@jupyterlab/apputils-extension:themes"
TOKEN_LINE = re.compile(r"JupyterLab token \(generated; [^)]*\): http://\S+\?token=([0-9a-f]{48})")


def make(target: str, *variables: str, env: Mapping[str, str] | None = None,
         timeout: float = 600) -> subprocess.CompletedProcess[str]:
    """`make TARGET VARIABLES...` in the checkout, as a person types it (never building: `-o build`)."""
    return subprocess.run(["make", "--no-print-directory", "-o", "build", target, *variables], cwd=REPO,
                          env=dict(env) if env is not None else None, capture_output=True, text=True,
                          timeout=timeout, check=False)


class Lab:
    """The JupyterLab of container NAME, published on 127.0.0.1:PORT, once it is healthy."""

    def __init__(self, client: DockerClient, name: str, port: int) -> None:
        container = client.containers.get(name)

        def token() -> str | None:
            found = TOKEN_LINE.findall(container.logs().decode(errors="replace"))
            return found[-1] if found else None

        def healthy() -> bool:
            container.reload()
            return bool(container.attrs["State"]["Health"]["Status"] == "healthy")

        self.token = wait_until(token, timeout=120, what=f"{name}'s token in the log")
        wait_until(healthy, timeout=120, what=f"{name} healthy")
        self.url = f"http://127.0.0.1:{port}/"
        self.headers = {"Authorization": f"token {self.token}"}

    def terminal(self, command: str) -> str:
        terminal = LabTerminal(self.url, self.token, {"cwd": ""})
        try:
            code, output = type_command(terminal, command)
        finally:
            terminal.close()
        assert code == 0, output
        return output

    def cell(self, code: str, kernel_name: str = "python3") -> str:
        kernel = LabKernel(self.url, self.token, kernel_name)
        try:
            status, shown = kernel.execute(code)
        finally:
            kernel.close()
        assert status == "ok", shown
        return shown

    def theme(self) -> str:
        response = requests.get(f"{self.url}{THEMES}", headers=self.headers, timeout=30)
        response.raise_for_status()
        return str(response.json()["settings"].get("theme", ""))

    def set_theme(self, theme: str) -> None:
        put = requests.put(f"{self.url}{THEMES}", headers=self.headers, timeout=30,
                           data=json.dumps({"raw": json.dumps({"theme": theme})}))
        assert put.status_code == 204, put.text
