"""Container health for Docker's HEALTHCHECK and Kubernetes probes: exit 0 when every service the
entrypoint started answers, 1 otherwise, with one line saying which. The entrypoint lists them in
the services file of its run directory, with what is needed to find each:

- "jupyter RUNTIME_DIR": JupyterLab's runtime file there (jpserver-PID.json) gives port, base_url
  and whether it speaks https, so those settings need no repeating here; GET {base_url}api on
  127.0.0.1, proxies bypassed, must answer 200 with a version.
- "ssh PORT" (when sshd was started): a TCP connection to the port must be answered: with sshd's
  greeting, or, while sshd is busy with logins that have not finished (MaxStartups), with its
  refusal. Nothing listening, or nothing answering (a hung sshd), is unhealthy.

When the image's entrypoint is not running, nothing is managed and the check passes, saying so: in
the command mode (`docker run IMAGE CMD`) the entrypoint has handed the container to CMD, and with
another entrypoint (`--entrypoint`, the Dev Containers tools' idle command) it never ran. Either
does what it was asked; "unhealthy" would only make a restart policy or an orchestrator end it.

Standard library only, run by the distro's python3 -I (-m tf29image.healthcheck): it starts in tens of
milliseconds.
"""

import json
import os
import re
import socket
import ssl
import sys
import urllib.request
from pathlib import Path
from typing import Optional, Tuple  # python 3.8: tuple[...] in an annotation fails at import

from tf29image.common import IMAGE_DIR, pid_alive

TIMEOUT = 1.0
# The services file's name in TFENV_RUN_DIR; the planner (startup/plan.py) hands it to the entrypoint,
# whose write_services writes the lines read below.
SERVICES = "services"
# sshd's configuration, the image's ssh/sshd_config: the one place its run directory is named (its
# PidFile's folder); the start-up plan reads it from here too.
SSHD_CONFIG = Path(IMAGE_DIR) / "ssh" / "sshd_config"
STARTUPS = re.compile(rb"\[listener\] (\d+) of (\d+)-(\d+) startups")
# The entrypoint, the image's entrypoint.sh (the Dockerfile's ENTRYPOINT runs it under tini), and
# where processes are listed.
ENTRYPOINT = str(Path(IMAGE_DIR) / "entrypoint.sh")
PROC = Path("/proc")


def run_dir() -> Path:
    """The entrypoint's run directory: TFENV_RUN_DIR, which the image's ENV sets (Docker's
    HEALTHCHECK, `docker exec` and Kubernetes exec probes all run with it). No default here: the
    Dockerfile is its one home."""
    value = os.environ.get("TFENV_RUN_DIR")
    if not value:
        raise RuntimeError("TFENV_RUN_DIR is not set (the image's ENV sets it: run the healthcheck in the "
                           "container's environment)")
    return Path(value)


def jupyter_url(runtime_dir: Path) -> str:
    """The API URL of the running server, from the newest runtime file of a live process."""
    files = sorted(runtime_dir.glob("jpserver-*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    for path in files:
        try:
            info = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if pid_alive(int(info.get("pid", 0))):
            scheme = "https" if info.get("secure") else "http"
            base_url = str(info.get("base_url") or "/")
            return f"{scheme}://127.0.0.1:{int(info['port'])}{base_url}api"
    raise RuntimeError(f"no runtime file of a running Jupyter server in {runtime_dir}")


def check_jupyter(runtime_dir: str) -> str:
    if not runtime_dir:
        raise RuntimeError(f"the {SERVICES} file does not say where Jupyter's runtime files are")
    url = jupyter_url(Path(runtime_dir))
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # our own server on loopback, often self-signed
    opener = urllib.request.build_opener(
        urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=context)
    )
    with opener.open(url, timeout=TIMEOUT) as response:
        body = json.loads(response.read())
    if "version" not in body:
        raise RuntimeError(f"{url} answered without a version")
    return f"jupyter ok ({url})"


def sshd_path(keyword: str, config: Optional[Path] = None) -> Path:
    """The path sshd_config gives KEYWORD (PidFile, AuthorizedKeysFile, Include)."""
    config = config or SSHD_CONFIG
    for line in config.read_text().splitlines():
        words = line.split()
        if len(words) == 2 and words[0] == keyword:
            return Path(words[1])
    raise RuntimeError(f"{config} names no {keyword}")


def sshd_startups() -> Tuple[int, int, int]:
    """(pending logins, MaxStartups' start, its full) from the process title of sshd's listener (its
    PidFile's pid): "[listener] 3 of 128-256 startups", OpenSSH 8.2 and later."""
    pid_file = sshd_path("PidFile")
    try:
        pid = int(pid_file.read_text().strip())
        title = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError) as exc:
        raise RuntimeError(f"no sshd listener found through {pid_file} ({exc})") from exc
    found = STARTUPS.search(title)
    if not found:
        raise RuntimeError(f"pid {pid} of {pid_file} is not sshd's listener")
    pending, start, full = (int(group) for group in found.groups())
    return pending, start, full


