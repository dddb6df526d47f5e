"""`make up` after a new image: the team's members move to it one at a time, each with the snapshot,
health gate and automatic rollback of `make upgrade` (docs/upgrade.md, "The team (`make up`)").

  python -m compose.rollout --compose 'docker compose' [--backup-dir backups] [--keep 3] [--timeout 300] NAME...

Run in the folder of docker-compose.yml with the members `compose/access.py ready` lists. Members
without a container, or whose container runs the image the compose file names already, are started
(or left) by compose all at once, as `make up` always did. Each member whose container runs another
image is then, in the compose file's order: stopped as `make down` stops it (its jobs checkpoint),
snapshotted into BACKUP_DIR/<container>-<UTC time>/, recreated by compose on the new image, and gated
(healthy, then the self-check's container checks). The first one that fails goes back to its old
image and volumes and the rollout stops: the members after it stay on the old image, running and
untouched; one line says who and why, exit 1. Bad input (an image not on the engine, no room for a
snapshot, ...) is one line and exit 1 before anything is started or stopped.

Deciding needs only the docker CLI and the standard library, so that a first start runs on the
host's python3; upgrading a member needs the docker SDK of the host tools' venv (`make venv`).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from compose.options import positive

if TYPE_CHECKING:
    from docker import DockerClient
    from docker.models.containers import Container

    from compose.snapshot import Snapshot

PROG = "tf29-env"
# docker-compose.yml's members name their image through this variable; the rollback sets it to the old image's id.
IMAGE_VARIABLE = "TF29ENV_IMAGE"
# A value no real image has: `compose config` with it shows which members follow IMAGE_VARIABLE.
PROBE = "tf29-rollout-probe:follows"
BACK_WITHIN = 180  # seconds the member back on its old image has to turn healthy (access.py's first-start time)
COMPOSE_TIMEOUT = 600


class RolloutError(Exception):
    """One line for the person; nothing more was changed than the line says."""


@dataclass(frozen=True)
class Plan:
    """What `make up` does with each member: compose starts or leaves START at once, then UPGRADE
    moves one member at a time, in order. MISSING: members with a container whose new image is not
    on the engine (nothing can be compared or rolled back)."""

    start: list[str] = field(default_factory=list)
    upgrade: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)


def make_plan(names: Sequence[str], targets: Mapping[str, str | None], current: Mapping[str, str | None]) -> Plan:
    """NAMES in the compose file's order; TARGETS: the id of the image each member's service names
    (None: not on the engine); CURRENT: the image id its container runs (None: no container yet)."""
    plan = Plan()
    for name in dict.fromkeys(names):  # a member named twice is still one member
        running, target = current.get(name), targets.get(name)
        if running is None or running == target:
            plan.start.append(name)
        elif target is None:
            plan.missing.append(name)
        else:
            plan.upgrade.append(name)
    return plan


def service_images(config: str) -> dict[str, str]:
    """Each service's image in `compose config`'s output (both implementations write block YAML:
    `services:` at the left edge, each service two spaces in, its keys four)."""
    images: dict[str, str] = {}
    service: str | None = None
    in_services = False
    for line in config.splitlines():
        if line and not line.startswith(" "):
            in_services, service = line.rstrip() == "services:", None
        elif in_services and line.startswith("  ") and not line.startswith("   ") and line.rstrip().endswith(":"):
            service = line.strip()[:-1].strip("'\"")
        elif in_services and service and line.startswith("    image:"):
            images[service] = line.split(":", 1)[1].strip().strip("'\"")
    return images


def not_following(names: Sequence[str], probed: Mapping[str, str]) -> list[str]:
    """Of NAMES, those whose image does not come from IMAGE_VARIABLE (PROBE set): their old image
    could not be put back through compose."""
    return [name for name in names if probed.get(name) != PROBE]


def short(image_id: str) -> str:
    return image_id.removeprefix("sha256:")[:12]


def say(message: str) -> None:
    print(f"{PROG}: {message}", flush=True)


def run(command: Sequence[str], env: Mapping[str, str] | None = None, *, quiet: bool = True,
        timeout: float = COMPOSE_TIMEOUT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(command), capture_output=quiet, text=True, env=None if env is None else dict(env),
                          timeout=timeout, check=False)


def last_line(done: subprocess.CompletedProcess[str]) -> str:
    return ((done.stderr or "").strip().splitlines() or (done.stdout or "").strip().splitlines() or ["failed"])[-1]


class Team:
    """The compose project in the working directory, through the compose command `make up` uses."""

    def __init__(self, compose: str) -> None:
        self.compose = shlex.split(compose)

    def call(self, *args: str, image: str | None = None, quiet: bool = True) -> subprocess.CompletedProcess[str]:
        """Compose with ARGS; IMAGE overrides the members' image (compose substitutes it into `image:`)."""
        env = None if image is None else {**os.environ, IMAGE_VARIABLE: image}
        return run([*self.compose, *args], env, quiet=quiet)

    def images(self, image: str | None = None) -> dict[str, str]:
        done = self.call("config", image=image)
        if done.returncode != 0:
            raise RolloutError(f"{' '.join(self.compose)} config: {last_line(done)}")
        return service_images(done.stdout)

    def containers(self, name: str) -> list[dict[str, Any]]:
        """The `docker inspect` of NAME's containers (not one-off `compose run` ones)."""
        done = self.call("ps", "-a", "-q", name)
        if done.returncode != 0:
            raise RolloutError(f"{' '.join(self.compose)} ps {name}: {last_line(done)}")
        ids = done.stdout.split()
        if not ids:
            return []
        inspected = run(["docker", "inspect", *ids])
        if inspected.returncode != 0:
            raise RolloutError(f"docker inspect of {name}'s containers: {last_line(inspected)}")
        found: list[dict[str, Any]] = json.loads(inspected.stdout)
        return [c for c in found if (c["Config"].get("Labels") or {}).get("com.docker.compose.oneoff") != "True"]


