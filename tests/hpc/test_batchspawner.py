"""JupyterHub on Slurm (issue 28): deploy/slurm/hub/jupyterhub_config.py on the test cluster's login
machine (JupyterHub 5.5.4, batchspawner 1.3.0, Debian's configurable-http-proxy), users logging in
with their cluster account (PAM). A server is a Slurm job submitted as the user that runs the SIF
under Apptainer on a compute node; the image's hub mode tells the hub its port; /user/NAME/api/status
answers through the hub; a profile per partition (the GPU one asks for --gres and runs with --nv);
the servers get the team's KERNEL_IDLE_TIMEOUT and STOP_GRACE_SECONDS and Slurm's TERM before the
time limit, and a bad one stops the hub in one line; stopping the server ends the job; an unknown
profile is refused before anything is submitted. The team's data (HUB_TEAM_DATA) is read-only at
~/data in every server, the GPU profile's servers get HUB_GPU_MEMORY_MB's budget as their
GPU_MEMORY_LIMIT_MB (the CPU profile's none), and a bad value of either stops the hub in one line."""

import json
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import requests

from testkit.containers import LOOPBACK
from testkit.terminal import LabTerminal, type_command
from testkit.wait import wait_until
from tests.hpc.cluster import Cluster

PASSWORDS = {"alice": "alice-cluster-pw-1", "bob": "bob-cluster-pw-2"}
PROFILES = {
    "cpu": {"title": "CPU only", "partition": "cpu", "gres": "", "runtime": "00:30:00", "memory": "1G", "nprocs": "1"},
    "gpu": {"title": "1 GPU", "partition": "gpu", "gres": "gpu:1", "runtime": "00:30:00", "memory": "1G",
            "nprocs": "1"},
}
CONFIG = "/opt/tf29-env-slurm/hub/jupyterhub_config.py"
STATE = "/var/lib/tf29-hub"
# The team's data on the cluster's shared file system (the login machine and the nodes see it alike).
TEAM_DATA = "/cluster/datasets"
README = "the team's training set, version 3"
BUDGET = 2048  # HUB_GPU_MEMORY_MB: MiB of each GPU for every GPU profile


@dataclass
class Hub:
    cluster: Cluster
    url: str

    def log(self) -> str:
        return self.cluster.login.read(f"{STATE}/hub.log")

    def login(self, name: str) -> requests.Session:
        """The hub's login page, as a browser uses it; the session keeps the cookies."""
        session = requests.Session()
        assert session.get(f"{self.url}/hub/login", timeout=30).status_code == 200
        page = session.post(f"{self.url}/hub/login", timeout=30, data={
            "username": name, "password": PASSWORDS[name], "_xsrf": session.cookies.get("_xsrf")})
        assert not page.url.rstrip("/").endswith("/hub/login"), page.text[-500:]
        return session

    def token(self, session: requests.Session, name: str) -> str:
        response = session.post(f"{self.url}/hub/api/users/{name}/tokens", timeout=30, json={"expires_in": 3600},
                                headers={"X-XSRFToken": session.cookies.get("_xsrf") or ""})
        assert response.status_code == 201, response.text
        return str(response.json()["token"])

    def api(self, token: str, method: str, path: str, **kwargs: object) -> requests.Response:
        return requests.request(method, f"{self.url}/hub/api{path}", timeout=60,
                                headers={"Authorization": f"token {token}"}, **kwargs)  # type: ignore[arg-type]

    def status_through_hub(self, token: str, name: str) -> int:
        return requests.get(f"{self.url}/user/{name}/api/status", timeout=30, allow_redirects=False,
                            headers={"Authorization": f"token {token}"}).status_code

    def wait_ready(self, token: str, name: str) -> None:
        def ready() -> bool:
            server = self.api(token, "GET", f"/users/{name}").json()["servers"].get("")
            if server is None:
                raise AssertionError(f"{name}'s server stopped while starting:\n{self.log()[-3000:]}")
            return bool(server.get("ready"))

        wait_until(ready, timeout=300, interval=1, what=f"{name}'s server ready")

    def job(self, name: str) -> str:
        """'STATE PARTITION NODE' of the user's hub job, or ''."""
        return self.cluster.login.run(f"squeue -h -u {name} -n tf29-hub-{name} -o '%T %P %N'")[1].strip()

    def terminal(self, token: str, name: str) -> LabTerminal:
        """A terminal of the user's server, opened through the hub as Lab's launcher opens one."""
        return LabTerminal(f"{self.url}/user/{name}/", token, {"cwd": ""})


