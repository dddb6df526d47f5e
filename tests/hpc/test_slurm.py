"""JupyterLab as a Slurm job (issue 28): deploy/slurm/jupyter.sbatch on a real Slurm 24.11 cluster of
containers (tests/hpc/cluster.py: a login machine with slurmctld and sshd, compute nodes with slurmd
and Apptainer), submitted by the users themselves. The job reaches RUNNING, writes the tunnel line
into its output (made private), JupyterLab answers on the node with its token (403 without), the
tunnel line works as printed through the login machine's sshd, a second user's job on the node gets
another port, scancel and the time limit end it cleanly with the work kept, srun runs the SIF, and
bad input is one line with no job left running. docs/hpc.md's lines for sbatch and srun are typed as
written by alice in her home (the SIF at ~/tf29-env.sif, deploy/slurm as in a checkout): the rig's gpu
partition schedules node1's GPU (tests/hpc/cluster.py) without a GPU behind it, so its lines show that
such a job starts there with --nv."""

import re
import subprocess
from pathlib import Path

import pytest
import requests

from testkit import docblocks, hpc
from testkit.containers import LOOPBACK
from testkit.docblocks import Plan
from testkit.jupyter import api_status
from testkit.net import free_host_port
from testkit.ssh import KeyPair
from testkit.wait import wait_until
from tests.hpc.cluster import Cluster

SIF = f"/shared/{hpc.SIF_NAME}"
SBATCH = "/opt/tf29-env-slurm/jupyter.sbatch"
TUNNEL = re.compile(r"^tf29-env: JupyterLab listens on (\S+):(\d+)\. On your laptop run: (ssh -N -L .+)$", re.M)
TOKEN = re.compile(r"^tf29-env: then open http://localhost:8888/lab\?token=([0-9a-f]{48})$", re.M)
BLOCKS = docblocks.blocks_for(__file__)
PLANS = {
    # The reader repeats squeue until both jobs are R, then cat until the URL is there.
    ("docs/hpc.md", "sbatch deploy/slurm/jupyter.sbatch"): Plan(
        placeholders={"JOBID": hpc.submitted}, waits=("squeue --me", "cat tf29-jupyter-"), wait_seconds=240),
    ("docs/hpc.md", "srun --partition=gpu"): Plan(),
}


def all_running(squeue: str) -> bool:
    """Whether `squeue`'s table lists jobs, each in state R."""
    rows = [line.split() for line in squeue.strip().splitlines()[1:]]
    return bool(rows) and all(len(row) > 4 and row[4] == "R" for row in rows)


def typed(cluster: Cluster, user: str, first: str) -> str:
    """The transcript of docs/hpc.md's block that starts with FIRST, typed by USER in their home."""
    [(block, _, plan)] = [found for found in docblocks.with_plans(BLOCKS, PLANS) if found[1][1] == first]
    execute = hpc.answering(cluster.login.typist(user), {"squeue --me": all_running,
                                                         "cat tf29-jupyter-": lambda text: bool(TOKEN.search(text))})
    return docblocks.run_block(block, execute, plan)


class Job:
    """A job submitted with `sbatch OPTIONS jupyter.sbatch SIF` by USER in their home (or, SUBMITTED,
    the one of that id USER submitted)."""

    def __init__(self, cluster: Cluster, user: str, options: str = "", sif: str = SIF, *,
                 submitted: str | None = None) -> None:
        self.cluster, self.user = cluster, user
        if submitted is None:
            code, out = cluster.login.run(f"cd && sbatch --parsable {options} {SBATCH} {sif}", user=user)
            assert code == 0, out
            submitted = out.strip().splitlines()[-1].split(";")[0]
        self.id = submitted
        self.output = f"/home/{user}/tf29-jupyter-{self.id}.out"

    def state(self) -> str:
        _, out = self.cluster.login.run(f"squeue -h -j {self.id} -o %T 2>/dev/null; "
                                           f"scontrol show job {self.id} 2>/dev/null | grep -o 'JobState=[A-Z]*'")
        found = re.search(r"JobState=([A-Z]+)", out)
        return found.group(1) if found else (out.strip() or "GONE")

    def text(self) -> str:
        return self.cluster.login.read(self.output)

    def reason(self) -> str:
        return self.cluster.login.run(f"squeue -h -j {self.id} -o '%T %R'; sinfo -N")[1].strip()

    def tunnel(self) -> tuple[str, int, str, str]:
        try:
            wait_until(lambda: self.state() == "RUNNING", timeout=180, interval=1, what=f"job {self.id} RUNNING")
        except TimeoutError:
            raise AssertionError(f"job {self.id} not RUNNING: {self.reason()}") from None
        text = wait_until(lambda: self.text() if TOKEN.search(self.text()) else None, timeout=240,
                          what=f"the tunnel line in {self.output}")
        (node, port, command), token = TUNNEL.findall(text)[0], TOKEN.findall(text)[0]
        return node, int(port), command, token

    def ended(self, timeout: float = 60) -> str:
        return wait_until(lambda: self.state() if self.state() not in ("PENDING", "RUNNING", "COMPLETING") else None,
                          timeout=timeout, interval=1, what=f"job {self.id} ended")


