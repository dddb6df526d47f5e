"""The team setup on the real engine, under both compose implementations (Debian's docker-compose
1.29 and the `docker compose` v2 plugin): two members, each with their own token, keys, notebooks
and uid, none able to reach the other's; down keeps the notebooks and stops everything in time;
`make up` fits the locked-memory limit to what the engine can grant. Tests run in file order on
one team per implementation (see conftest)."""

import json
import subprocess
import sys
import time
from pathlib import Path

import paramiko
import pytest
import requests
from docker import DockerClient

from testkit.containers import LOOPBACK
from testkit.jobs import HOME, STOPPABLE, USER
from testkit.jupyter import api_status, put_file
from testkit.ssh import connect, run
from testkit.wait import wait_until
from tests.compose.team import REPO, STOP_TIMEOUT, Member, Team, copy_project, engine_memlock, member_py

NOTEBOOK = "work/ann-results.ipynb"
NOTEBOOK_TEXT = json.dumps({"cells": [], "metadata": {"written-by": "ann"}, "nbformat": 4, "nbformat_minor": 5})


def test_shipped_files_are_valid_compose(docker_client: DockerClient, image: str, compose: str) -> None:
    """`compose config` accepts the shipped file alone and with compose/gpu.yml, and what it
    resolves has the members' settings (compose folds in the template's anchors)."""
    shipped = Team(docker_client, REPO, image, compose)
    alone = shipped.config()
    assert sorted(alone["services"]) == ["alice", "bob"]
    alice = alone["services"]["alice"]
    assert alice["image"] == image
    assert alice["ulimits"] == {"memlock": -1, "stack": 67108864}
    assert alice["shm_size"] == 1 << 30
    assert alice["restart"] == "unless-stopped"
    assert alice["stop_grace_period"] == "35s"  # the entrypoint's grace, 30 s, and 5 s for the services
    assert "deploy" not in alice, "without compose/gpu.yml nothing may reserve a GPU"
    assert alice["environment"] == {"JUPYTER_TOKEN_FILE": "/run/secrets/jupyter_token",
                                    "SSH_AUTHORIZED_KEYS_FILE": "/run/secrets/authorized_keys",
                                    "SELF_CHECK": "off", "STOP_GRACE_SECONDS": "30", "KERNEL_IDLE_TIMEOUT": "3600",
                                    "GEN_CERT": "no", "JUPYTER_CERT_FILE": "", "JUPYTER_KEY_FILE": "",
                                    "TEAM_GID": "", "NB_UID": "1001", "NB_GID": "1001"}
    assert alice["ports"] == ["127.0.0.1:2201:22/tcp", "127.0.0.1:8801:8888/tcp"]

    shipped.env.pop("TF29ENV_IMAGE")
    shipped.env["COMPOSE_FILE"] = "docker-compose.yml:compose/gpu.yml"
    with_gpus = shipped.config()
    assert with_gpus["services"]["alice"]["image"] == "tf29-env:latest-gpu"  # build.py's default tag
    devices = {name: service["deploy"]["resources"]["reservations"]["devices"]
               for name, service in with_gpus["services"].items()}
    assert devices == {"alice": [{"driver": "nvidia", "device_ids": ["0"], "capabilities": ["gpu"]}],
                       "bob": [{"driver": "nvidia", "device_ids": ["1"], "capabilities": ["gpu"]}]}


def test_gpu_file_reaches_the_engine(docker_client: DockerClient, image: str, tmp_path: Path,
                                     members: tuple[Member, Member], compose: str) -> None:
    """The shipped examples' reservations from compose/gpu.yml are what the engine gets: created,
    not started, since this engine has no nvidia runtime and refuses to start them (which is why
    the reservations live in a file of their own)."""
    project = copy_project(tmp_path / "gpu")
    for example, member in zip(("alice", "bob"), members, strict=True):
        given = member_py(project, "secrets", example, "--ssh-key", f"{member.key.private}.pub")
        assert given.returncode == 0, given.stderr
    gpu_team = Team(docker_client, project, image, compose, files="docker-compose.yml:compose/gpu.yml")
    try:
        gpu_team.compose("up", "--no-start")
        for service, device_id in (("alice", "0"), ("bob", "1")):
            (request,) = gpu_team.container(service).attrs["HostConfig"]["DeviceRequests"]
            assert request["Driver"] == "nvidia"
            assert request["DeviceIDs"] == [device_id]
            assert request["Capabilities"] == [["gpu"]]
        started = gpu_team.compose("start", "alice", check=False)
        assert started.returncode != 0
        assert 'could not select device driver "nvidia"' in started.stderr
    finally:
        gpu_team.remove_everything()


