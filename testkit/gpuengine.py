"""A second Docker engine that hands out GPUs on a host without any: the GPU paths' real engine.

Docker registers its `nvidia` device driver when `nvidia-container-runtime-hook` is on dockerd's
PATH at start; it then turns `--gpus` and compose's device reservations into
`NVIDIA_VISIBLE_DEVICES` (the IDs, or 0..n-1 for a count) in the container and adds the hook as a
prestart hook. This dockerd starts with stand-ins on its PATH: a hook that only records that it
ran (`nvidia-container-runtime-hook prestart`, exit 0), a runtime registered as `nvidia` that is
runc (as `nvidia-ctk runtime configure` registers NVIDIA's wrapper), and an `nvidia-smi` whose
`-L` lists made-up GPUs, for whoever asks the host what it has (tests put `tools` on PATH); its
`--query-gpu` and `--query-compute-apps` (the CSV `make gpus` reads) print what a test wrote with
`set_query` (by default each GPU with 0 of 40960 MiB in use, and no processes).

It shares nothing with the main engine: its own socket, data root, exec root, pid file,
containerd (under its exec root) and namespace, config file, and bridge (`ip link add`, on a /24
of a 10.x.0.0/16 that no route uses; `--bridge none` would delete docker0). It never touches
iptables (`--iptables=false`): at start a dockerd flushes the DOCKER chains that the main engine's
published ports live in. Ports are published through docker-proxy, the host reaches containers on
their bridge directly. The stand-ins live here, in the tests; scripts/host-setup.sh never installs
them. Stopped with its containers, bridge and folder at the end, also when a test failed; a
folder left by a killed run is cleaned up by the next start. Its data root may be kept (`kept_data`):
then the images copied into it stay for the next run, as the main engine's do, and only its
containers and networks go.
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import json
import os
import random
import re
import secrets
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import docker
import docker.errors
from docker import DockerClient
from docker.models.containers import Container

from compose.holders import APP_FIELDS, FORMAT, GPU_FIELDS
from testkit.wait import wait_until
from tf29image.common import pid_alive

# Short: containerd's shim sockets live under the exec root and a socket path has at most 107 bytes.
ROOT_PREFIX = "tf29gpu-"
BRIDGE_PREFIX = "tf29gpu"  # + 4 hex: within the 15 characters of an interface name
HOOK = "nvidia-container-runtime-hook"
RUNTIME = "nvidia-container-runtime"
HOOK_LOG = "hook-calls.log"
START_TIMEOUT = 60.0
STOP_TIMEOUT = 30.0
# The private range the engine's bridge and networks come from: 10.N.0.0/16 for an N no route uses.
SECOND_OCTETS = range(160, 250)

# What `nvidia-smi -L` prints (R470+ format) on a box with two GPUs, the stand-in host's default,
# and on one whose third GPU is in MIG mode with two 1g.5gb slices.
GPU0_UUID = "GPU-1f9a3c52-7d4e-4b8a-9c61-0a2b3c4d5e60"
GPU1_UUID = "GPU-2e8b4d63-8e5f-4c9b-8d72-1b3c4d5e6f71"
GPU2_UUID = "GPU-3d7c5e74-9f60-4dac-9e83-2c4d5e6f7082"
MIG_UUIDS = ("MIG-4c6d8f85-a071-5ebd-8f94-3d5e6f708193", "MIG-5b5e9096-b182-5fce-9aa5-4e6f708192a4")
TWO_GPUS = (
    f"GPU 0: NVIDIA A100-SXM4-40GB (UUID: {GPU0_UUID})\n"
    f"GPU 1: NVIDIA A100-SXM4-40GB (UUID: {GPU1_UUID})\n"
)
WITH_MIG = (
    TWO_GPUS
    + f"GPU 2: NVIDIA A100-SXM4-40GB (UUID: {GPU2_UUID})\n"
    + f"  MIG 1g.5gb      Device  0: (UUID: {MIG_UUIDS[0]})\n"
    + f"  MIG 1g.5gb      Device  1: (UUID: {MIG_UUIDS[1]})\n"
)


# The stand-in nvidia-smi's answers to `make gpus`'s two queries: files beside it, by the query's fields.
QUERIES = {"gpu": GPU_FIELDS, "compute-apps": APP_FIELDS}
STANDIN_TOTAL_MIB = 40960


def gpu_query(listing: str, used: dict[str, int] | None = None) -> str:
    """What `nvidia-smi --query-gpu=index,uuid,name,memory.used,memory.total --format=csv,noheader,nounits`
    prints for the whole GPUs of LISTING (MiB in use by index, else 0)."""
    rows = re.findall(r"^GPU ([0-9]+): (.*?) \(UUID: (GPU-[^)\s]+)\)", listing, re.MULTILINE)
    return "".join(f"{index}, {uuid}, {name}, {(used or {}).get(index, 0)}, {STANDIN_TOTAL_MIB}\n"
                   for index, name, uuid in rows)


def write_tools(folder: Path, listing: str = TWO_GPUS) -> Path:
    """The stand-in hook, runtime and nvidia-smi in FOLDER (made); FOLDER."""
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / HOOK_LOG
    queries = "".join(f'  "--query-{query}={fields} {FORMAT}") exec cat "{folder / query}.csv" ;;\n'
                      for query, fields in QUERIES.items())
    scripts = {
        # runc calls a prestart hook with the container's state on stdin; exit 0 lets it start.
        HOOK: f'#!/bin/sh\necho "$*" >>{log}\ncat >/dev/null\nexit 0\n',
        RUNTIME: "#!/bin/sh\nexec runc \"$@\"\n",
        "nvidia-smi": ('#!/bin/sh\ncase "$*" in\n'
                       f"  -L) cat <<'EOF'\n{listing}EOF\n  ;;\n"
                       f"{queries}"
                       '  *) echo "stand-in nvidia-smi: $* is not known" >&2; exit 9 ;;\nesac\n'),
    }
    for name, text in scripts.items():
        path = folder / name
        path.write_text(text)
        path.chmod(0o755)
    set_query(folder, "gpu", gpu_query(listing))
    set_query(folder, "compute-apps", "")
    return folder


def set_query(tools: Path, query: str, csv: str) -> None:
    """What the stand-in nvidia-smi in TOOLS prints for --query-QUERY (gpu, compute-apps) with make gpus's fields."""
    assert query in QUERIES, query
    (tools / f"{query}.csv").write_text(csv)


