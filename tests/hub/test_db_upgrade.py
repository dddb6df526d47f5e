"""The hubs' databases across a JupyterHub upgrade (issue 40): a database made by JupyterHub 4
(from PyPI, in a venv cached under the project's cache folder) holding users, an admin, a group
and an API token is upgraded when the team hub of this repository starts on it (`make hub`), with
one line naming both revisions and JupyterHub's backup, which holds the 4.x database; the users
are there through the REST API, and a restart on the upgraded database says nothing more. A file
that is no database, a revision no JupyterHub here knows and a migration that fails stop `up` in
one line with a non-zero exit, the hub not started and the database as it was. The Slurm hub's
configuration (deploy/slurm/hub) upgrades the same database at its start, started by its full path
without its venv on PATH, as docs/hpc.md starts it."""

import contextlib
import fcntl
import hashlib
import os
import re
import secrets
import shutil
import signal
import sqlite3
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
from docker import DockerClient

from hub import settings as hub_settings
from testkit.net import free_host_port
from testkit.wait import wait_until
from tests.hub.hubrun import ADMIN, HUB_PYTHON, LOOPBACK, REPO, HubRun, User, ctl, hub_environment
from tf29env.core.paths import cache_dir

pytestmark = [pytest.mark.image, pytest.mark.network]

PREVIOUS_MAJOR = "4.1.6"  # the last JupyterHub 4 release
EXIT_DATABASE = 5  # hub/ctl.py's
# Pinned as the hub's venv pins them, so the 4.x venv is the same on every run; JupyterHub's own
# packages (5.x there) are left to pip.
HUB_REQUIREMENTS = REPO / "hub" / "requirements.txt"
SLURM_HUB = REPO / "deploy" / "slurm" / "hub"
PROXY_BIN_DIR = REPO / "hub" / "node_modules" / ".bin"
PIP_TIMEOUT = 900
HUB_START_TIMEOUT = 90
# What JupyterHub 4 writes: its own start (database, roles, admin, allowed users, a group), then
# a token of the admin's own, made as the hub makes one.
MAKE_DATABASE = """
import asyncio, sys
from jupyterhub import orm
from jupyterhub.app import JupyterHub

db_file, admin, token = sys.argv[1:4]

async def main():
    app = JupyterHub()
    await app.initialize([
        f"--JupyterHub.db_url=sqlite:///{db_file}", "--JupyterHub.authenticator_class=dummy",
        f"--Authenticator.admin_users={{'{admin}'}}", "--Authenticator.allowed_users={'ann', 'ben'}",
        "--JupyterHub.load_groups={'team': {'users': ['ann', 'ben'], 'properties': {'made': 'by 4'}}}"])
    orm.User.find(app.db, admin).new_api_token(token=token, note="made by JupyterHub 4")
    app.db.commit()

asyncio.run(main())
"""
HEAD = ("from alembic.script import ScriptDirectory; from jupyterhub import dbutil; "
        "print(ScriptDirectory(dbutil.ALEMBIC_DIR).get_current_head())")


