"""`selfcheck [--mode warn|strict] [--json] [--layers 1,2,6] [--output PATH]`.

warn (default): report, exit 0 whatever is found. strict: exit 1 on any FAIL or when no GPU is
visible. Without --mode, SELF_CHECK from the environment decides (off stops only the run at
container start: a self-check started by hand always checks, in warn mode)."""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
from typing import NoReturn

from tf29image.selfcheck import __version__, report, runner
from tf29image.selfcheck.checks import BY_NUMBER, LAYERS
from tf29image.selfcheck.checks.common import cpu_only, device_nodes
from tf29image.selfcheck.model import FAIL, SKIP, Check, LayerResult

MODES = ("warn", "strict")
# SELF_CHECK's values: the modes, and off, which skips only the run at container start (a run by
# hand always checks, in warn mode). Parsed here alone: the start-up planner (startup/plan.py)
# asks `selfcheck --start-mode` rather than knowing the values itself.
START_MODES = (*MODES, "off")
# The report's file in TFENV_RUN_DIR, for the start-up run (start_selfcheck) and runs by hand alike.
REPORT_NAME = "selfcheck.json"
# The project's budget (bench/targets.py): the whole check within 15 s on CPU, 30 s with a GPU (benchmark included).
CPU_TIME_LIMIT = 15.0
GPU_TIME_LIMIT = 30.0
# --layers' default, help and errors, from the layer table rather than copies of it.
ALL_LAYERS = ",".join(str(info.layer) for info in LAYERS)
NO_TF_LAYERS = ",".join(str(info.layer) for info in LAYERS if not info.needs_tf)
LAYER_RANGE = f"{LAYERS[0].layer}-{LAYERS[-1].layer}"


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, not usage + error
        self.exit(2, f"selfcheck: {message} (see selfcheck --help)\n")


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = Parser(prog="selfcheck", description="GPU / FP16 self-check of the tf29-env image, in six layers.")
    parser.add_argument("--mode", choices=MODES, help="warn (default; exit 0) or strict (exit 1 on FAIL or no GPU); "
                        "default: SELF_CHECK from the environment")
    parser.add_argument("--json", action="store_true", help="print the JSON report instead of the banner")
    parser.add_argument("--layers", default=ALL_LAYERS,
                        help=f"comma-separated layers to run ({NO_TF_LAYERS} need no TensorFlow)")
    parser.add_argument("--output", help=f"where to write the JSON report (default: $TFENV_RUN_DIR/{REPORT_NAME})")
    parser.add_argument("--time-limit", type=float,
                        help="seconds for all layers together (default 15 without a GPU, 30 with one; each layer "
                        "also has its own timeout); raise it to let a first PTX JIT compilation finish")
    parser.add_argument("--start-mode", action="store_true",
                        help="print the mode SELF_CHECK selects for the run at container start (warn, strict or "
                        "off) and exit; the entrypoint asks this")
    parser.add_argument("--version", action="version", version=f"selfcheck {__version__}")
    args = parser.parse_args(argv)
    if args.start_mode:
        print(start_mode(parser))
        parser.exit(0)
    if args.mode is None:
        args.mode = "strict" if start_mode(parser) == "strict" else "warn"
    try:
        args.layer_numbers = sorted({int(n) for n in args.layers.split(",") if n.strip()})
    except ValueError:
        parser.error(f"--layers '{args.layers}' is not a comma-separated list of layer numbers {LAYER_RANGE}")
    if not args.layer_numbers or not set(args.layer_numbers) <= set(BY_NUMBER):
        parser.error(f"--layers '{args.layers}': layers are numbered {LAYER_RANGE}")
    default_limit = GPU_TIME_LIMIT if device_nodes() else CPU_TIME_LIMIT
    if args.time_limit is None:
        args.time_limit = default_limit
    elif not args.time_limit > 0:
        parser.error("--time-limit must be a positive number of seconds")
    # A limit raised above the default (to let a first PTX JIT finish) raises each layer's timeout alike.
    args.timeout_scale = max(1.0, args.time_limit / default_limit)
    return args


def start_mode(parser: Parser) -> str:
    """SELF_CHECK's mode (unset or empty: warn); a bad value ends in one line and exit 2."""
    value = os.environ.get("SELF_CHECK") or "warn"
    if value not in START_MODES:
        parser.exit(2, f"selfcheck: SELF_CHECK='{value}' is not a mode: use warn (default), strict or off\n")
    return value


def report_path(args: argparse.Namespace) -> str | None:
    """--output, else REPORT_NAME in TFENV_RUN_DIR, which the image's ENV sets (its one home: no
    default here); None when neither is given."""
    if args.output:
        return str(args.output)
    run_dir = os.environ.get("TFENV_RUN_DIR")
    return os.path.join(run_dir, REPORT_NAME) if run_dir else None


def gpu_visible(layers: list[LayerResult]) -> bool:
    """TensorFlow's view when layer 3 ran; otherwise the driver's."""
    for layer in layers:
        for check in layer.checks:
            if check.id == "tf.gpus" and check.status != SKIP:
                return bool(check.data.get("count"))
    return any(c.id == "driver.cuinit" and c.data.get("devices") for layer in layers for c in layer.checks)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    started = datetime.datetime.now(datetime.timezone.utc)
    clock = time.monotonic()
    if not args.json:
        print(f"{report.PREFIX} tf29-env GPU / FP16 self-check {__version__}, mode {args.mode}, layers "
              f"{','.join(map(str, args.layer_numbers))}", flush=True)
    results: list[LayerResult] = []
    selected = [info for info in LAYERS if info.layer in args.layer_numbers]
    for result in runner.run_all(selected, args.time_limit, timeout_scale=args.timeout_scale):
        results.append(result)
        if not args.json:
            print("\n".join(report.banner_lines(result)), flush=True)
    for info in LAYERS:
        if info.layer not in args.layer_numbers:
            results.append(LayerResult(info.layer, info.name, info.title, [
                Check(f"layer{info.layer}.not_selected", SKIP, "not selected (--layers)")]))
    results.sort(key=lambda r: r.layer)
    visible = gpu_visible(results)
    failed = any(r.status == FAIL for r in results)
    # No GPU fails strict mode, except where none is meant to be: the cpu variant, or a container
    # started without GPUs on purpose (NVIDIA_VISIBLE_DEVICES=void, a hub's CPU profile).
    gpu_expected = cpu_only() is None
    code = 1 if args.mode == "strict" and (failed or (gpu_expected and not visible)) else 0
    document = report.build(results, args.mode, started, time.monotonic() - clock, args.time_limit, visible, code)
    path = report_path(args)
    # No report path is no reason to withhold the findings: like an unwritable one, one line.
    problem = report.write(document, path) if path else "TFENV_RUN_DIR is not set (the image sets it): use --output"
    if args.json:
        print(json.dumps(document, indent=2))
    else:
        totals = document["summary"]
        print(f"{report.PREFIX} {totals['pass']} PASS, {totals['warn']} WARN, {totals['fail']} FAIL, "
              f"{totals['skip']} SKIP in {document['seconds']:.1f} s; GPU visible: {'yes' if visible else 'no'}; "
              f"report: {path if problem is None else 'not written'}", flush=True)
        if code:
            why = "a check failed" if failed else "no GPU is visible"
            print(f"{report.PREFIX} strict mode: exit {code} because {why}", flush=True)
    if problem is not None:
        print(f"{report.PREFIX} could not write the report: {problem}", file=sys.stderr, flush=True)
    return code
