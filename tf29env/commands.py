"""What each build.py command does, in the order a CI job runs them: build, test, push (and size)."""

import argparse
import datetime
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from docker import DockerClient

from tf29env.core import engine, labels, records
from tf29env.core.errors import EXIT_BUILD, EXIT_INPUT, EXIT_TEST, EXIT_UNSUPPORTED, EXIT_VULNERABLE, UserError
from tf29env.core.facts import inventory
from tf29env.core.log import Log
from tf29env.core.paths import REPO
from tf29env.core.variants import STANDIN_CUDA, STANDIN_OS, VARIANTS
from tf29env.imagebuild import standin
from tf29env.imagebuild.network import NetworkInputs
from tf29env.pipeline import BuildRequest, BuildResult, build, source_date
from tf29env.progress import Progress
from tf29env.release import export, kit, manifest, push, sizegate, tags
from tf29env.release.verify import verify
from tf29env.supplychain import licenses, sbom, support, vulns

# "0" leaves out the tests that build images of their own (tests/build, tests/buildkit: their
# conftest.py reads it), for `build.py test IMAGE`, which checks one image.
BUILDER_TESTS_ENV = "TF29ENV_BUILDER_TESTS"
TEST_WORKERS = 3


def logger(args: argparse.Namespace) -> Log:
    """Logs go to stdout, or to stderr when stdout carries --json."""
    stream = sys.stderr if getattr(args, "json", False) else sys.stdout

    def log(line: str) -> None:
        print(line, file=stream, flush=True)

    return log


def cmd_base(args: argparse.Namespace) -> int:
    log = logger(args)
    archive = standin.archive_mirror(args.archive_mirror, os.environ)
    client = engine.connect()
    log(f"stand-in base ready: {standin.ensure(client, log, VARIANTS[args.variant].standin_base, archive=archive)}")
    return 0


def standin_base(request: BuildRequest) -> str | None:
    """The stand-in base the build will use (as the pipeline resolves it), or None for any other base."""
    if request.base == "standin":
        return request.variant.standin_base
    base = request.base or request.variant.default_base
    return base if base in (STANDIN_OS, STANDIN_CUDA) else None


def build_request(args: argparse.Namespace) -> BuildRequest:
    """The build's inputs, every one checked (the request checks its own) before the engine is asked."""
    network = NetworkInputs(args.pip_index_url, args.pip_extra_index_url, args.apt_mirror,
                            args.http_proxy, args.https_proxy, args.no_proxy)
    return BuildRequest(variant=VARIANTS[args.variant], base=args.base, tag=args.tag or "",
                        ca_certs=args.ca_cert, nocache=args.no_cache, pull=args.pull, network=network,
                        cache_from=args.cache_from, source=args.source, repository=args.repository,
                        trust_ca_certs=args.trust_ca_cert, created=source_date(os.environ))


def run_build(args: argparse.Namespace, client: DockerClient, request: BuildRequest) -> BuildResult:
    """The build, its progress on the terminal (or plain lines); the image tagged with every computed tag."""
    progress = Progress(sys.stderr if args.json else sys.stdout, live=False if args.plain else None)
    try:
        result = build(client, request, progress)
    finally:
        progress.close()
    for ref in result.refs:
        engine.tag(client, result.image_id, ref)
    logger(args)(f"==> tagged {len(result.refs)}: {', '.join(result.refs)}")
    return result


def write_outputs(client: DockerClient, directory: Path, result: BuildResult, request: BuildRequest,
                  log: Log) -> tuple[manifest.Manifest, dict[str, Any]]:
    """The manifest, the SBOM and the license summary in directory; the manifest and the files' paths."""
    log("==> writing the manifest (pip freeze, dpkg list, a CPU self-check run)")
    built = manifest.collect(client, image=result.image, refs=result.refs, facts=result.facts.to_dict(),
                             inventory=result.inventory, build_inputs=request.network.shown())
    paths = manifest.write(directory, built)
    sbom_path = directory / records.SBOM_FILE
    sbom_path.write_text(result.sbom_json)
    license_paths = licenses.write(directory, json.loads(result.sbom_json))
    log(f"==> SBOM and license summary: {sbom_path}, {license_paths[1]}")
    return built, {"manifest": [str(p) for p in paths], "sbom": str(sbom_path),
                   "licenses": [str(p) for p in license_paths]}


def build_record(result: BuildResult, size: int, outputs: dict[str, Any], verdict: sizegate.Verdict) -> dict[str, Any]:
    """What build.json records: the image, its facts and outputs, the size gate's verdict."""
    return {
        "image": result.image, "id": result.image_id, "variant": result.variant, "base": result.base,
        "base_digest": result.meta.base_digest, "version": result.version, "refs": result.refs,
        "revision": result.meta.revision, "created": result.meta.created, "size_bytes": size,
        "facts": result.facts.to_dict(), **outputs,
        "size_gate": {"ok": verdict.ok, "baseline": verdict.baseline, "limit_percent": verdict.limit_percent,
                      "skipped": verdict.skipped},
    }


