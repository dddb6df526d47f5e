"""Running one image build on the engine and streaming its progress."""

from collections.abc import Callable
from typing import IO, Any

import docker.errors
from docker import DockerClient

from tf29env.errors import UserError

EXIT_BUILD = 4
TAIL_LINES = 15

Log = Callable[[str], None]


def build_context(
    client: DockerClient,
    fileobj: IO[bytes],
    *,
    tag: str,
    buildargs: dict[str, str],
    log: Log,
    nocache: bool = False,
    pull: bool = False,
    cache_from: list[str] | None = None,
) -> str:
    """Build from a context tar; return the image id. A failing step raises with its last lines."""
    tail: list[str] = []
    image_id = ""
    try:
        stream = client.api.build(
            fileobj=fileobj,
            custom_context=True,
            tag=tag,
            buildargs=buildargs,
            rm=True,
            forcerm=True,
            nocache=nocache,
            pull=pull,
            cache_from=cache_from or None,
            decode=True,
        )
        for chunk in stream:
            image_id = _handle(chunk, tail, log) or image_id
    except docker.errors.APIError as exc:
        raise UserError(f"the engine refused the build: {exc.explanation or exc}", EXIT_BUILD) from None
    if not image_id:
        raise UserError("the build ended without an image id", EXIT_BUILD)
    return image_id


def _handle(chunk: dict[str, Any], tail: list[str], log: Log) -> str:
    if "error" in chunk:
        shown = "\n    ".join(tail[-TAIL_LINES:])
        message = str(chunk["error"]).strip()
        hint = ""
        if "pull access denied" in message or "manifest unknown" in message or "not found" in message:
            hint = " (no registry here? `--base standin` builds on a local stand-in base)"
        raise UserError(f"build failed: {message}{hint}\n  last lines:\n    {shown}", EXIT_BUILD)
    text = str(chunk.get("stream", ""))
    for line in text.splitlines():
        if line.strip():
            tail.append(line.rstrip())
            del tail[:-TAIL_LINES]
            log(line.rstrip())
    aux = chunk.get("aux")
    if isinstance(aux, dict) and "ID" in aux:
        return str(aux["ID"])
    return ""
