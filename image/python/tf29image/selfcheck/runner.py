"""Runs the layers in child processes with deadlines. Consecutive layers of one kind share a
child (TensorFlow is imported once for layers 3-5). A layer that misses its deadline has its
child killed (a thread could not be: TF calls into the driver do not return), is reported as
timed out, and the remaining layers go on in a fresh child; a child that dies is reported too."""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import sys
import time
from typing import Callable, Iterator, List

from tf29image.selfcheck.checks import LayerInfo
from tf29image.selfcheck.model import FAIL, SKIP, Check, LayerResult

LOG_TAIL = 4000  # characters of a child's stderr kept for a layer that went wrong

Command = Callable[[List[int]], List[str]]


def worker_command(layers: list[int]) -> list[str]:
    return [sys.executable, "-m", "tf29image.selfcheck.worker"] + [str(n) for n in layers]


def groups(layers: list[LayerInfo]) -> list[list[LayerInfo]]:
    out: list[list[LayerInfo]] = []
    for info in layers:
        if out and out[-1][0].needs_tf == info.needs_tf:
            out[-1].append(info)
        else:
            out.append([info])
    return out


def run_all(layers: list[LayerInfo], time_limit: float, command: Command = worker_command,
            env: dict[str, str] | None = None, timeout_scale: float = 1.0) -> Iterator[LayerResult]:
    """Yield each layer's result as soon as it is known, in order, within time_limit seconds in all;
    each layer's own timeout is multiplied by timeout_scale (a raised --time-limit raises them too)."""
    if timeout_scale != 1.0:
        layers = [LayerInfo(i.layer, i.name, i.title, i.needs_tf, i.timeout * timeout_scale, i.module) for i in layers]
    deadline = time.monotonic() + time_limit
    for group in groups(layers):
        pending = list(group)
        while pending:
            if time.monotonic() >= deadline:
                for info in pending:
                    yield LayerResult(info.layer, info.name, info.title, [Check(
                        f"layer{info.layer}.not_run", SKIP,
                        f"not run: the self-check's time limit of {time_limit:g} s was used up")])
                pending.clear()
            else:
                yield from run_child(pending, deadline, command, env)


def run_child(pending: list[LayerInfo], deadline: float, command: Command,  # noqa: PLR0912 - one event loop
              env: dict[str, str] | None) -> Iterator[LayerResult]:
    """One child for the pending layers; removes from `pending` each layer it reports on."""
    child = subprocess.Popen(command([i.layer for i in pending]), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             stdin=subprocess.DEVNULL, start_new_session=True, env=env)
    assert child.stdout is not None and child.stderr is not None
    selector = selectors.DefaultSelector()
    selector.register(child.stdout, selectors.EVENT_READ, "out")
    selector.register(child.stderr, selectors.EVENT_READ, "err")
    out_buffer, log = b"", ""
    started = time.monotonic()
    layer_deadline = min(deadline, started + pending[0].timeout)
    open_pipes = 2
    try:
        while pending and open_pipes:
            now = time.monotonic()
            if now >= layer_deadline:
                yield timed_out(pending.pop(0), layer_deadline - started, log, now - started)
                return
            # The protocol pipe first: what the child wrote there came before the log lines ready beside
            # it, so a layer's result resets the log before the next layer's lines are read.
            ready = sorted(selector.select(timeout=layer_deadline - now), key=lambda event: event[0].data != "out")
            for key, _ in ready:
                chunk = os.read(key.fileobj.fileno(), 65536)  # type: ignore[union-attr]
                if not chunk:
                    selector.unregister(key.fileobj)
                    open_pipes -= 1
                elif key.data == "err":
                    log = (log + chunk.decode(errors="replace"))[-4 * LOG_TAIL:]
                else:
                    out_buffer += chunk
                    while b"\n" in out_buffer:
                        line, out_buffer = out_buffer.split(b"\n", 1)
                        try:
                            event = json.loads(line)
                        except ValueError:
                            continue  # not ours: the protocol pipe is private, but never trust a pipe
                        if event.get("event") == "result" and pending and event.get("layer") == pending[0].layer:
                            info = pending.pop(0)
                            checks = [Check.from_json(c) for c in event["checks"]]
                            failed = [c for c in checks if c.status == FAIL]
                            if failed and log.strip():  # the child's log explains most failures
                                failed[0].data.setdefault("log_tail", log[-LOG_TAIL:])
                            yield LayerResult(info.layer, info.name, info.title, checks, seconds=event["seconds"])
                            started, log = time.monotonic(), ""  # the next layer's log starts here
                            if pending:
                                layer_deadline = min(deadline, started + pending[0].timeout)
        if pending:  # the child ended without reporting: it crashed
            yield crashed(pending.pop(0), child.wait(), log, time.monotonic() - started)
    finally:
        selector.close()
        # The whole process group: whatever the layer started (nvidia-smi, say) goes with it. The
        # child is not reaped yet, so its pid (the group's id) cannot have been reused.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, signal.SIGKILL)
        child.wait()
        child.stdout.close()
        child.stderr.close()


def timed_out(info: LayerInfo, allowed: float, log: str, seconds: float) -> LayerResult:
    limit = min(info.timeout, allowed)
    return LayerResult(info.layer, info.name, info.title, [Check(
        f"layer{info.layer}.timeout", FAIL, f"did not finish within {limit:.3g} s and was stopped",
        timeout_fix(info), {"log_tail": log[-LOG_TAIL:]})], seconds=seconds, timed_out=True)


def crashed(info: LayerInfo, code: int, log: str, seconds: float) -> LayerResult:
    return LayerResult(info.layer, info.name, info.title, [Check(
        f"layer{info.layer}.crashed", FAIL, f"the check's process died ({describe_exit(code)})",
        "the last lines of its log are in the JSON report (selfcheck --json); a crash inside TensorFlow's "
        "import usually means a broken driver or library install", {"log_tail": log[-LOG_TAIL:]})], seconds=seconds)


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def timeout_fix(info: LayerInfo) -> str:
    if info.needs_tf:
        return ("on a GPU without TF 2.9 kernels (compute capability 8.0+) the first start JIT-compiles PTX for "
                "minutes: mount a volume at ~/.nv so it happens once, then rerun `selfcheck`; otherwise the driver "
                "is hanging (check nvidia-smi and dmesg on the host)")
    return "the driver or a library is not answering: check nvidia-smi and dmesg on the host"
