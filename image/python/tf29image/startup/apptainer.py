"""The Apptainer mode's planning (entrypoint.d/config.sh): which port JupyterLab takes on a
node that other users' servers share, and, once it listens, the line a person pastes on a laptop.

Under Apptainer the image runs as the calling user on the host's network: every server on a node
shares its ports, so a fixed 8888 would collide with another user's server. JupyterLab gets
JUPYTER_PORT when one is asked for (and that port must be free), or else 8888, or the first free
port after it. Two servers starting at once may both find the same port free here, so Jupyter
moves on to a later port when another server took it first: the image's jupyter_server_config.py
makes it listen on a port as it chooses it, before it writes its runtime file, and the tunnel line
is written from that file.

Standard library only, Python 3.8 (the image's /usr/bin/python3 -I -m tf29image.startup.apptainer). Subcommands:
  port                 prints "PORT RETRIES" (the port to start from, and Jupyter's port_retries),
                       or one line on stderr and exit 2;
  report-port PORT     tells batchspawner's hub the port (the hub mode, where the hub gives port 0);
  announce DIR PID     waits for Jupyter's runtime file DIR/jpserver-PID.json and prints the tunnel
                       line and the URL to open (the token from the file, never from argv).
"""

import errno
import json
import os
import socket
import ssl
import sys
import time
import urllib.request
from typing import Callable, Dict, List, Optional, Tuple  # python 3.8: no list[...] in annotations

from tf29image.common import pid_alive

# The image's own JUPYTER_PORT (its ENV): Apptainer gives the image's environment precedence over
# the host's, so this value cannot tell "asked for" from "default"; it counts as the default.
DEFAULT_PORT = 8888
# How far past DEFAULT_PORT a free port is looked for: a node's worth of servers.
SEARCH = 100
# Jupyter's own retries when the planned port is taken between the check and its bind.
RETRIES = 50
# The laptop's end of the tunnel.
LOCAL_PORT = 8888
# How long `announce` waits for the server's runtime file.
ANNOUNCE_TIMEOUT = 300.0


class Refused(Exception):
    """A one-line reason, for the entrypoint to stop with (exit 2)."""


def port_free(port: int) -> bool:
    """Whether a server could listen on PORT on every address now: as Jupyter (tornado) binds, with
    SO_REUSEADDR, so that connections in TIME_WAIT do not count as taken; a listener does."""
    families: List[Tuple[int, str]] = [(socket.AF_INET, "0.0.0.0")]  # noqa: S104 - as Jupyter binds
    if socket.has_ipv6 and os.path.exists("/proc/net/if_inet6"):
        families.append((socket.AF_INET6, "::"))
    for family, address in families:
        try:
            sock = socket.socket(family, socket.SOCK_STREAM)
        except OSError:
            continue  # no such family in this network namespace
        with sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                sock.bind((address, port))
            except OSError as exc:
                if exc.errno == errno.EADDRNOTAVAIL:
                    continue  # IPv6 listed but switched off
                return False
    return True


def plan_port(asked: Optional[str], free: Callable[[int], bool] = port_free) -> Tuple[int, int]:
    """(port, retries): ASKED is JUPYTER_PORT as set (startup/plan.py has checked it is a port)."""
    if asked and int(asked) != DEFAULT_PORT:
        port = int(asked)
        if not free(port):
            raise Refused(f"JUPYTER_PORT={port} is in use on this node (another server?): choose another port, "
                          f"or unset JUPYTER_PORT to take {DEFAULT_PORT} or the first free port after it")
        return port, 0
    for port in range(DEFAULT_PORT, DEFAULT_PORT + SEARCH):
        if free(port):
            return port, RETRIES
    raise Refused(f"no free port from {DEFAULT_PORT} to {DEFAULT_PORT + SEARCH - 1} on this node: other servers "
                  f"hold them all; set JUPYTER_PORT to a free port above {DEFAULT_PORT + SEARCH - 1}")


def runtime_info(runtime_dir: str, pid: int) -> Optional[Dict[str, object]]:
    """Jupyter's runtime file for PID, once it is complete (it is written after the server listens)."""
    path = os.path.join(runtime_dir, f"jpserver-{pid}.json")
    try:
        with open(path, encoding="utf-8") as handle:
            info = json.load(handle)
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) and info.get("port") else None


