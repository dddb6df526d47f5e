"""What each build.py command does, in the order a CI job runs them: build, test, push (and size)."""

import argparse
import datetime
import json
import os
import subprocess
import sys
from typing import Any

from docker import DockerClient

from tf29env import engine, labels, manifest, push, records, sizegate, standin, tags
from tf29env.build_image import BuildRequest, BuildResult, build
from tf29env.config import NetworkInputs
from tf29env.errors import EXIT_TEST, UserError
from tf29env.facts import run_in_image
from tf29env.log import Log
from tf29env.paths import REPO
from tf29env.progress import Progress
from tf29env.variants import VARIANTS
from tf29env.verify import verify

# Test folders that build images of their own (see cmd_test).
BUILDER_TESTS = ("build", "buildkit")


def logger(args: argparse.Namespace) -> Log:
    """Logs go to stdout, or to stderr when stdout carries --json."""
    stream = sys.stderr if getattr(args, "json", False) else sys.stdout

    def log(line: str) -> None:
        print(line, file=stream, flush=True)

    return log


def cmd_base(args: argparse.Namespace) -> int:
    log = logger(args)
    client = engine.connect()
    log(f"stand-in base ready: {standin.ensure(client, log, VARIANTS[args.variant].standin_base)}")
    return 0


def cmd_build(args: argparse.Namespace) -> int:
    network = NetworkInputs(args.pip_index_url, args.pip_extra_index_url, args.apt_mirror,
                            args.http_proxy, args.https_proxy, args.no_proxy)
    # Every input is checked before the engine is asked anything, so that nothing half-starts:
    # the request checks its own, then the size baseline and the output folder.
    request = BuildRequest(variant=VARIANTS[args.variant], base=args.base, tag=args.tag or "",
                           ca_certs=args.ca_cert, nocache=args.no_cache, pull=args.pull, network=network,
                           cache_from=args.cache_from, source=args.source, repository=args.repository,
                           trust_ca_certs=args.trust_ca_cert)
    baseline = sizegate.load(args.size_baseline)
    directory = records.variant_dir(args.output_dir, args.variant)
    client = engine.connect()
    progress = Progress(sys.stderr if args.json else sys.stdout, live=False if args.plain else None)
    try:
        result = build(client, request, progress)
    finally:
        progress.close()
    log = logger(args)
    refs = apply_tags(client, result, args.repository)
    log(f"==> tagged {len(refs)}: {', '.join(refs)}")
    log("==> writing the manifest (pip freeze, dpkg list, a CPU self-check run)")
    built, inventory = manifest.collect(client, image=result.image, refs=refs, facts=result.facts.to_dict(),
                                        build_inputs=network.shown())
    paths = manifest.write(directory, built)
    entry = baseline["images"].get(sizegate.key(result.variant, result.base))
    limit = sizegate.limit(baseline, args.max_growth)
    verdict = sizegate.judge(built.size_bytes, None if args.no_size_gate or not entry else int(entry["bytes"]), limit)
    record = {
        "image": result.image, "id": result.image_id, "variant": result.variant, "base": result.base,
        "base_digest": result.meta.base_digest, "version": result.version, "refs": refs,
        "revision": result.meta.revision, "created": result.meta.created, "size_bytes": built.size_bytes,
        "facts": result.facts.to_dict(), "manifest": [str(p) for p in paths],
        "size_gate": {"ok": verdict.ok, "baseline": verdict.baseline, "limit_percent": limit,
                      "skipped": bool(args.no_size_gate)},
    }
    records.save_build(args.output_dir, record)
    if args.json:
        print(json.dumps(record, sort_keys=True), flush=True)
    if not verdict.ok:
        raise sizegate.failure(verdict, sizegate.largest_layers(client, result.image),
                               sizegate.largest_packages(inventory))
    log(verdict.line() if not args.no_size_gate else "size gate: skipped (--no-size-gate)")
    log(f"built {result.image} ({result.image_id[:19]}); manifest in {directory}")
    return 0


def apply_tags(client: DockerClient, result: BuildResult, repository: str) -> list[str]:
    """Tag the image with every computed tag; the references, the full one first."""
    created = datetime.datetime.strptime(result.meta.created, "%Y-%m-%dT%H:%M:%SZ")
    refs = [f"{repository}:{tag}" for tag in tags.compute(result.facts, revision=result.meta.revision,
                                                              created=created)]
    for ref in refs:
        engine.tag(client, result.image_id, ref)
    return refs if result.image in refs else [*refs, result.image]


