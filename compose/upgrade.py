"""`make upgrade` and `make rollback`: move `make run`'s environment to another image on the same
volumes, with a snapshot before, a health gate after, and the way back (docs/upgrade.md).

  python -m compose.upgrade upgrade --container tf29-env --image IMAGE [--backup-dir backups] [--keep 3]
  python -m compose.upgrade rollback --container tf29-env [--backup-dir backups]

upgrade: the old container is stopped as `make stop` stops it (its jobs checkpoint), its named
volumes are snapshotted (compose/snapshot.py), and the same container (ports, GPUs, volumes,
limits, variables: compose/recreate.py) starts on IMAGE. It must turn healthy and pass the
self-check's container checks within --timeout; if it does not, the volumes are put back from the
snapshot and the old container starts again: one line says so, exit 1. rollback: the newest
snapshot's volumes and image, after a snapshot of what there is now (nothing is lost either way).
Bad input (no container, no image, no snapshot, a damaged one, no room) is one line and exit 1,
with the running environment untouched.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import docker
import docker.errors
from docker import DockerClient
from docker.models.containers import Container

from compose import access, recreate, snapshot
from compose.options import positive

PROG = "tf29-env"
# The self-check's layers that test the image, not the host: CUDA libraries, TensorFlow, mixed
# precision (docs/selfcheck.md); of their checks only tf.gpus depends on the host's GPUs.
GATE_LAYERS = "2,3,4"
HOST_CHECKS = {"tf.gpus"}
GATE_TIME_LIMIT = 240
LOG_LINES = 200
# The lines the image prints at start about what it could not take over (image startup: keptaside).
KEPT_ASIDE = ("tf29-env: kept aside Lab settings ", "tf29-env: kernel ")
DEFAULT_STOP_SECONDS = 10  # the engine's own default when a container has no --stop-timeout


class UpgradeError(Exception):
    """One line for the person; nothing more was changed than the line says."""


def say(message: str) -> None:
    print(f"{PROG}: {message}", flush=True)


def short(image_id: str) -> str:
    return image_id.removeprefix("sha256:")[:12]


def shown(image: Any) -> str:
    """An image as a person knows it: its first tag and short id."""
    return f"{image.tags[0]} ({short(image.id)})" if image.tags else short(image.id)


def now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def the_container(client: DockerClient, name: str) -> Container:
    try:
        return client.containers.get(name)
    except docker.errors.NotFound:
        raise UpgradeError(f"no container {name} to upgrade: `make run` starts one") from None


def the_image(client: DockerClient, reference: str) -> Any:
    try:
        return client.images.get(reference)
    except docker.errors.ImageNotFound:
        raise UpgradeError(f"image {reference} is not on this engine: build it (`make build IMAGE=...`) "
                           "or load it (`docker load`) first") from None


def stop(container: Container) -> None:
    """As `docker stop` does: SIGTERM, then the container's own stop timeout (make run's grace)."""
    seconds = container.attrs["Config"].get("StopTimeout")
    container.stop(timeout=DEFAULT_STOP_SECONDS if seconds is None else int(seconds))


def start_from(client: DockerClient, body: dict[str, Any], name: str, extra: dict[str, dict[str, Any]]) -> Container:
    """Create NAME from BODY (recreate.create_body), join its other networks, start it."""
    created = client.api.create_container_from_config(body, name=name)
    container = client.containers.get(created["Id"])
    for network, settings in extra.items():
        client.api.connect_container_to_network(container.id, network, aliases=settings.get("Aliases"),
                                                links=settings.get("Links"))
    container.start()
    return container


def wait_healthy(container: Container, timeout: float) -> str | None:
    """None once the container is healthy; else why not (it stopped, or is not healthy in time)."""
    deadline = time.monotonic() + timeout
    while True:
        container.reload()
        state = container.attrs["State"]
        health = (state.get("Health") or {}).get("Status")
        if state["Status"] != "running":
            return f"the new container stopped (exit code {state.get('ExitCode')})"
        if health is None:
            return "the new image has no healthcheck, so its health cannot be told"
        if health == "healthy":
            return None
        if time.monotonic() > deadline:
            return f"the new container was not healthy after {timeout:.0f} s (it is {health})"
        time.sleep(1)


def gate_failures(report: dict[str, Any]) -> list[str]:
    """The container checks that FAILed in a self-check report ("id: what"), host-dependent ones aside."""
    return [f"{check['id']}: {check['what']}" for layer in report.get("layers", [])
            for check in layer.get("checks", []) if check.get("status") == "FAIL" and check["id"] not in HOST_CHECKS]


def self_check(container: Container) -> str | None:
    """None when the image's own checks pass in the new container; else the first failure."""
    code, out = container.exec_run(["selfcheck", "--json", "--layers", GATE_LAYERS, "--time-limit",
                                    str(GATE_TIME_LIMIT)], demux=True)
    stdout = (out[0] or b"").decode(errors="replace")
    try:
        report = json.loads(stdout)
    except ValueError:
        stderr = (out[1] or b"").decode(errors="replace").strip().splitlines()
        return f"the self-check did not report (exit {code}: {stderr[-1] if stderr else 'no output'})"
    failures = gate_failures(report)
    return f"the self-check failed {failures[0]}" if failures else None


