"""A notebook's kernel, as JupyterLab talks to it: started through the server's REST API (POST
api/kernels) and driven over its websocket (api/kernels/ID/channels) with the Jupyter messaging
protocol's execute_request, reading the cell's output streams, results and error back."""

import json
import time
import uuid
from typing import Any

import requests
import websocket


class LabKernel:
    """One kernel of KERNEL_NAME on the server at BASE_URL (http://127.0.0.1:PORT/), shut down by close()."""

    def __init__(self, base_url: str, token: str, kernel_name: str = "python3") -> None:
        self.base_url = base_url
        self.headers = {"Authorization": f"token {token}"}
        response = requests.post(f"{base_url}api/kernels", headers=self.headers, json={"name": kernel_name},
                                 timeout=60)
        response.raise_for_status()
        self.id = str(response.json()["id"])
        self.session = uuid.uuid4().hex
        self.socket = websocket.create_connection(
            f"ws{base_url.removeprefix('http')}api/kernels/{self.id}/channels?session_id={self.session}",
            header=[f"Authorization: token {token}"], timeout=60)

    def execute(self, code: str, timeout: float = 180) -> tuple[str, str]:
        """Run CODE as a cell; (its status, 'ok' or 'error', and everything it showed: streams,
        results, and the error's name, value and traceback)."""
        return self.wait(self.send(code), timeout)

    def send(self, code: str) -> str:
        """Start CODE as a cell and return at once, as a person who runs a cell and walks away: its message id."""
        msg_id = uuid.uuid4().hex
        self.socket.send(json.dumps({
            "header": {"msg_id": msg_id, "msg_type": "execute_request", "session": self.session,
                       "username": "tests", "version": "5.3"},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                        "allow_stdin": False, "stop_on_error": True},
        }))
        return msg_id

    def wait(self, msg_id: str, timeout: float = 180) -> tuple[str, str]:
        """What execute returns, for the cell send started."""
        shown: list[str] = []
        status = ""
        idle = False
        deadline = time.monotonic() + timeout
        while not (status and idle):
            left = deadline - time.monotonic()
            if left <= 0:
                tail = "".join(shown)[-3000:]
                raise TimeoutError(f"the cell did not finish within {timeout:.0f}s; it showed:\n{tail}")
            self.socket.settimeout(left)
            message: dict[str, Any] = json.loads(self.socket.recv())
            if message.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = message["msg_type"], message["content"]
            if kind == "stream":
                shown.append(content["text"])
            elif kind in ("execute_result", "display_data"):
                shown.append(str(content["data"].get("text/plain", "")) + "\n")
            elif kind == "error":
                shown.append(f"{content['ename']}: {content['evalue']}\n" + "\n".join(content["traceback"]))
            elif kind == "execute_reply":
                status = str(content["status"])
            elif kind == "status" and content["execution_state"] == "idle":
                idle = True
        return status, "".join(shown)

    def close(self) -> None:
        self.socket.close()
        requests.delete(f"{self.base_url}api/kernels/{self.id}", headers=self.headers, timeout=30)
