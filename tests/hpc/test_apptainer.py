"""The image under real Apptainer (issue 28): Apptainer 1.4 from Debian's archive, unprivileged, in a
Debian 13 machine (testkit/hpc.py), running the SIF that a cluster without Docker makes from build.py
export's archive. Users alice and bob run it as themselves with their own homes, as on a shared
compute node: JupyterLab with a token and the tunnel line, a free port for the second user, Slurm's
SIGTERM ending it with exit 0 and the work kept, --containall and --compat, the self-check by hand,
and bad input in one line. docs/hpc.md's lines for Apptainer are typed as written by alice in her home
(the SIF at ~/tf29-env.sif, a train.py beside it); the node has no GPU, so its --nv lines show only
that they start the same without one."""

import re
import shlex
from collections.abc import Iterator

import pytest
import requests
from docker import DockerClient

from testkit import docblocks, hpc
from testkit.containers import LOOPBACK
from testkit.docblocks import Plan
from testkit.jupyter import api_status
from testkit.wait import wait_until
from tests.hpc.conftest import HPC_USERS, as_in_the_docs

SIF = f"/shared/{hpc.SIF_NAME}"
TUNNEL = re.compile(r"^tf29-env: JupyterLab listens on (\S+):(\d+)\. On your laptop run: (ssh -N -L .+)$", re.M)
TOKEN = re.compile(r"^tf29-env: then open http://localhost:8888/lab\?token=([0-9a-f]{48})$", re.M)
BLOCKS = docblocks.blocks_for(__file__)
# The doc's train.py: what it shows of the run (the image's TensorFlow, as the calling user, in their home).
TRAIN_PY = 'import os\nimport tensorflow as tf\n\nprint(tf.__version__, os.getuid(), os.environ["HOME"])\n'


@pytest.fixture(scope="module")
def box(docker_client: DockerClient, hpc_node: str, sif: str) -> Iterator[hpc.Machine]:
    """A compute node with Apptainer: the SIF read-only in /shared, the users' homes with work/."""
    machine = hpc.start_machine(docker_client, hpc_node, role="box", users=HPC_USERS, hostname="node1",
                                volumes={sif: {"bind": "/shared", "mode": "ro"}}, publish=(8888, 8889, 8890))
    try:
        wait_until(lambda: machine.run("getent passwd bob")[0] == 0, timeout=60, what="the users made")
        for name in ("alice", "bob"):
            code, out = machine.run(f"install -d -o {name} -g {name} /home/{name} /home/{name}/work")
            assert code == 0, out
        code, out = machine.run(as_in_the_docs("alice"), user="alice")
        assert code == 0, out
        machine.write("/home/alice/train.py", TRAIN_PY, user="alice")
        code, out = machine.run("install -d -m 755 /srv/read-only-home")
        assert code == 0, out
        yield machine
    finally:
        machine.container.remove(force=True, v=True)


class Server:
    """`apptainer run ARGS SIF` started as USER in the background, its output in ~/NAME.log."""

    def __init__(self, box: hpc.Machine, user: str, name: str, args: str = "") -> None:
        self.box, self.user, self.name = box, user, name
        self.log, self.pid, self.exit = (f"/home/{user}/{name}.{part}" for part in ("log", "pid", "exit"))
        box.start(f"cd; apptainer run {args} {SIF} > {self.log} 2>&1 & echo $! > {self.pid}; wait $!; "
                  f"echo $? > {self.exit}", user=user)

    def output(self) -> str:
        return self.box.read(self.log)

    def tunnel(self) -> tuple[str, int, str, str]:
        """(node, port, ssh command, token), once JupyterLab listens."""
        def listening_or_ended() -> str | None:
            text = self.output()
            return text if TOKEN.search(text) or self.box.read(self.exit).strip() else None

        text = wait_until(listening_or_ended, timeout=180, what=f"{self.user}'s tunnel line in {self.log}")
        assert TOKEN.search(text), f"apptainer run ended before JupyterLab listened:\n{text[-3000:]}"
        (node, port, command), token = TUNNEL.findall(text)[0], TOKEN.findall(text)[0]
        return node, int(port), command, token

    def terminate(self) -> int:
        """SIGTERM to Apptainer, as Slurm sends at a job's end; its exit code."""
        code, out = self.box.run(f"kill -TERM $(cat {self.pid})", user=self.user)
        assert code == 0, out
        text = wait_until(lambda: self.box.read(self.exit).strip(), timeout=15, what=f"{self.name} ended")
        return int(text)