def chosen_image(args: argparse.Namespace) -> tuple[str, dict[str, Any] | None]:
    """The IMAGE argument, or the last build's image and record."""
    if args.image:
        tags.split_reference(args.image, "IMAGE")
        return args.image, None
    record = records.load_build(args.output_dir, args.variant)
    return str(record["image"]), record


def cmd_test(args: argparse.Namespace) -> int:
    log = logger(args)
    env = dict(os.environ)
    try:
        image, _ = chosen_image(args)
    except UserError:
        if args.image or args.variant:
            raise
        image = ""
        log("==> no image named and no build recorded: the suite builds tf29-env:test-gpu on the stand-in base")
    if image:
        client = engine.connect()
        verify(client, image, log)
        env["TF29ENV_IMAGE"] = image
    extra = [arg for arg in args.pytest_args if arg != "--"] if args.pytest_args[:1] == ["--"] else args.pytest_args
    cmd = [sys.executable, "-m", "pytest", str(REPO / "tests"), *extra]
    # The builders' own tests build images of their own: tests/build exercises build.py (both variants,
    # a push to a local registry), tests/buildkit builds the Dockerfile with BuildKit on the stand-in.
    # Part of the whole suite, but not of checking one image that was just built.
    if image and not args.build_tests:
        cmd[4:4] = [arg for folder in BUILDER_TESTS for arg in ("--ignore", str(REPO / "tests" / folder))]
    code = subprocess.run(cmd, env=env, cwd=REPO, check=False).returncode
    if code != 0:
        raise UserError(f"the test suite failed against {image or 'tf29-env:test-gpu'} (pytest exit {code})",
                        EXIT_TEST)
    return 0


def cmd_push(args: argparse.Namespace) -> int:
    push.parse_registry(args.registry)
    if args.repository:
        tags.validate_repository(args.repository)
    image, record = chosen_image(args)
    client = engine.connect()
    if record is not None:
        image_id, refs = str(record["id"]), [str(ref) for ref in record["refs"]]
        engine.inspect(client, image_id)
    else:
        attrs = engine.inspect(client, image)
        repository = tags.split_reference(image, "IMAGE")[0]
        image_id = str(attrs["Id"])
        refs = [ref for ref in attrs.get("RepoTags") or [] if ref.rsplit(":", 1)[0] == repository]
    pushed = push.push(client, image_id, refs, args.registry, logger(args), repository=args.repository,
                       retries=args.retries)
    result = {"registry": args.registry, "image": image, "pushed": [{"ref": p.ref, "digest": p.digest} for p in pushed]}
    if record is not None:
        records.write_json(records.variant_dir(args.output_dir, str(record["variant"])) / "push.json", result)
    if args.json:
        print(json.dumps(result, sort_keys=True), flush=True)
    else:
        for item in pushed:
            print(f"{item.ref}@{item.digest}", flush=True)
    return 0


def cmd_size(args: argparse.Namespace) -> int:
    image, _ = chosen_image(args)
    baseline = sizegate.load(args.size_baseline)
    client = engine.connect()
    attrs = engine.inspect(client, image)
    image_labels = labels.of_image(attrs)
    variant, base = image_labels.get(labels.VARIANT, ""), image_labels.get(labels.BASE, "")
    if not variant or not base:
        raise UserError(f"{image} has no {labels.VARIANT} / {labels.BASE} labels: not built by build.py")
    size = int(attrs["Size"])
    log = logger(args)
    if args.record:
        sizegate.record(args.size_baseline, variant, base, size, image)
        log(f"recorded {manifest.human_size(size)} for {sizegate.key(variant, base)} in {args.size_baseline}")
        return 0
    entry = baseline["images"].get(sizegate.key(variant, base))
    limit = sizegate.limit(baseline, args.max_growth)
    verdict = sizegate.judge(size, int(entry["bytes"]) if entry else None, limit)
    if args.json:
        print(json.dumps({"image": image, "ok": verdict.ok, "size": size, "baseline": verdict.baseline,
                          "limit_percent": limit, "growth_percent": verdict.growth_percent}), flush=True)
    if not verdict.ok:
        inventory = run_in_image(client, image, "inventory")
        raise sizegate.failure(verdict, sizegate.largest_layers(client, image), sizegate.largest_packages(inventory))
    log(verdict.line())
    return 0
