"""build.py's command line: base, build, test. Every failure is one line on stderr and an exit
code from the README's table; tracebacks are for bugs only."""

import argparse
import json
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from tf29env import engine, standin
from tf29env.build_image import BuildRequest, build
from tf29env.errors import UserError
from tf29env.paths import REPO
from tf29env.variants import VARIANTS, default_tag


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (and exit 2) instead of the usage block."""

    def error(self, message: str) -> NoReturn:
        raise UserError(f"{self.prog}: {message} (see --help)")


def make_parser() -> Parser:
    parser = Parser(prog="build.py", description="Build, test and publish the tf29-env image.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    base = sub.add_parser("base", help="bootstrap the stand-in base images (Debian 11 + CUDA 11 libraries)")
    base.add_argument("--variant", choices=sorted(VARIANTS), default="gpu",
                      help="gpu: with the CUDA libraries (default); cpu: plain Debian 11")

    bld = sub.add_parser("build", help="build the image")
    bld.add_argument("--variant", choices=sorted(VARIANTS), default="gpu", help="gpu (default) or cpu")
    bld.add_argument("--base", help="'standin' (local stand-in, bootstrapped if missing) or any image reference; "
                                    "default: the variant's official base")
    bld.add_argument("--ca-cert", action="append", type=Path, default=[], metavar="PATH",
                     help="extra CA certificate file or directory, for TLS-intercepting proxies (repeatable)")
    bld.add_argument("--tag", help="image reference to tag (default: tf29-env:latest-VARIANT)")
    bld.add_argument("--no-cache", action="store_true", help="build every layer again")
    bld.add_argument("--pull", action="store_true", help="pull a newer base image first")
    bld.add_argument("--json", action="store_true", help="print one JSON object (field 'image') on stdout")

    tst = sub.add_parser("test", help="run the test suite against an image")
    tst.add_argument("image", nargs="?", help="image to test (default: build one on the stand-in base)")
    tst.add_argument("pytest_args", nargs=argparse.REMAINDER, help="passed on to pytest")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return run(make_parser().parse_args(argv))
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130


def run(args: argparse.Namespace) -> int:
    if args.command == "test":
        return run_tests(args.image, args.pytest_args)
    to_stderr = getattr(args, "json", False)

    def log(line: str) -> None:
        print(line, file=sys.stderr if to_stderr else sys.stdout, flush=True)

    client = engine.connect()
    variant = VARIANTS[args.variant]
    if args.command == "base":
        log(f"stand-in base ready: {standin.ensure(client, log, cuda=variant.standin_cuda)}")
        return 0
    tag = args.tag or default_tag(variant)
    validate_tag(tag)
    request = BuildRequest(variant=variant, base=args.base, tag=tag, ca_certs=args.ca_cert,
                           nocache=args.no_cache, pull=args.pull)
    result = build(client, request, log)
    if args.json:
        print(json.dumps({"image": result.image, "id": result.image_id, "base": result.base,
                          "variant": result.variant}))
    else:
        log(f"built {result.image} ({result.image_id[:19]})")
    return 0


def validate_tag(ref: str) -> None:
    """Reject references the engine would refuse, before a long build."""
    name, _, tag = ref.rpartition(":") if ":" in ref.split("/")[-1] else (ref, "", "")
    if not re.fullmatch(r"[a-z0-9]+([._-][a-z0-9]+)*(/[a-z0-9]+([._-][a-z0-9]+)*)*"
                        r"|[a-zA-Z0-9.-]+(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)+", name or ref):
        raise UserError(f"--tag {ref}: not a valid image name (lowercase letters, digits, . _ - and /)")
    if tag and not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}", tag):
        raise UserError(f"--tag {ref}: not a valid tag (letters, digits, _ . -; at most 128)")


def run_tests(image: str | None, pytest_args: list[str]) -> int:
    env = dict(os.environ)
    if image:
        env["TF29ENV_IMAGE"] = image
    cmd = [sys.executable, "-m", "pytest", str(REPO / "tests"), *pytest_args]
    return subprocess.run(cmd, env=env, cwd=REPO, check=False).returncode