def _routes() -> list[ipaddress.IPv4Network]:
    out = subprocess.run(["ip", "-4", "route", "show", "table", "all"], capture_output=True, text=True,
                         check=True).stdout
    found = []
    for line in out.splitlines():
        first = line.split()[0] if line.split() else ""
        if first.startswith(("local", "broadcast")):
            first = line.split()[1]
        with contextlib.suppress(ValueError):
            if "/" in first or first[0].isdigit():
                found.append(ipaddress.IPv4Network(first, strict=False))
    return found


def _free_range() -> ipaddress.IPv4Network:
    """A 10.N.0.0/16 that overlaps no route of this host (the main engine's networks included)."""
    used = _routes()
    candidates = [ipaddress.IPv4Network(f"10.{n}.0.0/16") for n in SECOND_OCTETS]
    random.shuffle(candidates)
    for candidate in candidates:
        if not any(candidate.overlaps(route) for route in used if route.prefixlen > 0):
            return candidate
    raise AssertionError("no 10.N.0.0/16 (N in 160-249) is free of routes for the stand-in GPU engine")


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(["ip", *args], capture_output=True, text=True, check=False)
    assert not check or result.returncode == 0, f"ip {' '.join(args)}: {result.stderr.strip()}"
    return result


def processes_of(root: Path) -> list[int]:
    """Processes whose command line names ROOT: its dockerd, containerd and shims, nobody else's."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if f"{root}/".encode() in (entry / "cmdline").read_bytes().replace(b"\0", b" ") + b" ":
                    found.append(int(entry.name))
    return found


def _kill_processes_of(root: Path) -> None:
    for pid in processes_of(root):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _delete_links_in(subnet: ipaddress.IPv4Network) -> None:
    """Delete the interfaces with an address in SUBNET: its bridge, and networks' bridges a dockerd
    stopped mid-test leaves (the range was free of routes when the engine took it)."""
    out = subprocess.run(["ip", "-4", "-o", "addr", "show"], capture_output=True, text=True, check=False).stdout
    for line in out.splitlines():
        fields = line.split()
        if len(fields) > 3 and ipaddress.IPv4Interface(fields[3]).ip in subnet:
            _ip("link", "delete", fields[1].split("@")[0], check=False)


def _unmount_below(root: Path) -> None:
    """Unmount what a dockerd killed mid-run left mounted below ROOT (deepest first)."""
    mounts = [line.split()[1] for line in Path("/proc/self/mounts").read_text().splitlines()]
    for mount in sorted((m for m in mounts if m.startswith(f"{root}/")), key=len, reverse=True):
        subprocess.run(["umount", "-l", mount], capture_output=True, check=False)


def clean_stale(tmp: Path) -> None:
    """Folders and bridges of stand-in engines whose dockerd is gone (a run killed before its teardown)."""
    for root in tmp.glob(f"{ROOT_PREFIX}*"):
        state = root / "engine.json"
        try:
            recorded = json.loads(state.read_text())
        except (OSError, ValueError):
            continue
        if pid_alive(int(recorded.get("pid", 0))):
            continue
        _kill_processes_of(root)
        _ip("link", "delete", str(recorded["bridge"]), check=False)
        with contextlib.suppress(KeyError, ValueError):
            _delete_links_in(ipaddress.IPv4Network(recorded["subnet"]))
        _unmount_below(root)
        shutil.rmtree(root, ignore_errors=True)


@dataclass
class GpuEngine:
    root: Path
    bridge: str
    subnet: ipaddress.IPv4Network
    process: subprocess.Popen[bytes]
    data: Path  # its data root: under root, or a kept one (kept_data)

    @property
    def socket(self) -> Path:
        return self.root / "docker.sock"

    @property
    def url(self) -> str:
        return f"unix://{self.socket}"

    @property
    def tools(self) -> Path:
        """The stand-in hook, runtime and nvidia-smi: on dockerd's PATH, and on a test's where it asks the host."""
        return self.root / "bin"

    def client(self) -> DockerClient:
        return docker.DockerClient(base_url=self.url, timeout=300)

    def environ(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """BASE (os.environ) with DOCKER_HOST on this engine and the stand-in tools first on PATH."""
        env = dict(os.environ if base is None else base)
        env["DOCKER_HOST"] = self.url
        env["PATH"] = f"{self.tools}:{env.get('PATH', '/usr/bin:/bin')}"
        return env

    def hook_calls(self) -> list[str]:
        """The arguments of each prestart hook run so far, one line each."""
        log = self.tools / HOOK_LOG
        return log.read_text().splitlines() if log.exists() else []

    def load_image(self, main: DockerClient, reference: str) -> None:
        """Copy REFERENCE from the main engine (nothing can be pulled): `docker save | docker load`."""
        wanted = main.images.get(reference).id
        with contextlib.suppress(docker.errors.ImageNotFound):
            if self.client().images.get(reference).id == wanted:
                return
        for other in self.client().images.list():  # a kept data root holds one image under test at a time
            with contextlib.suppress(docker.errors.APIError):
                self.client().images.remove(other.id, force=True)
        save = subprocess.Popen(["docker", "save", reference], stdout=subprocess.PIPE)
        load = subprocess.run(["docker", "-H", self.url, "load", "-q"], stdin=save.stdout, capture_output=True,
                              text=True, timeout=1200, check=False)
        assert save.stdout is not None
        save.stdout.close()
        assert save.wait(timeout=60) == 0, f"docker save {reference} failed"
        assert load.returncode == 0, f"docker load into the stand-in GPU engine: {load.stderr[-2000:]}"
        assert self.client().images.get(reference).id == wanted

    def remove_containers_and_networks(self) -> None:
        with contextlib.suppress(docker.errors.DockerException, OSError):
            client = self.client()
            for container in client.containers.list(all=True):
                with contextlib.suppress(docker.errors.DockerException):
                    container.remove(force=True, v=True)
            client.networks.prune()
            client.volumes.prune()

    def stop(self) -> None:
        """Remove its containers, stop dockerd (and its containerd), delete the bridge and the folder
        (a kept data root stays, with its images only)."""
        try:
            if self.process.poll() is None:
                self.remove_containers_and_networks()
                self.process.send_signal(signal.SIGTERM)
                try:
                    self.process.wait(timeout=STOP_TIMEOUT)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait(timeout=STOP_TIMEOUT)
        finally:
            _kill_processes_of(self.root)  # its containerd, when dockerd had to be killed
            _ip("link", "delete", self.bridge, check=False)
            _delete_links_in(self.subnet)
            _unmount_below(self.root)
            _unmount_below(self.data)
            shutil.rmtree(self.root, ignore_errors=True)


@contextlib.contextmanager
def kept_data(folder: Path) -> Iterator[Path | None]:
    """FOLDER/data for one engine at a time (an flock on FOLDER/lock), or None while another run's
    engine holds it: that one then starts with a data root of its own, as without it."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "lock").open("a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield None
            return
        yield folder / "data"


