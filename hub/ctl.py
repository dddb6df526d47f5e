"""Start, stop and inspect the team hub: `python -m hub.ctl up|down|status|gpus` (hub.mk runs it in
hub/.venv); `gpus` says who holds each GPU of the host (compose/holders.py), the hub's users by
the name their server is labelled with.
`up` serves HUB_IMAGE, else the team's image (.env's TF29ENV_IMAGE, as compose reads
it). It checks everything that can be checked before anything starts (settings, the Docker engine,
the image, free ports, the locked-memory limit), snapshots the users' volumes and the state folder
when the image differs from the one served last (hub/upgradesnap.py), upgrades the hub's database
when its schema is older than the installed JupyterHub's (hub/dbupgrade.py), then starts the proxy
and the hub in the background (logs and pid files in the state folder) and waits until the hub
answers. A problem is one line on stderr and a non-zero exit, with nothing left half-started."""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

import docker
import docker.errors
import requests

from compose import gpus, holders, memlock
from compose.rollout import IMAGE_VARIABLE
from hub import REPO, dbupgrade, gpuplan, upgradesnap
from hub import settings as hub_settings
from hub.settings import EXIT_CONFIG, HUB_DIR, HUB_LABEL, PROFILE_LABEL, USER_LABEL, HubConfigError, Settings
from hub.sshaccess import port_free

EXIT_ENGINE = 3  # no Docker engine answers
EXIT_START = 4  # the proxy or the hub did not come up (their logs say why)
EXIT_DATABASE = 5  # the hub's database cannot be read or upgraded (left as it was)
EXIT_SNAPSHOT = 6  # a new image, and no snapshot of the users' volumes and the state could be taken
PROXY_BIN = HUB_DIR / "node_modules" / ".bin" / "configurable-http-proxy"
HUB_BIN = HUB_DIR / ".venv" / "bin" / "jupyterhub"
CONFIG_FILE = HUB_DIR / "jupyterhub_config.py"
START_TIMEOUT = 90.0
STOP_TIMEOUT = 20.0
# The processes ctl starts, by pid file name, and a word their command line must hold: a pid
# file left from before a reboot must never make `down` signal some other process.
PROCESSES = {"hub": "jupyterhub", "proxy": "configurable-http-proxy"}


class StartError(Exception):
    def __init__(self, message: str, exit_code: int = EXIT_CONFIG) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def pid_file(state: Path, name: str) -> Path:
    return hub_settings.run_dir(state) / f"{name}.pid"


def running_pid(state: Path, name: str) -> int | None:
    """The pid in NAME's pid file, when that process is alive and is NAME; else None."""
    try:
        pid = int(pid_file(state, name).read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except (OSError, ValueError):
        return None
    return pid if PROCESSES[name] in cmdline else None


def engine() -> docker.DockerClient:
    try:
        client = docker.from_env(timeout=60)
        client.ping()
    except docker.errors.DockerException as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise StartError(f"no Docker engine answers ({reason}); start dockerd or fix DOCKER_HOST",
                         EXIT_ENGINE) from None
    return client


def with_team_image(environ: Mapping[str, str], project: Path = REPO) -> tuple[dict[str, str], str]:
    """ENVIRON with HUB_IMAGE, where it is unset, the team's image: TF29ENV_IMAGE as compose reads it (the
    environment, then PROJECT's .env, which the kit's install.sh writes; else compose's default). And the
    setting the image came from, for messages."""
    if environ.get("HUB_IMAGE", "").strip():
        return dict(environ), "HUB_IMAGE"
    image = memlock.setting(IMAGE_VARIABLE, environ, memlock.read_env_file(project / ".env"))
    return {**environ, "HUB_IMAGE": image}, IMAGE_VARIABLE


def check_image(client: docker.DockerClient, image: str, setting: str = "HUB_IMAGE") -> None:
    try:
        client.images.get(image)
    except docker.errors.ImageNotFound:
        raise StartError(f"{setting}={image} is not on this Docker engine: build it (make build IMAGE={image}), "
                         "load it (docker load -i) or name one that is (HUB_IMAGE, docker images)") from None
    except docker.errors.APIError as exc:
        raise StartError(f"{setting}={image}: {exc.explanation or exc}") from None


def check_port(name: str, address: str, port: int) -> None:
    if not port_free(address, port):
        raise StartError(f"{name}={port}: {address}:{port} is in use or cannot be bound; choose another port")


def gpu_capable(client: docker.DockerClient) -> bool:
    """Whether the engine can hand containers GPUs (compose/gpus.py decides it for `make run` too)."""
    return gpus.gpu_capable(client.info().get("Runtimes"))


def ensure_network(client: docker.DockerClient, name: str) -> str:
    """The hub's bridge network (made when missing); its gateway, the host's address on it."""
    try:
        network = client.networks.get(name)
    except docker.errors.NotFound:
        network = client.networks.create(name, driver="bridge", labels={HUB_LABEL: "1"})
    config = network.attrs.get("IPAM", {}).get("Config") or [{}]
    gateway = str(config[0].get("Gateway") or "")
    if not gateway:
        raise StartError(f"HUB_NETWORK={name}: the network has no gateway address (use a bridge network)")
    return gateway


def ensure_state(state: Path) -> None:
    """The state folder and its secrets: mode 700 (600 for files), made or tightened at every start."""
    for folder in (state, hub_settings.logs_dir(state), hub_settings.run_dir(state), hub_settings.users_dir(state)):
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        folder.chmod(0o700)
    token = hub_settings.proxy_token_file(state)
    if not token.exists():
        fd = os.open(token, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_hex(32) + "\n")
    for secret in (token, hub_settings.cookie_secret_file(state), hub_settings.db_file(state)):
        if secret.exists():
            secret.chmod(0o600)


def decide_memlock(team: Settings) -> int:
    """The memlock limit the servers get: HUB_MEMLOCK, or what the engine grants (compose/memlock.py)."""
    try:
        limit, note = memlock.decide(team.memlock, memlock.engine_limit(team.image))
    except memlock.MemlockError as exc:
        raise StartError(str(exc).replace(memlock.VARIABLE, "HUB_MEMLOCK").replace("in .env", "")) from None
    if note:
        print(f"tf29-hub: this Docker engine grants at most {limit} bytes of locked memory: "
              "the servers start with that (set HUB_MEMLOCK to keep this quiet)", file=sys.stderr)
    return limit


def spawn(command: list[str], log: Path, env: Mapping[str, str], cwd: Path) -> subprocess.Popen[bytes]:
    """Start COMMAND in its own session (it outlives make), output appended to LOG."""
    with log.open("ab") as out:
        return subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                env=dict(env), cwd=cwd, start_new_session=True)


