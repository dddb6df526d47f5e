"""The research-cluster stand-in of tests/hpc (issue 28): real Apptainer, Slurm and MUNGE from Debian's
archive, each machine a container on a private network of the real engine.

- The machines' image (tests/hpc/node): Debian 13 bootstrapped with debootstrap (no registry), plus
  Apptainer from Debian's sid and Slurm and MUNGE from Debian 13; tagged with the content hash of
  its folder, so that a later run on the same engine reuses it.
- The SIF of the image under test: `docker save`'s archive turned into a SIF with the command a
  cluster without Docker uses (`apptainer build X.sif docker-archive:X.tar`), as an unprivileged
  user, kept in a volume named after the image's id (a later run of the same image reuses it).

Unprivileged Apptainer needs user namespaces and FUSE inside the machine's container: it runs with
seccomp and AppArmor unconfined and /dev/fuse (root in it has Docker's default capabilities only;
--privileged is not needed, and this engine refuses it)."""

import contextlib
import fcntl
import hashlib
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker.errors
from docker import DockerClient
from docker.models.containers import Container

from testkit.containers import LOOPBACK
from testkit.docblocks import Execute, Result
from testkit.net import free_host_port
from tf29env.core import engine
from tf29env.core.paths import REPO, cache_dir
from tf29env.imagebuild import context, dockerbuild

NODE_DIR = REPO / "tests" / "hpc" / "node"
HUB_DIR = REPO / "tests" / "hpc" / "hub"
HUB_REQUIREMENTS = REPO / "deploy" / "slurm" / "hub" / "requirements.txt"
HUB_REPOSITORY = "tf29-env-hpc-hub"
# The wheels of the hub's venv, for Debian 13's CPython 3.13 on x86_64.
WHEEL_PLATFORM = ["--only-binary=:all:", "--python-version", "3.13", "--implementation", "cp", "--abi", "cp313",
                  "--abi", "abi3", "--abi", "none", "--platform", "manylinux_2_17_x86_64", "--platform",
                  "manylinux2014_x86_64", "--platform", "manylinux_2_28_x86_64", "--platform", "any"]
NODE_REPOSITORY = "tf29-env-hpc-node"
OS_REPOSITORY = "tf29-env-hpc-os"
SUITE = "trixie"
MIRROR = "http://deb.debian.org/debian"
DEBOOTSTRAP_ARGS = "--variant=minbase --include=ca-certificates"
SIF_VOLUME_PREFIX = "tf29-env-hpc-sif-"
SIF_NAME = "tf29-env.sif"
# What unprivileged Apptainer needs of the container it runs in (measured on Docker 20.10): user
# namespaces and FUSE.
APPTAINER_RUN_ARGS: dict[str, Any] = {
    "security_opt": ["seccomp=unconfined", "apparmor=unconfined"],
    "devices": ["/dev/fuse:/dev/fuse:rwm"],
}
# The tests' SIF: no layer cache, and zstd at its fastest level instead of the default gzip (which
# squashfuse and the kernel read alike): 2.7 instead of 10 minutes for the gpu image on two cores,
# 4 % larger. docs/hpc.md names both for clusters.
SQUASHFS_ARGS = '--disable-cache --mksquashfs-args "-comp zstd -Xcompression-level 1"'

Log = Callable[[str], None]


