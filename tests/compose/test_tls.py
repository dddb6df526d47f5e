"""HTTPS for compose members (.env's TF29ENV_TLS), as a person reaches them with curl: with
`self-signed`, the member's own certificate (copied out of its container) verifies its Jupyter,
`make up` prints an https:// URL, and plain HTTP to the port gets no answer; with `team`, the team
CA verifies it and another CA is refused. One member under `docker compose` v2 (the compose file's
parsing under both implementations is test_files.py); tests run in file order on one project."""

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from docker import DockerClient

from testkit.tlscerts import Pair, make_ca, make_server
from tests.compose.team import IMPLEMENTATIONS, Member, Team, copy_project, member_py

# Where GEN_CERT's certificate lies in a member (image/python/tf29image/startup/services.py: cert_file).
MEMBER_CERT = "$JUPYTER_RUNTIME_DIR/tf29-env-cert.pem"


def curl(url: str, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["curl", "--silent", "--show-error", "--fail", "--max-time", "30", *options, url],
                          capture_output=True, text=True, timeout=60, check=False)


@pytest.fixture(scope="module")
def ann(members: tuple[Member, Member]) -> Member:
    return members[0]


@pytest.fixture(scope="module")
def tls_team(docker_client: DockerClient, image: str, tmp_path_factory: pytest.TempPathFactory,
             ann: Member) -> Iterator[Team]:
    project = copy_project(tmp_path_factory.mktemp("tls-team"))
    for example in ("alice", "bob"):
        assert member_py(project, "remove", example).returncode == 0
    added = member_py(project, "add", ann.name, "--uid", str(ann.uid), "--gid", str(ann.gid), "--jupyter-port",
                      str(ann.jupyter_port), "--ssh-port", str(ann.ssh_port), "--ssh-key", f"{ann.key.private}.pub",
                      "--gpus", "1")
    assert added.returncode == 0, added.stderr
    team = Team(docker_client, project, image, IMPLEMENTATIONS["v2"])
    team.env["TF29ENV_TLS"] = "self-signed"
    try:
        up = team.make("up")
        team.up_log = up.stdout
        yield team
    finally:
        team.remove_everything()


@pytest.fixture(scope="module")
def team_certs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Pair, Pair, Pair]:
    """The team's CA, the certificate it signed for the box (127.0.0.1), and a stranger's CA."""
    folder = tmp_path_factory.mktemp("certs")
    ca = make_ca(folder, "team")
    return ca, make_server(folder, ca, "box"), make_ca(folder, "stranger")


def test_self_signed_member_speaks_https_only(tls_team: Team, ann: Member, tmp_path: Path) -> None:
    container = tls_team.wait_healthy(ann.name)
    token = tls_team.token(ann.name)
    assert f"{ann.name}: JupyterLab https://localhost:{ann.jupyter_port}/lab?token={token}" in tls_team.up_log
    code, pem = container.exec_run(["sh", "-c", f'cat "{MEMBER_CERT}"'], user="root")
    assert code == 0, pem
    cert = tmp_path / "ann.pem"
    cert.write_bytes(pem)
    api = f"https://127.0.0.1:{ann.jupyter_port}/api/status"
    answered = curl(api, "--cacert", str(cert), "-H", f"Authorization: token {token}")
    assert answered.returncode == 0, answered.stderr
    assert '"started"' in answered.stdout
    unverified = curl(api, "-H", f"Authorization: token {token}")
    assert unverified.returncode == 60, unverified.stderr  # curl: the peer's certificate cannot be verified
    plain = curl(f"http://127.0.0.1:{ann.jupyter_port}/api/status", "-H", f"Authorization: token {token}")
    assert plain.returncode != 0
    assert '"started"' not in plain.stdout


def test_team_certificate_is_served_and_checked(tls_team: Team, ann: Member,
                                                team_certs: tuple[Pair, Pair, Pair]) -> None:
    """`make up` again with the team's certificate: the member is recreated with it."""
    ca, box, stranger = team_certs
    tls_team.env.update({"TF29ENV_TLS": "team", "TF29ENV_TLS_CERT": str(box.cert), "TF29ENV_TLS_KEY": str(box.key)})
    up = tls_team.make("up")
    assert f"https://localhost:{ann.jupyter_port}/lab?token=" in up.stdout
    tls_team.wait_healthy(ann.name)
    api = f"https://127.0.0.1:{ann.jupyter_port}/api/status"
    token = ["-H", f"Authorization: token {tls_team.token(ann.name)}"]
    answered = curl(api, "--cacert", str(ca.cert), *token)
    assert answered.returncode == 0, f"{answered.stderr} (the image must know JUPYTER_CERT_FILE)"
    refused = curl(api, "--cacert", str(stranger.cert), *token)
    assert refused.returncode == 60, refused.stderr


def test_key_of_another_certificate_stops_make_up(tls_team: Team, team_certs: tuple[Pair, Pair, Pair]) -> None:
    _, box, stranger = team_certs
    tls_team.env.update({"TF29ENV_TLS": "team", "TF29ENV_TLS_CERT": str(box.cert),
                         "TF29ENV_TLS_KEY": str(stranger.key)})
    done = tls_team.make("up", check=False)
    assert done.returncode != 0
    said = [line for line in done.stderr.splitlines() if not line.startswith("make")]
    assert said == [f"tf29-env: ERROR: TF29ENV_TLS_KEY={stranger.key} is not the key of "
                    f"TF29ENV_TLS_CERT={box.cert}"]
