"""Training as a Slurm job that outlives its time limit (issue 39): deploy/slurm/job.sbatch on the test
cluster (tests/hpc/cluster.py) runs the quickstart's training notebook from the SIF with `job run
--foreground`. As the time limit nears, Slurm's --signal=B:TERM@120 reaches the script: the run stops
with its checkpoint, the script requeues its Slurm job, and the requeued run resumes after the last
finished epoch and ends done. A scancel is not requeued; bad input is one line and no job.

Slurm's shortest time limit is a minute, and its warning comes on a 30 s timer: to have the warning
land mid-run, not before the first epoch or after the last, the test shortens the running job's limit
as an administrator would (scontrol update, as root) once the third epoch began, so that the warning
is due at once, and gives the limit back once it came (a requeued job keeps its limit).

docs/hpc.md's lines are typed as written by bob in his home (the SIF at ~/tf29-env.sif, deploy/slurm
as in a checkout): its two sbatch lines start this module, a ~/work/train.ipynb (the quickstart's
notebook, each epoch paused, so that it trains all along) and a ~/work/train.py on the gpu partition's
node (a GPU Slurm schedules, none behind it: the job shows that it runs there with --nv); its lines
from the login node list and follow the notebook's job before the module's last test cancels it."""

import json
import re
from dataclasses import dataclass
from typing import Any

import pytest

from testkit import docblocks, hpc
from testkit.docblocks import Plan
from testkit.wait import wait_until
from tests.hpc.cluster import Cluster

SIF = f"/shared/{hpc.SIF_NAME}"
SBATCH = "/opt/tf29-env-slurm/job.sbatch"
NOTEBOOK = "/home/jovyan/quickstart/5-training-job.ipynb"  # in the SIF
EPOCHS = 30
# Each epoch's pause (2 s) is where a stop lands: long against the warning's 30 s timer, short in all.
TRAINING = f"{NOTEBOOK} -p EPOCHS {EPOCHS} -p STEPS_PER_EPOCH 5 -p EPOCH_PAUSE 2"
OPTIONS = "--time=00:30:00 --mem=1G --cpus-per-task=1"
JOB_LINE = re.compile(r"^job (\S+): running in the foreground; folder (\S+)$", re.M)
EPOCH = re.compile(r"^Epoch (\d+)/(\d+)$", re.M)
ENDED = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "BOOT_FAIL", "DEADLINE")
BLOCKS = docblocks.blocks_for(__file__)
DOC_SIF = f"/home/bob/{hpc.SIF_NAME}"  # ~/tf29-env.sif, as bob typed it
# The reader's script: what it was given.
TRAIN_PY = 'import sys\n\nprint("train.py was given", sys.argv[1:])\n'
# The reader's notebook: the quickstart's, with a pause after each epoch, so that its 200 epochs take
# over 15 minutes (the module's last test cancels it), and few steps.
PAUSED = "\nSTEPS_PER_EPOCH = 5\nEPOCH_PAUSE = 5.0\n"
RUNNING = re.compile(r"^(\S+)\s+\S+\s+running\b", re.M)  # a running job in `job list`
PLANS = {
    ("docs/hpc.md", "sbatch deploy/slurm/job.sbatch"): Plan(),
    # Ctrl-C once the followed log shows an epoch.
    ("docs/hpc.md", "squeue --me"): Plan(placeholders={"ID": lambda said: RUNNING.findall(said)[0]},
                                         follows=("apptainer exec ~/tf29-env.sif job log -f",), follow_seconds=120),
}


