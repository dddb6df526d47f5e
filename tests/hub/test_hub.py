"""The team hub end to end (issue 10, part 3): sign-up and approval, two users' servers from the
image under test, each reachable by its owner only (API token and the browser's OAuth flow),
healthy, with SSH by the owner's key on the owner's port, ~/work kept across a stop and start that
gives a running job its grace, and the hub's state kept across its own restart."""

import html
from dataclasses import dataclass

import docker
import paramiko
import pytest
import requests

from compose import limits
from hub import settings as hub_settings
from testkit import ssh
from testkit.ssh import KeyPair
from testkit.wait import wait_until
from tests.hub.hubrun import ADMIN, HubRun, User

pytestmark = pytest.mark.image

GIB = 1 << 30


@dataclass
class Team:
    hub: HubRun
    ann: User
    ben: User


@pytest.fixture(scope="module")
def team(team_hub: HubRun, keypair: KeyPair, other_keypair: KeyPair) -> Team:
    """boss (the admin) approves ann and ben, who each start a CPU server with their own SSH key."""
    admin = team_hub.signup(ADMIN)
    assert team_hub.login(admin), "the admin named in HUB_ADMIN_USERS could not log in after signing up"
    team_hub.make_token(admin)
    ann = team_hub.enrol("ann", keypair)
    ben = team_hub.enrol("ben", other_keypair)
    for user, key in ((ann, keypair), (ben, other_keypair)):
        team_hub.start(user, profile="cpu", ssh_key=key.public_text)
    for user in (ann, ben):
        team_hub.wait_ready(user)
    return Team(team_hub, ann, ben)


def test_signup_needs_the_admins_approval(team: Team) -> None:
    carl = team.hub.signup("carl")
    assert not team.hub.login(carl), "an unapproved sign-up logged in"
    team.hub.approve("carl")
    assert team.hub.login(carl)


def test_each_user_reaches_only_their_own_server(team: Team) -> None:
    for user, other in ((team.ann, team.ben), (team.ben, team.ann)):
        own = team.hub.server_get(user, user.name, "api/status")
        assert own.status_code == 200, own.text
        assert "last_activity" in own.json()
        assert team.hub.server_get(user, other.name, "api/status").status_code == 403
    assert requests.get(f"{team.hub.url}/user/ann/api/status", timeout=30).status_code == 403  # no credentials


def test_browser_oauth_flow_reaches_lab(team: Team) -> None:
    browser = team.hub.browser()
    user = User(team.ann.name, team.ann.password)
    assert team.hub.login(user)
    lab = user.session.get(f"{team.hub.url}/user/ann/lab", timeout=60)
    assert lab.status_code == 200, lab.text[-500:]
    assert lab.url == f"{team.hub.url}/user/ann/lab"
    assert "jupyter-config-data" in lab.text  # JupyterLab's page, not the hub's
    assert any(name.startswith("jupyterhub-user-ann") for name in user.session.cookies.keys())  # noqa: SIM118
    # ann's browser gets no way into ben's server: the hub refuses the OAuth request
    assert user.session.get(f"{team.hub.url}/user/ben/lab", timeout=60).status_code == 403
    assert browser.get(f"{team.hub.url}/user/ann/lab", timeout=60).url.startswith(f"{team.hub.url}/hub/login")


def test_servers_turn_healthy(team: Team) -> None:
    for user in (team.ann, team.ben):
        team.hub.wait_healthy(user.name)


def test_spawned_container_settings(team: Team) -> None:
    """What the spawner asked of the engine: the hub-mode command, volumes per user, shm and
    memlock as compose, the CPU profile's void GPUs, SSH bound to the configured address."""
    container = team.hub.container("ann")
    config, host = container.attrs["Config"], container.attrs["HostConfig"]
    assert config["Cmd"][0] == "jupyterhub-singleuser"
    env = dict(item.split("=", 1) for item in config["Env"])
    assert env["NVIDIA_VISIBLE_DEVICES"] == "void"
    # The team's grace and idle kernels' timeout (the hub's defaults: compose's), and the engine's own
    # stop timeout beyond the grace, which a `docker stop` by hand uses as well.
    team_limits = limits.load()
    assert (env["STOP_GRACE_SECONDS"], env["KERNEL_IDLE_TIMEOUT"]) == (str(team_limits.stop_grace),
                                                                       str(team_limits.kernel_idle))
    assert config["StopTimeout"] == team_limits.stop_grace + limits.STOP_MARGIN
    assert env["SSH_AUTHORIZED_KEYS_FILE"] == "/run/secrets/authorized_keys"
    assert host["ShmSize"] == GIB
    assert not host.get("DeviceRequests")
    ulimits = {limit["Name"]: limit for limit in host["Ulimits"]}
    assert ulimits["memlock"]["Hard"] == ulimits["memlock"]["Soft"]
    assert ulimits["memlock"]["Hard"] != 0
    mounts = {mount["Destination"]: mount for mount in container.attrs["Mounts"]}
    for target, suffix in (("/home/jovyan/work", "work"), ("/home/jovyan/.nv", "nv"),
                           ("/etc/ssh/host-keys", "hostkeys"), ("/home/jovyan/.local", "local")):
        assert mounts[target]["Type"] == "volume"
        assert mounts[target]["Name"] == f"{team.hub.prefix}-ann-{suffix}"
    assert mounts["/run/secrets/authorized_keys"]["RW"] is False
    binding = host["PortBindings"]["22/tcp"][0]
    assert binding["HostIp"] == "127.0.0.1"
    assert str(team.hub.ssh_port("ann")) == binding["HostPort"]
    assert team.hub.ssh_port("ann") != team.hub.ssh_port("ben")


