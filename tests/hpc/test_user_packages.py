"""pip under real Apptainer (issue 29, docs/packages.md), with the SIF a cluster makes from the image
(tests/hpc/conftest.py): the venv is read-only there, and with the user site on (ENABLE_USER_SITE=1)
`pip install` puts the package into the host's home, ~/.local, where the next run finds it, behind
the image's pinned packages; the Apptainer mode's default keeps the host's ~/.local out. The wheel
is built here and served from a folder (no index)."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from docker import DockerClient

from testkit import hpc
from testkit.wait import wait_until
from testkit.wheels import build_wheel, module_files
from tests.hpc.conftest import HPC_USERS

SIF = f"/shared/{hpc.SIF_NAME}"
ON = "--env ENABLE_USER_SITE=1"
PROBE = "python -c 'import numpy, tf29probe; print(tf29probe.__file__, numpy.__version__)'"


@pytest.fixture(scope="module")
def node(docker_client: DockerClient, hpc_node: str, sif: str,
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[hpc.Machine]:
    wheels: Path = tmp_path_factory.mktemp("wheels")
    build_wheel(wheels, "tf29probe", "1.0", module_files("tf29probe", "1.0"), requires=("numpy>=1.20",))
    wheels.chmod(0o755)
    for wheel in wheels.iterdir():
        wheel.chmod(0o644)
    machine = hpc.start_machine(docker_client, hpc_node, role="box", users=HPC_USERS, hostname="node3",
                                volumes={sif: {"bind": "/shared", "mode": "ro"},
                                         str(wheels): {"bind": "/wheels", "mode": "ro"}})
    try:
        wait_until(lambda: machine.run("getent passwd alice")[0] == 0, timeout=60, what="the users made")
        code, out = machine.run("install -d -o alice -g alice /home/alice /home/alice/work")
        assert code == 0, out
        yield machine
    finally:
        machine.container.remove(force=True, v=True)


def test_pip_installs_into_the_hosts_home_behind_the_images_packages(node: hpc.Machine) -> None:
    code, out = node.run(f"cd; apptainer run {ON} --bind /wheels {SIF} pip install --no-index --find-links /wheels "
                         "tf29probe",
                         user="alice")
    assert code == 0 and "Successfully installed tf29probe-1.0" in out, out
    code, out = node.run("ls -d /home/alice/.local/lib/python3.*/site-packages/tf29probe", user="alice")
    assert code == 0, out
    code, out = node.run(f"cd; apptainer run {ON} {SIF} {PROBE}", user="alice")
    where, numpy = out.strip().splitlines()[-1].split()
    assert code == 0 and numpy == "1.23.5", out
    assert where.startswith("/home/alice/.local/lib/python3.") and where.endswith("/tf29probe/__init__.py"), out
    # `apptainer exec` (no entrypoint) reads the same user site
    code, out = node.run(f"cd; apptainer exec {SIF} {PROBE}", user="alice")
    assert code == 0 and out.strip().splitlines()[-1].split()[0] == where, out
    # the Apptainer mode's default: the host's ~/.local is not read (PYTHONNOUSERSITE=1)
    code, out = node.run(f"cd; apptainer run {SIF} {PROBE}", user="alice")
    assert code != 0 and "No module named 'tf29probe'" in out, out
