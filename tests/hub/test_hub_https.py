"""The team hub over HTTPS and with the team's data (issue 42): a hub serving the admin's certificate
(made by openssl for 127.0.0.1, signed by a team CA) is reached with that CA and refused with
another, answers no plain HTTP, and lets a member sign up, log in through the form and start their
server, which reads the team data at ~/data and cannot write it, as jovyan or as root. A hub with
HUB_TLS=self-signed makes its certificate once in its state folder, prints the fingerprint it
serves, and keeps the certificate across a restart. Bad certificates and team data: one line each."""

import contextlib
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from docker import DockerClient

from hub import tls
from testkit.tlscerts import Pair, fingerprint, make_ca, make_server, served_fingerprint
from tests.hub.conftest import start_hub
from tests.hub.hubrun import ADMIN, LOOPBACK, HubRun, hub_environment
from tests.hub.test_badconfig import refused

pytestmark = pytest.mark.image

DATA_TEXT = "the team's dataset, version 3\n"
MEMBER = "erin"


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Pair, Pair]:
    """The team's CA and the hub's certificate for 127.0.0.1 it signed."""
    folder = tmp_path_factory.mktemp("certs")
    ca = make_ca(folder, "team")
    return ca, make_server(folder, ca, "hub")


@pytest.fixture(scope="module")
def team_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("team-data")
    (folder / "README.txt").write_text(DATA_TEXT)
    # Writable for all on the host: only the read-only mount can stop the servers' writes.
    folder.chmod(0o777)
    (folder / "README.txt").chmod(0o666)
    return folder


@pytest.fixture(scope="module")
def team_shared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("team-shared")
    folder.chmod(0o777)  # the admin's part: writable by the servers' jovyan (docs/hub.md)
    return folder


@pytest.fixture(scope="module")
def https_hub(hub_tools: None, docker_client: DockerClient, image: str, tmp_path_factory: pytest.TempPathFactory,
              certs: tuple[Pair, Pair], team_data: Path, team_shared: Path) -> Iterator[HubRun]:
    ca, pair = certs
    with pytest.MonkeyPatch.context() as patch:
        # requests in this process (HubRun's sign-up, log-in and API calls) trust the team's CA, as members would.
        patch.setenv("REQUESTS_CA_BUNDLE", str(ca.cert))
        yield from start_hub(docker_client, image, tmp_path_factory.mktemp("hub-state"), HUB_SSL_CERT=str(pair.cert),
                             HUB_SSL_KEY=str(pair.key), HUB_TEAM_DATA=str(team_data),
                             HUB_TEAM_SHARED=str(team_shared))


def curl(url: str, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["curl", "--silent", "--show-error", "--fail", "--max-time", "30", *options, url],
                          capture_output=True, text=True, timeout=60, check=False)


def test_the_url_is_https(https_hub: HubRun) -> None:
    assert https_hub.url.startswith("https://127.0.0.1:")  # HubRun.up saw `make hub` print it so


def test_login_page_with_the_teams_ca(https_hub: HubRun, certs: tuple[Pair, Pair]) -> None:
    page = curl(f"{https_hub.url}/hub/login", "--cacert", str(certs[0].cert))
    assert page.returncode == 0, page.stderr
    assert 'name="username"' in page.stdout and 'name="password"' in page.stdout


def test_another_ca_is_refused(https_hub: HubRun, tmp_path: Path) -> None:
    stranger = make_ca(tmp_path, "stranger")
    page = curl(f"{https_hub.url}/hub/login", "--cacert", str(stranger.cert))
    assert page.returncode == 60, page.stderr  # curl: the peer's certificate cannot be verified
    assert "certificate" in page.stderr


def test_no_plain_http(https_hub: HubRun) -> None:
    page = curl(f"http://{LOOPBACK}:{https_hub.env['HUB_PORT']}/hub/login")
    assert page.returncode != 0, page.stdout[:500]
    assert 'name="username"' not in page.stdout


