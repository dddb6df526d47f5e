"""JUPYTER_CERT_FILE and JUPYTER_KEY_FILE in a real container (issue 42): Jupyter speaks HTTPS with the team's
certificate, which curl trusts through the team's CA and refuses through another; the login URL says https;
a pair that cannot serve (a key of another certificate, an expired certificate, half a pair, GEN_CERT as well)
stops the start with one line, exit 2."""

import re
import subprocess
from pathlib import Path

import pytest

from testkit.containers import LOOPBACK, TrackedContainer
from testkit.tlscerts import Pair, make_ca, make_expired, make_server

CERT, KEY = "/run/secrets/jupyter.crt", "/run/secrets/jupyter.key"


def mounted(pair: Pair) -> dict[str, dict[str, str]]:
    """The pair as secrets: read-only, the key as the host's openssl left it (mode 600, the host user's)."""
    return {str(pair.cert): {"bind": CERT, "mode": "ro"}, str(pair.key): {"bind": KEY, "mode": "ro"}}


def curl(url: str, ca: Path, token: str = "") -> subprocess.CompletedProcess[str]:
    headers = ["-H", f"Authorization: token {token}"] if token else []
    return subprocess.run(["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", str(ca), *headers, url],
                          capture_output=True, text=True, timeout=30, check=False)


def test_jupyter_serves_https_with_the_teams_certificate(tracked: TrackedContainer, tmp_path: Path) -> None:
    team, stranger = make_ca(tmp_path / "team", "team"), make_ca(tmp_path / "other", "other")
    server = make_server(tmp_path / "team", team, "jupyter", LOOPBACK)
    container = tracked.run(environment={"JUPYTER_CERT_FILE": CERT, "JUPYTER_KEY_FILE": KEY},
                            volumes=mounted(server), publish=(8888,))
    tracked.wait_healthy(container)  # the healthcheck speaks https from the server's runtime file
    logs = tracked.logs(container)
    assert f"JUPYTER_CERT_FILE: JupyterLab speaks HTTPS with the certificate in {CERT}" in logs, logs
    found = re.search(r"https://127\.0\.0\.1:8888/lab\?token=(\S+)", logs)
    assert found, logs
    code, mode = tracked.exec(container, ["stat", "-c", "%U %a", "/run/tf29-env/jupyter/tf29-env-key.pem"])
    assert (code, mode.strip()) == (0, "jovyan 600")
    url = f"https://{LOOPBACK}:{tracked.port(container, 8888)}/api/status"
    trusted = curl(url, team.cert, found.group(1))
    assert (trusted.returncode, trusted.stdout) == (0, "200"), trusted.stderr
    assert curl(url, team.cert).stdout == "403"  # the token is still required
    refused = curl(url, stranger.cert, found.group(1))
    assert refused.returncode == 60 and "certificate" in refused.stderr, refused  # 60: the peer is not verified
    plain = subprocess.run(["curl", "-sS", "-o", "/dev/null", url.replace("https:", "http:")], capture_output=True,
                           text=True, timeout=30, check=False)
    assert plain.returncode != 0, plain  # plain HTTP gets no answer from a TLS port


@pytest.mark.parametrize("case", ["key of another certificate", "expired", "certificate alone", "with GEN_CERT"])
def test_a_pair_that_cannot_serve_stops_the_start(tracked: TrackedContainer, tmp_path: Path, case: str) -> None:
    team = make_ca(tmp_path, "team")
    good, other = make_server(tmp_path, team, "good"), make_server(tmp_path, team, "other")
    environment = {"JUPYTER_CERT_FILE": CERT, "JUPYTER_KEY_FILE": KEY}
    pair, line = good, ""
    if case == "key of another certificate":
        pair = Pair(good.cert, other.key)
        line = f"JUPYTER_KEY_FILE={KEY} is not the private key of JUPYTER_CERT_FILE={CERT}: give the key"
    elif case == "expired":
        pair = make_expired(tmp_path, "expired")
        line = f"JUPYTER_CERT_FILE={CERT}: the certificate expired on "
    elif case == "certificate alone":
        del environment["JUPYTER_KEY_FILE"]
        line = "JUPYTER_CERT_FILE is set but JUPYTER_KEY_FILE is not: give both"
    else:
        environment["GEN_CERT"] = "yes"
        line = "GEN_CERT=yes and JUPYTER_CERT_FILE are both set"
    container = tracked.run(environment=environment, volumes=mounted(pair))
    assert tracked.wait_exit(container, timeout=30) == 2
    lines = tracked.logs(container).strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"tf29-env: ERROR: {line}"), lines