def keep_log(container: Container, folder: Path, label: str) -> Path:
    path = folder / f"{label}-{short(container.image.id)}.log"
    path.write_bytes(container.logs(tail=LOG_LINES))
    return path


def kept_aside_lines(container: Container) -> list[str]:
    logs = container.logs().decode(errors="replace")
    return [line for line in logs.splitlines() if line.startswith(KEPT_ASIDE)]


def access_lines(container: Container) -> list[str]:
    """How to reach the environment, from the ports it is published on (as `make run` prints them)."""
    ports = container.attrs["HostConfig"].get("PortBindings") or {}

    def host_port(port: str) -> tuple[str, int] | None:
        bound = ports.get(port) or []
        return (bound[0].get("HostIp", ""), int(bound[0]["HostPort"])) if bound and bound[0].get("HostPort") else None

    jupyter, ssh = host_port("8888/tcp"), host_port("22/tcp")
    if jupyter is None or ssh is None:
        return []
    keys = any(entry.startswith("SSH_AUTHORIZED_KEYS=") for entry in container.attrs["Config"].get("Env") or [])
    logs = container.logs().decode(errors="replace")
    return access.run_lines(logs, jupyter[0], jupyter[1], ssh[1], "given to `make run`" if keys else "")


def take_snapshot(client: DockerClient, container: Container, old_image: Any, backup_dir: Path, kind: str,
                  target: str) -> snapshot.Snapshot:
    volumes = recreate.named_volumes(container.attrs)
    folder = backup_dir / snapshot.folder_name(container.name, now())
    manifest = {"kind": kind, "container": container.name, "taken": now().isoformat(timespec="seconds"),
                "image": old_image.id, "image_tags": old_image.tags, "target": target,
                "create": recreate.create_body(container.attrs, old_image.attrs, old_image.id),
                "networks": recreate.extra_networks(container.attrs)}
    return snapshot.take(client, old_image.id, folder, volumes, manifest)


def upgrade(client: DockerClient, name: str, reference: str, backup_dir: Path, keep: int, timeout: float) -> int:
    old = the_container(client, name)
    new_image = the_image(client, reference)
    old_image = the_image(client, old.attrs["Image"])
    if new_image.id == old_image.id:
        say(f"{name} already runs {reference} ({short(new_image.id)}): nothing to upgrade")
        return 0
    aside = f"{name}-before-upgrade"
    if client.containers.list(all=True, filters={"name": f"^/{aside}$"}):
        raise UpgradeError(f"a container {aside} is left from an earlier upgrade: `docker rm {aside}` once "
                           f"{name} works, or `docker rename` it back")
    volumes = recreate.named_volumes(old.attrs)
    snapshot.check_room(client, old_image.id, [volume for volume, _ in volumes], backup_dir)

    say(f"stopping {name} ({short(old_image.id)}) as `make stop` does: running jobs checkpoint first")
    began = time.monotonic()  # the downtime: from the stop until the new container has passed the gate
    stop(old)
    try:
        taken = take_snapshot(client, old, old_image, backup_dir, "upgrade", reference)
    except snapshot.SnapshotError:
        old.start()  # as it was: nothing else changed
        raise
    say(f"snapshot of {len(volumes)} volumes: {taken.folder}")
    old.rename(aside)
    body = recreate.create_body(old.attrs, old_image.attrs, reference)
    new: Container | None = None
    try:
        new = start_from(client, body, name, recreate.extra_networks(old.attrs))
        say(f"started {name} on {reference} ({short(new_image.id)}); waiting until it is healthy")
        why = wait_healthy(new, timeout) or self_check(new)
    except docker.errors.APIError as exc:
        why = f"the engine refused the new container: {exc.explanation or exc}"
    if why is None:
        assert new is not None
        downtime = time.monotonic() - began
        old.remove()
        for pruned in snapshot.prune(backup_dir, name, keep, taken.folder):
            say(f"removed the old snapshot {pruned} (BACKUP_KEEP={keep})")
        say(f"upgraded {name} from {shown(old_image)} to {reference} ({short(new_image.id)}); down "
            f"{downtime:.0f} s; `make rollback` goes back to the snapshot {taken.folder}")
        for line in [*kept_aside_lines(new), *access_lines(new)]:
            print(line)
        return 0
    roll_back_failed(client, name, new, old, old_image, taken, why)
    return 1