def check_ssh(port: int) -> str:
    """The probe takes one of sshd's slots for logins in progress (MaxStartups). When they are all
    taken, as by a port scanner's idle connections, sshd is busy, not broken: OpenSSH 8.4 answers
    "Exceeded MaxStartups", 8.2 just closes the connection. Neither may turn the container unhealthy,
    or a restart policy or an orchestrator would end everyone's kernels over someone's scanner; the
    idle connections go after sshd's LoginGraceTime. What is a failure: nothing listens (sshd gone),
    nothing answers within TIMEOUT (sshd hung: the kernel accepts for it, nobody reads), something
    else answers, or connections are closed unanswered while sshd is not at MaxStartups."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as conn:
            conn.settimeout(TIMEOUT)
            greeting = conn.recv(256)
    except ConnectionRefusedError as exc:
        raise RuntimeError(f"nothing listens on port {port}") from exc
    except ConnectionResetError:
        greeting = b""  # closed unanswered, as an EOF
    except socket.timeout as exc:
        raise RuntimeError(f"port {port} did not answer within {TIMEOUT:g}s (sshd hung?)") from exc
    if greeting.startswith(b"SSH-2.0-"):
        return f"ssh ok (port {port})"
    if greeting.startswith(b"Exceeded MaxStartups"):
        return f"ssh busy (port {port}: Exceeded MaxStartups, new connections are refused until logins finish)"
    if greeting:
        raise RuntimeError(f"port {port} answered {greeting[:20]!r}, not an SSH greeting")
    pending, start, full = sshd_startups()
    if pending < start:
        raise RuntimeError(f"port {port} closed the connection without a greeting, with only {pending} logins "
                           f"pending (MaxStartups {start}:{full})")
    return f"ssh busy (port {port}: {pending} logins pending, MaxStartups {start}:{full})"


def entrypoint_pid() -> Optional[int]:
    """The process that runs the entrypoint script: bash with it as its first argument (tini's own
    arguments name it too, and stay so after the command mode's exec, so tini does not count)."""
    for cmdline in PROC.glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue  # ended meanwhile
        if len(args) > 1 and os.path.basename(args[0]) in (b"bash", b"sh") and args[1] == ENTRYPOINT.encode():
            return int(cmdline.parent.name)
    return None


def entrypoint_running() -> bool:
    return entrypoint_pid() is not None


def per_run_path(tmpdir: str, uid: int, pid: int) -> Path:
    """The run directory of its own that the entrypoint (PID, as UID) makes where the image's cannot be
    written (--read-only --tmpfs /run --user UID; Apptainer): TMPDIR (absolute, else /tmp)/tf29-env-UID-PID.
    Its one home: the planner (startup/plan.py) names it for the entrypoint with this function."""
    if not (tmpdir.startswith("/") and len(tmpdir) > 1):
        tmpdir = "/tmp"  # noqa: S108 - a name, made by the entrypoint as the uid's own (mode 700)
    if tmpdir.endswith("/"):
        tmpdir = tmpdir[:-1]
    return Path(f"{tmpdir}/tf29-env-{uid}-{pid}")


def per_run_dir(pid: int) -> Path:
    """The per-run directory (per_run_path) of the running entrypoint PID, from its own environment."""
    proc = PROC / str(pid)
    tmpdir = ""
    try:
        for entry in (proc / "environ").read_bytes().split(b"\0"):
            if entry.startswith(b"TMPDIR="):
                tmpdir = entry[len(b"TMPDIR="):].decode(errors="replace")
        uid = int(next(line.split()[2] for line in (proc / "status").read_text().splitlines()
                       if line.startswith("Uid:")))
    except (OSError, StopIteration, IndexError, ValueError):
        return Path("/nonexistent")
    return per_run_path(tmpdir, uid, pid)


def main() -> int:
    pid = entrypoint_pid()
    if pid is None:
        print("healthy: nothing to check: the image's entrypoint is not running (a command or another "
              "entrypoint runs in its place), so no service is managed")
        return 0
    try:
        services_file = run_dir() / SERVICES
    except RuntimeError as exc:
        print(f"unhealthy: {exc}")
        return 1
    if not services_file.exists() and (per_run_dir(pid) / SERVICES).exists():
        services_file = per_run_dir(pid) / SERVICES
    try:
        services = services_file.read_text().split("\n")
    except OSError:
        print(f"unhealthy: starting ({services_file} not written yet)")
        return 1
    results = []
    for line in filter(None, (s.strip() for s in services)):
        name, _, arg = line.partition(" ")
        try:
            results.append(check_jupyter(arg) if name == "jupyter" else check_ssh(int(arg)))
        except Exception as exc:  # noqa: BLE001 - any failure is "unhealthy", said in one line
            print(f"unhealthy: {name}: {exc}")
            return 1
    print("healthy: " + ("; ".join(results) or "no services to check"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
