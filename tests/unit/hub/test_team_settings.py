"""The hub's team data, GPU memory budgets and HTTPS settings without an engine (hub/settings.py,
hub/gpuplan.py, hub/tls.py): what each value means, each bad one refused in one line naming it,
certificates made by openssl as an admin would."""

import stat
from pathlib import Path

import pytest

from hub import gpuplan, tls
from hub import settings as hub_settings
from hub.settings import HubConfigError
from testkit.gpuengine import TWO_GPUS, WITH_MIG
from testkit.tlscerts import fingerprint, make_ca, make_expired, make_server, openssl


def one_line_error(environ: dict[str, str], *words: str) -> None:
    with pytest.raises(HubConfigError) as raised:
        hub_settings.check_host(hub_settings.load(environ))
    message = str(raised.value)
    assert "\n" not in message
    for word in words:
        assert word in message, message


# --- team data
def test_team_data_folder_or_volume(tmp_path: Path) -> None:
    assert hub_settings.load({}).team_data == ""
    team = hub_settings.load({"HUB_TEAM_DATA": str(tmp_path)})
    assert team.team_data == str(tmp_path)
    hub_settings.check_host(team)
    assert hub_settings.load({"HUB_TEAM_DATA": "team-datasets"}).team_data == "team-datasets"
    # A relative folder is the admin's current folder's: absolute, as Docker needs it.
    assert hub_settings.load({"HUB_TEAM_DATA": "./data"}).team_data == str(Path("data").absolute())


def test_team_data_refused(tmp_path: Path) -> None:
    one_line_error({"HUB_TEAM_DATA": str(tmp_path / "missing")}, "HUB_TEAM_DATA=", "is not a folder on this host")
    a_file = tmp_path / "file"
    a_file.write_text("x")
    one_line_error({"HUB_TEAM_DATA": str(a_file)}, "is not a folder")
    one_line_error({"HUB_TEAM_DATA": "no spaces"}, "HUB_TEAM_DATA='no spaces'", "Docker volume")
    one_line_error({"HUB_TEAM_SHARED": str(a_file)}, f"HUB_TEAM_SHARED={a_file} is not a folder")
    one_line_error({"HUB_TEAM_DATA": str(tmp_path), "HUB_TEAM_SHARED": str(tmp_path)},
                   "HUB_TEAM_DATA and HUB_TEAM_SHARED are both", "read-only and writable")


# --- GPU memory budgets
@pytest.mark.parametrize(("value", "budgets"), [
    ("", {"gpu1": 0, "gpu2": 0, "mig-1g.5gb": 0}),
    ("8192", {"gpu1": 8192, "gpu2": 8192, "mig-1g.5gb": 8192}),
    ("gpu1=4096, gpu2=16384", {"gpu1": 4096, "gpu2": 16384, "mig-1g.5gb": 0}),
    ("2048 gpu2=16384 mig=1024", {"gpu1": 2048, "gpu2": 16384, "mig-1g.5gb": 1024}),
    ("mig=1024 mig-1g.5gb=512", {"gpu1": 0, "mig-1g.5gb": 512, "mig-2g.10gb": 1024}),
])
def test_gpu_memory_budgets(value: str, budgets: dict[str, int]) -> None:
    team = hub_settings.load({"HUB_GPU_MEMORY_MB": value})
    assert {profile: team.gpu_memory_mb(profile) for profile in budgets} == budgets


def test_the_plan_gives_gpu_profiles_their_budget_and_cpu_none() -> None:
    made = gpuplan.make_plan(hub_settings.load({"HUB_GPU_MEMORY_MB": "3000 gpu2=9000", "HUB_GPU_POLICY": "share"}),
                             True, WITH_MIG)
    assert {profile.name: profile.memory_mb for profile in made.profiles} == {
        "cpu": 0, "gpu1": 3000, "gpu2": 9000, "mig-1g.5gb": 3000}
    plain = gpuplan.make_plan(hub_settings.load({}), True, TWO_GPUS)
    assert all(profile.memory_mb == 0 for profile in plain.profiles)


@pytest.mark.parametrize(("value", "words"), [
    ("0", "'0' is not a whole number of MiB from 1 to 1048576"),
    ("8g", "'8g' is not a whole number of MiB"),
    ("-5", "'-5' is not a whole number"),
    ("1048577", "from 1 to 1048576"),
    ("gpu1=", "'gpu1=' is not a whole number"),
    ("gpu4=100", "'gpu4' is not a profile"),
    ("cpu=100", "the cpu profile has no GPU to budget"),
    ("100 200", "gives a default twice"),
    ("gpu1=1 gpu1=2", "gives gpu1 twice"),
])
def test_gpu_memory_refused(value: str, words: str) -> None:
    one_line_error({"HUB_GPU_MEMORY_MB": value}, "HUB_GPU_MEMORY_MB", words)


