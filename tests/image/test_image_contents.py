"""What the image holds: the pinned stack, its metadata, and nothing it must not hold."""

import json
import tarfile
from typing import IO, cast

from docker import DockerClient

from testkit.containers import TrackedContainer

PROBE = """
import json, subprocess, sys
import numpy, tensorflow as tf
info = tf.sysconfig.get_build_info()
print(json.dumps({
    "tf": tf.__version__, "numpy": numpy.__version__, "cuda": info.get("cuda_version"),
    "cudnn": info.get("cudnn_version"), "python": sys.version_info[:2],
    "pip_check": subprocess.run([sys.executable, "-m", "pip", "check"], capture_output=True, text=True).returncode,
}))
"""


def run_probe(tracked: TrackedContainer, *command: str) -> str:
    container = tracked.run(publish=(), command=list(command))
    code = tracked.wait_exit(container, timeout=120)
    logs = tracked.logs(container)
    assert code == 0, logs
    return logs.strip().splitlines()[-1]


def test_pinned_stack_and_build_info(tracked: TrackedContainer, variant: str) -> None:
    facts = json.loads(run_probe(tracked, "python", "-c", PROBE))
    assert facts["tf"] == "2.9.3"
    assert facts["numpy"] == "1.23.5"
    # The gpu variant's TF was built for CUDA 11.2 / cuDNN 8; tensorflow-cpu for neither.
    assert (facts["cuda"], facts["cudnn"]) == (("11.2", "8") if variant == "gpu" else (None, None))
    assert facts["python"][0] == 3 and facts["python"][1] in (8, 9)
    assert facts["pip_check"] == 0


def test_command_runs_as_dev_user_and_returns_its_exit_code(tracked: TrackedContainer) -> None:
    assert run_probe(tracked, "python", "-c", "import os, getpass; print(os.getuid(), getpass.getuser())") == (
        "1000 jovyan"
    )
    failing = tracked.run(publish=(), command=["python", "-c", "raise SystemExit(7)"])
    assert tracked.wait_exit(failing) == 7


def test_docker_exec_imports_tensorflow(tracked: TrackedContainer) -> None:
    container = tracked.run()
    tracked.wait_healthy(container)
    code, out = tracked.exec(container, ["python", "-c", "import tensorflow as tf; print(tf.__version__)"],
                             user="jovyan")
    assert code == 0 and out.strip().splitlines()[-1] == "2.9.3"


def test_image_config(docker_client: DockerClient, image: str) -> None:
    config = docker_client.images.get(image).attrs["Config"]
    env = dict(item.split("=", 1) for item in config["Env"])
    assert env["NVIDIA_VISIBLE_DEVICES"] == "all"
    assert env["NVIDIA_DRIVER_CAPABILITIES"] == "compute,utility"
    assert env["TF_FORCE_GPU_ALLOW_GROWTH"] == "true"
    assert int(env["CUDA_CACHE_MAXSIZE"]) >= 2**31
    assert env["PATH"].startswith("/opt/venv/bin:")
    assert set(config["ExposedPorts"]) == {"8888/tcp", "22/tcp"}
    assert config["Healthcheck"]["Test"][0] == "CMD"
    assert config["Entrypoint"][0] == "/usr/bin/tini"
    assert not any(key.startswith(("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "PIP_INDEX_URL")) for key in env)
    labels = config["Labels"]
    assert labels["org.opencontainers.image.title"] == "tf29-env"
    assert labels["org.opencontainers.image.revision"]


def test_clean_filesystem(tracked: TrackedContainer) -> None:
    script = (
        "ls -A /tmp /var/lib/apt/lists /etc/ssh/host-keys; ls /etc/ssh | grep -c ssh_host_ || true; "
        "ls -d /root/.cache 2>/dev/null || true; find /opt/venv -name '*.whl' | head -3"
    )
    out = run_probe(tracked, "bash", "-c", f"out=$({script}); echo \"[${{out//$'\\n'/|}}]\"")
    # ls lists the (empty) folders in name order; then no ssh_host_* file, no cache, no wheel.
    assert out == "[/etc/ssh/host-keys:||/tmp:||/var/lib/apt/lists:|0]", out


def test_no_host_keys_or_secrets_in_any_layer(docker_client: DockerClient, image: str) -> None:
    """Scan every layer of `docker save`, not just the final filesystem: a key deleted in a later
    layer still ships in the earlier one."""
    forbidden: list[str] = []
    stream = docker_client.api.get_image(image, chunk_size=1 << 20)
    with tarfile.open(fileobj=cast(IO[bytes], _Reader(stream)), mode="r|") as saved:
        for member in saved:
            if not member.name.endswith("layer.tar"):
                continue
            layer = saved.extractfile(member)
            assert layer is not None
            with tarfile.open(fileobj=layer, mode="r|") as files:
                forbidden.extend(
                    f.name for f in files
                    if "ssh_host_" in f.name or f.name.endswith(("id_rsa", "id_ed25519", ".pip/pip.conf"))
                    or "/.cache/pip/" in f.name
                )
    assert forbidden == []


class _Reader:
    """A file-like view of the engine's chunked `docker save` stream, for tarfile's stream mode."""

    def __init__(self, chunks: object) -> None:
        self._chunks = iter(chunks)  # type: ignore[call-overload]
        self._buffer = b""

    def read(self, size: int = -1) -> bytes:
        while size < 0 or len(self._buffer) < size:
            try:
                self._buffer += next(self._chunks)
            except StopIteration:
                break
        if size < 0:
            size = len(self._buffer)
        data, self._buffer = self._buffer[:size], self._buffer[size:]
        return data
