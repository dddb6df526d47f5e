"""build.py's command line: base, build, test, push, size, audit, export, kit. Every failure is one line on stderr
(a failed build step adds its last lines) and an exit code from docs/build.md; tracebacks are bugs."""

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from tf29env import commands
from tf29env.core import labels
from tf29env.core.errors import EXIT_INTERRUPTED, UserError
from tf29env.core.paths import DEFAULT_OUTPUT, REPO, SIZE_BASELINE
from tf29env.core.variants import DEFAULT_VARIANT, REPOSITORY, VARIANTS
from tf29env.imagebuild.standin import ARCHIVE_ENV, DEFAULT_ARCHIVE, SUITE
from tf29env.supplychain.vulns import ALLOWLIST, SERVICES


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (and exit 2) instead of the usage block."""

    def error(self, message: str) -> NoReturn:
        raise UserError(f"{self.prog}: {message} (see --help)")


def add_common(parser: argparse.ArgumentParser, *, json_flag: bool = True) -> None:
    parser.add_argument("--output-dir", type=Path, default=DEFAULT_OUTPUT, metavar="DIR",
                        help=f"build output directory: manifests, tags, build records (default: {DEFAULT_OUTPUT})")
    if json_flag:
        parser.add_argument("--json", action="store_true", help="print one JSON object on stdout, logs on stderr")


def add_variant(parser: argparse.ArgumentParser, what: str, default: str | None = DEFAULT_VARIANT) -> None:
    parser.add_argument("--variant", choices=sorted(VARIANTS), default=default,
                        help=f"{what} (default: {default or 'the last build of any'})")


def add_image(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("image", nargs="?", help=f"image to {what} (default: the last build's, see --variant)")
    add_variant(parser, "use the last build of this variant", default=None)


def add_export(sub: "argparse._SubParsersAction[Parser]") -> None:
    exp = sub.add_parser("export", help="write the image as a docker save archive (with its tags and labels) and, "
                                        "where Apptainer is installed, as a SIF, for clusters without Docker")
    add_image(exp, "export")
    exp.add_argument("--sif", choices=("auto", "yes", "no"), default="auto",
                     help="also make the SIF: auto (where apptainer or singularity is installed), yes, no "
                          "(default: auto)")
    add_common(exp)


def add_kit(sub: "argparse._SubParsersAction[Parser]") -> None:
    kit = sub.add_parser("kit", help="write an install kit for a box with no internet: the image archive, the "
                                     "project's files, wheels, the hub proxy's npm cache, SBOMs, install.sh, "
                                     "SHA256SUMS (docs/kit.md)")
    kit.add_argument("--output", type=Path, required=True, metavar="DIR|FILE.tar",
                     help="the kit's folder (must be new), or a new FILE.tar: the folder as one uncompressed tarball")
    kit.add_argument("--image", help="image to put in the kit (default: the last build's, see --variant)")
    add_variant(kit, "use the last build of this variant", default=None)
    add_common(kit, json_flag=False)


def add_archive_mirror(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--archive-mirror", metavar="URL",
                        help=f"archive of retired Debian releases the stand-in base is bootstrapped from once "
                             f"Debian's mirror no longer has {SUITE} (default: ${ARCHIVE_ENV}, else {DEFAULT_ARCHIVE})")


def add_audit(sub: "argparse._SubParsersAction[Parser]") -> None:
    aud = sub.add_parser("audit", help="state the base's support status, then check the Python packages of an "
                                       "image's SBOM for known vulnerabilities (pip-audit) beyond the allowlist")
    aud.add_argument("image", nargs="?",
                     help="image whose base is stated and whose SBOM is audited (default: the last build's)")
    aud.add_argument("--sbom", type=Path, metavar="FILE",
                     help="CycloneDX JSON SBOM to audit (default: the last build's, see --variant)")
    add_variant(aud, "audit the SBOM of the last build of this variant", default=None)
    aud.add_argument("--allowlist", type=Path, default=ALLOWLIST, metavar="FILE",
                     help=f"advisories accepted, each with a reason (default: {ALLOWLIST.relative_to(REPO)})")
    aud.add_argument("--service", choices=SERVICES, default=SERVICES[0],
                     help=f"vulnerability database pip-audit asks (default: {SERVICES[0]})")
    aud.add_argument("--timeout", type=float, default=600, metavar="SECONDS",
                     help="give up on the database after this long (default: 600)")
    aud.add_argument("--fail-on-eol", action="store_true",
                     help="fail (exit 7) when the image's base is past its end of support, before any database "
                          "is asked")
    add_common(aud)


def make_parser() -> Parser:
    parser = Parser(prog="build.py", description="Build, tag, test and publish the tf29-env image.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    base = sub.add_parser("base", help="bootstrap the stand-in base images (Debian 11 + CUDA 11 libraries)")
    add_variant(base, "gpu: Debian 11 with the CUDA libraries; cpu: plain Debian 11")
    add_archive_mirror(base)

    bld = sub.add_parser("build", help="build, label and tag the image; write its manifest; run the size gate")
    add_variant(bld, "gpu: TensorFlow with CUDA; cpu: tensorflow-cpu")
    bld.add_argument("--base", help="'standin' (local stand-in, bootstrapped if missing) or any image reference; "
                                    "default: the variant's official base")
    add_archive_mirror(bld)
    bld.add_argument("--ca-cert", action="append", type=Path, default=[], metavar="PATH",
                     help="CA certificate file or directory for the build only (a TLS-intercepting proxy's, a "
                          "mirror's): apt and pip trust it, the image keeps no trace of it (repeatable)")
    bld.add_argument("--trust-ca-cert", action="append", type=Path, default=[], metavar="PATH",
                     help="CA certificate file or directory the image keeps trusting, for every user (notebooks "
                          f"behind the same proxy); used by the build too, recorded in the label {labels.CA_TRUSTED} "
                          "and the manifest (repeatable)")
    bld.add_argument("--repository", default=REPOSITORY,
                     help=f"repository the computed tags go to (default: {REPOSITORY})")
    bld.add_argument("--tag", help="one more reference for the image, reported as 'image' "
                                   "(default: REPOSITORY:<full computed tag>)")
    bld.add_argument("--source", default="", help="URL for the source label (default: git's remote.origin.url)")
    net = bld.add_argument_group("locked-down networks (build args; proxies stay out of the image)")
    for flag, what in (("--pip-index-url", "pip index URL (PIP_INDEX_URL)"),
                       ("--pip-extra-index-url", "extra pip index URL (PIP_EXTRA_INDEX_URL)"),
                       ("--apt-mirror", "apt mirror replacing the base's archive (APT_MIRROR)"),
                       ("--http-proxy", "proxy for http:// during the build (HTTP_PROXY)"),
                       ("--https-proxy", "proxy for https:// during the build (HTTPS_PROXY)"),
                       ("--no-proxy", "hosts that bypass the proxy, comma-separated (NO_PROXY)")):
        net.add_argument(flag, default="", metavar="HOSTS" if flag == "--no-proxy" else "URL",
                         help=what)
    bld.add_argument("--no-cache", action="store_true", help="build every layer again")
    bld.add_argument("--pull", action="store_true", help="pull a newer base image first")
    bld.add_argument("--cache-from", action="append", default=[], metavar="IMAGE",
                     help="image whose layers may serve as cache, e.g. the last pushed one in CI (repeatable)")
    gate = bld.add_argument_group("size gate")
    gate.add_argument("--size-baseline", type=Path, default=SIZE_BASELINE, metavar="FILE",
                      help=f"committed size baseline (default: {SIZE_BASELINE.name})")
    gate.add_argument("--max-growth", type=float, metavar="PERCENT",
                      help="allowed growth over the baseline (default: the file's max_growth_percent, 20)")
    gate.add_argument("--no-size-gate", action="store_true", help="skip the size gate")
    bld.add_argument("--plain", action="store_true", help="plain progress lines even on a terminal")
    add_common(bld)

    tst = sub.add_parser("test", help="verify the image's tags and labels, then run the test suite against it")
    add_image(tst, "test")
    tst.add_argument("--build-tests", action="store_true",
                     help="also run tests/build and tests/buildkit (the builders' own engine tests); "
                          "always on without an image")
    add_common(tst, json_flag=False)
    tst.add_argument("pytest_args", nargs=argparse.REMAINDER, help="passed on to pytest (after --)")

    psh = sub.add_parser("push", help="push every tag of the image to a registry; report digests")
    psh.add_argument("--registry", required=True, metavar="HOST[:PORT]", help="registry to push to")
    psh.add_argument("--repository", help="repository in the registry (default: the local one)")
    psh.add_argument("--retries", type=int, default=3, help="retries of a transiently failing push (default: 3)")
    add_image(psh, "push")
    add_common(psh)

    size = sub.add_parser("size", help="run the size gate on an image, or --record its size as the baseline")
    add_image(size, "measure")
    size.add_argument("--size-baseline", type=Path, default=SIZE_BASELINE, metavar="FILE",
                      help=f"size baseline file (default: {SIZE_BASELINE.name})")
    size.add_argument("--max-growth", type=float, metavar="PERCENT", help="allowed growth (default: the file's)")
    size.add_argument("--record", action="store_true", help="write the image's size into the baseline file")
    add_common(size)

    add_export(sub)
    add_kit(sub)
    add_audit(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = make_parser().parse_args(argv)
        return int(getattr(commands, f"cmd_{args.command}")(args))
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr, flush=True)
        return exc.exit_code
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
