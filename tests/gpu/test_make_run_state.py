"""`make stop; make run` keeps what the user set up (issue 29, docs/packages.md): a package installed
with %pip in a notebook, Lab's theme changed through Lab's settings API and git's identity live on
make run's ~/.local volume (tf29-env-local), so a new container, even of a newer image, still has
them, while the newer image's quickstart notebooks arrive. A job started in a Lab terminal is
interrupted by `make stop`, not killed, and `job list` in the new container says it was stopped.
Here because make run's container and volumes have fixed names (tf29-env, tf29-env-*): they need an
engine of their own, and the stand-in GPU engine is the suite's (testkit/gpuengine.py); GPUS=none, as
no GPU path is looked at. The image is the one under test (`make -o build`), and its newer version is
built FROM it on that engine."""

import base64
import contextlib
import io
import re
import tarfile
from collections.abc import Iterator
from pathlib import Path

import docker.errors
import pytest
import requests

from testkit import makerun
from testkit.gpuengine import GpuEngine
from testkit.jobs import STOPPABLE
from testkit.makerun import Lab
from testkit.net import free_host_port
from testkit.ssh import KeyPair
from testkit.wait import wait_until
from testkit.wheels import build_wheel, module_files
from tests.gpu.conftest import assert_no_gpu_holders

NAME = "tf29-env"  # the Makefile's container
VOLUMES = ("tf29-env-work", "tf29-env-hostkeys", "tf29-env-nv", "tf29-env-local")
NEWER = "tf29-env-test-newer:state"
DARK = "JupyterLab Dark"
NEW_NOTEBOOK = "9-what-is-new.ipynb"


def clean(engine: GpuEngine) -> None:
    client = engine.client()
    for container in client.containers.list(all=True, filters={"name": f"^{NAME}$"}):
        container.remove(force=True)
    for volume in VOLUMES:
        with contextlib.suppress(docker.errors.NotFound):
            client.volumes.get(volume).remove(force=True)


@pytest.fixture(scope="module")
def engine(gpu_engine: GpuEngine, image: str) -> Iterator[GpuEngine]:
    clean(gpu_engine)  # what test_make_run leaves: this test starts from no volumes at all
    context = io.BytesIO()
    dockerfile = (f"FROM {image}\nRUN cp /home/jovyan/quickstart/1-environment.ipynb "
                  f"/home/jovyan/quickstart/{NEW_NOTEBOOK}\n").encode()
    with tarfile.open(fileobj=context, mode="w") as archive:
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(dockerfile)
        archive.addfile(info, io.BytesIO(dockerfile))
    context.seek(0)
    gpu_engine.client().images.build(fileobj=context, custom_context=True, tag=NEWER, rm=True, forcerm=True)
    try:
        yield gpu_engine
    finally:
        clean(gpu_engine)
        gpu_engine.client().images.remove(NEWER, force=True)
        assert_no_gpu_holders(gpu_engine)


def make(engine: GpuEngine, target: str, *variables: str) -> None:
    env = {key: value for key, value in engine.environ().items() if key != "GPUS"}
    done = makerun.make(target, *variables, env=env, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def make_run(engine: GpuEngine, image: str, keypair: KeyPair) -> Lab:
    port = free_host_port()
    make(engine, "run", f"IMAGE={image}", "HOST_ADDRESS=127.0.0.1", f"JUPYTER_HOST_PORT={port}",
         f"SSH_HOST_PORT={free_host_port()}", f"SSH_PUBLIC_KEY={keypair.private}.pub", "GPUS=none")
    return Lab(engine.client(), NAME, port)


def test_what_the_user_set_up_survives_make_stop_make_run_and_a_newer_image(
        engine: GpuEngine, image: str, keypair: KeyPair, tmp_path: Path) -> None:
    lab = make_run(engine, image, keypair)
    mounts = {mount["Destination"]: mount for mount in engine.client().containers.get(NAME).attrs["Mounts"]}
    assert mounts["/home/jovyan/.local"]["Name"] == "tf29-env-local", mounts
    wheel = build_wheel(tmp_path, "tf29probe", "1.0", module_files("tf29probe", "1.0"), requires=("numpy>=1.20",))
    upload = requests.put(f"{lab.url}api/contents/work/{wheel.name}", headers=lab.headers, timeout=30, json={
        "type": "file", "format": "base64", "content": base64.b64encode(wheel.read_bytes()).decode()})
    upload.raise_for_status()
    shown = lab.cell(f"%pip install --no-index ~/work/{wheel.name}\nimport tf29probe\nprint(tf29probe.__file__)")
    assert "Successfully installed tf29probe-1.0" in shown, shown
    lab.set_theme(DARK)
    assert lab.terminal("git config --global user.email ada@example.org && git config --global user.email"
                        ).splitlines()[-1] == "ada@example.org"
    requests.put(f"{lab.url}api/contents/work/loop.py", headers=lab.headers, timeout=30,
                 json={"type": "file", "format": "text", "content": STOPPABLE}).raise_for_status()
    found = re.search(r"^(\S+-night)\t", lab.terminal("job run ~/work/loop.py --name night"), re.MULTILINE)
    assert found, "job run printed no id"
    ident = found[1]
    wait_until(lambda: "started" in lab.terminal(f"job log {ident}"), timeout=60, what="the job started")

    make(engine, "stop")
    lab = make_run(engine, NEWER, keypair)
    assert lab.theme() == DARK
    assert lab.terminal("git config user.email").splitlines()[-1] == "ada@example.org"
    shown = lab.cell("import tf29probe; print(tf29probe.__version__, tf29probe.__file__)")
    assert shown.split()[0] == "1.0" and shown.split()[1].startswith("/home/jovyan/.local/lib/python3."), shown
    listing = requests.get(f"{lab.url}api/contents/quickstart", headers=lab.headers, timeout=30).json()
    assert NEW_NOTEBOOK in {entry["name"] for entry in listing["content"]}, listing
    jobs = lab.terminal("job list")
    assert re.search(rf"^{ident} +night +stopped +130 ", jobs, re.MULTILINE), jobs
    assert "interrupted: saving" in lab.terminal(f"job log {ident}")