@contextlib.contextmanager
def locked(name: str) -> Iterator[None]:
    """One maker at a time, across processes (test runs side by side share the engine)."""
    with (cache_dir() / f"hpc-{name}.lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def node_image(client: DockerClient, log: Log) -> str:
    """The machines' image, built now unless the engine has it (by content hash)."""
    with locked("node-image"):
        return _node_image(client, log)


def hub_image(client: DockerClient, node: str, log: Log) -> str:
    """The login machine's image with JupyterHub and batchspawner (by content hash)."""
    with locked("hub-image"):
        return _hub_image(client, node, log)


def sif_volume(client: DockerClient, node: str, image: str, make_archive: Callable[[], Path], log: Log) -> str:
    """The volume holding the SIF of IMAGE (by its id), made once (see _sif_volume)."""
    with locked("sif"):
        return _sif_volume(client, node, image, make_archive, log)


def prune_sif_volumes(client: DockerClient, log: Log) -> None:
    """Removes the SIF volumes of images no tag names any more: 2.5 GB each, one per image built, they
    filled a developer's disk in a day. A volume in use (a run side by side) stays."""
    tagged = {image.id.split(":")[-1][:16] for image in client.images.list() if image.tags}
    for volume in client.volumes.list(filters={"name": SIF_VOLUME_PREFIX}):
        if volume.name.startswith(SIF_VOLUME_PREFIX) and volume.name[len(SIF_VOLUME_PREFIX):] not in tagged:
            try:
                volume.remove()
                log(f"removed {volume.name}: no tagged image has that id any more")
            except docker.errors.APIError:
                pass  # in use


def content_tag() -> str:
    """The node image's tag: a hash of its folder's files and of how the OS is bootstrapped."""
    digest = hashlib.sha256(f"{SUITE} {MIRROR}\n".encode())
    for path in sorted(NODE_DIR.rglob("*")):
        if path.is_file():
            digest.update(path.relative_to(NODE_DIR).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def _node_image(client: DockerClient, log: Log) -> str:
    """The machines' image, built now unless the engine has it (by content hash)."""
    tag = content_tag()
    name = f"{NODE_REPOSITORY}:{tag}"
    if engine.image_exists(client, name):
        return name
    os_image = f"{OS_REPOSITORY}:{hashlib.sha256(f'{SUITE} {MIRROR} {DEBOOTSTRAP_ARGS}'.encode()).hexdigest()[:16]}"
    if not engine.image_exists(client, os_image):
        bootstrap(client, os_image, log)
    with tempfile.TemporaryFile() as tar_file:
        with tarfile.open(fileobj=tar_file, mode="w") as tar:
            for path in sorted(NODE_DIR.iterdir()):
                context.add_file(tar, path.name, path.read_bytes(), mode=0o755 if path.suffix == ".sh" else 0o644)
        tar_file.seek(0)
        log(f"building {name}")
        dockerbuild.build_context(client, tar_file, tag=name, buildargs={"OS_IMAGE": os_image}, log=log)
    return name


def _hub_image(client: DockerClient, node: str, log: Log) -> str:
    """The login machine's image with JupyterHub and batchspawner, by content hash (NODE's tag, the
    hub's Dockerfile, the pinned requirements)."""
    digest = hashlib.sha256(node.encode() + (HUB_DIR / "Dockerfile").read_bytes() + HUB_REQUIREMENTS.read_bytes())
    name = f"{HUB_REPOSITORY}:{digest.hexdigest()[:16]}"
    if engine.image_exists(client, name):
        return name
    with tempfile.TemporaryDirectory(dir=cache_dir()) as work:
        wheels = Path(work) / "wheels"
        log(f"downloading the hub's wheels ({HUB_REQUIREMENTS.relative_to(REPO)})")
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", *WHEEL_PLATFORM, "-r",
                        str(HUB_REQUIREMENTS), "-d", str(wheels)], check=True, capture_output=True)
        with tempfile.TemporaryFile() as tar_file:
            with tarfile.open(fileobj=tar_file, mode="w") as tar:
                context.add_file(tar, "Dockerfile", (HUB_DIR / "Dockerfile").read_bytes())
                context.add_file(tar, "requirements.txt", HUB_REQUIREMENTS.read_bytes())
                for wheel in sorted(wheels.iterdir()):
                    context.add_file(tar, f"wheels/{wheel.name}", wheel.read_bytes())
            tar_file.seek(0)
            log(f"building {name}")
            dockerbuild.build_context(client, tar_file, tag=name, buildargs={"NODE_IMAGE": node}, log=log)
    return name