def test_up_fits_memlock_to_what_the_engine_grants(team: Team, members: tuple[Member, Member]) -> None:
    """With the shipped default (-1, unlimited), `make up` starts the members with the most locked
    memory the engine can grant, saying so in one line where that is less than unlimited (runc
    refuses the whole container otherwise: this engine may not raise its own 8 MiB)."""
    granted = engine_memlock(team.client, team.env["TF29ENV_IMAGE"])
    notes = [line for line in team.up_log.splitlines() if "TF29ENV_MEMLOCK" in line]
    if granted == -1:
        assert notes == []
    else:
        assert notes == [f"tf29-env: this Docker engine can grant at most {granted} bytes of locked memory, "
                         f"not unlimited: starting with TF29ENV_MEMLOCK={granted} (set it in .env to keep this quiet)"]
    for member in members:
        limits = {u["Name"]: u["Hard"] for u in team.container(member.name).attrs["HostConfig"]["Ulimits"]}
        assert limits["memlock"] == granted


def test_both_members_become_healthy_on_loopback_only(team: Team, members: tuple[Member, Member]) -> None:
    for member in members:
        container = team.wait_healthy(member.name)
        bindings = container.attrs["HostConfig"]["PortBindings"]
        assert bindings == {"8888/tcp": [{"HostIp": LOOPBACK, "HostPort": str(member.jupyter_port)}],
                            "22/tcp": [{"HostIp": LOOPBACK, "HostPort": str(member.ssh_port)}]}
    assert "healthy" in team.make("ps").stdout


def test_each_jupyter_accepts_only_its_own_token(team: Team, members: tuple[Member, Member]) -> None:
    ann, ben = members
    for member, other in ((ann, ben), (ben, ann)):
        team.wait_healthy(member.name)
        assert api_status(member.jupyter_port, team.token(member.name)) == 200
        assert api_status(member.jupyter_port, team.token(other.name)) == 403
        assert api_status(member.jupyter_port) == 403
    assert team.token(ann.name) != team.token(ben.name)


def test_each_ssh_accepts_only_its_own_key(team: Team, members: tuple[Member, Member]) -> None:
    ann, ben = members
    for member, other in ((ann, ben), (ben, ann)):
        team.wait_healthy(member.name)
        client = connect(member.ssh_port, "jovyan", member.key)
        try:
            assert run(client, "id -u; id -g; hostname") == (0, f"{member.uid}\n{member.gid}\n{member.name}\n")
        finally:
            client.close()
        with pytest.raises(paramiko.AuthenticationException):
            connect(member.ssh_port, "jovyan", other.key).close()


def test_secrets_stay_out_of_the_container_config(team: Team, members: tuple[Member, Member]) -> None:
    for member in members:
        attrs = json.dumps(team.container(member.name).attrs)
        assert team.token(member.name) not in attrs
        assert member.key.public_text.split()[1] not in attrs
        assert "/run/secrets/jupyter_token" in attrs  # only the path travels
    composed = (team.project / "docker-compose.yml").read_text() + json.dumps(team.config())
    for member in members:
        assert team.token(member.name) not in composed
        assert member.key.public_text.split()[1] not in composed


def test_member_cannot_see_the_other_members_files(team: Team, members: tuple[Member, Member]) -> None:
    ann, ben = members
    team.wait_healthy(ann.name)
    put_file(ann.jupyter_port, team.token(ann.name), "work/only-ann.txt", "ann's data\n")
    contents = requests.get(f"http://{LOOPBACK}:{ben.jupyter_port}/api/contents/work/only-ann.txt",
                            headers={"Authorization": f"token {team.token(ben.name)}"}, timeout=10)
    assert contents.status_code == 404
    client = connect(ben.ssh_port, "jovyan", ben.key)
    try:
        code, listing = run(client, "ls -A ~/work; cat /proc/self/mountinfo")
    finally:
        client.close()
    assert code == 0
    assert "only-ann.txt" not in listing
    # The writable ones: the team's (empty) data volume is shared, read-only (test_team_data.py).
    ben_volumes = {m["Name"] for m in team.container(ben.name).attrs["Mounts"] if m["Type"] == "volume" and m["RW"]}
    assert ben_volumes == {f"{team.name}_ben-{v}" for v in ("work", "cuda-cache", "ssh-host-keys", "local")}


