"""Typing into a shell as a person does and reading back what the screen shows: a JupyterLab
terminal over its websocket (the way Lab's page talks to it), or an interactive SSH session."""

import json
import re
import time
from typing import Protocol

import paramiko
import requests
import websocket

# Colours, cursor moves, window titles and carriage returns: what a terminal draws but does not show as text.
ESCAPES = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()=>][0-9A-Za-z]?|\r")
# The typed line echoes `'@@'BEGIN` and `'@@%s %s\n' END`; only the output has @@BEGIN and @@END.
BEGIN = "printf '%s\\n' '@@'BEGIN; "
END = "; printf '@@%s %s\\n' END $?\r"
OUTPUT = re.compile(r"^@@BEGIN\n(.*?)^@@END (\d+)$", re.S | re.M)


class Shell(Protocol):
    def send(self, text: str) -> None: ...

    def read_some(self, timeout: float) -> str: ...


def screen_text(raw: str) -> str:
    return ESCAPES.sub("", raw)


def type_command(shell: Shell, command: str, timeout: float = 120) -> tuple[int, str]:
    """Type COMMAND and Enter; return its exit status and the text it printed on the screen."""
    shell.send(BEGIN + command + END)
    deadline = time.monotonic() + timeout
    seen = ""
    while time.monotonic() < deadline:
        seen += shell.read_some(max(0.1, deadline - time.monotonic()))
        found = OUTPUT.search(screen_text(seen))
        if found:
            return int(found.group(2)), found.group(1)
    shown = screen_text(seen)[-3000:]
    raise TimeoutError(f"{command!r} did not finish within {timeout:.0f}s; the screen showed:\n{shown}")


class LabTerminal:
    """A terminal of a Jupyter server, opened through its REST API (POST api/terminals with BODY, as
    Lab's launcher does with {"cwd": ""}) and driven through its websocket (terminado's messages)."""

    def __init__(self, base_url: str, token: str, body: dict[str, str] | None = None) -> None:
        self.base_url = base_url
        self.headers = {"Authorization": f"token {token}"}
        response = requests.post(f"{base_url}api/terminals", headers=self.headers, json=body, timeout=30)
        response.raise_for_status()
        self.name = str(response.json()["name"])
        self.socket = websocket.create_connection(
            f"ws{base_url.removeprefix('http')}terminals/websocket/{self.name}",
            header=[f"Authorization: token {token}"], timeout=30)
        # Wide enough that no typed line wraps (a wrapped echo is redrawn with cursor moves).
        self.socket.send(json.dumps(["set_size", 40, 400, 800, 4000]))

    def send(self, text: str) -> None:
        self.socket.send(json.dumps(["stdin", text]))

    def read_some(self, timeout: float) -> str:
        self.socket.settimeout(timeout)
        try:
            message = json.loads(self.socket.recv())
        except websocket.WebSocketTimeoutException:
            return ""
        return str(message[1]) if message[0] == "stdout" else ""

    def close(self) -> None:
        self.socket.close()
        requests.delete(f"{self.base_url}api/terminals/{self.name}", headers=self.headers, timeout=30)


class SshShell:
    """An interactive SSH session with a terminal (a login shell, as `ssh HOST` gives a person)."""

    def __init__(self, client: paramiko.SSHClient) -> None:
        self.channel = client.invoke_shell(width=400, height=40)

    def send(self, text: str) -> None:
        self.channel.sendall(text.encode())

    def read_some(self, timeout: float) -> str:
        self.channel.settimeout(timeout)
        try:
            return self.channel.recv(65536).decode(errors="replace")
        except TimeoutError:
            return ""

    def close(self) -> None:
        self.channel.close()