def cmd_build(args: argparse.Namespace) -> int:
    # Every input is checked before the engine is asked anything, so that nothing half-starts.
    request = build_request(args)
    archive = standin.archive_mirror(args.archive_mirror, os.environ)
    baseline = sizegate.load(args.size_baseline)
    directory = records.variant_dir(args.output_dir, args.variant)
    client = engine.connect()
    log = logger(args)
    stand_in = standin_base(request)
    if stand_in:
        # Made here, where the archive mirror is known; the pipeline then finds it on the engine.
        standin.ensure(client, log, stand_in, archive=archive)
    result = run_build(args, client, request)
    built, outputs = write_outputs(client, directory, result, request, log)
    verdict = sizegate.judge_image(baseline, result.variant, result.base, built.size_bytes, args.max_growth,
                                   skipped=args.no_size_gate)
    record = build_record(result, built.size_bytes, outputs, verdict)
    records.save_build(args.output_dir, record)
    if args.json:
        print(json.dumps(record, sort_keys=True), flush=True)
    sizegate.enforce(client, result.image, verdict, lambda: result.inventory, log)
    log(f"built {result.image} ({result.image_id[:19]}); manifest in {directory}")
    return 0


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
    # Most tests wait (for containers, hubs, registries) rather than compute: three workers, each
    # taking whole groups (tests/conftest.py), keep 2 cores busy (bench/README.md). `-- -n 0` runs serially.
    cmd = [sys.executable, "-m", "pytest", str(REPO / "tests"), "-n", str(TEST_WORKERS), "--dist", "loadgroup", *extra]
    # The builders' own tests are part of the whole suite, but not of checking one image.
    env[BUILDER_TESTS_ENV] = "0" if image and not args.build_tests else "1"
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
        records.write_json(records.variant_dir(args.output_dir, str(record["variant"])) / records.PUSH_FILE, result)
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
    verdict = sizegate.judge_image(baseline, variant, base, size, args.max_growth)
    if args.json:
        print(json.dumps({"image": image, "ok": verdict.ok, "size": size, "baseline": verdict.baseline,
                          "limit_percent": verdict.limit_percent, "growth_percent": verdict.growth_percent}),
              flush=True)
    sizegate.enforce(client, image, verdict, lambda: inventory(client, image), log)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    image, record = chosen_image(args)
    variant = str(record["variant"]) if record else labels.of_image(engine.inspect(engine.connect(), image)).get(
        labels.VARIANT) or "image"
    folder = records.variant_dir(args.output_dir, variant) / records.EXPORT_DIR
    done = export.export(engine.connect(), image, folder, args.sif, logger(args))
    records.write_json(folder / records.EXPORT_FILE, done.record)
    if args.json:
        print(json.dumps(done.record, sort_keys=True), flush=True)
    else:
        print(f"{done.archive} ({manifest.human_size(done.size)}, sha256 {done.sha256})", flush=True)
        if done.sif:
            print(done.sif, flush=True)
    return 0


def cmd_kit(args: argparse.Namespace) -> int:
    kit.check_output(args.output)  # before the engine is asked anything
    image, _ = chosen_image(args)
    log = logger(args)
    made = kit.make(engine.connect(), image, args.output, args.output_dir, log)
    carry = f"carry it, unpack it (tar -xf {made.folder.name})" if kit.is_tarball(made.folder) else "carry the folder"
    log(f"kit of {made.record['image']} in {made.folder}: {carry}, then run its install.sh (docs/kit.md)")
    print(kit.summary(made), flush=True)
    return 0


@dataclass(frozen=True)
class AuditTarget:
    sbom_text: str  # the CycloneDX JSON SBOM
    sbom_name: str  # where it came from, as messages name it
    report: Path | None  # where audit.json goes (None: nowhere)
    image: str  # the image whose base is stated ("": the one the SBOM describes, if the engine has it)
    named: bool = False  # IMAGE was given: it must answer


def read_sbom_file(path: Path) -> str:
    try:
        return path.read_text()
    except OSError as exc:
        raise UserError(f"--sbom {path}: cannot read it ({exc.strerror})", EXIT_INPUT) from None


def audit_target(args: argparse.Namespace) -> AuditTarget:
    """The SBOM to audit (--sbom, else IMAGE's own, else the last build's), where its report goes, and
    the image whose base is stated (IMAGE, else the last build's, else the one the SBOM describes)."""
    if args.image:
        tags.split_reference(args.image, "IMAGE")
        if args.sbom:
            return AuditTarget(read_sbom_file(args.sbom), str(args.sbom), None, args.image, named=True)
        client = engine.connect()
        inside = labels.of_image(engine.inspect(client, args.image)).get(labels.SBOM)
        content = support.read_image_file(client, args.image, inside) if inside else None
        if content is None:
            raise UserError(f"{args.image} holds no SBOM (no {labels.SBOM} label): not built by build.py; "
                            "pass --sbom FILE")
        return AuditTarget(content.decode(), f"{args.image}:{inside}", None, args.image, named=True)
    if args.sbom:
        return AuditTarget(read_sbom_file(args.sbom), str(args.sbom), None, "")
    record = records.load_build(args.output_dir, args.variant)
    if "sbom" not in record:
        raise UserError(f"the build of {record['image']} recorded no SBOM (made before build.py wrote them); "
                        "build again or pass --sbom FILE")
    path = Path(str(record["sbom"]))
    return AuditTarget(read_sbom_file(path), str(path), path.parent / records.AUDIT_FILE, str(record["id"]))