def cached_venv(name: str, key: str, *install: str) -> Path:
    """A venv of the host's python3.11 with `pip install INSTALL`, made once per NAME and KEY (what
    decides its contents: the pins, not where a file of them lies) under the project's cache
    folder, so a warm run installs nothing; one maker at a time across processes."""
    python = shutil.which("python3.11")
    assert python, "python3.11 is not on PATH: the hub's venvs are made with it (make venv needs it too)"
    digest = hashlib.sha256(f"{name}\n{key}".encode()).hexdigest()[:12]
    venvs = cache_dir() / "hub-venvs"
    venvs.mkdir(exist_ok=True)
    venv = venvs / f"{name}-{digest}"
    with (venvs / f"{venv.name}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (venv / ".done").exists():
            shutil.rmtree(venv, ignore_errors=True)
            for command in ([python, "-m", "venv", str(venv)],
                            [str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", *install],
                            [str(venv / "bin" / "pip"), "check"]):
                made = subprocess.run(command, capture_output=True, text=True, timeout=PIP_TIMEOUT, check=False)
                assert made.returncode == 0, f"{' '.join(command)}:\n{made.stdout[-2000:]}\n{made.stderr[-3000:]}"
            (venv / ".done").touch()
    return venv


def revision(db: Path) -> str:
    with contextlib.closing(sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)) as conn:
        return str(conn.execute("SELECT version_num FROM alembic_version").fetchone()[0])


def set_revision(db: Path, value: str) -> None:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        conn.execute("UPDATE alembic_version SET version_num = ?", (value,))
        conn.commit()


def head(python: Path) -> str:
    found = subprocess.run([str(python), "-c", HEAD], capture_output=True, text=True, timeout=120, check=True)
    return found.stdout.strip()


def backups(state: Path) -> list[Path]:
    return sorted(path for path in state.iterdir() if re.fullmatch(r"jupyterhub\.sqlite\.\.?[0-9-]+(\.[0-9])?",
                                                                    path.name))


@dataclass(frozen=True)
class OldDatabase:
    """A hub database of JupyterHub 4, and what the tests know of it."""

    path: Path
    token: str  # the admin's
    revision: str  # JupyterHub 4's head
    head: str  # hub/.venv's JupyterHub's head: what the upgrade leads to

    def copy_to(self, state: Path) -> Path:
        state.mkdir(mode=0o700, parents=True)
        db = hub_settings.db_file(state)
        shutil.copyfile(self.path, db)
        return db


@pytest.fixture(scope="module")
def old_database(hub_tools: None, tmp_path_factory: pytest.TempPathFactory) -> OldDatabase:
    constraints = tmp_path_factory.mktemp("pins") / "constraints.txt"
    constraints.write_text("".join(line + "\n" for line in HUB_REQUIREMENTS.read_text().splitlines()
                                   if not re.match(r"jupyterhub(-[\w-]+)?==", line, re.IGNORECASE)))
    venv = cached_venv(f"jupyterhub-{PREVIOUS_MAJOR}", f"jupyterhub=={PREVIOUS_MAJOR}\n{constraints.read_text()}",
                       f"jupyterhub=={PREVIOUS_MAJOR}", "-c", str(constraints))
    work = tmp_path_factory.mktemp("jupyterhub4")
    db, token = work / "jupyterhub.sqlite", f"tf29-{secrets.token_hex(20)}"
    made = subprocess.run([str(venv / "bin" / "python"), "-c", MAKE_DATABASE, str(db), ADMIN, token], cwd=work,
                          capture_output=True, text=True, timeout=120, check=False)
    assert made.returncode == 0, made.stdout[-2000:] + made.stderr[-3000:]
    found = OldDatabase(db, token, revision(db), head(HUB_PYTHON))
    assert found.revision == head(venv / "bin" / "python")
    assert found.revision != found.head, f"JupyterHub {PREVIOUS_MAJOR} and the hub's share a schema: nothing to test"
    return found


def assert_users_kept(url: str, token: str) -> None:
    """The 4.x database's users, admin, group and token, through the hub's REST API."""
    headers = {"Authorization": f"token {token}"}
    users = requests.get(f"{url}/hub/api/users", headers=headers, timeout=30)
    assert users.status_code == 200, users.text
    assert {user["name"]: user["admin"] for user in users.json()} == {ADMIN: True, "ann": False, "ben": False}
    groups = requests.get(f"{url}/hub/api/groups", headers=headers, timeout=30)
    assert groups.status_code == 200, groups.text
    assert [(group["name"], sorted(group["users"]), group["properties"]) for group in groups.json()] == [
        ("team", ["ann", "ben"], {"made": "by 4"})]


def tf29_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("tf29-hub:")]