class BatchJob:
    """`sbatch OPTIONS job.sbatch ARGUMENTS` submitted by USER from their home (ENVIRONMENT before it),
    or (SUBMITTED) the one of that id USER submitted."""

    def __init__(self, cluster: Cluster, user: str, options: str = "", arguments: str = "", environment: str = "",
                 *, submitted: str | None = None) -> None:
        self.cluster, self.user = cluster, user
        if submitted is None:
            code, out = cluster.login.run(f"cd && {environment} sbatch --parsable {options} {SBATCH} {arguments}",
                                          user=user)
            assert code == 0, out
            submitted = out.strip().splitlines()[-1].split(";")[0]
        self.id = submitted
        self.output = f"/home/{user}/tf29-job-{self.id}.out"

    def show(self) -> dict[str, str]:
        """scontrol show job's fields (JobState, Restarts, ExitCode, ...)."""
        _, out = self.cluster.login.run(f"scontrol show job {self.id}")
        return dict(re.findall(r"(\w+)=(\S*)", out))

    def text(self) -> str:
        return self.cluster.login.read(self.output)

    def wait_for(self, pattern: str, timeout: float) -> re.Match[str]:
        try:
            return wait_until(lambda: re.search(pattern, self.text(), re.M), timeout=timeout, interval=1,
                              what=f"{pattern!r} in {self.output}")
        except TimeoutError:
            raise AssertionError(f"no {pattern!r} in {timeout:.0f} s; Slurm: {self.show().get('JobState')}, "
                                 f"output:\n{self.text()[-3000:]}") from None

    def ended(self, timeout: float) -> dict[str, str]:
        def final() -> dict[str, str] | None:
            fields = self.show()
            return fields if fields.get("JobState") in ENDED else None

        try:
            return wait_until(final, timeout=timeout, interval=1, what=f"Slurm job {self.id} ended")
        except TimeoutError:
            raise AssertionError(f"Slurm job {self.id} still {self.show().get('JobState')} after {timeout:.0f} s:\n"
                                 f"{self.text()[-3000:]}") from None

    def job(self) -> tuple[str, str]:
        """The job the run made (its id and folder), from its first line."""
        found = self.wait_for(JOB_LINE.pattern, timeout=300)
        return found.group(1), found.group(2)

    def record(self, folder: str) -> dict[str, Any]:
        record: dict[str, Any] = json.loads(self.cluster.login.read(f"{folder}/job.json") or "{}")
        return record

    def image(self, command: str) -> str:
        """COMMAND in the SIF on the login node, as the user (what docs/hpc.md shows for `job list`)."""
        code, out = self.cluster.login.run(f"cd && apptainer exec {SIF} {command}", user=self.user)
        assert code == 0, out
        return out


def jobs_of(cluster: Cluster, user: str) -> str:
    return cluster.login.run(f"ls -A /home/{user}/work/jobs 2>/dev/null || true")[1]


@dataclass
class Typed:
    """docs/hpc.md's sbatch lines as bob typed them: the notebook's job and the script's."""

    notebook: BatchJob
    script: BatchJob


@pytest.fixture(scope="module", autouse=True)
def typed(cluster: Cluster) -> Typed:
    """bob's jobs from docs/hpc.md's lines, submitted before this module's other tests: the notebook
    trains while they run (the module's last test cancels it), the script runs on the gpu partition."""
    login = cluster.login
    code, quickstart = login.run(f"cd && apptainer exec {DOC_SIF} cat {NOTEBOOK}", user="bob")
    assert code == 0, quickstart
    notebook = json.loads(quickstart)
    [parameters] = [cell for cell in notebook["cells"] if "parameters" in cell.get("metadata", {}).get("tags", [])]
    parameters["source"] = "".join(parameters["source"]) + PAUSED
    login.write("/home/bob/work/train.ipynb", json.dumps(notebook), user="bob")
    login.write("/home/bob/work/train.py", TRAIN_PY, user="bob")
    [(block, _, plan)] = [found for found in docblocks.with_plans(BLOCKS, PLANS) if found[1][1].startswith("sbatch")]
    said = docblocks.run_block(block, login.typist("bob"), plan)
    return Typed(*(BatchJob(cluster, "bob", submitted=hpc.submitted(said, index)) for index in (0, 1)))


@pytest.fixture
def long_run(typed: Typed) -> BatchJob:
    return typed.notebook


