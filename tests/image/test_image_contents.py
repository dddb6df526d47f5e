"""What the image holds: the pinned stack, its metadata, and nothing it must not hold."""

import hashlib
import json
import os
import tarfile
from typing import IO, Any, cast

from docker import DockerClient

from testkit.containers import TrackedContainer
from tests.conftest import HOST_EXTRA_CAS
from tf29env.core import labels
from tf29env.core.paths import cache_dir
from tf29env.imagebuild import cacerts

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


def test_pinned_stack_and_build_info(tracked: TrackedContainer, variant: str) -> None:
    facts = json.loads(tracked.last_line_of(["python", "-c", PROBE], timeout=120))
    assert facts["tf"] == "2.9.3"
    assert facts["numpy"] == "1.23.5"
    # The gpu variant's TF was built for CUDA 11.2 / cuDNN 8; tensorflow-cpu for neither.
    assert (facts["cuda"], facts["cudnn"]) == (("11.2", "8") if variant == "gpu" else (None, None))
    assert facts["python"][0] == 3 and facts["python"][1] in (8, 9)
    assert facts["pip_check"] == 0


def test_command_runs_as_dev_user_and_returns_its_exit_code(tracked: TrackedContainer) -> None:
    assert tracked.last_line_of(["python", "-c", "import os, getpass; print(os.getuid(), getpass.getuser())"]) == (
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
    # As shipped (the tests' containers probe every second instead): every 5 s, unhealthy after 3 misses.
    assert config["Healthcheck"] == {
        "Test": ["CMD", "/usr/bin/python3", "-I", "-m", "tf29image.healthcheck"],
        "Interval": 5_000_000_000, "Timeout": 3_000_000_000, "StartPeriod": 60_000_000_000, "Retries": 3}
    assert config["Entrypoint"][0] == "/usr/bin/tini"
    # FTP_PROXY carries the build-only CAs (Dockerfile): no more in the image than the proxies are.
    assert not any(key.startswith(("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "PIP_INDEX_URL", "FTP_PROXY",
                                   "ftp_proxy")) for key in env)
    image_labels = config["Labels"]
    assert image_labels["org.opencontainers.image.title"] == "tf29-env"
    assert image_labels["org.opencontainers.image.revision"]


def test_clean_filesystem(tracked: TrackedContainer) -> None:
    script = (
        "ls -A /tmp /var/lib/apt/lists /etc/ssh/host-keys; ls /etc/ssh | grep -c ssh_host_ || true; "
        "ls -d /root/.cache 2>/dev/null || true; find /opt/venv -name '*.whl' | head -3"
    )
    out = tracked.last_line_of(["bash", "-c", f"out=$({script}); echo \"[${{out//$'\\n'/|}}]\""])
    # ls lists the (empty) folders in name order; then no ssh_host_* file, no cache, no wheel.
    assert out == "[/etc/ssh/host-keys:||/tmp:||/var/lib/apt/lists:|0]", out


def host_cas() -> list[cacerts.CaCert]:
    """The build machine's extra CAs: what the test builds pass as build-only --ca-cert (tests/conftest.py)."""
    return cacerts.load_certs(sorted(HOST_EXTRA_CAS.glob("*.crt")), "host CA")


def ca_needles(cert: cacerts.CaCert) -> list[bytes]:
    """Byte strings found wherever the certificate is, as PEM (a whole base64 line from its middle:
    PEM is wrapped at 64) or as DER."""
    lines = cert.pem.splitlines()[1:-1]
    middle = len(cert.der) // 2
    return [lines[len(lines) // 2].encode(), cert.der[middle:middle + 48]]


def kept_cas(attrs: dict[str, Any]) -> set[str]:
    """The fingerprints of the CAs the image says it keeps (none for a default build)."""
    return {fp for fp in labels.of_image(attrs).get(labels.CA_TRUSTED, "").split(",") if fp}


def unkept_host_ca_needles(docker_client: DockerClient, image: str) -> dict[str, list[bytes]]:
    kept = kept_cas(docker_client.images.get(image).attrs)
    return {cert.fingerprint: ca_needles(cert) for cert in host_cas() if cert.fingerprint not in kept}


def scan_layers(docker_client: DockerClient, image: str,
                needles: dict[str, list[bytes]]) -> tuple[list[str], list[str]]:
    """Every layer of `docker save`, not just the final filesystem (a file deleted in a later layer
    still ships in the earlier one): the files whose names are forbidden (host keys, pip's config
    and cache), and `KEY in LAYER/PATH` for each file whose content holds one of KEY's needles.
    Kept per image id and needles: the id is the digest of the layers, so the same id scans the same."""
    image_id = str(docker_client.images.get(image).id).removeprefix("sha256:")
    asked = hashlib.sha256(json.dumps({key: [n.hex() for n in group] for key, group in sorted(needles.items())})
                           .encode()).hexdigest()[:16]
    kept = cache_dir() / "layer-scans" / f"{image_id}-{asked}.json"
    if kept.is_file():
        forbidden, found = json.loads(kept.read_text())
        return forbidden, found
    result = _scan(docker_client, image_id, needles)
    kept.parent.mkdir(exist_ok=True)
    partial = kept.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(json.dumps(result))
    partial.replace(kept)
    return result


def _scan(docker_client: DockerClient, image: str,
          needles: dict[str, list[bytes]]) -> tuple[list[str], list[str]]:
    forbidden: list[str] = []
    found: list[str] = []
    longest = max((len(n) for group in needles.values() for n in group), default=1)
    stream = docker_client.api.get_image(image, chunk_size=1 << 20)
    with tarfile.open(fileobj=cast(IO[bytes], _Reader(stream)), mode="r|") as saved:
        for member in saved:
            if not member.name.endswith("layer.tar"):
                continue
            layer = saved.extractfile(member)
            assert layer is not None
            with tarfile.open(fileobj=layer, mode="r|") as files:
                for f in files:
                    if "ssh_host_" in f.name or f.name.endswith(("id_rsa", "id_ed25519", ".pip/pip.conf")) \
                            or "/.cache/pip/" in f.name:
                        forbidden.append(f.name)
                    handle = files.extractfile(f) if f.isfile() and needles else None
                    tail = b""
                    while handle is not None and (chunk := handle.read(1 << 22)):
                        window = tail + chunk
                        tail = window[-longest:]
                        for key, group in needles.items():
                            if any(needle in window for needle in group):
                                found.append(f"{key} in {member.name.split('/')[0][:12]}/{f.name}")
                                handle = None
                                break
    return forbidden, sorted(set(found))


def test_no_host_keys_or_secrets_in_any_layer(docker_client: DockerClient, image: str) -> None:
    """No host key, pip config or cache in any layer; nor, unless the image says it keeps it, any
    of the build machine's CAs: build-only CAs reach the build without a layer (Dockerfile)."""
    needles = unkept_host_ca_needles(docker_client, image)
    forbidden, found = scan_layers(docker_client, image, needles)
    assert forbidden == []
    assert found == []
    history = json.dumps(docker_client.api.history(image)).encode()
    assert not [key for key, group in needles.items() for needle in group[:1] if needle in history]


CA_PROBE = """
import glob, hashlib, json, os, ssl, sys
ssl.create_default_context()
bundle = ssl.create_default_context(cafile=os.environ["REQUESTS_CA_BUNDLE"])
store = open("/etc/ssl/certs/ca-certificates.crt").read()
local = sorted(p for p in glob.glob("/usr/local/share/ca-certificates/**", recursive=True) if os.path.isfile(p))
print(json.dumps({
    "loaded": bundle.cert_store_stats()["x509_ca"], "pip_cert": os.environ["PIP_CERT"],
    "local": ["sha256:" + hashlib.sha256(ssl.PEM_cert_to_DER_cert(open(p).read())).hexdigest() for p in local],
    "in_store": [line in store for line in sys.argv[1:]],
}))
"""


def test_extra_cas_are_trusted_only_as_the_label_says(docker_client: DockerClient, image: str,
                                                      tracked: TrackedContainer) -> None:
    """A default build trusts none of the CAs it was built with (the host's, passed as --ca-cert):
    neither the system store nor /usr/local/share/ca-certificates holds them. What the image keeps
    (--trust-ca-cert) is in both, and in its label. Python's ssl loads its default context, and the
    store that pip and requests use."""
    kept = kept_cas(docker_client.images.get(image).attrs)
    cas = host_cas()
    report = json.loads(tracked.last_line_of(["python", "-c", CA_PROBE,
                                              *[ca_needles(cert)[0].decode() for cert in cas]]))
    assert report["loaded"] > 50  # the distro's CAs, in the bundle pip and requests read
    assert report["pip_cert"] == "/etc/ssl/certs/ca-certificates.crt"
    assert set(report["local"]) == kept and len(report["local"]) == len(kept)
    assert report["in_store"] == [cert.fingerprint in kept for cert in cas]


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