def terminate(processes: Mapping[str, subprocess.Popen[bytes]]) -> None:
    """End what this start began (the pid files cannot be trusted yet: an exec in progress
    shows an empty command line)."""
    for process in processes.values():
        process.terminate()
    for process in processes.values():
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()


def last_error(log: Path) -> str:
    """The last line of LOG that looks like the reason (for a one-line message), else its last line."""
    try:
        lines = [line.strip() for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "no log"
    errors = [line for line in lines if "[E " in line or "[C " in line or "Error" in line]
    return (errors or lines or ["empty log"])[-1][:300]


def wait_ready(team: Settings, processes: Mapping[str, subprocess.Popen[bytes]]) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    url = team.local_url + "hub/health"
    while time.monotonic() < deadline:
        for name, process in processes.items():
            if process.poll() is not None:
                log = hub_settings.logs_dir(team.state_dir) / f"{name}.log"
                raise StartError(f"the {name} exited at start: {last_error(log)} (log: {log})", EXIT_START)
        with contextlib.suppress(requests.RequestException), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the hub's certificate need not name loopback: only liveness here
            if requests.get(url, timeout=5, verify=False).status_code == 200:  # noqa: S501
                return
        time.sleep(0.5)
    log = hub_settings.logs_dir(team.state_dir) / "hub.log"
    raise StartError(f"the hub did not answer {url} within {START_TIMEOUT:.0f}s: {last_error(log)} (log: {log})",
                     EXIT_START)


def up(given: Mapping[str, str]) -> int:
    environ, image_setting = with_team_image(given)
    team = hub_settings.load(environ)
    hub_settings.check_host(team)
    state = team.state_dir
    if running_pid(state, "hub") and running_pid(state, "proxy"):
        print(f"tf29-hub: already running: {team.public_url}")
        return 0
    stop(state)  # one of the two alone is a broken start: begin afresh
    for binary, target in ((HUB_BIN, "hub-venv"), (PROXY_BIN, "hub-proxy")):
        if not binary.exists():
            raise StartError(f"{binary} is missing: run `make {target}` (or `make hub`, which makes it)")
    client = engine()
    check_image(client, team.image, image_setting)
    check_port("HUB_PORT", team.address, team.port)
    check_port("HUB_PROXY_API_PORT", "127.0.0.1", team.proxy_api_port)
    plan = gpuplan.load(team, gpu_capable(client))
    for note in plan.notes:
        print(f"tf29-hub: {note}", file=sys.stderr)
    profiles = tuple(profile.name for profile in plan.profiles)
    gateway = ensure_network(client, team.network)
    check_port("HUB_INTERNAL_PORT", gateway, team.internal_port)
    limit = decide_memlock(team)
    os.umask(0o077)
    ensure_state(state)
    for line in hub_settings.prepare_tls(team):
        print(f"tf29-hub: {line}")
    logs = hub_settings.logs_dir(state)
    image_id = str(client.images.get(team.image).id)
    # Before the database upgrade: the state's tar then holds the database as the last hub left it.
    try:
        for line in upgradesnap.before_new_image(client, team, image_id):
            print(line)
    except upgradesnap.HubSnapshotError as exc:
        raise StartError(str(exc), EXIT_SNAPSHOT) from None
    try:
        upgraded = dbupgrade.upgrade(hub_settings.db_file(state), HUB_BIN, logs / "db-upgrade.log", environ)
    except dbupgrade.DbUpgradeError as exc:
        raise StartError(str(exc), EXIT_DATABASE) from None
    if upgraded:
        print(f"tf29-hub: {upgraded}")
    token = hub_settings.proxy_token_file(state).read_text().strip()
    base_env = {key: value for key, value in environ.items() if not key.startswith("CONFIGPROXY_")}
    proxy = spawn(
        [str(PROXY_BIN), "--ip", team.address, "--port", str(team.port),
         "--api-ip", "127.0.0.1", "--api-port", str(team.proxy_api_port),
         "--default-target", f"http://{gateway}:{team.internal_port}",
         "--error-target", f"http://{gateway}:{team.internal_port}/hub/error",
         *team.proxy_tls_args],
        logs / "proxy.log", {**base_env, "CONFIGPROXY_AUTH_TOKEN": token}, state)
    pid_file(state, "proxy").write_text(f"{proxy.pid}\n")
    hub_env = {**base_env, "HUB_MEMLOCK": str(limit), "HUB_PROFILES": ",".join(profiles),
               "HUB_STATE_DIR": str(state),
               "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), environ.get("PYTHONPATH")]))}
    hub = spawn([str(HUB_BIN), "-f", str(CONFIG_FILE)], logs / "hub.log", hub_env, state)
    pid_file(state, "hub").write_text(f"{hub.pid}\n")
    processes = {"hub": hub, "proxy": proxy}
    try:
        wait_ready(team, processes)
    except StartError:
        terminate(processes)
        stop(state)
        raise
    upgradesnap.record_image(state, image_id)
    print(f"tf29-hub: the hub is up: {team.public_url} (logs: {logs})")
    return 0


def stop(state: Path) -> list[str]:
    """SIGTERM the hub, then the proxy; SIGKILL what outlives STOP_TIMEOUT. The names stopped."""
    stopped = []
    for name in ("hub", "proxy"):
        pid = running_pid(state, name)
        if pid is not None:
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + STOP_TIMEOUT
            while running_pid(state, name) == pid and time.monotonic() < deadline:
                time.sleep(0.2)
            if running_pid(state, name) == pid:
                os.kill(pid, signal.SIGKILL)
            stopped.append(name)
        with contextlib.suppress(FileNotFoundError):
            pid_file(state, name).unlink()
    return stopped


def down(environ: Mapping[str, str]) -> int:
    team = hub_settings.load(environ)
    stopped = stop(team.state_dir)
    print(f"tf29-hub: stopped {' and '.join(stopped)}" if stopped else "tf29-hub: not running")
    return 0


def status(environ: Mapping[str, str]) -> int:
    team = hub_settings.load(environ)
    pids = {name: running_pid(team.state_dir, name) for name in PROCESSES}
    for name, pid in pids.items():
        print(f"{name}: {'running, pid ' + str(pid) if pid else 'stopped'}")
    return 0 if all(pids.values()) else 1


def hub_user(prefix: str) -> holders.Describer:
    """The hub user a server's container belongs to: the spawner labels it with its profile and the
    user's name, and names it PREFIX-USER (DockerSpawner's template, the name escaped: ann.lee is
    ann-2elee). A server started before the user label had one is named by its container's name."""

    def describe(container: holders.ContainerInfo) -> str | None:
        if PROFILE_LABEL not in container.labels or not container.name.startswith(f"{prefix}-"):
            return None
        return f"hub user {container.labels.get(USER_LABEL) or container.name.removeprefix(f'{prefix}-')}"

    return describe


def gpus_held(environ: Mapping[str, str]) -> int:
    """Who holds each GPU: the hub's users, compose's members, other containers and host processes."""
    team = hub_settings.load(environ)
    return holders.main([], describers=(hub_user(team.name_prefix), holders.compose_member))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hub.ctl", description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("up", "down", "status", "gpus"))
    args = parser.parse_args(argv)
    actions = {"up": up, "down": down, "status": status, "gpus": gpus_held}
    try:
        return actions[args.command](os.environ)
    except HubConfigError as exc:
        print(f"tf29-hub: ERROR: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except StartError as exc:
        print(f"tf29-hub: ERROR: {exc}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
