"""`python -m bench [--variant cpu|gpu ...] [--runs N] [--skip-cold] [--skip-builds] [--image REF]
[--slim VARIANT ...] [--side-by-side] [--output PATH] [--keep-images]`: measure, print the table,
write JSON and Markdown.

Without --image each variant is built on its stand-in base as tf29-env:bench-VARIANT (removed at
the end unless --keep-images). --side-by-side adds TensorFlow's own recipe on the gpu stand-in base
(bench.official), the compressed pull sizes of both (bench.pullsize) and BuildKit's builds of ours
(bench.builders), after everything else, so that its builds and pushes slow no other timing.
Every failure is one line on stderr and a non-zero exit."""

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import docker.errors
from docker import DockerClient

from bench import builds, contexts, floor, incontainer, machine, official, report, sidebyside, sizes, slim, startup
from bench.errors import BenchError
from bench.stats import ratio, summarize
from testkit.ssh import make_keypair
from tf29env.core import engine, labels
from tf29env.core.errors import EXIT_ENGINE, UserError
from tf29env.core.log import Log
from tf29env.core.paths import REPO
from tf29env.core.variants import CPU, GPU, VARIANTS, Variant
from tf29env.release import tags

DEFAULT_OUTPUT = REPO / "bench" / "results" / "latest.json"
HOST_CA_DIR = Path("/usr/local/share/ca-certificates")
TAG_PREFIX = "tf29-env:bench-"
SCRIPT_CASES = ("entrypoint", "selfcheck")


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise BenchError(f"{message} (see python -m bench --help)")


def positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"--runs {text}: must be a whole number of at least 1")
    return int(text)


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = Parser(prog="python -m bench", description="Benchmark the tf29-env image (see bench/README.md).")
    parser.add_argument("--variant", action="append", choices=sorted(VARIANTS),
                        help="variant to measure, repeatable (default: cpu and gpu, on their stand-in bases)")
    parser.add_argument("--runs", type=positive, default=3, metavar="N",
                        help="runs per timing: start-up, self-check, import, script-only rebuilds (default 3)")
    parser.add_argument("--skip-cold", action="store_true",
                        help="no cold (no-cache) build: the warm rebuilds start from the engine's cache")
    parser.add_argument("--skip-builds", action="store_true",
                        help="no builds at all: measure tf29-env:bench-VARIANT as it is (or --image)")
    parser.add_argument("--image", metavar="REF",
                        help="measure this image (built by build.py) instead of building; one variant, read from its "
                             f"{labels.VARIANT} label")
    parser.add_argument("--slim", action="append", choices=sorted(VARIANTS), default=[], metavar="VARIANT",
                        help="for this variant (repeatable), also build the Dockerfile without TensorFlow's C++ "
                             "headers, and compare (a whole build: minutes)")
    parser.add_argument("--side-by-side", action="store_true",
                        help="also build TensorFlow's own gpu-jupyter recipe on the gpu stand-in base and compare: "
                             "sizes, the floor, compressed pull sizes, builds (classic and BuildKit), start-up "
                             "(needs the gpu variant; tens of minutes)")
    parser.add_argument("--ca-cert", action="append", type=Path, metavar="PATH",
                        help=f"extra CA certificates for the builds (default: {HOST_CA_DIR} when it holds *.crt)")
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, metavar="PATH",
                        help="JSON results; the Markdown goes beside it as .md "
                             f"(default: {DEFAULT_OUTPUT.relative_to(REPO)})")
    parser.add_argument("--keep-images", action="store_true", help=f"keep the {TAG_PREFIX}* images afterwards")
    args = parser.parse_args(argv)
    if args.image and args.variant:
        raise BenchError("--image and --variant: the image's label names its variant; give one of them")
    if args.image and args.slim:
        raise BenchError("--slim builds from this checkout and cannot measure --image")
    if args.image:
        tags.split_reference(args.image, "--image")
    if args.output.suffix != ".json":
        raise BenchError(f"--output {args.output}: name a .json file (the Markdown goes beside it as .md)")
    try:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.with_suffix(".log").touch()
    except OSError as exc:
        raise BenchError(f"--output {args.output}: cannot write there ({exc.strerror})") from None
    args.variant = args.variant or [CPU, GPU]
    if args.side_by_side and not args.image and GPU not in args.variant:
        raise BenchError(f"--side-by-side compares the {GPU} variant with TensorFlow's gpu recipe: add --variant {GPU}")
    if args.ca_cert is None:
        args.ca_cert = [HOST_CA_DIR] if any(HOST_CA_DIR.glob("*.crt")) else []
    return args


def say(line: str) -> None:
    print(f"bench: {line}", file=sys.stderr, flush=True)


def measure_builds(client: DockerClient, args: argparse.Namespace, variant: Variant, tag: str,
                   log: Log) -> dict[str, Any]:
    cas = builds.ca_args(args.ca_cert)
    result: dict[str, Any] = {}
    if args.skip_cold:
        say(f"{variant.name}: building {tag} from the cache (no cold build: --skip-cold)")
        result["prime_s"] = round(builds.tool_rebuild(client, variant, args.ca_cert, tag, log), 1)
    else:
        say(f"{variant.name}: cold build of {tag} (no cache; minutes)")
        cold = builds.cold(client, variant, args.ca_cert, tag, log)
        result["cold_docker_build_s"] = round(cold.docker_build_s, 1)
        result["cold_tool_s"] = round(cold.tool_s, 1)
    say(f"{variant.name}: build.py's build again, nothing changed")
    result["tool_nochange_s"] = round(builds.tool_rebuild(client, variant, args.ca_cert, tag, log), 1)
    original = contexts.standard()
    base = variant.standin_base
    warm: dict[str, Any] = {}
    steps: dict[str, str] = {}
    for case in (*SCRIPT_CASES, "requirements"):
        # A requirements.txt change reinstalls every package (minutes): one run is enough to show it.
        runs = args.runs if case in SCRIPT_CASES else 1
        say(f"{variant.name}: warm rebuild after touching {contexts.TOUCHES[case]} x{runs}")
        done = [builds.warm(client, original, case, base, variant, cas, log) for _ in range(runs)]
        warm[case] = summarize([build.seconds for build in done]).to_json()
        steps[case] = f"{done[-1].cached}/{done[-1].steps} steps from the cache"
    result["warm_s"] = warm
    result["warm_cached_steps"] = steps
    if "cold_docker_build_s" in result:
        result["warm_share"] = {case: round(ratio(warm[case]["median"], result["cold_docker_build_s"]), 4)
                                for case in warm}
    return result