def parse_sbom(text: str, name: str) -> dict[str, Any]:
    """A CycloneDX JSON SBOM: one line when it is invalid (exit 4)."""
    try:
        document: dict[str, Any] = json.loads(text)
    except ValueError as exc:
        raise UserError(f"{name}: not JSON ({exc})", EXIT_BUILD) from None
    sbom.validate(text, name)
    return document


def sbom_image(document: dict[str, Any]) -> str:
    """The image an SBOM describes, as its root component names it (repository:full tag), or ''."""
    root = document.get("metadata", {}).get("component", {})
    name, version = str(root.get("name", "")), str(root.get("version", ""))
    return f"{name}:{version}" if name and version else ""


@dataclass(frozen=True)
class BaseSupport:
    status: support.Status | None  # None: no image to read it from
    why_unknown: str
    backend: support.Backend | None  # the protobuf backend the image uses (None: not asked)


def base_support(target: AuditTarget, document: dict[str, Any], today: datetime.date) -> BaseSupport:
    """What the audit states first, offline. A named image must answer; the last build's image, or the
    SBOM's, only makes the status unknown where the engine lacks it."""
    image = target.image or sbom_image(document)
    if target.named:
        client = engine.connect()
        engine.inspect(client, image)  # a missing image is one line
    elif not image:
        return BaseSupport(None, "the SBOM names no image", None)
    else:
        try:
            client = engine.connect()
            if not engine.image_exists(client, image):
                return BaseSupport(None, f"{image} is not on this engine", None)
        except UserError as exc:
            return BaseSupport(None, str(exc), None)
    status = support.image_status(client, image, today)
    backend = support.protobuf_backend(client, image) if support.pinned_versions(document) else None
    return BaseSupport(status, "", backend)


def state_base(args: argparse.Namespace, target: AuditTarget, document: dict[str, Any], log: Log) -> BaseSupport:
    """Print the base's support status and the pins that cannot move; with --fail-on-eol, fail on a
    base past its end of support (exit 7) or one whose status is unknown (exit 2)."""
    base = base_support(target, document, support.today_utc())
    if base.status is None:
        log(f"base: support status unknown ({base.why_unknown}); name the image: build.py audit IMAGE")
    else:
        log(base.status.line())
    for line in support.pin_lines(support.pinned_versions(document), base.backend):
        log(line)
    if args.fail_on_eol:
        if base.status is None or base.status.ended is None:
            why = base.why_unknown if base.status is None else f"{base.status.name} is not in the support table"
            raise UserError(f"--fail-on-eol: cannot tell whether the base is past its end of support ({why})")
        if base.status.ended:
            raise UserError(f"--fail-on-eol: the base ({base.status.name}) is past its end of support",
                            EXIT_UNSUPPORTED)
    return base


def cmd_audit(args: argparse.Namespace) -> int:
    # Input first: a malformed allowlist or SBOM stops the audit before anything is asked.
    allowlist = vulns.load_allowlist(args.allowlist)
    target = audit_target(args)
    document = parse_sbom(target.sbom_text, target.sbom_name)
    log = logger(args)
    # The base first, offline: a database that does not answer must not hide it.
    base = state_base(args, target, document, log)
    log(f"==> auditing the Python packages of {target.sbom_name} with pip-audit ({args.service}); "
        f"{len(allowlist)} advisories allowed by {args.allowlist}")
    verdict = vulns.audit(document, allowlist, args.service, args.timeout)
    result = {"sbom": target.sbom_name, "service": args.service,
              "base": base.status.to_dict() if base.status else {"statement": None, "unknown": base.why_unknown},
              "pinned": support.pin_lines(support.pinned_versions(document), base.backend), **vulns.to_dict(verdict)}
    if target.report is not None:
        records.write_json(target.report, result)
    if args.json:
        print(json.dumps(result, sort_keys=True), flush=True)
    for finding, entry in verdict.allowed:
        log(f"allowed: {finding.package} {finding.version} {finding.id}: {entry.reason}")
    for entry in verdict.unused:
        log(f"note: allowlist entry {entry.id} matched nothing: remove it if it no longer applies")
    if verdict.skipped:
        log(f"note: not audited (unknown to {args.service}): {', '.join(verdict.skipped)}")
    if verdict.new:
        shown = ", ".join(f"{f.package} {f.version} {f.id}" + (f" (fixed in {', '.join(f.fix_versions)})"
                                                               if f.fix_versions else "") for f in verdict.new)
        raise UserError(f"{len(verdict.new)} known vulnerabilities not in {args.allowlist.name}: {shown}",
                        EXIT_VULNERABLE)
    log(f"audit: {verdict.audited} packages, no known vulnerabilities beyond {len(verdict.allowed)} allowed")
    return 0
