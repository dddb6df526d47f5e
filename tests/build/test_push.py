"""`build.py push` against a real registry (Debian's docker-registry on 127.0.0.1): every tag
pushed, digests reported, and the image pulled back by digest is the one that was built."""

import http.server
import json
import threading
from pathlib import Path
from typing import Any

import requests
from docker import DockerClient

from tests.build.conftest import REPOSITORY, build_py, untag_repository
from tf29env.core import engine


def test_push_every_tag_and_pull_back_by_digest(built: dict[str, dict[str, Any]], registry: str, output_dir: Path,
                                                docker_client: DockerClient) -> None:
    record = built["cpu"]
    run = build_py("push", "--registry", registry, "--variant", "cpu", "--output-dir", str(output_dir), "--json")
    pushed_refs: list[str] = []
    by_digest = ""
    try:
        assert run.code == 0, run.stderr[-3000:]
        result = json.loads(run.stdout)
        pushed_refs = [item["ref"] for item in result["pushed"]]
        tags = [ref.rsplit(":", 1)[1] for ref in record["refs"]]
        assert pushed_refs == [f"{registry}/{REPOSITORY}:{tag}" for tag in tags]
        digests = {item["digest"] for item in result["pushed"]}
        assert len(digests) == 1 and next(iter(digests)).startswith("sha256:")
        digest = next(iter(digests))
        # The registry itself lists every tag, and serves the manifest under the reported digest.
        listed = requests.get(f"http://{registry}/v2/{REPOSITORY}/tags/list", timeout=10).json()["tags"]
        assert sorted(listed) == sorted(tags)
        head = requests.head(f"http://{registry}/v2/{REPOSITORY}/manifests/{tags[0]}", timeout=10, headers={
            "Accept": "application/vnd.docker.distribution.manifest.v2+json"})
        assert head.headers["Docker-Content-Digest"] == digest
        assert json.loads((output_dir / "cpu" / "push.json").read_text()) == result
        # Forget the registry's names locally, then pull by digest: the same image comes back.
        for ref in pushed_refs:
            docker_client.images.remove(ref)
        by_digest = f"{registry}/{REPOSITORY}@{digest}"
        pulled = docker_client.images.pull(by_digest)
        assert pulled.id == record["id"]
        assert by_digest in engine.inspect(docker_client, record["id"])["RepoDigests"]
    finally:
        for ref in [*pushed_refs, by_digest]:
            if ref and engine.image_exists(docker_client, ref):
                docker_client.images.remove(ref)


def test_unreachable_registry(built: dict[str, dict[str, Any]], closed_port: int, output_dir: Path) -> None:
    run = build_py("push", "--registry", f"127.0.0.1:{closed_port}", built["cpu"]["image"], "--output-dir",
                   str(output_dir))
    assert run.code == 6
    assert run.stderr == (f"error: registry 127.0.0.1:{closed_port} is unreachable (Connection refused); "
                          "nothing was pushed\n")


class Unavailable(http.server.BaseHTTPRequestHandler):
    """A registry whose storage is down for maintenance: it answers, says it holds every layer, and
    refuses the manifest with 503. dockerd fails such a push at once; a 503 to the layers themselves
    would have it retry each layer for ~50 s first, which tests nothing more."""

    def do_GET(self) -> None:
        if self.path == "/v2/":
            self.reply(200, {"Docker-Distribution-API-Version": "registry/2.0"})
        else:
            self.reply(503)

    def do_HEAD(self) -> None:
        if "/blobs/" in self.path:
            self.reply(200, {"Docker-Content-Digest": self.path.rsplit("/", 1)[1], "Content-Length": "1"})
        else:
            self.reply(503)

    def do_PUT(self) -> None:
        self.reply(503)

    do_POST = do_PATCH = do_PUT

    def reply(self, code: int, headers: dict[str, str] | None = None) -> None:
        self.send_response(code)
        for name, value in {"Content-Length": "0", **(headers or {})}.items():
            self.send_header(name, value)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


def test_transient_failures_are_retried_then_reported(built: dict[str, dict[str, Any]], output_dir: Path,
                                                      docker_client: DockerClient) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Unavailable)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    registry = f"127.0.0.1:{server.server_address[1]}"
    try:
        run = build_py("push", "--registry", registry, "--variant", "cpu", "--output-dir", str(output_dir),
                       "--retries", "1")
    finally:
        server.shutdown()
        server.server_close()
        untag_repository(docker_client, f"{registry}/{REPOSITORY}")
    assert run.code == 6
    assert "Traceback" not in run.stderr
    assert run.stdout.count("retrying in") == 1, run.stdout
    assert "(attempt 2 of 2)" in run.stdout
    last = run.stderr.strip().splitlines()
    assert len(last) == 1 and last[0].startswith(f"error: push of {registry}/{REPOSITORY}:") and "503" in last[0]
