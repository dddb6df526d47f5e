"""Pushing an image's tags to a registry: every tag, transient failures retried, digests reported.

The engine does the pushing (and reads `docker login` credentials); 127.0.0.0/8 registries may be
plain HTTP, as Docker allows by default. A registry nobody answers at fails before any push starts.
"""

import re
import socket
import time
from dataclasses import dataclass
from typing import Any

import docker.errors
from docker import DockerClient

from tf29env.core import engine
from tf29env.core.errors import EXIT_PUSH, UserError
from tf29env.core.log import Log
from tf29env.release import tags

REGISTRY_RE = re.compile(
    r"(?P<host>[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9a-fA-F:]+\])(?::(?P<port>[0-9]{1,5}))?"
)
# Errors worth another try: the network or the registry hiccuped. Anything else (denied, unknown
# name, bad manifest) fails at once.
TRANSIENT = ("connection reset", "connection refused", "timeout", "timed out", "eof", "broken pipe",
             "500 internal", "502 bad gateway", "503 service", "504 gateway", "too many requests",
             "tls handshake", "no route to host")



@dataclass(frozen=True)
class Pushed:
    ref: str
    digest: str


def parse_registry(value: str) -> tuple[str, int]:
    """HOST[:PORT] as given to --registry, checked; port 443 when none is given."""
    match = REGISTRY_RE.fullmatch(value)
    port = int(match["port"]) if match and match["port"] else 443
    if not match or not 0 < port < 65536:
        raise UserError(f"--registry {value}: expected HOST[:PORT], such as registry.example.com or 127.0.0.1:5000 "
                        "(no scheme, no path)")
    return match["host"].strip("[]"), port


def check_reachable(registry: str, timeout: float = 5) -> None:
    host, port = parse_registry(registry)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise UserError(f"registry {registry} is unreachable ({reason}); nothing was pushed", EXIT_PUSH) from None


def is_transient(message: str) -> bool:
    lowered = message.lower()
    return any(word in lowered for word in TRANSIENT)


def push_one(client: DockerClient, target: str, log: Log) -> str:
    """Push one reference once; its manifest digest. Raises UserError (transient or not)."""
    repository, tag = target.rsplit(":", 1)
    digest = ""
    try:
        for chunk in client.api.push(repository, tag=tag, stream=True, decode=True):
            digest = _handle(chunk, target, log) or digest
    except docker.errors.APIError as exc:
        raise UserError(f"push of {target} failed: {exc.explanation or exc}", EXIT_PUSH) from None
    if not digest:
        raise UserError(f"push of {target} ended without a digest", EXIT_PUSH)
    return digest


def _handle(chunk: dict[str, Any], target: str, log: Log) -> str:
    if "error" in chunk:
        raise UserError(f"push of {target} failed: {str(chunk['error']).strip()}", EXIT_PUSH)
    aux = chunk.get("aux")
    if isinstance(aux, dict) and aux.get("Digest"):
        return str(aux["Digest"])
    if chunk.get("status") and not chunk.get("progressDetail"):
        log(f"{target}: {chunk.get('id', '')} {chunk['status']}".replace("  ", " "))
    return ""


def path_of(repository: str) -> str:
    """The repository without a registry host in front (Docker's rule: a first part with . or :)."""
    first, _, rest = repository.partition("/")
    return rest if rest and ("." in first or ":" in first or first == "localhost") else repository


def push(client: DockerClient, image_id: str, refs: list[str], registry: str, log: Log, *,
         repository: str | None = None, retries: int = 3, backoff: float = 2.0) -> list[Pushed]:
    """Tag image_id as REGISTRY/REPOSITORY:TAG for the tag of every ref and push it, retrying transient
    failures. The id, not the refs, says what is pushed: a moving tag may have moved on since."""
    check_reachable(registry)
    if repository:
        tags.validate_repository(repository)
    results = []
    for ref in refs:
        local_repository, tag = tags.split_reference(ref, "push")
        target = f"{registry}/{repository or path_of(local_repository)}:{tag}"
        engine.tag(client, image_id, target)
        for attempt in range(1, retries + 2):
            try:
                digest = push_one(client, target, log)
                break
            except UserError as exc:
                if attempt > retries or not is_transient(str(exc)):
                    raise
                log(f"==> {exc}; retrying in {backoff * attempt:.0f}s (attempt {attempt + 1} of {retries + 1})")
                time.sleep(backoff * attempt)
        log(f"==> pushed {target} {digest}")
        results.append(Pushed(target, digest))
    return results