@pytest.fixture(scope="module")
def alice(box: hpc.Machine) -> Iterator[Server]:
    server = Server(box, "alice", "lab")
    yield server
    box.run(f"kill -TERM $(cat {server.pid}) 2>/dev/null", user="alice")


def announced(box: hpc.Machine, output: str) -> bool:
    """Whether the URL is there and the helper that printed it has ended: the reader's Ctrl-C comes
    then. (A Ctrl-C in the instant the helper ended was once lost: the supervisor's trap ran between
    two `wait -n`; image/entrypoint.d/services.sh's wake-up child closes that window.)"""
    return bool(TOKEN.search(output)) and box.run("pgrep -f 'tf29image.startup.apptainer announce'")[0] == 1


def test_the_docs_lines_exec_as_the_calling_user_and_run_jupyterlab_until_ctrl_c(box: hpc.Machine) -> None:
    """docs/hpc.md's four lines, typed by alice in her home: `apptainer exec` runs train.py with the
    image's TensorFlow as her; each `apptainer run` prints the tunnel line and the URL, and Ctrl-C (once
    the URL is there) stops it, leaving no runtime folder behind."""
    [(block, _, plan)] = docblocks.with_plans(BLOCKS, {
        ("docs/hpc.md", "apptainer exec tf29-env.sif python train.py"): Plan(follows=("apptainer run", "APPTAINERENV_"),
                                                                              follow_seconds=180)})
    said = docblocks.run_block(block, box.typist("alice", stop_when=lambda output: announced(box, output)), plan)
    typed = said.split("\n$ ")
    assert len(typed) == 4, said[-3000:]
    assert typed[0].strip().splitlines()[-1] == "2.9.3 2001 /home/alice", typed[0][-3000:]
    for run in typed[1:]:
        assert TUNNEL.search(run) and TOKEN.search(run), run[-3000:]
        assert TUNNEL.findall(run)[0][:2] == ("node1", "8888"), run[-3000:]  # each ended before the next
        assert "tf29-env: stopping (signal received)" in run, run[-3000:]
    left = ""

    def nothing_left() -> bool:  # what a stop leaves ends within seconds (Apptainer's own last)
        nonlocal left
        left = box.run("ls -d /tmp/tf29-env-2001-* 2>/dev/null; pgrep -u alice -a . || true")[1].strip()
        return not left

    try:
        wait_until(nothing_left, timeout=30, interval=1, what="alice's runtime folders and processes gone")
    except TimeoutError:
        raise AssertionError(f"left after Ctrl-C:\n{left}") from None


def test_run_serves_jupyterlab_with_a_token_and_the_tunnel_line(box: hpc.Machine, alice: Server) -> None:
    node, port, command, token = alice.tunnel()
    assert (node, port, command) == ("node1", 8888, "ssh -N -L 8888:localhost:8888 alice@node1")
    published = box.ports[port]
    assert api_status(published) == 403
    assert api_status(published, token) == 200
    output = alice.output()
    assert "ERROR" not in output and "no sshd (it needs root)" in output, output
    assert "WARN tini" not in output, output
    code, processes = box.run("ps -eo user=,comm=")
    assert code == 0 and "sshd" not in processes, processes
    # The quickstart notebooks are in the host home that JupyterLab opens.
    listing = requests.get(f"http://{LOOPBACK}:{published}/api/contents/tf29-env-quickstart", timeout=10,
                           headers={"Authorization": f"token {token}"})
    assert listing.status_code == 200 and len(listing.json()["content"]) >= 4, listing.text
    # The self-check ran beside it, as alice, into the run's own folder.
    text = wait_until(lambda: alice.output() if "selfcheck: " in alice.output() and " SKIP in " in alice.output()
                      else None, timeout=180, what="the self-check's summary")
    assert re.search(r"report: /tmp/tf29-env-2001-\d+/selfcheck\.json", text), text