# --- HTTPS
def test_tls_follows_the_address() -> None:
    assert hub_settings.load({}).public_url == "http://127.0.0.1:8000/"
    assert hub_settings.load({"HUB_ADDRESS": "::1"}).tls_files is None
    everywhere = hub_settings.load({"HUB_ADDRESS": "0.0.0.0", "HUB_STATE_DIR": "/srv/hub"})  # noqa: S104 - a setting
    assert everywhere.tls_files == (Path("/srv/hub/tls-cert.pem"), Path("/srv/hub/tls-key.pem"))
    assert everywhere.public_url == "https://0.0.0.0:8000/" and everywhere.local_url == "https://127.0.0.1:8000/"
    assert everywhere.proxy_tls_args == ("--ssl-cert", "/srv/hub/tls-cert.pem", "--ssl-key", "/srv/hub/tls-key.pem")
    behind_a_proxy = hub_settings.load({"HUB_ADDRESS": "10.1.2.3", "HUB_TLS": "off"})
    assert behind_a_proxy.public_url == "http://10.1.2.3:8000/" and behind_a_proxy.proxy_tls_args == ()
    assert hub_settings.load({"HUB_TLS": "self-signed"}).public_url == "https://127.0.0.1:8000/"


def test_the_admins_pair(tmp_path: Path) -> None:
    ca = make_ca(tmp_path, "team")
    server = make_server(tmp_path, ca, "hub")
    team = hub_settings.load({"HUB_SSL_CERT": str(server.cert), "HUB_SSL_KEY": str(server.key)})
    hub_settings.check_host(team)
    assert team.tls_files == (server.cert, server.key)
    assert team.public_url == "https://127.0.0.1:8000/"
    assert hub_settings.prepare_tls(team) == [f"HTTPS certificate SHA-256 fingerprint: {fingerprint(server.cert)}"]


def test_bad_pairs_refused(tmp_path: Path) -> None:
    ca = make_ca(tmp_path, "team")
    server = make_server(tmp_path, ca, "hub")
    other = make_server(tmp_path, ca, "other")
    expired = make_expired(tmp_path, "old")
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate\n")
    cert, key = str(server.cert), str(server.key)
    one_line_error({"HUB_SSL_CERT": cert}, "HUB_SSL_CERT is given without HUB_SSL_KEY")
    one_line_error({"HUB_SSL_KEY": key}, "HUB_SSL_KEY is given without HUB_SSL_CERT")
    one_line_error({"HUB_SSL_CERT": cert, "HUB_SSL_KEY": str(other.key)},
                   f"HUB_SSL_KEY={other.key} is not the key of HUB_SSL_CERT={cert}")
    one_line_error({"HUB_SSL_CERT": str(expired.cert), "HUB_SSL_KEY": str(expired.key)}, "has expired", "renew")
    one_line_error({"HUB_SSL_CERT": str(tmp_path / "none.pem"), "HUB_SSL_KEY": key}, "cannot read it")
    one_line_error({"HUB_SSL_CERT": str(garbage), "HUB_SSL_KEY": key}, "HUB_SSL_CERT=", "cannot be read as PEM")
    one_line_error({"HUB_SSL_CERT": cert, "HUB_SSL_KEY": key, "HUB_TLS": "off"}, "HUB_TLS=off and HUB_SSL_CERT")
    one_line_error({"HUB_TLS": "yes"}, "HUB_TLS='yes' is not one of auto, self-signed, off")


def test_self_signed_made_once_and_kept(tmp_path: Path) -> None:
    team = hub_settings.load({"HUB_TLS": "self-signed", "HUB_STATE_DIR": str(tmp_path)})
    first = hub_settings.prepare_tls(team)
    cert, key = tls.cert_file(tmp_path), tls.key_file(tmp_path)
    assert first == [f"made the hub's self-signed certificate: {cert} (key: {key}, mode 600)",
                     f"HTTPS certificate SHA-256 fingerprint: {fingerprint(cert)}"]
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    names = openssl("x509", "-in", str(cert), "-noout", "-ext", "subjectAltName")
    assert "IP Address:127.0.0.1" in names and "DNS:localhost" in names
    made = cert.read_bytes()
    assert hub_settings.prepare_tls(team) == first[1:]
    assert cert.read_bytes() == made
    # A kept pair that no longer serves (here: an expired one) is refused, saying how to get a new one.
    (tmp_path / "old").mkdir()
    expired = make_expired(tmp_path / "old", "old")
    cert.write_bytes(expired.cert.read_bytes())
    key.write_bytes(expired.key.read_bytes())
    with pytest.raises(HubConfigError, match=r"has expired .* \(remove .*tls-cert.pem and its key to make a new one\)"):
        hub_settings.prepare_tls(team)