def processes_of(cluster: Cluster, node: str, user: str) -> str:
    return cluster.machines[node].run(f"pgrep -u {user} -a . || true")[1].strip()


def assert_nothing_left(cluster: Cluster, node: str, user: str) -> None:
    """None of USER's processes is left on NODE once the job ended (Slurm's KillWait is 10 s)."""
    left = ""

    def gone() -> bool:
        nonlocal left
        left = processes_of(cluster, node, user)
        return not left

    try:
        wait_until(gone, timeout=45, interval=1, what=f"{user}'s processes on {node} gone")
    except TimeoutError:
        raise AssertionError(f"{user}'s processes left on {node}:\n{left}") from None


@pytest.fixture(scope="module", autouse=True)
def timed_job(cluster: Cluster) -> Job:
    """bob's job with Slurm's shortest time limit (a minute), submitted before this module's other
    tests so that its minute passes while they run; the module's last test checks how it ended."""
    return Job(cluster, "bob", "--nodelist=node2 --time=00:01:00 --mem=1G --cpus-per-task=1")


def test_a_job_serves_jupyterlab_and_scancel_ends_it_with_the_work_kept(cluster: Cluster, keypair: KeyPair,
                                                                          tmp_path: Path) -> None:
    """docs/hpc.md's two sbatch lines, squeue until both run, cat until the URL is there; then the first
    job (the script's defaults) as the reader uses it, and the second started on the gpu partition's
    node with --nv."""
    said = typed(cluster, "alice", "sbatch deploy/slurm/jupyter.sbatch")
    job, gpu = (Job(cluster, "alice", submitted=hpc.submitted(said, index)) for index in (0, 1))
    try:
        assert f"tf29-jupyter: job {gpu.id} on node1: starting /home/alice/{hpc.SIF_NAME} with --nv" in gpu.text(), \
            gpu.text()
    finally:
        cluster.login.run(f"scancel {gpu.id}", user="alice")
    assert gpu.ended() == "CANCELLED"
    node, port, command, token = job.tunnel()
    assert node in ("node1", "node2") and port in (8888, 8889), (node, port)  # bob's timed job may be on node2
    assert command == f"ssh -N -L 8888:{node}:{port} alice@login"
    assert f"tf29-env: then open http://localhost:8888/lab?token={token}" in said, said[-3000:]
    code, mode = cluster.login.run(f"stat -c '%a %U' {job.output}")
    assert (code, mode.strip()) == (0, "600 alice")
    published = cluster.machines[node].ports[port]
    assert api_status(published) == 403
    assert api_status(published, token) == 200
    # The line works as printed, with the login machine's published sshd for LOGIN-HOST and a free
    # local port for 8888.
    local = free_host_port()
    tunnel = subprocess.Popen(
        ["ssh", "-N", "-L", f"{LOOPBACK}:{local}:{node}:{port}", "-p", str(cluster.login.ports[22]), "-i",
         str(keypair.private), "-o", "StrictHostKeyChecking=no", "-o", f"UserKnownHostsFile={tmp_path}/known",
         "-o", "BatchMode=yes", "-o", "ExitOnForwardFailure=yes", f"alice@{LOOPBACK}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_until(lambda: api_status(local, token) == 200, timeout=30, what="JupyterLab through the ssh tunnel")
    finally:
        tunnel.terminate()
        tunnel.wait(timeout=10)
    saved = requests.put(f"http://{LOOPBACK}:{published}/api/contents/work/kept.txt", timeout=10,
                         headers={"Authorization": f"token {token}"},
                         json={"type": "file", "format": "text", "content": "kept"})
    assert saved.status_code == 201, saved.text
    assert cluster.login.run(f"scancel {job.id}", user="alice")[0] == 0
    assert job.ended() == "CANCELLED"
    wait_until(lambda: "stopping (signal received)" in job.text(), timeout=30, what="the server's stop")
    assert cluster.login.read("/home/alice/work/kept.txt") == "kept"
    assert_nothing_left(cluster, "node1", "alice")
    assert_nothing_left(cluster, "node2", "alice")


def test_a_second_users_job_on_the_node_gets_another_port(cluster: Cluster) -> None:
    first = Job(cluster, "alice", "--nodelist=node1 --time=00:30:00 --mem=1G --cpus-per-task=1")
    second = Job(cluster, "bob", "--nodelist=node1 --time=00:30:00 --mem=1G --cpus-per-task=1")
    try:
        ports = {first.tunnel()[1], second.tunnel()[1]}
        # Both started together: each must listen where its line says (image/jupyter/jupyter_server_config.py).
        assert ports == {8888, 8889}, f"alice:\n{first.text()}\nbob:\n{second.text()}"
        _, port, command, token = second.tunnel()
        assert command == f"ssh -N -L 8888:node1:{port} bob@login"
        assert api_status(cluster.machines["node1"].ports[port], token) == 200
    finally:
        cluster.login.run(f"scancel {first.id} {second.id}")
    assert (first.ended(), second.ended()) == ("CANCELLED", "CANCELLED")


def test_srun_runs_the_sif_on_a_node(cluster: Cluster) -> None:
    """docs/hpc.md's srun lines: a shell in the SIF on the gpu partition's node (typed without a
    terminal, srun says it disregards --pty, and the shell ends with its input), and TensorFlow's
    version from a node of the cpu partition."""
    said = typed(cluster, "alice", "srun --partition=gpu")
    _, version = said.split("\n$ ")
    assert re.search(r"^2\.9\.3$", version, re.M), said[-3000:]


def test_no_sif_at_the_path_is_one_line_and_no_job_is_left(cluster: Cluster) -> None:
    job = Job(cluster, "alice", "--time=00:05:00 --mem=1G", sif="/shared/nope.sif")
    assert job.ended() == "FAILED"
    lines = [line for line in job.text().splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("tf29-jupyter: ERROR: no SIF at /shared/nope.sif (on node node"), lines


@pytest.mark.parametrize(("options", "refusal"), [
    ("--partition=nope", "Invalid partition name specified"),
    ("--partition=gpu --gres=gpu:2 --mem=1G", "Requested node configuration is not available"),
])
def test_a_request_slurm_refuses_is_its_line_and_no_job(cluster: Cluster, options: str, refusal: str) -> None:
    """Slurm refuses at submission, in its own words (sbatch's detail, then its verdict): the script
    never runs and no job is made."""
    code, out = cluster.login.run(f"cd && sbatch {options} {SBATCH} {SIF}", user="alice")
    lines = out.strip().splitlines()
    assert code != 0 and lines[-1] == f"sbatch: error: Batch job submission failed: {refusal}", out
    assert all(line.startswith("sbatch: error: ") for line in lines) and len(lines) <= 2, out
    assert cluster.login.run("squeue -h -u alice")[1].strip() == ""


def test_the_time_limit_ends_the_job_cleanly(cluster: Cluster, timed_job: Job) -> None:
    """Whether its minute ran out before this test or during it, the job served (its tunnel line),
    then Slurm's TIMEOUT stopped the server cleanly."""
    assert timed_job.ended(timeout=300) == "TIMEOUT", timed_job.reason()
    text = timed_job.text()
    assert TUNNEL.search(text) and TOKEN.search(text), text
    assert "tf29-env: stopping (signal received)" in text, text
    assert "ERROR" not in text, text
    assert_nothing_left(cluster, "node2", "bob")