def test_the_docs_script_line_runs_on_the_gpu_node_with_nv(typed: Typed) -> None:
    script = typed.script
    fields = script.ended(timeout=180)
    assert (fields["JobState"], fields["ExitCode"]) == ("COMPLETED", "0:0"), script.text()[-3000:]
    text = script.text()
    assert (f"tf29-job: Slurm job {script.id} on node1: running /home/bob/work/train.py from {DOC_SIF} with --nv"
            in text), text
    assert "train.py was given ['--lr', '0.001']" in text, text


@pytest.mark.parametrize(("environment", "arguments", "line"), [
    ("", f"/shared/nope.sif {NOTEBOOK}", "tf29-job: ERROR: no SIF at /shared/nope.sif (on node node"),
    ("", SIF, "tf29-job: ERROR: no notebook or script to run: sbatch job.sbatch [SIF] NOTEBOOK.ipynb|SCRIPT.py"),
    ("", f"{SIF} resume", "tf29-job: ERROR: resume takes a job's id and nothing else"),
    ("TF29_JOB_MAX_REQUEUES=many", f"{SIF} {NOTEBOOK}",
     "tf29-job: ERROR: TF29_JOB_MAX_REQUEUES='many' must be a number of requeues from 0 to 9999"),
], ids=["no-sif", "no-notebook", "resume-without-id", "bad-max-requeues"])
def test_bad_input_is_one_line_and_no_job(cluster: Cluster, environment: str, arguments: str, line: str) -> None:
    before = jobs_of(cluster, "alice")
    job = BatchJob(cluster, "alice", OPTIONS, arguments, environment)
    fields = job.ended(timeout=60)
    assert (fields["JobState"], fields["Restarts"]) == ("FAILED", "0"), fields
    lines = [text for text in job.text().splitlines() if text.strip()]
    assert len(lines) == 1 and lines[0].startswith(line), lines
    assert jobs_of(cluster, "alice") == before


def test_the_time_limit_stops_the_run_at_a_checkpoint_and_the_requeued_job_resumes_it(cluster: Cluster) -> None:
    batch = BatchJob(cluster, "alice", OPTIONS, f"{SIF} {TRAINING}")
    job_id, folder = batch.job()
    batch.wait_for(r"^Epoch 3/", timeout=300)
    # The end 90-150 s away: Slurm's next 30 s tick sends the warning (due 120 s before, up to 30 s early).
    code, out = cluster.login.run(f'start=$(date -d "$(squeue -h -j {batch.id} -o %S)" +%s) && scontrol update '
                                  f"JobId={batch.id} TimeLimit=$(( ($(date +%s) - start + 150) / 60 ))")
    assert code == 0, out
    batch.wait_for(r"^tf29-job: TERM received: stopping the run", timeout=120)
    code, out = cluster.login.run(f"scontrol update JobId={batch.id} TimeLimit=30")
    assert code == 0, out

    # The first attempt stopped at a checkpoint: BackupAndRestore's save count is its finished epochs.
    def first_attempt() -> dict[str, Any] | None:
        attempts = batch.record(folder).get("attempts") or [{}]
        return attempts[0] if attempts[0].get("ended") else None

    attempt = wait_until(first_attempt, timeout=90, interval=1, what=f"job {job_id}'s first run ended")
    assert (attempt["state"], attempt["exit_code"]) == ("stopped", 130), attempt
    index = cluster.login.read(f"{folder}/checkpoints/backup/chief/checkpoint")
    saved = re.search(r'^model_checkpoint_path: "ckpt-(\d+)"$', index, re.M)
    assert saved, f"no checkpoint in {folder}/checkpoints: {index!r}"
    finished = int(saved.group(1))
    assert 2 <= finished < EPOCHS, finished

    fields = batch.ended(timeout=420)
    assert (fields["JobState"], fields["Restarts"], fields["ExitCode"]) == ("COMPLETED", "1", "0:0"), fields
    text = batch.text()
    assert f"tf29-job: job {job_id} stopped with its checkpoint; Slurm job {batch.id} requeued" in text, text
    assert f"tf29-job: Slurm job {batch.id} on node" in text and f": resuming job {job_id} (run 2) from {SIF}" in text
    # Seen from the login node as docs/hpc.md shows: the resumed run began after the last finished epoch.
    listed = {entry["id"]: entry for entry in json.loads(batch.image("job list --json"))}
    assert (listed[job_id]["state"], listed[job_id]["exit_code"]) == ("done", 0), listed[job_id]
    log = batch.image(f"job log {job_id}")
    first, marker, resumed = log.partition("--- job resume: attempt 2")
    assert marker, log[-3000:]
    assert [int(epoch) for epoch, _ in EPOCH.findall(first)][:3] == [1, 2, 3], first[-2000:]
    epochs = [int(epoch) for epoch, total in EPOCH.findall(resumed) if int(total) == EPOCHS]
    assert epochs == list(range(finished + 1, EPOCHS + 1)), resumed[-3000:]
    assert f"trained {EPOCHS - finished} epochs in this run; final loss" in resumed, resumed[-2000:]
    record = batch.record(folder)
    assert [(a["state"], a["exit_code"]) for a in record["attempts"]] == [("stopped", 130), ("done", 0)], record
    # The requeue's note went with the job.
    assert cluster.login.run(f"test -e /home/alice/work/jobs/.slurm/tf29-{batch.id}")[0] == 1