def image_id(reference: str) -> str | None:
    done = run(["docker", "image", "inspect", "-f", "{{.Id}}", reference])
    return done.stdout.strip() if done.returncode == 0 else None


@dataclass(frozen=True)
class Decided:
    plan: Plan
    references: dict[str, str]
    containers: dict[str, dict[str, Any]] = field(default_factory=dict)


def decide(team: Team, names: Sequence[str]) -> Decided:
    references = team.images()
    unknown = [name for name in names if name not in references]
    if unknown:
        raise RolloutError(f"{unknown[0]} is not a service of the compose files (COMPOSE_FILE)")
    containers: dict[str, dict[str, Any]] = {}
    for name in dict.fromkeys(names):
        found = team.containers(name)
        if len(found) > 1:
            raise RolloutError(f"{name} has {len(found)} containers: the rollout moves one per member "
                               f"(`{' '.join(team.compose)} up -d --scale {name}=1`)")
        if found:
            containers[name] = found[0]
    ids = {reference: image_id(reference) for reference in set(references.values())}
    plan = make_plan(names, {name: ids[references[name]] for name in names},
                     {name: str(container["Image"]) for name, container in containers.items()})
    if plan.missing:
        name = plan.missing[0]
        raise RolloutError(f"{name} runs {short(str(containers[name]['Image']))} and its new image "
                           f"{references[name]} is not on this engine: build it (`make build`), load it "
                           f"(`docker load`) or pull it (`{' '.join(team.compose)} pull`) first")
    if plan.upgrade:
        strays = not_following(plan.upgrade, team.images(PROBE))
        if strays:
            raise RolloutError(f"{strays[0]}'s image in the compose file does not come from ${IMAGE_VARIABLE}, so "
                               "a failed upgrade could not bring back its old image: use `image: "
                               f"${{{IMAGE_VARIABLE}:-...}}` as docker-compose.yml's members do")
    return Decided(plan, references, containers)