@pytest.fixture
def hub_run(hub_tools: None, docker_client: DockerClient, image: str, tmp_path: Path) -> Iterator[HubRun]:
    """A team hub's settings on a state folder of its own; taken down with all it made."""
    run = HubRun(docker_client, hub_environment(image, tmp_path / "state"))
    try:
        yield run
    finally:
        run.remove_everything()


def test_the_team_hub_upgrades_a_jupyterhub_4_database_at_start(old_database: OldDatabase, hub_run: HubRun) -> None:
    db = old_database.copy_to(hub_run.state)
    started = hub_run.make("hub")
    assert started.returncode == 0, f"make hub: {started.stdout[-2000:]}\n{started.stderr[-2000:]}"
    [backup] = backups(hub_run.state)
    lines = tf29_lines(started.stdout)
    assert lines[0] == (f"tf29-hub: upgraded the hub's database from revision {old_database.revision} to "
                        f"{old_database.head}; backup: {backup}"), started.stdout
    assert len(lines) == 2 and lines[1].startswith(f"tf29-hub: the hub is up: {hub_run.url}/"), started.stdout
    assert revision(db) == old_database.head
    assert backup.read_bytes() == old_database.path.read_bytes()
    assert revision(backup) == old_database.revision
    assert_users_kept(hub_run.url, old_database.token)
    # The admin's token works on their own too, and the hub's admin from HUB_ADMIN_USERS is that user.
    admin = User(ADMIN, "", token=old_database.token)
    assert hub_run.api(admin, "GET", "/user").json()["name"] == ADMIN

    # A restart on the upgraded database upgrades nothing and says nothing about it.
    assert hub_run.make("hub-down").returncode == 0
    again = hub_run.make("hub")
    assert again.returncode == 0, f"make hub: {again.stdout[-2000:]}\n{again.stderr[-2000:]}"
    lines = tf29_lines(again.stdout)
    assert len(lines) == 1 and lines[0].startswith(f"tf29-hub: the hub is up: {hub_run.url}/"), again.stdout
    assert "database" not in again.stdout + again.stderr
    assert backups(hub_run.state) == [backup]
    assert_users_kept(hub_run.url, old_database.token)


def refused(run: HubRun, *words: str) -> str:
    """`up` stops with one line naming the problem and EXIT_DATABASE, with the hub and proxy not running."""
    result = ctl(run.env, "up")
    assert result.returncode == EXIT_DATABASE, result.stdout + result.stderr
    # The box's notes (no NVIDIA runtime, the engine's memlock limit) may come before it.
    lines = result.stderr.strip().splitlines()
    errors = [line for line in lines if "ERROR" in line]
    assert errors == lines[-1:] and lines[-1].startswith("tf29-hub: ERROR: "), result.stderr
    for word in words:
        assert word in lines[-1], lines[-1]
    assert result.stdout == ""
    assert ctl(run.env, "status").returncode == 1
    try:
        answer: requests.Response | None = requests.get(run.url, timeout=5)
    except requests.ConnectionError:
        answer = None
    assert answer is None, f"something answers on the hub's port: {answer}"
    return lines[-1]


def test_a_file_that_is_no_database_stops_the_start(hub_run: HubRun) -> None:
    hub_run.state.mkdir(mode=0o700)
    db = hub_settings.db_file(hub_run.state)
    garbage = secrets.token_bytes(8192)
    db.write_bytes(garbage)
    refused(hub_run, str(db), "cannot be read", "file is not a database", "nothing was changed")
    assert db.read_bytes() == garbage
    assert backups(hub_run.state) == []


def test_a_revision_this_jupyterhub_does_not_know_stops_the_start(old_database: OldDatabase, hub_run: HubRun) -> None:
    db = old_database.copy_to(hub_run.state)
    set_revision(db, "0123456789ab")  # what a newer JupyterHub's schema would be, to this one
    before = db.read_bytes()
    refused(hub_run, str(db), "schema revision 0123456789ab", "does not know", "nothing was changed")
    assert db.read_bytes() == before
    assert backups(hub_run.state) == []