def test_notebook_survives_down_and_up_owned_by_the_member(team: Team, members: tuple[Member, Member]) -> None:
    """...and a running job is interrupted by down (each member's stop_grace_period, not a kill) and reads
    `stopped` after up."""
    ann, _ = members
    team.wait_healthy(ann.name)
    put_file(ann.jupyter_port, team.token(ann.name), NOTEBOOK, NOTEBOOK_TEXT)
    put_file(ann.jupyter_port, team.token(ann.name), "work/loop.py", STOPPABLE)
    first = team.container(ann.name)
    code, out = first.exec_run(["job", "run", f"{HOME}/work/loop.py"], user=USER)
    assert code == 0, out
    ident = out.decode().split("\t", 1)[0]
    wait_until(lambda: b"started" in first.exec_run(["job", "log", ident], user=USER)[1], timeout=60,
               what="the job started")
    first_id = first.id

    team.make("down")
    assert team.containers() == []
    team.make("up")
    container = team.wait_healthy(ann.name)
    assert container.id != first_id, "down must have removed the container, not just stopped it"

    read = requests.get(f"http://{LOOPBACK}:{ann.jupyter_port}/api/contents/{NOTEBOOK}",
                        params={"format": "text", "type": "file"},
                        headers={"Authorization": f"token {team.token(ann.name)}"}, timeout=10)
    assert read.status_code == 200
    assert read.json()["content"] == NOTEBOOK_TEXT
    code, owner = container.exec_run(["stat", "-c", "%u %n", f"/home/jovyan/{NOTEBOOK}", "/home/jovyan/work",
                                      "/home/jovyan/.nv"])
    assert code == 0
    assert owner.decode().split("\n")[:3] == [f"{ann.uid} /home/jovyan/{NOTEBOOK}", f"{ann.uid} /home/jovyan/work",
                                              f"{ann.uid} /home/jovyan/.nv"]
    code, out = container.exec_run(["job", "list", "--json"], user=USER)
    assert code == 0, out
    (found,) = json.loads(out)
    assert (found["id"], found["state"], found["exit_code"]) == (ident, "stopped", 130), found
    assert b"interrupted: saving" in container.exec_run(["job", "log", ident], user=USER)[1]


def test_down_stops_everything_within_its_timeout(team: Team, members: tuple[Member, Member]) -> None:
    for member in members:
        team.wait_healthy(member.name)
    started = time.monotonic()
    team.make("down", f"STOP_TIMEOUT={STOP_TIMEOUT}")
    took = time.monotonic() - started
    assert took < STOP_TIMEOUT, f"down took {took:.1f}s: a container waited for SIGKILL"
    assert team.containers() == []
    assert team.client.networks.list(names=[f"{team.name}_default"]) == []
    # down keeps the members' data: eight volumes, four each, and the team's (empty) data volume.
    assert len(team.volumes()) == 9


def test_up_refuses_more_memlock_than_the_engine_grants(docker_client: DockerClient, image: str, tmp_path: Path,
                                                        compose: str) -> None:
    """An explicit TF29ENV_MEMLOCK above the engine's limit: one line naming the variable and the
    value to use, a non-zero exit, and not one container, network or volume made."""
    granted = engine_memlock(docker_client, image)
    project = copy_project(tmp_path / "memlock")
    wanted = granted * 2 if granted > 0 else 1 << 40
    (project / ".env").write_text(f"TF29ENV_MEMLOCK={wanted}\n")
    team = Team(docker_client, project, image, compose)
    if granted == -1:  # an engine that may raise limits grants any value as it is
        checked = subprocess.run([sys.executable, "compose/memlock.py"], cwd=project, env=team.env,
                                 capture_output=True, text=True, check=False)
        assert (checked.returncode, checked.stdout) == (0, f"{wanted}\n"), checked.stderr
        return
    try:
        result = team.make("up", check=False)
        assert result.returncode != 0
        errors = [line for line in result.stderr.splitlines() if line.startswith("tf29-env:")]
        assert errors == [f"tf29-env: ERROR: TF29ENV_MEMLOCK={wanted} is more locked memory than this Docker "
                          f"engine can grant (runc would refuse to start the containers): "
                          f"set TF29ENV_MEMLOCK={granted} in .env"]
        assert team.containers() == []
        assert team.volumes() == []
        assert team.client.networks.list(names=[f"{team.name}_default"]) == []
    finally:
        team.remove_everything()