@dataclass(frozen=True)
class Upgraded:
    name: str
    container: str
    old: str
    new: str
    downtime: float
    snapshot: Path


class Rollout:
    """The upgrades of one `make up`, with the docker SDK and `make upgrade`'s own steps."""

    def __init__(self, team: Team, decided: Decided, backup_dir: Path, timeout: float) -> None:
        try:
            import docker  # noqa: PLC0415 - deciding and first starts run on the host's python3, without the SDK
        except ImportError:
            raise RolloutError(f"{', '.join(decided.plan.upgrade)} must move to a new image, which needs the host "
                               "tools' venv (`make venv`) and its docker SDK") from None
        self.client: DockerClient = docker.from_env(timeout=COMPOSE_TIMEOUT)
        self.team = team
        self.decided = decided
        self.backup_dir = backup_dir
        self.timeout = timeout

    def check_room(self) -> None:
        """Before anything stops: each member's snapshot fits in BACKUP_DIR."""
        from compose import recreate, snapshot  # noqa: PLC0415 - they need the docker SDK

        for name in self.decided.plan.upgrade:
            container = self.decided.containers[name]
            volumes = [volume for volume, _ in recreate.named_volumes(container)]
            try:
                snapshot.check_room(self.client, str(container["Image"]), volumes, self.backup_dir)
            except (snapshot.SnapshotError, OSError) as exc:
                raise RolloutError(f"{name}: no snapshot can be taken into {self.backup_dir}: {exc}") from None

    def the_container(self, name: str) -> Container | None:
        found = self.team.containers(name)
        return self.client.containers.get(found[0]["Id"]) if found else None

    def upgrade(self, name: str) -> Upgraded:
        """NAME on its new image, or RolloutError once it is back on its old one."""
        import docker.errors  # noqa: PLC0415 - deciding and first starts run without the SDK

        from compose import snapshot, upgrade  # noqa: PLC0415 - they need the docker SDK

        reference = self.decided.references[name]
        try:
            old = self.client.containers.get(self.decided.containers[name]["Id"])
            old_image = upgrade.the_image(self.client, old.attrs["Image"])
        except (docker.errors.NotFound, upgrade.UpgradeError) as exc:
            raise RolloutError(f"{name}: its container or image went away meanwhile ({exc})") from None
        say(f"{name}: stopping {old.name} ({short(old_image.id)}) as `make down` does: running jobs checkpoint first")
        upgrade.stop(old)
        began = time.monotonic()
        try:
            taken = upgrade.take_snapshot(self.client, old, old_image, self.backup_dir, "upgrade", reference)
        except snapshot.SnapshotError as exc:
            old.start()  # as it was: nothing else changed
            raise RolloutError(f"{name}: {exc}; {name} runs on {upgrade.shown(old_image)} as before") from None
        say(f"{name}: snapshot of {len(taken.volumes)} volumes: {taken.folder}")
        done = self.team.call("up", "-d", "--no-deps", "--force-recreate", name)
        new = self.the_container(name)
        why: str | None
        if done.returncode != 0 or new is None:
            why = f"compose could not start it: {last_line(done)}"
        else:
            say(f"{name}: started {new.name} on {reference}; waiting until it is healthy")
            try:
                why = upgrade.wait_healthy(new, self.timeout) or upgrade.self_check(new)
            except docker.errors.APIError as exc:
                why = f"the engine: {exc.explanation or exc}"
        if why is not None:
            raise RolloutError(self.roll_back(name, old_image, taken, why))
        assert new is not None
        return Upgraded(name, new.name, upgrade.shown(old_image), f"{reference} ({short(new.attrs['Image'])})",
                        time.monotonic() - began, taken.folder)

    def roll_back(self, name: str, old_image: Any, taken: Snapshot, why: str) -> str:
        """The new container goes (its log kept in the snapshot), the volumes come back, compose starts
        the member on its old image's id: the line that says so."""
        from compose import snapshot, upgrade  # noqa: PLC0415 - they need the docker SDK

        log = None
        while (current := self.the_container(name)) is not None:
            if current.attrs["Image"] != old_image.id:
                log = upgrade.keep_log(current, taken.folder, "failed")
            current.remove(force=True)
        rest = self.decided.plan.upgrade[self.decided.plan.upgrade.index(name) + 1:]
        left = f"; not upgraded, still on their image: {', '.join(rest)}" if rest else ""
        where = f"; the new container's last log lines: {log}" if log else ""
        failed = f"{name}: the upgrade to {self.decided.references[name]} failed: {why}"
        try:
            snapshot.restore(self.client, old_image.id, taken)
        except snapshot.SnapshotError as exc:
            return (f"{failed}; and its volumes could not be restored ({exc}): {name} is down, `make rollback "
                    f"CONTAINER={taken.manifest['container']}` retries from {taken.folder}{where}{left}")
        done = self.team.call("up", "-d", "--no-deps", "--force-recreate", name, image=old_image.id)
        back = self.the_container(name)
        if done.returncode != 0 or back is None:
            state = f" (but compose could not start it: {last_line(done)})"
        else:
            still = upgrade.wait_healthy(back, BACK_WITHIN)
            state = "" if still is None else f" (but it is not healthy either: {still})"
        return f"{failed}; {name} is back on {upgrade.shown(old_image)} with the volumes of {taken.folder}{state}" \
               f"{where}{left}"


