"""The same container on another image: what `make upgrade` and `make rollback` create in place of
the running one, from its `docker inspect` and its image's. Pure functions over the engine's JSON.

What the person chose (ports, GPUs, volumes, limits, restart policy, their own variables and labels)
is kept; what came from the old image (its PATH and other ENV, labels, command, healthcheck, user)
is left out, so that the new image's own values apply. A value the person set that happens to equal
the old image's is left out too: the engine cannot tell the two apart, nor can anyone after it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Config fields that come from the image unless the container was given its own.
FROM_IMAGE = ("Cmd", "Entrypoint", "Healthcheck", "WorkingDir", "User", "StopSignal", "Shell", "OnBuild",
              "ExposedPorts", "Volumes")
# Config fields the engine sets for each container, never to be copied.
PER_CONTAINER = ("Hostname", "Image")
# An endpoint's fields that the engine assigns when the container starts.
ASSIGNED = ("NetworkID", "EndpointID", "Gateway", "IPAddress", "IPPrefixLen", "IPv6Gateway",
            "GlobalIPv6Address", "GlobalIPv6PrefixLen", "MacAddress", "DriverOpts")


def env_without(env: list[str] | None, image_env: list[str] | None) -> list[str]:
    """The container's variables that the image did not give it."""
    inherited = set(image_env or [])
    return [entry for entry in env or [] if entry not in inherited]


def labels_without(labels: Mapping[str, str] | None, image_labels: Mapping[str, str] | None) -> dict[str, str]:
    """The container's labels that the image did not give it."""
    inherited = dict(image_labels or {})
    return {key: value for key, value in (labels or {}).items() if inherited.get(key) != value}


def endpoint(settings: Mapping[str, Any], short_id: str) -> dict[str, Any]:
    """A network endpoint as the person set it: aliases (less the engine's own, the short id), links, IPAM."""
    kept = {key: value for key, value in settings.items() if key not in ASSIGNED}
    aliases = [alias for alias in kept.get("Aliases") or [] if alias != short_id]
    kept["Aliases"] = aliases or None
    return kept


def create_body(container: Mapping[str, Any], old_image: Mapping[str, Any], image: str) -> dict[str, Any]:
    """The body of POST /containers/create for CONTAINER (its inspect) on IMAGE, where OLD_IMAGE (its
    image's inspect) is what it runs now. Networks beyond the first are joined after the create
    (`extra_networks`): engines before API 1.44 take one at create."""
    config = dict(container["Config"])
    image_config = old_image.get("Config") or {}
    body: dict[str, Any] = {key: value for key, value in config.items()
                            if key not in (*PER_CONTAINER, *FROM_IMAGE, "Env", "Labels")}
    for key in FROM_IMAGE:
        if key in config and config[key] != image_config.get(key):
            body[key] = config[key]
    body["Env"] = env_without(config.get("Env"), image_config.get("Env"))
    body["Labels"] = labels_without(config.get("Labels"), image_config.get("Labels"))
    if config.get("Hostname") and config["Hostname"] != container["Id"][:12]:
        body["Hostname"] = config["Hostname"]  # one the person chose (--hostname), not the engine's
    body["Image"] = image
    body["HostConfig"] = dict(container["HostConfig"])
    networks = (container.get("NetworkSettings") or {}).get("Networks") or {}
    first = next(iter(networks), None)
    if first is not None:
        body["NetworkingConfig"] = {"EndpointsConfig": {first: endpoint(networks[first], container["Id"][:12])}}
    return body


def extra_networks(container: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The networks after the first, with their endpoints, for `network connect` after the create."""
    networks = (container.get("NetworkSettings") or {}).get("Networks") or {}
    return {name: endpoint(settings, container["Id"][:12]) for name, settings in list(networks.items())[1:]}


def named_volumes(container: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(volume name, where it is mounted) of each named volume: what a snapshot keeps. Bind mounts are
    the host's folders (not the environment's to copy: the team's ~/shared is one, which a rollback must
    not put back over the others' work), anonymous volumes go with the container, and read-only ones
    (the team's data, docker-compose.yml's team-data) are shared, not the environment's."""
    found = []
    for mount in container.get("Mounts") or []:
        if mount.get("Type") == "volume" and mount.get("Name") and not is_anonymous(mount) and mount.get("RW", True):
            found.append((mount["Name"], mount["Destination"]))
    return sorted(found)


def is_anonymous(mount: Mapping[str, Any]) -> bool:
    """The engine names an anonymous volume with 64 hex digits."""
    name = str(mount.get("Name", ""))
    return len(name) == 64 and all(c in "0123456789abcdef" for c in name)