def start(listing: str = TWO_GPUS, tmp: Path | None = None, data: Path | None = None) -> GpuEngine:
    """A stand-in GPU engine, answering on its socket; the caller stops it (or use `running`). DATA:
    a data root to keep (kept_data), else one in its folder, deleted with it."""
    tmp = tmp or Path(tempfile.gettempdir())
    clean_stale(tmp)
    root = Path(tempfile.mkdtemp(prefix=ROOT_PREFIX, dir=tmp))
    root.chmod(0o755)  # the dev container test's host user reaches the socket through it
    subnet = _free_range()
    bridge = f"{BRIDGE_PREFIX}{secrets.token_hex(2)}"
    # containerd takes letters and digits joined by single '.', '_' or '-' (mkdtemp's names may not).
    namespace = f"tf29gpu{secrets.token_hex(4)}"
    hosts = list(subnet.subnets(new_prefix=24))
    bridge_net, pool = hosts[-1], next(subnet.subnets(new_prefix=17))
    tools = write_tools(root / "bin", listing)
    if data is not None:
        # A dockerd that finds its default bridge network in its store deletes the interface docker0,
        # the main engine's: a kept data root keeps its images, never its network store.
        shutil.rmtree(data / "network", ignore_errors=True)
    data = data or root / "data"
    (root / "daemon.json").write_text("{}\n")  # never the host's /etc/docker/daemon.json
    _ip("link", "add", bridge, "type", "bridge")
    engine: GpuEngine | None = None
    try:
        _ip("addr", "add", f"{bridge_net[1]}/{bridge_net.prefixlen}", "dev", bridge)
        _ip("link", "set", bridge, "up")
        log = (root / "dockerd.log").open("wb")
        process = subprocess.Popen(
            ["dockerd", "--config-file", str(root / "daemon.json"), "-H", f"unix://{root / 'docker.sock'}",
             "--data-root", str(data), "--exec-root", str(root / "exec"), "--pidfile",
             str(root / "docker.pid"), "--containerd-namespace", namespace, "--containerd-plugins-namespace",
             f"{namespace}-plugins", "--bridge", bridge, "--iptables=false", "--ip-forward=false",
             "--ip-masq=false", "--default-address-pool", f"base={pool},size=24",
             "--add-runtime", f"nvidia={tools / RUNTIME}", "--log-level", "warn"],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            env={**os.environ, "PATH": f"{tools}:{os.environ.get('PATH', '/usr/sbin:/usr/bin:/sbin:/bin')}"})
        log.close()
        engine = GpuEngine(root, bridge, subnet, process, data)
        (root / "engine.json").write_text(json.dumps({"pid": process.pid, "bridge": bridge, "subnet": str(subnet)}))

        def answers() -> bool:
            if process.poll() is not None:
                raise AssertionError(f"the stand-in GPU engine exited at start:\n"
                                     f"{(root / 'dockerd.log').read_text(errors='replace')[-3000:]}")
            return bool(engine is not None and engine.client().ping())

        wait_until(answers, timeout=START_TIMEOUT, interval=0.25, what="the stand-in GPU engine answers")
        engine.remove_containers_and_networks()  # a kept data root's, from a run that was killed
        return engine
    except BaseException:
        if engine is not None:
            engine.stop()
        else:
            _ip("link", "delete", bridge, check=False)
            shutil.rmtree(root, ignore_errors=True)
        raise


def visible_devices(container: Container) -> str:
    """NVIDIA_VISIBLE_DEVICES as the engine gave it to the container: the last entry in PID 1's
    environment (the engine appends its own after the image's `all`; the toolkit and the
    entrypoint's shell both take the last one), "" where there is none."""
    code, out = container.exec_run(["cat", "/proc/1/environ"], user="root")
    assert code == 0, out.decode(errors="replace")
    values = [entry.split("=", 1)[1] for entry in out.decode(errors="replace").split("\0")
              if entry.startswith("NVIDIA_VISIBLE_DEVICES=")]
    return values[-1] if values else ""


@contextlib.contextmanager
def running(listing: str = TWO_GPUS) -> Iterator[GpuEngine]:
    engine = start(listing)
    try:
        yield engine
    finally:
        engine.stop()