def bootstrap(client: DockerClient, os_image: str, log: Log) -> None:
    """debootstrap Debian 13 into a scratch folder and import it as OS_IMAGE."""
    if shutil.which("debootstrap") is None:
        raise RuntimeError("debootstrap is not installed (scripts/host-setup.sh installs it)")
    with tempfile.TemporaryDirectory(dir=cache_dir()) as work:
        rootfs = Path(work) / SUITE
        log(f"bootstrapping Debian 13 ({SUITE}) from {MIRROR}")
        subprocess.run(["debootstrap", *DEBOOTSTRAP_ARGS.split(), SUITE, str(rootfs), MIRROR],
                       check=True, capture_output=True)
        for leftover in ("etc/hostname", "etc/resolv.conf", "etc/machine-id"):
            (rootfs / leftover).unlink(missing_ok=True)
        tarball = Path(work) / "rootfs.tar"
        subprocess.run(["tar", "--numeric-owner", "-C", str(rootfs), "-cf", str(tarball), "."], check=True)
        repository, tag = os_image.split(":")
        client.api.import_image_from_file(str(tarball), repository=repository, tag=tag, changes=[
            "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", 'CMD ["bash"]'])


def _sif_volume(client: DockerClient, node: str, image: str, make_archive: Callable[[], Path], log: Log) -> str:
    """A volume holding SIF_NAME of IMAGE, by IMAGE's id: reused, or made from MAKE_ARCHIVE()'s
    `docker save` archive with `apptainer build SIF docker-archive:ARCHIVE`, as an unprivileged user."""
    image_id = client.images.get(image).id.split(":")[-1][:16]
    name = f"{SIF_VOLUME_PREFIX}{image_id}"
    try:
        client.volumes.get(name)
        client.containers.run(node, ["test", "-s", f"/shared/{SIF_NAME}.done"], remove=True,
                              volumes={name: {"bind": "/shared", "mode": "ro"}})
        return name
    except (docker.errors.NotFound, docker.errors.ContainerError):
        pass
    prune_sif_volumes(client, log)
    archive = make_archive()
    client.volumes.create(name)
    log(f"building {SIF_NAME} from {archive.name} with Apptainer (volume {name})")
    builder = client.containers.run(
        node, ["bash", "-c", (
            # /dev/fuse for the unprivileged builder, as tests/hpc/node/start.sh makes it for the users.
            "set -euo pipefail; chmod 666 /dev/fuse; useradd -m -u 3000 builder; chown builder /shared; "
            f"runuser -u builder -- apptainer build --force {SQUASHFS_ARGS} /shared/{SIF_NAME} "
            f"docker-archive:/in/{archive.name} && chmod 644 /shared/{SIF_NAME} && date > /shared/{SIF_NAME}.done")],
        detach=True, volumes={name: {"bind": "/shared", "mode": "rw"},
                              str(archive.parent): {"bind": "/in", "mode": "ro"}},
        **APPTAINER_RUN_ARGS)
    try:
        code = int(builder.wait(timeout=1800)["StatusCode"])
        output = builder.logs().decode(errors="replace")
    finally:
        builder.remove(force=True)
    if code != 0:
        client.volumes.get(name).remove(force=True)
        raise RuntimeError(f"apptainer build failed (exit {code}): {output[-2000:]}")
    return name


@dataclass
class Machine:
    """A container of the cluster, with commands run in it as a user (docker exec)."""

    container: Container
    name: str
    ports: dict[int, int] = field(default_factory=dict)

    def run(self, command: str, user: str = "root") -> tuple[int, str]:
        """Run COMMAND with bash -lc as USER; (exit status, stdout+stderr)."""
        code, output = self.container.exec_run(["bash", "-lc", command], user=user)
        return int(code), output.decode(errors="replace")

    def start(self, command: str, user: str) -> None:
        """Start COMMAND in the background as USER (docker exec -d)."""
        self.container.exec_run(["bash", "-lc", command], user=user, detach=True)

    def read(self, path: str) -> str:
        code, output = self.run(f"cat {path}")
        return output if code == 0 else ""

    def write(self, path: str, text: str, user: str) -> None:
        """TEXT into PATH as USER (who owns what it makes)."""
        code, output = self.container.exec_run(["bash", "-c", 'printf %s "$1" > "$2"', "write", text, path],
                                               user=user)
        assert code == 0, output.decode(errors="replace")

    def typist(self, user: str, stop_when: Callable[[str], bool] | None = None) -> Execute:
        """USER at a bash prompt on this machine, in their home (testkit/docblocks.py's Execute): a
        login shell, as over ssh. A command still running at its time, or (STOP_WHEN) once its output
        so far shows what the reader waits for, is stopped as Ctrl-C stops it: SIGINT to its process
        group, in the machine (`timeout`; killing `docker exec` would leave it running there), and
        SIGKILL 10 s later if it is still there."""
        api = self.container.client.api
        home = f"/home/{user}"

        def execute(text: str, timeout: float) -> Result:
            # `timeout` leads the command's process group; SIGALRM has it stop the command at once.
            argv = ["bash", "-c", 'echo "typist $$"; exec timeout -s INT -k 10 "$1" bash -lo pipefail -c "$2"',
                    "typist", str(max(1, round(timeout))), text]
            exec_id = api.exec_create(self.container.id, argv, user=user, workdir=home,
                                      environment={"HOME": home, "USER": user, "LOGNAME": user})["Id"]
            said, pid, stopped = b"", "", False
            for chunk in api.exec_start(exec_id, stream=True):
                said += chunk
                if not pid and b"\n" in said:
                    first, said = said.split(b"\n", 1)
                    pid = first.decode().removeprefix("typist ")
                if pid and not stopped and stop_when is not None and stop_when(said.decode(errors="replace")):
                    stopped = True
                    self.container.exec_run(["kill", "-ALRM", pid])
            code = api.exec_inspect(exec_id)["ExitCode"]
            output = said.decode(errors="replace")
            return Result(None if code in (124, 137) else int(code), output)

        return execute


