"""The runner's deadlines, on real child processes: a layer that hangs is killed and reported
and the rest go on in a fresh child; a child that dies is reported; the total time limit holds;
the real worker keeps its protocol clean of stray output."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from testkit.wait import wait_until
from tf29env.core.paths import REPO
from tf29image.selfcheck import checks, runner
from tf29image.selfcheck.checks import LAYERS, LayerInfo

IMAGE_PYTHON = REPO / "image" / "python"  # where the image's tf29-env.pth points

# A stand-in worker: reports each layer it is given, except that it hangs on layer 2 and dies on layer 4.
FAKE_WORKER = r"""
import json, os, sys, time
for layer in map(int, sys.argv[1:]):
    print(json.dumps({"event": "start", "layer": layer}), flush=True)
    print(f"log line of layer {layer}", file=sys.stderr, flush=True)
    if layer == 2:
        time.sleep(60)
    if layer == 4:
        os._exit(7)
    check = {"id": f"t.layer{layer}", "status": "PASS", "what": f"pid {os.getpid()}", "fix": None, "data": {}}
    print(json.dumps({"event": "result", "layer": layer, "seconds": 0.0, "checks": [check]}), flush=True)
"""


def fake(layers: list[int]) -> list[str]:
    return [sys.executable, "-c", FAKE_WORKER, *map(str, layers)]


def infos(*numbers: int, timeout: float = 1.0) -> list[LayerInfo]:
    return [LayerInfo(n, f"l{n}", f"Layer {n}", False, timeout, f"l{n}") for n in numbers]


def test_a_hanging_layer_is_killed_and_the_rest_go_on_in_a_new_child() -> None:
    start = time.monotonic()
    results = list(runner.run_all(infos(1, 2, 3), time_limit=20, command=fake))
    elapsed = time.monotonic() - start
    assert [r.layer for r in results] == [1, 2, 3]
    assert elapsed < 5  # one second for layer 2, not its 60 s sleep
    assert results[1].timed_out and results[1].status == "FAIL"
    assert results[1].checks[0].id == "layer2.timeout"
    assert "log line of layer 2" in results[1].checks[0].data["log_tail"]
    assert results[0].status == results[2].status == "PASS"
    # Layer 3 ran in a fresh process: a different pid than layer 1's.
    assert results[0].checks[0].what != results[2].checks[0].what


def test_a_dying_child_is_reported_with_its_exit_and_log() -> None:
    results = list(runner.run_all(infos(3, 4, 5), time_limit=20, command=fake))
    assert [(r.layer, r.status) for r in results] == [(3, "PASS"), (4, "FAIL"), (5, "PASS")]
    crashed = results[1].checks[0]
    assert crashed.id == "layer4.crashed" and "exit code 7" in crashed.what
    assert "log line of layer 4" in crashed.data["log_tail"]


def test_the_total_time_limit_skips_what_is_left_in_every_group() -> None:
    layers = [LayerInfo(1, "a", "A", False, 10.0, "a"), LayerInfo(2, "b", "B", False, 10.0, "b"),
              LayerInfo(3, "c", "C", True, 10.0, "c"), LayerInfo(6, "f", "F", False, 10.0, "f")]
    start = time.monotonic()
    results = list(runner.run_all(layers, time_limit=1.5, command=fake))
    assert time.monotonic() - start < 4
    assert [r.layer for r in results] == [1, 2, 3, 6]
    assert results[1].timed_out
    for result in results[2:]:
        assert result.status == "SKIP" and "time limit of 1.5 s" in result.checks[0].what


def test_groups_keep_tensorflow_layers_together() -> None:
    grouped = [[info.layer for info in group] for group in runner.groups(LAYERS)]
    assert grouped == [[1, 2], [3, 4, 5], [6]]


def test_the_ptx_jit_fix_goes_to_the_layers_that_need_tensorflow() -> None:
    jit = [info.layer for info in LAYERS if "JIT" in runner.timeout_fix(info)]
    assert jit == [info.layer for info in LAYERS if info.needs_tf] == [3, 4, 5]


def test_no_child_is_left_behind() -> None:
    before = set(os.listdir("/proc"))
    list(runner.run_all(infos(1, 2), time_limit=20, command=fake))

    def leftovers() -> list[str]:
        found = []
        for pid in set(os.listdir("/proc")) - before:
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"log line of layer" in cmdline:
                found.append(pid)
        return found

    # A killed worker is gone once the kernel has reaped it: at once, or within a moment on a busy host.
    wait_until(lambda: leftovers() == [], timeout=10, what="no self-check worker left behind")


STRAY_LAYER = """
import sys
from tf29image.selfcheck import worker
from tf29image.selfcheck.checks import l6_environment
real_run = l6_environment.run
def noisy_run():
    print("stray print from a layer")
    return real_run()
l6_environment.run = noisy_run
sys.exit(worker.main(["6"]))
"""


def test_the_real_worker_keeps_stray_output_off_its_protocol() -> None:
    done = subprocess.run([sys.executable, "-c", STRAY_LAYER], capture_output=True, text=True, timeout=30,
                          env={**os.environ, "PYTHONPATH": str(IMAGE_PYTHON)}, check=True)
    events = [json.loads(line) for line in done.stdout.splitlines()]  # every line is protocol
    assert [e["event"] for e in events] == ["start", "result"]
    assert {c["id"] for c in events[1]["checks"]} >= {"env.shm", "env.memlock", "env.stack", "env.allow_growth"}
    assert "stray print from a layer" in done.stderr


def test_a_raised_limit_raises_each_layer_timeout() -> None:
    # Layer 2 of the fake worker sleeps 60 s: with 1 s timeouts scaled by 3 it is stopped after ~3 s.
    start = time.monotonic()
    results = list(runner.run_all(infos(2), time_limit=30, command=fake, timeout_scale=3.0))
    elapsed = time.monotonic() - start
    assert results[0].timed_out and "within 3 s" in results[0].checks[0].what
    assert 2.9 < elapsed < 6


def test_each_layer_runs_its_own_module_and_checks_keeps_its_only_title() -> None:
    # LAYERS is the one home of a layer's number, name and title: a module holding a copy would drift.
    for info in LAYERS:
        layer_module = checks.module(info.layer)
        assert layer_module.__name__ == f"tf29image.selfcheck.checks.{info.module}"
        assert callable(layer_module.run)
        copies = {"LAYER", "NAME", "TITLE", "NEEDS_TF"} & set(vars(layer_module))
        assert not copies, f"{info.module} defines {copies}"
    assert [info.layer for info in LAYERS] == list(range(1, len(LAYERS) + 1))