def roll_out(team: Team, names: Sequence[str], backup_dir: Path, keep: int, timeout: float) -> int:
    decided = decide(team, names)
    plan = decided.plan
    rollout = Rollout(team, decided, backup_dir, timeout) if plan.upgrade else None
    if rollout is not None:
        rollout.check_room()
    if plan.start:
        # As `make up` always started them: compose's own progress on the terminal.
        started = team.call("up", "-d", "--remove-orphans", *plan.start, quiet=False)
        if started.returncode != 0:
            raise RolloutError(f"{' '.join(team.compose)} up failed for {', '.join(plan.start)} (its lines are above)")
    if rollout is None:
        return 0
    done = []
    for name in plan.upgrade:  # one at a time: the first failure raises, and the rest stay as they are
        upgraded = rollout.upgrade(name)
        say(f"upgraded {upgraded.name} from {upgraded.old} to {upgraded.new}; down {upgraded.downtime:.0f} s; "
            f"`make rollback CONTAINER={upgraded.container}` goes back to the snapshot {upgraded.snapshot}")
        done.append(upgraded)
    from compose import snapshot  # noqa: PLC0415 - it needs the docker SDK

    for upgraded in done:
        for pruned in snapshot.prune(backup_dir, upgraded.container, keep, upgraded.snapshot):
            say(f"{upgraded.name}: removed the old snapshot {pruned} (BACKUP_KEEP={keep})")
    return 0



def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="make up", description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--compose", default="docker compose", help="the compose command (compose.mk's COMPOSE)")
    parser.add_argument("--backup-dir", type=Path, default=Path("backups"), help="where snapshots go (BACKUP_DIR)")
    parser.add_argument("--keep", type=positive(int, "BACKUP_KEEP"), default=3,
                        help="snapshots kept of each member's container after an upgrade (BACKUP_KEEP)")
    parser.add_argument("--timeout", type=positive(float, "UPGRADE_TIMEOUT"), default=300.0,
                        help="seconds a member's new container has to turn healthy and pass the self-check")
    parser.add_argument("names", nargs="+", help="the members to start or upgrade (compose/access.py ready)")
    return parser.parse_args(argv)


def main(argv: Sequence[str]) -> int:
    args = parse_args(argv)
    try:
        return roll_out(Team(args.compose), args.names, args.backup_dir, args.keep, args.timeout)
    except RolloutError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