def start_machine(client: DockerClient, image: str, *, role: str, users: str, hostname: str,
                  volumes: dict[str, dict[str, str]], publish: tuple[int, ...] = (), network: str | None = None,
                  environment: dict[str, str] | None = None, cap_add: list[str] | None = None) -> Machine:
    """A machine of the cluster (tests/hpc/node/start.sh: ROLE controller, node or box), its ports
    published on loopback; on NETWORK it is known by HOSTNAME. Its container's name is unique. An init
    as PID 1 (--init) reaps what ended jobs leave, as a real node's init does (slurmd would not).

    Also /proc unmasked (`--security-opt systempaths=unconfined`, which the API spells as empty
    MaskedPaths and ReadonlyPaths): Apptainer's own PID namespace (--containall, --compat, --pid)
    mounts a /proc, which the kernel refuses where Docker has masked parts of the container's."""
    ports = {port: free_host_port() for port in publish}
    host_config = client.api.create_host_config(
        binds={source: {"bind": spec["bind"], "mode": spec["mode"]} for source, spec in volumes.items()},
        port_bindings={f"{port}/tcp": (LOOPBACK, host_port) for port, host_port in ports.items()},
        network_mode=network, init=True, cap_add=cap_add, **APPTAINER_RUN_ARGS)
    host_config["MaskedPaths"] = []
    host_config["ReadonlyPaths"] = []
    created = client.api.create_container(
        image, name=f"tf29-hpc-{uuid.uuid4().hex[:10]}-{hostname}", hostname=hostname, detach=True,
        environment={"HPC_ROLE": role, "HPC_USERS": users, **(environment or {})},
        ports=list(ports), host_config=host_config,
        networking_config=client.api.create_networking_config(
            {network: client.api.create_endpoint_config(aliases=[hostname])}) if network else None)
    container = client.containers.get(created["Id"])
    container.start()
    return Machine(container, hostname, ports)


def answering(execute: Execute, answers: Mapping[str, Callable[[str], bool]]) -> Execute:
    """EXECUTE, where a command that starts with a key of ANSWERS counts as failed (exit 1) until its
    output answers as the reader waits for (`squeue --me` until R): docblocks.Plan's waits retry it."""
    def typed(text: str, timeout: float) -> Result:
        result = execute(text, timeout)
        waited = [answered for start, answered in answers.items() if text.startswith(start)]
        if result.code == 0 and waited and not waited[0](result.output):
            return Result(1, result.output)
        return result

    return typed


SUBMITTED = re.compile(r"^Submitted batch job (\d+)$", re.M)


def submitted(said: str, index: int = 0) -> str:
    """The Slurm id of the INDEXth `sbatch` in a transcript (docblocks.Plan's placeholder values)."""
    ids = SUBMITTED.findall(said)
    assert len(ids) > index, f"no Slurm job {index + 1} submitted in:\n{said[-2000:]}"
    return str(ids[index])