def measure_runs(client: DockerClient, image: str, runs: int, public_key: str) -> dict[str, Any]:
    say(f"{image}: docker run -> Jupyter / healthy x{runs}")
    starts = [startup.start_once(client, image, public_key) for _ in range(runs)]
    say(f"{image}: selfcheck --json x{runs}")
    checks = [incontainer.selfcheck_once(client, image) for _ in range(runs)]
    say(f"{image}: import tensorflow, cold and warm x{runs}")
    imports = [incontainer.import_once(client, image) for _ in range(runs)]
    return {
        "startup": {"jupyter_s": summarize([s.jupyter_s for s in starts]).to_json(),
                    "healthy_s": summarize([s.healthy_s for s in starts]).to_json()},
        "selfcheck": {
            "wall_s": summarize([c.wall_s for c in checks]).to_json(),
            "report_s": summarize([c.report_s for c in checks]).to_json(),
            "layers": {name: summarize([c.layers[name] for c in checks]).to_json() for name in checks[0].layers},
            "statuses": checks[-1].statuses,
        },
        "import_tensorflow": {
            key: summarize([float(getattr(run, key)) for run in imports]).to_json()
            for key in ("cold_s", "warm_s", "cold_wall_s", "warm_wall_s")
        },
    }


def variant_of(client: DockerClient, image: str) -> str:
    name = labels.of_image(engine.inspect(client, image)).get(labels.VARIANT, "")
    if name not in VARIANTS:
        raise BenchError(f"--image {image}: no {labels.VARIANT} label (gpu or cpu): not built by build.py")
    return name


def run(args: argparse.Namespace, argv: list[str]) -> int:
    client = engine.connect()
    document: dict[str, Any] = {"schema": report.SCHEMA, "machine": machine.describe(client), "argv": argv,
                                "variants": {}}
    names = [variant_of(client, args.image)] if args.image else args.variant
    log_path = args.output.with_suffix(".log")
    tagged: list[str] = []
    started = time.monotonic()
    with log_path.open("w") as log_file, tempfile.TemporaryDirectory() as keys:

        def log(line: str) -> None:
            print(line, file=log_file, flush=True)

        public_key = make_keypair(Path(keys), "bench").public_text
        say(f"machine: {machine.header_line(document['machine'])}; build logs in {log_path}")
        try:
            for name in names:
                variant = VARIANTS[name]
                image = args.image or f"{TAG_PREFIX}{name}"
                result: dict[str, Any] = {"image": image}
                if not args.image and not args.skip_builds:
                    tagged.append(image)
                    result["build"] = measure_builds(client, args, variant, image, log)
                elif not engine.image_exists(client, image):
                    raise BenchError(f"{image} is not on this engine: drop --skip-builds, or name one with --image")
                say(f"{image}: sizes (docker history, pip inventory, du)")
                size = sizes.measure(client, image)
                result["size"] = size.to_json()
                say(f"{image}: the floor (pip and dpkg metadata)")
                result["floor"] = floor.measure(client, image, floor.OUR_PYTHON, size.base, size.split.ours_bytes,
                                                size.weight[sizes.OWN_FILES])
                result.update(measure_runs(client, image, args.runs, public_key))
                if name in args.slim:
                    say(f"{name}: the slim Dockerfile (a whole build: minutes)")
                    tagged.append(f"{slim.SLIM_TAG_PREFIX}{name}")
                    result["slim"] = slim.measure(client, contexts.standard(), variant.standin_base, variant,
                                                  builds.ca_args(args.ca_cert), size, log)
                document["variants"][name] = result
                # Written after each variant, so that a later failure keeps what was measured.
                report.write(document, args.output)
            if args.side_by_side:
                tagged.append(official.OFFICIAL_TAG)
                sidebyside.measure(client, document, sidebyside.Options(
                    ca_certs=args.ca_cert, runs=args.runs, built_here=not (args.image or args.skip_builds)), say, log)
                report.write(document, args.output)
        finally:
            if not args.keep_images:
                for ref in tagged:
                    if engine.image_exists(client, ref):
                        client.api.remove_image(ref)
    document["elapsed_s"] = round(time.monotonic() - started, 1)
    paths = report.write(document, args.output)
    print(paths[1].read_text(), flush=True)
    say(f"written: {', '.join(str(p) for p in paths)} ({document['elapsed_s']:.0f} s)")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        return run(parse(arguments), arguments)
    except BenchError as exc:
        print(f"bench: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    except UserError as exc:  # tf29env's: a failed build step keeps its last lines
        print(f"bench: {exc}", file=sys.stderr)
        return exc.exit_code
    except docker.errors.DockerException as exc:
        reason = str(getattr(exc, "explanation", "") or exc).splitlines()[0]
        print(f"bench: the Docker engine refused: {reason}", file=sys.stderr)
        return EXIT_ENGINE
    except KeyboardInterrupt:
        print("bench: interrupted", file=sys.stderr)
        return 130