@pytest.fixture(scope="module")
def hub(cluster: Cluster) -> Iterator[Hub]:
    login = cluster.login
    for name, password in PASSWORDS.items():
        code, out = login.run(f"echo {shlex.quote(f'{name}:{password}')} | chpasswd")
        assert code == 0, out
    code, out = login.run(f"install -d -m 755 {TEAM_DATA} && printf '%s\\n' {shlex.quote(README)} "
                          f"> {TEAM_DATA}/README && chmod 644 {TEAM_DATA}/README")
    assert code == 0, out
    environment = (f"TF29_HUB_PROFILES={shlex.quote(json.dumps(PROFILES))} HUB_TEAM_DATA={TEAM_DATA} "
                   f"HUB_GPU_MEMORY_MB={BUDGET} PATH=/opt/tf29-hub/venv/bin:$PATH")
    login.start(f"mkdir -p {STATE} && cd {STATE} && {environment} exec jupyterhub -f {CONFIG} > {STATE}/hub.log 2>&1",
                user="root")
    made = Hub(cluster, f"http://{LOOPBACK}:{login.ports[8000]}")
    wait_until(lambda: requests.get(f"{made.url}/hub/api", timeout=5).status_code == 200, timeout=120,
               what=f"the hub answering ({STATE}/hub.log)")
    try:
        yield made
    finally:
        login.run("pkill -TERM -f 'bin/jupyterhub' || true; scancel -u alice -u bob || true")


def test_a_user_logs_in_and_the_server_is_a_slurm_job_answering_through_the_hub(hub: Hub) -> None:
    session = hub.login("alice")
    # The spawn form offers the profiles; choosing one submits the job.
    form = session.get(f"{hub.url}/hub/spawn", timeout=30)
    assert form.status_code == 200 and 'name="profile"' in form.text, form.text[-1000:]
    # The GPU profile says its budget; the CPU one has none to say.
    assert f">1 GPU (TensorFlow takes at most {BUDGET} MiB of each GPU)</option>" in form.text, form.text[-1000:]
    assert ">CPU only</option>" in form.text, form.text[-1000:]
    spawn = session.post(f"{hub.url}/hub/spawn", timeout=60,
                         data={"profile": "cpu", "_xsrf": session.cookies.get("_xsrf")})
    assert spawn.status_code == 200, spawn.status_code
    token = hub.token(session, "alice")
    hub.wait_ready(token, "alice")
    state, partition, node = hub.job("alice").split()
    assert (state, partition) == ("RUNNING", "cpu") and re.fullmatch(r"node[12]", node), hub.job("alice")
    assert hub.status_through_hub(token, "alice") == 200
    assert hub.status_through_hub("", "alice") in (302, 403)
    # The port was the image's choice, told to the hub; the server runs as alice from the SIF.
    code, out = hub.cluster.machines[node].run("pgrep -u alice -a -f jupyterhub-singleuser")
    assert code == 0 and "jupyterhub-singleuser" in out, out
    # In a terminal of the server: the team's data reads, does not write, and a CPU server has no budget.
    terminal = hub.terminal(token, "alice")
    try:
        read = type_command(terminal, "cat ~/data/README")
        written = type_command(terminal, "touch ~/data/mine")
        budget = type_command(terminal, "env | grep -c '^GPU_MEMORY_LIMIT_MB='")
    finally:
        terminal.close()
    assert read == (0, README + "\n"), read
    assert written[0] != 0 and "Read-only file system" in written[1], written
    assert budget == (1, "0\n"), budget
    assert hub.api(token, "DELETE", "/users/alice/server").status_code in (202, 204)
    wait_until(lambda: hub.job("alice") == "", timeout=60, interval=1, what="alice's job gone")