def test_a_failed_migration_puts_the_database_back_as_it_was(old_database: OldDatabase, hub_run: HubRun) -> None:
    """The first of the migrations to 5.x runs and is committed, the second fails (its column is
    there already, as a hand-edited database could have it): the file is put back from the backup."""
    db = old_database.copy_to(hub_run.state)
    with contextlib.closing(sqlite3.connect(db)) as conn:
        conn.execute("ALTER TABLE roles ADD COLUMN managed_by_auth BOOLEAN")
        conn.commit()
    before = db.read_bytes()
    line = refused(hub_run, str(db), f"from revision {old_database.revision} to {old_database.head} failed",
                   "duplicate column name: managed_by_auth", "it is back as it was")
    [backup] = backups(hub_run.state)
    log = hub_settings.logs_dir(hub_run.state) / "db-upgrade.log"
    assert line.endswith(f"(log: {log}); it is back as it was; its backup: {backup}"), line
    assert "Running upgrade" in log.read_text()  # a migration did run before the one that failed
    assert db.read_bytes() == before
    assert backup.read_bytes() == before
    assert revision(db) == old_database.revision


def test_the_slurm_hub_upgrades_a_jupyterhub_4_database_at_start(old_database: OldDatabase,
                                                                 tmp_path: Path) -> None:
    """deploy/slurm/hub/jupyterhub_config.py in a venv of its own pins, started by the venv's full
    path with only the proxy on PATH; PAM and Slurm are not needed until someone logs in."""
    requirements = SLURM_HUB / "requirements.txt"
    venv = cached_venv("slurm-hub", requirements.read_text(), "--no-deps", "-r", str(requirements))
    state = tmp_path / "state"
    db = old_database.copy_to(state)
    url = f"http://{LOOPBACK}:{free_host_port()}"
    env = {"HOME": str(tmp_path), "LANG": "C.UTF-8", "PATH": os.pathsep.join([str(PROXY_BIN_DIR), "/usr/bin", "/bin"]),
           "TF29_HUB_STATE_DIR": str(state), "TF29_HUB_BIND_URL": url, "TF29_HUB_CONNECT": LOOPBACK}
    log = tmp_path / "hub.log"
    with log.open("wb") as out:
        hub = subprocess.Popen(
            [str(venv / "bin" / "jupyterhub"), "-f", str(SLURM_HUB / "jupyterhub_config.py"),
             f"--JupyterHub.hub_ip={LOOPBACK}", f"--JupyterHub.hub_port={free_host_port()}",
             f"--ConfigurableHTTPProxy.api_url=http://{LOOPBACK}:{free_host_port()}"],
            cwd=state, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        def answered() -> str | None:
            if hub.poll() is not None:
                return "exited"
            return "up" if requests.get(f"{url}/hub/api", timeout=5).status_code == 200 else None

        outcome = wait_until(answered, timeout=HUB_START_TIMEOUT, interval=0.5, what="the Slurm hub answering")
        assert outcome == "up", f"the Slurm hub exited at start:\n{log.read_text(errors='replace')[-3000:]}"
        [backup] = backups(state)
        assert revision(db) == old_database.head
        assert backup.read_bytes() == old_database.path.read_bytes()
        assert_users_kept(url, old_database.token)
    finally:
        stop(hub, state / "proxy.pid")


def stop(hub: subprocess.Popen[bytes], proxy_pid_file: Path) -> None:
    """Stop the hub (it stops the proxy it started); the proxy too where the hub could not."""
    hub.terminate()
    try:
        hub.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(hub.pid, signal.SIGKILL)
        hub.wait(10)
    with contextlib.suppress(OSError, ValueError):
        proxy = int(proxy_pid_file.read_text().strip())
        if "configurable-http-proxy" in Path(f"/proc/{proxy}/cmdline").read_bytes().decode(errors="replace"):
            os.kill(proxy, signal.SIGTERM)