@pytest.fixture(scope="module")
def member(https_hub: HubRun) -> str:
    """The admin and a member sign up and log in through the hub's forms, over HTTPS; the member's server runs."""
    admin = https_hub.signup(ADMIN)
    assert https_hub.login(admin), "the admin could not log in over HTTPS"
    https_hub.make_token(admin)
    user = https_hub.enrol(MEMBER)
    https_hub.start(user, profile="cpu")
    https_hub.wait_ready(user)
    return MEMBER


def test_a_member_logs_in_and_reaches_their_server(https_hub: HubRun, member: str) -> None:
    user = https_hub.users[member]
    login_cookies = [cookie for cookie in user.session.cookies if cookie.name == "jupyterhub-hub-login"]
    assert login_cookies and all(cookie.secure for cookie in login_cookies), "the login cookie is not HTTPS-only"
    status = https_hub.server_get(user, member, "api/status")
    assert status.status_code == 200, status.text
    assert "last_activity" in status.json()


def test_team_data_is_read_only_for_jovyan_and_root(https_hub: HubRun, member: str) -> None:
    assert https_hub.shell(member, "cat", "/home/jovyan/data/README.txt") == DATA_TEXT
    container = https_hub.container(member)
    for who in ("jovyan", "root"):
        for command in (["touch", "/home/jovyan/data/new"], ["sh", "-c", "echo x >> /home/jovyan/data/README.txt"]):
            code, output = container.exec_run(command, user=who)
            assert code != 0, f"{who} could write ~/data: {command}"
            assert b"Read-only file system" in output, output
    mount = next(m for m in container.attrs["Mounts"] if m["Destination"] == "/home/jovyan/data")
    assert mount["RW"] is False


def test_team_shared_is_writable(https_hub: HubRun, member: str, team_shared: Path) -> None:
    https_hub.shell(member, "sh", "-c", "echo results > /home/jovyan/shared/from-erin.txt")
    assert (team_shared / "from-erin.txt").read_text() == "results\n"


def test_bad_certificate_and_team_data_refused(hub_tools: None, image: str, tmp_path: Path,
                                               certs: tuple[Pair, Pair]) -> None:
    """Through hub/ctl.py up: one line, exit 2, nothing started (tests/hub/test_badconfig.py's check)."""
    ca, pair = certs
    other = make_server(tmp_path, ca, "other")
    refused(hub_environment(image, tmp_path / "state", HUB_SSL_CERT=str(pair.cert), HUB_SSL_KEY=str(other.key)),
            2, "HUB_SSL_KEY=", "is not the key of HUB_SSL_CERT=")
    refused(hub_environment(image, tmp_path / "state", HUB_SSL_CERT=str(pair.cert)), 2,
            "HUB_SSL_CERT is given without HUB_SSL_KEY")
    refused(hub_environment(image, tmp_path / "state", HUB_TEAM_DATA=str(tmp_path / "no-such")), 2,
            f"HUB_TEAM_DATA={tmp_path / 'no-such'} is not a folder on this host")


def test_self_signed_certificate_made_once_and_kept(hub_tools: None, docker_client: DockerClient, image: str,
                                                    tmp_path: Path) -> None:
    state = tmp_path / "state"
    with contextlib.contextmanager(start_hub)(docker_client, image, state, HUB_TLS="self-signed") as run:
        cert, key = tls.cert_file(state), tls.key_file(state)
        assert stat.S_IMODE(key.stat().st_mode) == 0o600
        served = served_fingerprint(LOOPBACK, int(run.env["HUB_PORT"]))
        assert served == fingerprint(cert)
        line = f"tf29-hub: HTTPS certificate SHA-256 fingerprint: {served}"
        assert line in run.hub_log().splitlines(), run.hub_log()[-2000:]
        # A member who was given the certificate (or checked its fingerprint) verifies the hub with it.
        page = curl(f"{run.url}/hub/login", "--cacert", str(cert))
        assert page.returncode == 0, page.stderr
        made = cert.read_bytes()

        assert run.make("hub-down").returncode == 0
        again = run.make("hub")
        assert again.returncode == 0, again.stdout + again.stderr
        assert line in again.stdout.splitlines(), again.stdout
        assert "made the hub's self-signed certificate" not in again.stdout
        assert cert.read_bytes() == made
        assert served_fingerprint(LOOPBACK, int(run.env["HUB_PORT"])) == served