def test_the_gpu_profile_asks_slurm_for_the_gpu_partition_and_runs_with_nv(hub: Hub) -> None:
    session = hub.login("bob")
    token = hub.token(session, "bob")
    started = hub.api(token, "POST", "/users/bob/server", json={"profile": "gpu"})
    assert started.status_code in (201, 202), started.text
    hub.wait_ready(token, "bob")
    assert hub.job("bob") == "RUNNING gpu node1"
    code, out = hub.cluster.login.run("scontrol show job -u bob 2>/dev/null || "
                                      "scontrol show job $(squeue -h -u bob -o %i)")
    assert code == 0 and "gres/gpu:1" in out, out
    code, script = hub.cluster.login.run("scontrol write batch_script $(squeue -h -u bob -o %i) -")
    assert code == 0 and 'exec apptainer run --nv "${args[@]}" /shared/tf29-env.sif' in script, script
    # Slurm's TERM comes the grace and 30 s before the time limit, and the server has the team's settings.
    assert "\n#SBATCH --signal=B:TERM@60\n" in script, script
    code, out = hub.cluster.machines["node1"].run(
        "for pid in $(pgrep -u bob -f jupyterhub-singleuser); do environ=$(tr '\\0' '\\n' < /proc/$pid/environ) "
        "|| continue; grep -E '^(GPU_MEMORY_LIMIT_MB|KERNEL_IDLE_TIMEOUT|STOP_GRACE_SECONDS)=' <<<\"$environ\" "
        "| sort | paste -sd ' '; done 2>/dev/null")
    settings = out.splitlines()
    assert code == 0 and settings and set(settings) == {
        f"GPU_MEMORY_LIMIT_MB={BUDGET} KERNEL_IDLE_TIMEOUT=3600 STOP_GRACE_SECONDS=30"}, out
    # What bob sees in a terminal of his server: the budget in his environment, said by the self-check.
    terminal = hub.terminal(token, "bob")
    try:
        env = type_command(terminal, "env | grep '^GPU_MEMORY_LIMIT_MB='")
        check = type_command(terminal, "selfcheck --layers 6")
        data = type_command(terminal, "cat ~/data/README")
    finally:
        terminal.close()
    assert env == (0, f"GPU_MEMORY_LIMIT_MB={BUDGET}\n"), env
    assert (f"PASS env.gpu_memory_limit: GPU_MEMORY_LIMIT_MB={BUDGET}: TensorFlow keeps each GPU's use under "
            f"{BUDGET} MiB") in check[1], check
    assert data == (0, README + "\n"), data
    assert hub.status_through_hub(token, "bob") == 200
    assert hub.api(token, "DELETE", "/users/bob/server").status_code in (202, 204)
    wait_until(lambda: hub.job("bob") == "", timeout=60, interval=1, what="bob's job gone")


def test_an_unknown_profile_is_refused_and_nothing_submitted(hub: Hub) -> None:
    session = hub.login("alice")
    token = hub.token(session, "alice")
    refused = hub.api(token, "POST", "/users/alice/server", json={"profile": "a100x8"})
    assert refused.status_code == 400, refused.text
    assert "unknown profile 'a100x8': choose one of cpu, gpu" in refused.json()["message"]
    assert hub.job("alice") == ""


@pytest.mark.parametrize(("setting", "line"), [
    ("TF29_HUB_KERNEL_IDLE_TIMEOUT=forever",
     "TF29_HUB_KERNEL_IDLE_TIMEOUT='forever' must be a number of seconds from 0 to 604800"),
    (f"HUB_TEAM_DATA={TEAM_DATA}-v2", f"HUB_TEAM_DATA={TEAM_DATA}-v2 is not a folder on this host"),
    ("HUB_GPU_MEMORY_MB=cpu=2048", "HUB_GPU_MEMORY_MB: the cpu profile has no GPU to budget"),
    ("HUB_GPU_MEMORY_MB=8G", "HUB_GPU_MEMORY_MB: '8G' is not a whole number of MiB from 1 to 1048576 "
                             "(e.g. 8192, or gpu=8192)"),
    ("TF29_HUB_PROFILES='{\"gpu\": {\"title\": \"1 GPU\"}}'",
     "TF29_HUB_PROFILES: the profile 'gpu' must have the keys gres, memory, nprocs, partition, runtime, title"),
], ids=["kernel-idle", "team-data", "budget-cpu", "budget-unit", "profiles"])
def test_a_bad_setting_stops_the_hub_in_one_line(cluster: Cluster, setting: str, line: str) -> None:
    code, out = cluster.login.run(f"cd /tmp && {setting} /opt/tf29-hub/venv/bin/jupyterhub -f {CONFIG}")
    assert code != 0 and out.strip() == f"tf29-hub: {line}", out
