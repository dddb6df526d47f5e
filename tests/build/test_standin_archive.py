"""The stand-in base after bullseye has left Debian's mirror: the real bootstrap (debootstrap, the
import into the engine) against a mirror double on 127.0.0.1 that answers 404 for the suite, and an
archive double on 127.0.0.1 that forwards to Debian's mirror (the one host outside this machine the
test reaches), into a tag of its own (the real stand-in stays as it is; the tag goes afterwards).
Then an `apt-get update` in a container of the result, on the host's network, against the double;
and an archive that lacks the suite too: one line, nothing imported."""

import contextlib
import http.server
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

import docker.errors
import pytest
import requests
from docker import DockerClient

from testkit.wait import wait_until
from tf29env.core import engine
from tf29env.core.errors import EXIT_INPUT, UserError
from tf29env.core.paths import cache_dir
from tf29env.imagebuild import standin

UPSTREAM = "http://deb.debian.org"  # where the archive double takes its answers: Debian's mirror
TREES = ("/debian/", "/debian-security/")  # what an archive holds, and the double forwards
TARGET_REPOSITORY = "tf29-env-standin-archivetest"
CHUNK = 1 << 16


@dataclass
class Double:
    """An HTTP server on 127.0.0.1 (a free port, chosen by binding port 0) and what it was asked."""

    url: str  # its /debian tree
    asked: list[str] = field(default_factory=list)


class Retired(http.server.BaseHTTPRequestHandler):
    """Debian's mirror once bullseye has gone to the archive: 404 for all of it."""

    server: "Server"

    def do_GET(self) -> None:
        self.server.asked.append(self.path)
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_HEAD = do_GET

    def log_message(self, format: str, *args: object) -> None:
        pass


class Forwarding(Retired):
    """An archive of retired releases: GET and HEAD under /debian and /debian-security answered by
    Debian's mirror, status, length and body as it gives them; anything else 404."""

    def do_GET(self) -> None:
        self.server.asked.append(self.path)
        if not self.path.startswith(TREES):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        # identity: the body passes through as the mirror stored it, and its length with it.
        with requests.request(self.command, UPSTREAM + self.path, headers={"Accept-Encoding": "identity"},
                              stream=True, timeout=60) as upstream:
            self.send_response(upstream.status_code)
            for name in ("Content-Type", "Content-Length", "Last-Modified"):
                if upstream.headers.get(name):
                    self.send_header(name, upstream.headers[name])
            self.end_headers()
            if self.command == "GET":
                # A client may hang up early (apt and wget do, once they have what they need).
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    for chunk in upstream.iter_content(CHUNK):
                        self.wfile.write(chunk)

    do_HEAD = do_GET


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    asked: list[str]


@contextlib.contextmanager
def serving(handler: type[Retired]) -> Iterator[Double]:
    server = Server(("127.0.0.1", 0), handler)
    server.asked = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    double = Double(f"http://127.0.0.1:{server.server_address[1]}/debian", server.asked)
    try:
        wait_until(lambda: answers(double.url), timeout=30, what=f"{double.url} answers")
        server.asked.clear()  # what the test's own readiness check asked
        yield double
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=30)


def answers(url: str) -> bool:
    """Whether a double answers at all (any HTTP status will do; no answer raises)."""
    requests.get(f"{url}/nothing-here", timeout=5).close()
    return True


@pytest.fixture
def target(docker_client: DockerClient) -> Iterator[str]:
    """A tag of this test's own for the bootstrapped base, removed afterwards."""
    ref = f"{TARGET_REPOSITORY}:{uuid.uuid4().hex[:12]}"
    yield ref
    with contextlib.suppress(docker.errors.ImageNotFound):
        docker_client.images.remove(ref, force=True)


def scratch_folders() -> set[str]:
    return {path.name for path in cache_dir().glob("rootfs-*")}


def test_the_bootstrap_falls_back_to_the_archive(docker_client: DockerClient, target: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(standin.ARCHIVE_ENV, raising=False)
    lines: list[str] = []
    with serving(Retired) as mirror, serving(Forwarding) as archive:
        started = time.monotonic()
        standin.bootstrap_os(docker_client, lines.append, mirror.url, archive=archive.url, target=target)
        bootstrap_s = time.monotonic() - started
        print(f"bootstrap from the archive double: {bootstrap_s:.0f}s")

        assert engine.image_exists(docker_client, target), f"{target} was not imported: {lines}"
        assert "/debian/dists/bullseye/Release" in mirror.asked, mirror.asked
        said = [line for line in lines if "gone from" in line]
        assert said == [f"bullseye is gone from {mirror.url} ({mirror.url}/dists/bullseye/Release: 404): "
                        f"bootstrapping from the archive of retired releases {archive.url}"], lines
        assert f"bootstrapping Debian 11 (bullseye) from {archive.url}" in lines, lines
        assert any(path.startswith("/debian/pool/main/") and path.endswith(".deb") for path in archive.asked), \
            "debootstrap fetched no package from the archive double"

        security = archive.url.removesuffix("/debian") + "/debian-security"
        sources = read(docker_client, target, "/etc/apt/sources.list")
        assert sources == (f"deb {archive.url} bullseye main\n"
                           f"deb {archive.url} bullseye-updates main\n"
                           f"deb {security} bullseye-security main\n"), sources
        conf = read(docker_client, target, "/" + standin.ARCHIVE_APT_CONF)
        assert 'Acquire::Check-Valid-Until "false";' in conf.splitlines(), conf
        assert "AllowInsecureRepositories" not in conf and "trusted=yes" not in sources

        before = len(archive.asked)
        code, output = apt_get_update(docker_client, target)
        assert code == 0, output[-3000:]
        assert "Err:" not in output and "W: " not in output, output[-3000:]
        assert any("/dists/bullseye/InRelease" in path for path in archive.asked[before:]), archive.asked[before:]
        assert any(path.startswith("/debian-security/dists/bullseye-security/") for path in archive.asked[before:])


def read(client: DockerClient, image: str, path: str) -> str:
    status, output = engine.run_command(client, image, ["cat", path], timeout=60)
    assert status == 0, f"{image} has no {path}: {output}"
    return output


def apt_get_update(client: DockerClient, image: str) -> tuple[int, str]:
    """`apt-get update` in a container of IMAGE on the host's network (the doubles listen on its
    127.0.0.1); its exit status and output."""
    container = client.containers.run(image, ["apt-get", "update"], network_mode="host", detach=True)
    try:
        status = int(container.wait(timeout=300)["StatusCode"])
        return status, container.logs().decode(errors="replace")
    finally:
        container.remove(force=True)


def test_an_archive_without_the_suite_is_one_line_and_nothing_imported(docker_client: DockerClient,
                                                                       target: str) -> None:
    before = scratch_folders()
    with serving(Retired) as mirror, serving(Retired) as archive:
        with pytest.raises(UserError) as info:
            standin.bootstrap_os(docker_client, print, mirror.url, archive=archive.url, target=target)
        assert archive.asked == ["/debian/dists/bullseye/Release"]
    message = str(info.value)
    assert info.value.exit_code == EXIT_INPUT and "\n" not in message
    assert message.startswith(f"bullseye is gone from {mirror.url} and {archive.url} does not have it either"), \
        message
    assert not engine.image_exists(docker_client, target)
    assert scratch_folders() == before, "a scratch root filesystem was left behind"
