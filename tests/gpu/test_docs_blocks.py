"""The docs' blocks for a GPU box, typed as written on the stand-in GPU engine by a reader with a key
in ~/.ssh: README's quick start (`docker run --gpus all … tf29-env:latest-gpu`, its log, an SSH
login that imports TensorFlow), then on that container docs/selfcheck.md's commands, docs/jobs.md's
commands in a terminal of the environment, and its one-off `docker run … job run`. The image is the
one under test; the host ports, the reader's notebook and the number of epochs are the test's."""

import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit import docblocks
from testkit.docblocks import Plan, PlanKey, Result
from testkit.gpuengine import GpuEngine
from testkit.net import free_host_port
from testkit.ssh import KeyPair
from tests.gpu.conftest import assert_no_gpu_holders

BLOCKS = docblocks.blocks_for(__file__)
CONTAINER = "tf"  # the name the README gives its container
VOLUMES = ("tf-work", "tf-hostkeys", "tf-nv", "tf-local")
JOB_ID = re.compile(r"\b(\d{8}-\d{6}-[\w.-]+)\b")
# The number of epochs is the reader's choice; one shows that the command works.
ONE_EPOCH = "-p EPOCHS 1"


@pytest.fixture(scope="module")
def engine(gpu_engine: GpuEngine) -> Iterator[GpuEngine]:
    yield gpu_engine
    client = gpu_engine.client()
    for container in client.containers.list(all=True, filters={"name": f"^{CONTAINER}$"}):
        container.remove(force=True)
    for volume in VOLUMES:
        for found in client.volumes.list(filters={"name": volume}):
            found.remove(force=True)
    assert_no_gpu_holders(gpu_engine)


@pytest.fixture(scope="module")
def reader(engine: GpuEngine, keypair: KeyPair, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return docblocks.reader_env(tmp_path_factory.mktemp("reader"), keypair.private, engine.environ())


def in_the_environment(env: dict[str, str], cwd: Path) -> docblocks.Execute:
    """A command typed in a terminal of the README's container (`docker exec -it -u jovyan tf bash`)."""
    shell = docblocks.bash(cwd, env)

    def execute(text: str, timeout: float) -> Result:
        return shell(f"docker exec -u jovyan {CONTAINER} bash -lc {shlex.quote(text)}", timeout)
    return execute


def plans(image: str) -> dict[PlanKey, Plan]:
    jupyter, ssh = free_host_port(), free_host_port()
    return {
        ("README.md", "docker run -d --name tf"): Plan(
            placeholders={"tf29-env:latest-gpu": image, "-p 8888:8888": f"-p {jupyter}:8888",
                          "-p 2222:22": f"-p {ssh}:22", "ssh -p 2222": f"ssh -p {ssh}"},
            waits=("ssh -p",)),  # the reader logs in once sshd is up
        ("docs/selfcheck.md", "docker logs tf"): Plan(waits=("docker logs tf 2>&1 | grep",)),
        ("docs/jobs.md", "job run"): Plan(
            placeholders={"-p EPOCHS 50": ONE_EPOCH,
                          "20261206-091500-5-training-job": lambda said: JOB_ID.findall(said)[0]},
            follows=("job log -f",)),
        ("docs/jobs.md", "docker run --rm -v tf-work"): Plan(
            placeholders={"tf29-env:latest-gpu": image, "-p EPOCHS 20": ONE_EPOCH}),
    }


def test_the_gpu_hosts_blocks_as_typed(engine: GpuEngine, image: str, reader: dict[str, str], tmp_path: Path) -> None:
    host = docblocks.bash(tmp_path, reader, tty=True)
    said: dict[str, str] = {}
    for block, (_, first), plan in docblocks.with_plans(BLOCKS, plans(image)):
        if first.startswith("docker run --rm"):
            # The reader's notebook in their work volume (the README's container has it at ~/work).
            done = host(f"docker exec -u jovyan {CONTAINER} cp /home/jovyan/quickstart/5-training-job.ipynb "
                        "/home/jovyan/work/train.ipynb", 60)
            assert done.code == 0, done.output
        execute = in_the_environment(reader, tmp_path) if first == "job run" else host
        said[first] = docblocks.run_block(block, execute, plan)

    assert "PhysicalDevice(name='/physical_device:CPU:0'" in said["docker run -d --name tf"]
    # What the reader sees of the start-up run: the self-check's lines, and nothing else of the log.
    start_up = said["docker logs tf"].split("\n$ ")[0].splitlines()[1:]
    assert start_up and all(line.startswith("selfcheck:") for line in start_up), start_up[:5]
    assert '"checks"' in said["docker logs tf"]
    assert JOB_ID.search(said["job run"])