def test_a_second_user_on_the_node_gets_the_next_port(box: hpc.Machine, alice: Server) -> None:
    alice.tunnel()
    bob = Server(box, "bob", "lab")
    try:
        _, port, command, token = bob.tunnel()
        assert (port, command) == (8889, "ssh -N -L 8888:localhost:8889 bob@node1")
        assert api_status(box.ports[8889], token) == 200
        assert api_status(box.ports[8889], alice.tunnel()[3]) == 403
    finally:
        assert bob.terminate() == 0


def test_sigterm_ends_it_at_once_with_exit_0_and_the_work_kept(box: hpc.Machine, alice: Server) -> None:
    _, port, _, token = alice.tunnel()
    saved = requests.put(f"http://{LOOPBACK}:{box.ports[port]}/api/contents/work/kept.ipynb", timeout=10,
                         headers={"Authorization": f"token {token}"}, json={"type": "notebook", "content": {
                             "cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}})
    assert saved.status_code == 201, saved.text
    assert alice.terminate() == 0
    assert "tf29-env: stopping (signal received)" in alice.output()
    code, out = box.run("stat -c '%U %s' /home/alice/work/kept.ipynb; ls -d /tmp/tf29-env-2001-* 2>&1")
    assert code != 0 and out.startswith("alice ") and "No such file" in out, out


@pytest.mark.parametrize("flag", ["--containall", "--compat"])
def test_containall_and_compat(box: hpc.Machine, flag: str) -> None:
    """A contained run: a home of its own (not the host's), a clean environment, a PID namespace
    (--compat: also a writable tmpfs over the image)."""
    server = Server(box, "bob", flag.strip("-"), flag)
    try:
        _, port, command, token = server.tunnel()
        assert command.endswith(f":{port} bob@node1"), command
        assert api_status(box.ports[port], token) == 200
    finally:
        assert server.terminate() == 0


def test_the_selfcheck_checks_the_sif(box: hpc.Machine) -> None:
    code, out = box.run(f"apptainer exec {SIF} selfcheck", user="bob")
    assert code == 0, out
    assert re.search(r"^selfcheck: \d+ PASS, \d+ WARN, \d+ FAIL, \d+ SKIP in .*GPU visible: no", out, re.M), out


def test_a_read_only_home_is_one_line(box: hpc.Machine) -> None:
    _, out = box.run(f"apptainer run --home /srv/read-only-home {SIF}; echo exit=$?", user="bob")
    # root's folder, as the user namespace shows it (nobody: 65534).
    lines = [line for line in out.splitlines() if line.startswith("tf29-env: ")]
    assert lines == ["tf29-env: ERROR: HOME=/srv/read-only-home is not writable for uid 2002 (owner 65534:65534, mode "
                     "755): JupyterLab keeps your notebooks, its settings and the kernels' files there; give Apptainer "
                     "a writable home (--home DIR)"], out
    assert "exit=2" in out.splitlines(), out  # stdout and stderr arrive in either order


def test_no_sif_at_the_path_is_apptainers_one_line(box: hpc.Machine) -> None:
    code, out = box.run(f"apptainer run {shlex.quote('/shared/missing.sif')}", user="bob")
    assert code != 0 and len(out.strip().splitlines()) == 1 and "missing.sif" in out, out