def tunnel_lines(info: Dict[str, object], node: str, login: str, user: str, show_token: bool) -> List[str]:
    """The ssh command for a laptop, and the URL to open there."""
    port = int(str(info["port"]))
    base_url = str(info.get("base_url") or "/")
    scheme = "https" if info.get("secure") else "http"
    url = f"{scheme}://localhost:{LOCAL_PORT}{base_url}lab"
    token = str(info.get("token") or "")
    if show_token and token:
        url += f"?token={token}"
    if login:
        command = f"ssh -N -L {LOCAL_PORT}:{node}:{port} {user}@{login}"
    else:  # not under Slurm: this host itself is the one to log in to
        command = f"ssh -N -L {LOCAL_PORT}:localhost:{port} {user}@{node}"
    tail = "" if show_token and token else " (log in with your JUPYTER_TOKEN or password)"
    return [
        f"JupyterLab listens on {node}:{port}. On your laptop run: {command}",
        f"then open {url}{tail}",
    ]


def announce(argv: List[str]) -> int:
    runtime_dir, pid = argv[0], int(argv[1])
    node, login, user, show_token = argv[2], argv[3], argv[4], argv[5] == "1"
    deadline = time.monotonic() + ANNOUNCE_TIMEOUT
    while time.monotonic() < deadline:
        info = runtime_info(runtime_dir, pid)
        if info:
            for line in tunnel_lines(info, node, login, user, show_token):
                print(f"tf29-env: {line}", file=sys.stderr, flush=True)
            return 0
        if not pid_alive(pid):
            return 0  # the server ended before it listened: the entrypoint says why
        time.sleep(0.2)
    print(f"tf29-env: WARNING: JupyterLab wrote no runtime file within {ANNOUNCE_TIMEOUT:.0f} s: no tunnel line",
          file=sys.stderr, flush=True)
    return 0


def report_port(port: int) -> None:
    """Tell batchspawner's hub (JUPYTERHUB_API_URL) the port, as its batchspawner-singleuser does:
    POST {"port": N} to the API's /batchspawner with the server's own token (from the environment)."""
    api_url = os.environ.get("JUPYTERHUB_API_URL", "").rstrip("/")
    token = os.environ.get("JUPYTERHUB_API_TOKEN", "")
    if not api_url.startswith(("http://", "https://")) or not token:
        raise Refused("the hub mode with port 0 (batchspawner) needs JUPYTERHUB_API_URL and JUPYTERHUB_API_TOKEN, "
                      "which the hub's spawner sets")
    context = ssl.create_default_context(cafile=os.environ.get("JUPYTERHUB_SSL_CLIENT_CA") or None)
    if os.environ.get("JUPYTERHUB_SSL_CERTFILE") and os.environ.get("JUPYTERHUB_SSL_KEYFILE"):
        context.load_cert_chain(os.environ["JUPYTERHUB_SSL_CERTFILE"], os.environ["JUPYTERHUB_SSL_KEYFILE"])
    # The hub's own API URL, http(s) as JupyterHub gives it.
    request = urllib.request.Request(f"{api_url}/batchspawner", data=json.dumps({"port": port}).encode(),  # noqa: S310
                                     method="POST", headers={"Authorization": f"token {token}",
                                                             "Content-Type": "application/json"})
    # The hub is the cluster's own: no proxy of the environment's (http_proxy) in between.
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=context))
    try:
        with opener.open(request, timeout=30) as response:
            response.read()
    except (OSError, ValueError) as exc:
        raise Refused(f"the hub at {api_url} was not told the port {port} (batchspawner): {exc}") from exc


def main(argv: List[str]) -> int:
    if argv[:1] == ["port"]:
        try:
            port, retries = plan_port(os.environ.get("JUPYTER_PORT"))
        except Refused as exc:
            print(exc, file=sys.stderr)
            return 2
        print(port, retries)
        return 0
    if argv[:1] == ["report-port"] and len(argv) == 2:
        try:
            report_port(int(argv[1]))
        except Refused as exc:
            print(exc, file=sys.stderr)
            return 2
        return 0
    if argv[:1] == ["announce"] and len(argv) == 7:
        return announce(argv[1:])
    print("usage: apptainer.py port | announce RUNTIME_DIR PID NODE LOGIN USER SHOW_TOKEN", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
