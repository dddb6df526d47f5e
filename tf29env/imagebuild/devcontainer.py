"""The image's Dev Containers metadata: the `devcontainer.metadata` label (the Dev Containers spec's
name for it), which the Dockerfile writes from its own ARG and ENV values so that
`{"image": "..."}` alone is a complete dev container (docs/devcontainer.md). A label that is not
JSON would only fail later in a user's editor, which ignores it with a log line; so an image whose
label does not parse, or names another user or port than the image runs, is refused here."""

import json
from typing import Any

from tf29env.core.errors import EXIT_BUILD, UserError

KEY = "devcontainer.metadata"


def _env(attrs: dict[str, Any]) -> dict[str, str]:
    pairs = (entry.partition("=") for entry in attrs.get("Config", {}).get("Env") or [])
    return {name: value for name, _, value in pairs}


def metadata_problems(attrs: dict[str, Any]) -> list[str]:
    """What is wrong with the image's metadata label (docker inspect's attrs); [] when nothing."""
    text = (attrs.get("Config", {}).get("Labels") or {}).get(KEY)
    if not text:
        return [f"no {KEY} label"]
    try:
        entries = json.loads(text)
    except ValueError as exc:
        return [f"the {KEY} label is not JSON ({exc})"]
    if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
        return [f"the {KEY} label is not a JSON array of objects"]
    merged: dict[str, Any] = {}
    for entry in entries:
        merged.update(entry)
    env = _env(attrs)
    problems = []
    user = merged.get("remoteUser")
    if user != env.get("NB_USER"):
        problems.append(f"{KEY}: remoteUser {user!r} is not the image's NB_USER {env.get('NB_USER')!r}")
    port = env.get("JUPYTER_PORT", "")
    if not port.isdigit() or int(port) not in (merged.get("forwardPorts") or []):
        problems.append(f"{KEY}: forwardPorts {merged.get('forwardPorts')!r} lacks the image's JUPYTER_PORT {port!r}")
    return problems


def check(attrs: dict[str, Any], image: str) -> None:
    """Raise (exit 4, a build that must not ship) when the label is wrong."""
    problems = metadata_problems(attrs)
    if problems:
        raise UserError(f"{image}: " + "; ".join(problems), EXIT_BUILD)