def test_a_scancel_is_not_requeued_and_sbatch_resume_goes_on(cluster: Cluster, long_run: BatchJob) -> None:
    """bob's run, which has trained all along: scancel ends it (Slurm's TERM to every process), and the
    script leaves it cancelled, not requeued, the job stopped; `sbatch job.sbatch SIF resume ID` goes on
    from its checkpoint in a new Slurm job."""
    job_id, folder = long_run.job()
    long_run.wait_for(r"^Epoch 3/", timeout=300)
    # docs/hpc.md's lines from the login node, typed by bob while it trains.
    [(block, _, plan)] = [found for found in docblocks.with_plans(BLOCKS, PLANS) if found[1][1] == "squeue --me"]
    said = docblocks.run_block(block, cluster.login.typist("bob", stop_when=lambda said: bool(EPOCH.search(said))),
                               plan).split("\n$ ")
    assert re.search(rf"^\s*{long_run.id}\s.* R\s", said[0], re.M), said[0]
    assert RUNNING.findall(said[1]) == [job_id], said[1]
    assert EPOCH.search(said[2]), said[2][-3000:]
    assert cluster.login.run(f"scancel {long_run.id}", user="bob")[0] == 0
    fields = long_run.ended(timeout=90)
    assert (fields["JobState"], fields["Restarts"]) == ("CANCELLED", "0"), fields
    long_run.wait_for(rf"^tf29-job: Slurm job {long_run.id} is [A-Z]+ \(scancel\?\): job {job_id} not requeued; "
                      rf"continue it with: sbatch job.sbatch {DOC_SIF} resume {job_id}$", timeout=30)
    assert cluster.login.run("squeue -h -u bob")[1].strip() == ""
    listed = {entry["id"]: entry for entry in json.loads(long_run.image("job list --json"))}
    assert listed[job_id]["state"] == "stopped", listed[job_id]
    saved = re.search(r'^model_checkpoint_path: "ckpt-(\d+)"$',
                      cluster.login.read(f"{folder}/checkpoints/backup/chief/checkpoint"), re.M)
    assert saved, f"no checkpoint in {folder}/checkpoints"

    again = BatchJob(cluster, "bob", f"--nodelist=node2 {OPTIONS}", f"{SIF} resume {job_id}")
    try:
        again.wait_for(rf"^tf29-job: Slurm job {again.id} on node2: resuming job {job_id} from {SIF}$", timeout=60)
        assert again.job() == (job_id, folder)
        first = again.wait_for(r"^Epoch (\d+)/200$", timeout=300)
        assert int(first.group(1)) == int(saved.group(1)) + 1, again.text()[-3000:]
    finally:
        cluster.login.run(f"scancel {again.id}", user="bob")
    assert again.ended(timeout=90)["JobState"] == "CANCELLED"