def test_ssh_with_own_key_only(team: Team, keypair: KeyPair, other_keypair: KeyPair) -> None:
    team.hub.wait_healthy("ann")
    team.hub.wait_healthy("ben")
    for name, own, other in (("ann", keypair, other_keypair), ("ben", other_keypair, keypair)):
        port = team.hub.ssh_port(name)
        client = ssh.connect(port, "jovyan", own)
        try:
            code, out = ssh.run(client, "id -un; env")
        finally:
            client.close()
        assert code == 0, out
        assert out.splitlines()[0] == "jovyan"
        assert "JUPYTERHUB_API_TOKEN" not in out and "JPY_API_TOKEN" not in out
        with pytest.raises(paramiko.AuthenticationException):
            ssh.connect(port, "jovyan", other).close()


def test_spawn_form_offers_profiles_and_checks_keys(team: Team) -> None:
    dana = team.hub.enrol("dana")
    form = dana.session.get(f"{team.hub.url}/hub/spawn", timeout=30)
    assert form.status_code == 200
    assert 'name="profile" value="cpu"' in form.text and 'name="ssh_key"' in form.text
    page = dana.session.post(f"{team.hub.url}/hub/spawn", timeout=60, data={
        "profile": "cpu", "ssh_key": "-----BEGIN OPENSSH PRIVATE KEY-----", "_xsrf": dana.session.cookies.get("_xsrf")})
    assert "is not a public key line" in page.text, page.text[-2000:]
    wait_until(lambda: team.hub.server_model(dana) is None, timeout=30, what="dana's failed spawn cleared")
    refused = team.hub.api(dana, "POST", "/users/dana/server", json={"profile": "gpu7"})
    assert refused.status_code == 400 and "not offered" in refused.text


# A job whose checkpoint, once interrupted, takes longer than Docker's default 10 s of `docker stop`
# (DockerSpawner's stop): it leaves a file in ~/work when it is done. It ends by itself after 10 minutes.
CHECKPOINTED = "/home/jovyan/work/checkpointed"
SLOW_CHECKPOINT_JOB = f"""
import time
try:
    time.sleep(600)
except KeyboardInterrupt:
    time.sleep(14)
    open({CHECKPOINTED!r}, "w").write("saved")
    raise
"""


def test_work_survives_stop_and_start(team: Team, keypair: KeyPair) -> None:
    """A file in ~/work, and a job running at the stop: the stop interrupts it and waits the team's grace,
    so its slow checkpoint is written and the job reads `stopped` by that stop, not killed."""
    ann, hub = team.ann, team.hub
    port_before = hub.ssh_port("ann")
    saved = requests.put(f"{hub.url}/user/ann/api/contents/work/kept.txt", timeout=30,
                         headers={"Authorization": f"token {ann.token}"},
                         json={"type": "file", "format": "text", "content": "still here"})
    assert saved.status_code in (200, 201), saved.text
    job_id = hub.run_job("ann", SLOW_CHECKPOINT_JOB)
    hub.stop(ann)
    # Gone once the hub says it stopped, so that a start at once does not collide with its name.
    with pytest.raises(docker.errors.NotFound):
        hub.container("ann")
    form = html.unescape(ann.session.get(f"{hub.url}/hub/spawn", timeout=30).text)
    assert f"Your server's SSH port is {port_before}" in form and "Your SSH key is on file" in form
    hub.start(ann)  # no options: the CPU profile and the key on file
    hub.wait_ready(ann)
    read = hub.server_get(ann, "ann", "api/contents/work/kept.txt")
    assert read.status_code == 200 and read.json()["content"] == "still here"
    job = hub.job("ann", job_id)
    assert job["state"] == "stopped" and "by the container's" in job["message"], job
    assert hub.shell("ann", "cat", CHECKPOINTED) == "saved"
    assert hub.ssh_port("ann") == port_before  # the port stays the user's
    hub.wait_healthy("ann")
    ssh.connect(port_before, "jovyan", keypair).close()


def test_state_survives_a_hub_restart(team: Team) -> None:
    """make hub-down leaves servers running; make hub finds them again, with the same database,
    cookie secret and proxy token (a browser session stays logged in); none of it world-readable."""
    hub, ben = team.hub, team.ben
    down = hub.make("hub-down")
    assert down.returncode == 0 and "stopped hub and proxy" in down.stdout, down.stdout + down.stderr
    assert hub.container("ben").status == "running"
    hub.up()
    assert ben.session.get(f"{hub.url}/hub/api/user", timeout=30).json()["name"] == "ben"
    status = wait_until(lambda: hub.server_get(ben, "ben", "api/status").status_code == 200, timeout=60,
                        what="ben's server through the restarted proxy")
    assert status
    for path in (hub.state, hub_settings.db_file(hub.state), hub_settings.cookie_secret_file(hub.state),
                 hub_settings.proxy_token_file(hub.state), hub_settings.ssh_ports_file(hub.state)):
        assert path.stat().st_mode & 0o077 == 0, f"{path} is readable by others: {oct(path.stat().st_mode)}"