def roll_back_failed(client: DockerClient, name: str, new: Container | None, old: Container, old_image: Any,
                     taken: snapshot.Snapshot, why: str) -> None:
    """The new container goes (its log kept in the snapshot), the volumes come back, the old one starts."""
    log = None
    if new is not None:
        log = keep_log(new, taken.folder, "failed")
        new.remove(force=True)
    snapshot.restore(client, old_image.id, taken)
    old.rename(name)
    old.start()
    still = wait_healthy(old, 180)
    where = f"; the new container's last log lines: {log}" if log else ""
    back = "" if still is None else f" (but it is not healthy either: {still})"
    raise UpgradeError(f"the upgrade failed: {why}; rolled back to {shown(old_image)} with the volumes of "
                       f"{taken.folder}{back}{where}")


def rollback(client: DockerClient, name: str, backup_dir: Path, timeout: float) -> int:
    folders = [folder for folder in snapshot.snapshots_of(backup_dir, name) if kind_of(folder) == "upgrade"]
    if not folders:
        raise UpgradeError(f"no snapshot of {name} in {backup_dir}: `make upgrade` takes one before it changes "
                           "anything (BACKUP_DIR names another folder)")
    chosen = snapshot.verify(folders[-1])
    previous = the_image(client, chosen.image)
    try:
        current: Container | None = client.containers.get(name)
    except docker.errors.NotFound:
        current = None
    aside = f"{name}-before-rollback"
    if client.containers.list(all=True, filters={"name": f"^/{aside}$"}):
        raise UpgradeError(f"a container {aside} is left from an earlier rollback: remove or rename it first")
    if current is not None:
        current_image = the_image(client, current.attrs["Image"])
        snapshot.check_room(client, current_image.id, [v for v, _ in recreate.named_volumes(current.attrs)],
                            backup_dir)
        say(f"stopping {name} ({short(current_image.id)}) as `make stop` does")
        stop(current)
        try:
            kept = take_snapshot(client, current, current_image, backup_dir, "rollback", chosen.image)
        except snapshot.SnapshotError:
            current.start()
            raise
        say(f"what {name} had now is kept in {kept.folder}")
        current.rename(aside)
    snapshot.restore(client, previous.id, chosen)
    restored = start_from(client, chosen.manifest["create"], name, chosen.manifest.get("networks") or {})
    why = wait_healthy(restored, timeout)
    if why is not None:
        raise UpgradeError(f"rolled back to {shown(previous)} with the volumes of {chosen.folder}, but {why}: "
                           f"`docker logs {name}`" + (f"; the container before it is {aside}" if current else ""))
    if current is not None:
        current.remove()
    say(f"rolled back {name} to {shown(previous)} with the volumes of {chosen.folder}")
    for line in access_lines(restored):
        print(line)
    return 0


def kind_of(folder: Path) -> str | None:
    try:
        return str(json.loads((folder / snapshot.MANIFEST).read_text()).get("kind"))
    except (OSError, ValueError):
        return None



def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="make upgrade / make rollback", description=__doc__.split("\n\n")[0])
    parser.add_argument("--container", default="tf29-env", help="the environment's container (make run's CONTAINER)")
    parser.add_argument("--backup-dir", type=Path, default=Path("backups"), help="where snapshots go (BACKUP_DIR)")
    parser.add_argument("--timeout", type=positive(float, "UPGRADE_TIMEOUT"), default=300.0,
                        help="seconds the new container has to turn healthy and pass the self-check (UPGRADE_TIMEOUT)")
    commands = parser.add_subparsers(dest="command", required=True)
    up = commands.add_parser("upgrade", help="move the environment to IMAGE")
    up.add_argument("--image", required=True, help="the image to move to (IMAGE)")
    up.add_argument("--keep", type=positive(int, "BACKUP_KEEP"), default=3,
                    help="snapshots of this container kept; older ones are removed after an upgrade (BACKUP_KEEP)")
    commands.add_parser("rollback", help="back to the newest upgrade snapshot's image and volumes")
    return parser.parse_args(argv)


def main(argv: Sequence[str]) -> int:
    args = parse_args(argv)
    client = docker.from_env(timeout=600)
    try:
        if args.command == "upgrade":
            return upgrade(client, args.container, args.image, args.backup_dir, args.keep, args.timeout)
        return rollback(client, args.container, args.backup_dir, args.timeout)
    except (UpgradeError, snapshot.SnapshotError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
