"""What `make upgrade` costs (docs/upgrade.md): a `make run` environment whose ~/work holds WORK_MIB
of incompressible data is moved between two images and back, RUNS times each way:

- *downtime*: from the old container's stop to the new one healthy and through the self-check's
  container checks, as `make upgrade` reports it ("down N s");
- *upgrade*: the whole `make upgrade` (checks, stop, snapshot, start, gate, summary);
- *snapshot*: compose.snapshot.take of the stopped environment's volumes alone, and its size.

`python -m bench.upgrade --image OLD --new NEW [--runs 2] [--work-mib 1024]` prints a Markdown table;
timings are reported (median, min-max), never asserted (bench/README.md).
"""

from __future__ import annotations

import argparse
import datetime
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from docker import DockerClient

from bench.errors import BenchError
from bench.stats import Summary, summarize
from compose import recreate, snapshot
from testkit import makerun
from testkit.net import free_host_port
from tf29env.core import engine

DOWN = re.compile(r"; down (\d+) s;")


def upgrade_once(name: str, image: str, backups: Path) -> tuple[float, float]:
    """(the whole make upgrade, the downtime it reports)."""
    begin = time.monotonic()
    done = makerun.make("upgrade", f"IMAGE={image}", f"CONTAINER={name}", f"BACKUP_DIR={backups}", "BACKUP_KEEP=1")
    took = time.monotonic() - begin
    found = DOWN.search(done.stdout)
    if done.returncode != 0 or not found:
        raise BenchError(f"make upgrade to {image} failed: {(done.stdout + done.stderr)[-500:]}")
    return took, float(found[1])


def snapshot_once(client: DockerClient, name: str, backups: Path) -> tuple[float, int]:
    """(seconds, bytes) of a snapshot of the environment's volumes, taken with it stopped."""
    container = client.containers.get(name)
    container.stop()
    try:
        folder = backups / snapshot.folder_name(f"{name}-bench", datetime.datetime.now(datetime.UTC))
        begin = time.monotonic()
        snapshot.take(client, container.image.id, folder, recreate.named_volumes(container.attrs), {"image": "bench"})
        took = time.monotonic() - begin
        size = sum(path.stat().st_size for path in folder.iterdir())
        shutil.rmtree(folder)
        return took, size
    finally:
        container.start()


def measure(client: DockerClient, old: str, new: str, runs: int, work_mib: int) -> dict[str, Summary | float]:
    name = f"bench-upgrade-{secrets.token_hex(3)}"
    backups = Path(tempfile.mkdtemp(prefix="bench-upgrade-"))
    try:
        started = makerun.make("run", f"IMAGE={old}", f"CONTAINER={name}", "HOST_ADDRESS=127.0.0.1",
                               f"JUPYTER_HOST_PORT={free_host_port()}", f"SSH_HOST_PORT={free_host_port()}",
                               "SSH_PUBLIC_KEY=", "GPUS=none")
        if started.returncode != 0:
            raise BenchError(f"make run failed: {started.stderr[-500:]}")
        code, out = client.containers.get(name).exec_run(
            ["sh", "-c", f"head -c {work_mib}M /dev/urandom > /home/jovyan/work/blob"], user="jovyan")
        if code != 0:
            raise BenchError(f"filling ~/work failed: {out.decode(errors='replace')[-300:]}")
        totals, downs, snaps = [], [], []
        size = 0
        for _ in range(runs):
            for image in (new, old):
                took, down = upgrade_once(name, image, backups)
                totals.append(took)
                downs.append(down)
            took, size = snapshot_once(client, name, backups)
            snaps.append(took)
        return {"upgrade": summarize(totals), "downtime": summarize(downs), "snapshot": summarize(snaps),
                "snapshot_mib": size / 1024 / 1024}
    finally:
        for suffix in ("", "-before-upgrade"):
            for container in client.containers.list(all=True, filters={"name": f"^/{name}{suffix}$"}):
                container.remove(force=True)
        for volume in client.volumes.list(filters={"name": name}):
            volume.remove(force=True)
        shutil.rmtree(backups, ignore_errors=True)
        subprocess.run(["sync"], check=False)


def table(old: str, new: str, work_mib: int, found: dict[str, Summary | float]) -> str:
    def cell(key: str) -> str:
        value = found[key]
        return value.cell() if isinstance(value, Summary) else f"{value:.0f} MiB"

    rows = [("`make upgrade`, whole", cell("upgrade")),
            ("downtime (stop -> new one through the gate)", cell("downtime")),
            ("snapshot of the volumes alone", cell("snapshot")), ("snapshot size", cell("snapshot_mib"))]
    return "\n".join([f"Upgrades between `{old}` and `{new}`, ~/work holding {work_mib} MiB", "",
                      "| Measure | Value |", "|---|---|", *[f"| {name} | {value} |" for name, value in rows]]) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.upgrade", description=__doc__.splitlines()[0])
    parser.add_argument("--image", required=True, help="the image the environment starts on")
    parser.add_argument("--new", required=True, help="the image it is upgraded to (and back from)")
    parser.add_argument("--runs", type=int, default=2, help="round trips (default 2)")
    parser.add_argument("--work-mib", type=int, default=1024, help="MiB of data in ~/work (default 1024)")
    args = parser.parse_args(argv)
    if args.runs < 1 or args.work_mib < 0:
        print("bench.upgrade: --runs must be 1 or more and --work-mib 0 or more", file=sys.stderr)
        return 2
    client = engine.connect()
    for image in (args.image, args.new):
        if not engine.image_exists(client, image):
            print(f"bench.upgrade: no image {image} on the engine", file=sys.stderr)
            return 2
    try:
        print(table(args.image, args.new, args.work_mib, measure(client, args.image, args.new, args.runs,
                                                                 args.work_mib)), end="")
    except BenchError as error:
        print(f"bench.upgrade: {error}", file=sys.stderr)
        return 4
    return 0


if __name__ == "__main__":
    sys.exit(main())
