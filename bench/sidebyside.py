"""--side-by-side: TensorFlow's own gpu-jupyter recipe built on our gpu image's base
(bench.official) and judged as ours is (its floor), the compressed pull sizes of both
(bench.pullsize, with an update of ours), and BuildKit's builds of each variant built in this run
(bench.builders). Runs after every other measure, so its builds and pushes slow no other timing."""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docker import DockerClient

from bench import builders, builds, floor, official, pullsize
from tf29env.core.log import Log
from tf29env.core.variants import GPU, VARIANTS

OFFICIAL_PYTHON = "python3"  # the recipe installs into the system Python


@dataclass(frozen=True)
class Options:
    ca_certs: list[Path]
    runs: int
    built_here: bool  # the variants were built in this run (not --image/--skip-builds): the cache has them


def checks(client: DockerClient, image: str) -> dict[str, Any]:
    """bench.official's import, pip check and versions, run on our image the same way (`python3` is
    the venv's there: its bin folder is first on PATH)."""
    status, output, seconds = official.timed_command(client, image, official.IMPORT)
    imported = {**official.command_json(status, output), "seconds": round(seconds, 3)}
    found: dict[str, Any] = {"import_tensorflow": imported}
    status, output, _ = official.timed_command(client, image, official.PIP_CHECK)
    found["pip_check"] = official.command_json(status, output)
    status, output, _ = official.timed_command(client, image, official.PIP_LIST)
    found["versions"] = official.versions(official.parse_pip_list(output)) if status == 0 else {}
    return found


def measure(client: DockerClient, document: dict[str, Any], options: Options, say: Callable[[str], None],
            log: Log) -> None:
    """Adds document["official"], variants.gpu.pull and, for variants built here, build.buildkit."""
    cas = builds.ca_args(options.ca_certs)
    variants: dict[str, Any] = document["variants"]
    ours = variants[GPU]
    base = ours["size"]["base"]
    say(f"{ours['image']}: the recipe's own checks (import, pip check, versions)")
    ours["recipe_checks"] = checks(client, ours["image"])
    say(f"official recipe: cold build on {base}, its sizes, import, pip check, start-up x{options.runs} (minutes)")
    recipe = official.measure(client, base, cas, options.runs, log)
    say(f"{official.OFFICIAL_TAG}: the floor")
    recipe["floor"] = floor.measure(client, official.OFFICIAL_TAG, OFFICIAL_PYTHON, base, recipe["added_bytes"])
    document["official"] = recipe
    say("pull sizes: pushing both images and their base to a local registry, then an update of ours (minutes)")
    pulled = pullsize.measure(client, {GPU: (ours["image"], base), "official": (official.OFFICIAL_TAG, base)},
                              log, updates={GPU: VARIANTS[GPU]} if options.built_here else {}, cas=cas)
    ours["pull"] = pulled[GPU]
    recipe["pull"] = pulled["official"]
    if not options.built_here:
        return
    for name, result in variants.items():
        say(f"{name}: BuildKit (docker buildx build): cold, then warm x{options.runs} (minutes)")
        result.setdefault("build", {})["buildkit"] = builders.buildkit(client, VARIANTS[name], cas, options.runs, log)
