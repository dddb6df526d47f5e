"""Running one image build on the engine and streaming its output lines to a log callable."""

import re
from typing import IO, Any

import docker.errors
from docker import DockerClient

from tf29env.core.errors import EXIT_BUILD, UserError
from tf29env.core.log import Log

TAIL_LINES = 15
STEP_RE = re.compile(r"Step \d+/\d+ : ")



def build_context(
    client: DockerClient,
    fileobj: IO[bytes],
    *,
    tag: str | None,
    buildargs: dict[str, str],
    log: Log,
    nocache: bool = False,
    pull: bool = False,
    cache_from: list[str] | None = None,
) -> str:
    """Build from a context tar; return the image id. A failing step raises with its last lines."""
    tail: list[str] = []
    step = ["(before the first step)"]
    image_id = ""
    try:
        stream = client.api.build(
            fileobj=fileobj, custom_context=True, tag=tag, buildargs=buildargs, rm=True, forcerm=True,
            nocache=nocache, pull=pull, cache_from=cache_from or None, decode=True,
        )
        for chunk in stream:
            image_id = _handle(chunk, tail, step, log) or image_id
    except docker.errors.APIError as exc:
        raise UserError(f"the engine refused the build: {exc.explanation or exc}", EXIT_BUILD) from None
    if not image_id:
        raise UserError("the build ended without an image id", EXIT_BUILD)
    return image_id


def _handle(chunk: dict[str, Any], tail: list[str], step: list[str], log: Log) -> str:
    if "error" in chunk:
        message = str(chunk["error"]).strip().splitlines()[0]
        hint = ""
        if "pull access denied" in message or "manifest unknown" in message or "not found" in message:
            hint = " (no registry here? `--base standin` builds on a local stand-in base)"
        shown = "\n    ".join(tail[-TAIL_LINES:]) or "(no output)"
        raise UserError(f"build failed at {step[0]}: {message}{hint}\n  last lines:\n    {shown}", EXIT_BUILD)
    text = str(chunk.get("stream", ""))
    for line in text.splitlines():
        if not line.strip():
            continue
        if STEP_RE.match(line):
            step[0] = line.strip()[:100]
            tail.clear()
        else:
            tail.append(line.rstrip())
            del tail[:-TAIL_LINES]
        log(line.rstrip())
    aux = chunk.get("aux")
    if isinstance(aux, dict) and "ID" in aux:
        return str(aux["ID"])
    return ""
