"""The GPU / FP16 self-check in the real image, on this GPU-less host: what each layer reports,
the JSON report against the schema the image ships, the modes (warn, strict, off) at container
start and by hand, the start run's time limit, and that Jupyter turns healthy whatever the mode."""

import itertools
import json
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest
from docker import DockerClient
from docker.models.containers import Container

from testkit.containers import TrackedContainer
from testkit.wait import wait_until
from tf29env.core.variants import CUDA_WHEELS

SUMMARY = "GPU visible:"  # in the banner's last line
REPORT = "/run/tf29-env/selfcheck.json"
SCHEMA = "/opt/tf29-env/python/tf29image/selfcheck/report.schema.json"
NO_DRIVER_FIX = ("--gpus all", "NVIDIA Container Toolkit")
CPU_BUDGET_SECONDS = 15.0

Report = dict[str, Any]
# The start-up report of each warn_start container, read before any test reruns the check there.
START_REPORTS: dict[str, Report] = {}


def scratch(name: str) -> str:
    """A report path of its own in the dev user's home (not the shared one at REPORT)."""
    return f"/home/jovyan/selfcheck-{name}.json"


@pytest.fixture(scope="module")
def warn_start(docker_client: DockerClient, image: str) -> Iterator[tuple[TrackedContainer, Container]]:
    """One container started with the defaults (SELF_CHECK=warn), its self-check finished."""
    tracked = TrackedContainer(docker_client, image)
    try:
        container = tracked.run(quiet=False)
        tracked.wait_log(container, SUMMARY, timeout=60)
        START_REPORTS[container.id] = read_json(tracked, container, REPORT)
        yield tracked, container
    finally:
        tracked.remove_all()


def read_json(tracked: TrackedContainer, container: Container, path: str) -> Any:
    code, text = tracked.exec(container, ["cat", path])
    assert code == 0, text
    return json.loads(text)


@pytest.fixture(scope="module")
def start_report(warn_start: tuple[TrackedContainer, Container]) -> Report:
    return START_REPORTS[warn_start[1].id]


@pytest.fixture(scope="module")
def layers_report(warn_start: tuple[TrackedContainer, Container]) -> Report:
    """Every layer's findings, by hand in the same container with time to spare: what the layers say
    does not hang on the start run's 15 s, which a loaded machine may use up before the last layer."""
    tracked, container = warn_start
    code, output = tracked.exec(container, ["selfcheck", "--time-limit", "300", "--output", scratch("layers")],
                                user="jovyan")
    assert code == 0, output
    report: Report = read_json(tracked, container, scratch("layers"))
    return report


def layer(report: Report, number: int) -> dict[str, Any]:
    found: list[dict[str, Any]] = [entry for entry in report["layers"] if entry["layer"] == number]
    assert len(found) == 1, report["layers"]
    return found[0]


def checks(report: Report, number: int) -> dict[str, dict[str, Any]]:
    return {check["id"]: check for check in layer(report, number)["checks"]}


def validate(tracked: TrackedContainer, container: Container, report: Report) -> None:
    """Against the schema file the image ships (the one docs/selfcheck.md documents)."""
    schema = read_json(tracked, container, SCHEMA)
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(report, schema, cls=jsonschema.Draft202012Validator)


def test_start_report_validates_against_the_shipped_schema(
        warn_start: tuple[TrackedContainer, Container], start_report: Report) -> None:
    validate(*warn_start, start_report)
    assert start_report["schema"] == "tf29-env/selfcheck/v1"
    assert start_report["mode"] == "warn" and start_report["exit_code"] == 0
    assert start_report["gpu_visible"] is False
    assert start_report["host"]["uid"] == 1000  # run as the dev user, not root


CPU_VARIANT_SKIP = "the cpu variant of this image (tensorflow-cpu) does not use GPUs"


def assert_cpu_variant_skip(report: Report, number: int, check_id: str) -> None:
    """The cpu variant skips the GPU checks, saying why, instead of failing them."""
    found = checks(report, number)
    assert found[check_id]["status"] == "SKIP" and CPU_VARIANT_SKIP in found[check_id]["what"], found


def test_layer1_reports_no_driver_with_the_fix(layers_report: Report, variant: str) -> None:
    if variant == "cpu":
        assert_cpu_variant_skip(layers_report, 1, "driver.cpu_variant")
        return
    found = checks(layers_report, 1)
    present = found["driver.present"]
    assert present["status"] == "FAIL"
    assert "no NVIDIA driver" in present["what"]
    assert all(part in present["fix"] for part in NO_DRIVER_FIX), present
    assert present["data"]["device_nodes"] == []
    assert found["driver.version"]["status"] == "SKIP"


def test_layer2_loads_every_library_with_its_real_version(layers_report: Report, variant: str) -> None:
    if variant == "cpu":
        assert_cpu_variant_skip(layers_report, 2, "lib.cpu_variant")
        return
    # The versions come from the wheels the stand-in base unpacked (tf29env.imagebuild.standin), not from the check.
    expected = {}
    for spec, sonames in CUDA_WHEELS.items():
        version = spec.split("==")[1]
        for soname in sonames:
            expected[soname] = version
    found = {check["data"]["soname"]: check for check in layer(layers_report, 2)["checks"] if "soname" in check["data"]}
    assert sorted(found) == sorted(s for s in expected if not s.startswith("libcudnn_")), sorted(found)
    for soname, check in found.items():
        assert check["status"] == "PASS", check
        assert check["data"]["path"].startswith("/usr/local/cuda-11/lib64/"), check
        if soname == "libcudart.so.11.0":
            # Without a driver the runtime does not say its version (cudaErrorInsufficientDriver = 35).
            assert check["data"]["runtime_get_version_error"] == 35
            assert check["data"]["declared"] == expected[soname]
        else:
            assert check["data"]["version"] == ".".join(expected[soname].split(".")[:3]), check
    sublibs = checks(layers_report, 2)["lib.cudnn_sublibs"]
    assert sublibs["status"] == "PASS" and sublibs["data"]["missing"] == []
    assert sorted(sublibs["data"]["sublibraries"]) == sorted(s for s in expected if s.startswith("libcudnn_"))


def test_layer3_reports_tf_293_cuda_112_cudnn8_and_no_gpu(layers_report: Report, variant: str) -> None:
    found = checks(layers_report, 3)
    assert found["tf.version"]["status"] == "PASS" and found["tf.version"]["data"]["version"] == "2.9.3"
    build = found["tf.build"]["data"]
    if variant == "cpu":
        assert found["tf.build"]["status"] == "PASS" and build["is_cuda_build"] is False
        assert_cpu_variant_skip(layers_report, 3, "tf.gpus")
        return
    assert (build["cuda_version"], build["cudnn_version"], build["is_cuda_build"]) == ("11.2", "8", True)
    assert build["cuda_compute_capabilities"] == ["sm_35", "sm_50", "sm_60", "sm_70", "sm_75", "compute_80"]
    gpus = found["tf.gpus"]
    assert gpus["status"] == "FAIL" and gpus["data"]["count"] == 0
    assert all(part in gpus["fix"] for part in NO_DRIVER_FIX)


def test_layer4_mixed_precision_passes_on_cpu(layers_report: Report) -> None:
    found = checks(layers_report, 4)
    assert sorted(found) == ["mp.custom_loop", "mp.dtypes", "mp.fit"]
    assert all(check["status"] == "PASS" for check in found.values()), found
    dtypes = found["mp.dtypes"]["data"]
    assert (dtypes["policy"], dtypes["variable_dtypes"], dtypes["compute_dtype"], dtypes["model_output"]) == (
        "mixed_float16", ["float32"], "float16", "float32")
    assert found["mp.fit"]["data"]["optimizer"] == "LossScaleOptimizer"
    loop = found["mp.custom_loop"]["data"]
    assert loop["grads_finite"] is True and loop["grad_dtypes"] == ["float32"]
    assert loop["scaled_loss"] == pytest.approx(loop["loss"] * loop["loss_scale"], rel=1e-3)


def test_layer5_is_skipped_with_a_reason(layers_report: Report, variant: str) -> None:
    entry = layer(layers_report, 5)
    assert entry["status"] == "SKIP"
    if variant == "cpu":
        assert_cpu_variant_skip(layers_report, 5, "perf.cpu_variant")
        return
    assert [c["id"] for c in entry["checks"]] == ["perf.matmul"]
    assert "no GPU visible" in entry["checks"][0]["what"]


def test_layer6_reports_no_driver_and_docker_default_shm(layers_report: Report, variant: str) -> None:
    found = checks(layers_report, 6)
    runtime = found["env.nvidia_runtime"]
    if variant == "cpu":
        assert_cpu_variant_skip(layers_report, 6, "env.nvidia_runtime")
    else:
        assert runtime["status"] == "WARN" and "no driver" in runtime["what"]
        assert all(part in runtime["fix"] for part in NO_DRIVER_FIX)
    shm = found["env.shm"]
    assert shm["status"] == "WARN" and shm["data"]["bytes"] == 64 * 1024 * 1024  # Docker's default
    assert "--shm-size" in shm["fix"] and "--ipc=host" in shm["fix"]
    assert found["env.allow_growth"]["status"] == "PASS"  # the image sets TF_FORCE_GPU_ALLOW_GROWTH=true
    assert found["env.cuda_cache"]["data"]["CUDA_CACHE_MAXSIZE"] == "4294967296"


def test_banner_has_one_line_per_check_with_its_fix(
        warn_start: tuple[TrackedContainer, Container], start_report: Report) -> None:
    tracked, container = warn_start
    lines = [line for line in tracked.logs(container).splitlines() if line.startswith("selfcheck: [")]
    all_checks = [(entry["layer"], check) for entry in start_report["layers"] for check in entry["checks"]]
    assert len(lines) == len(all_checks)
    for line, (number, check) in zip(lines, all_checks, strict=True):
        assert line.startswith(f"selfcheck: [{number} ") and f"] {check['status']} {check['id']}: " in line, line
        assert ("-> fix: " in line) == (check["status"] in ("WARN", "FAIL")), line


def test_the_start_run_keeps_to_its_time_limit(start_report: Report) -> None:
    # How long it takes is measured in bench/, not asserted: here, that the limit holds and says so.
    assert start_report["time_limit"] == CPU_BUDGET_SECONDS
    assert 0 < start_report["seconds"] <= CPU_BUDGET_SECONDS + 10  # the runner stops what is left at the limit
    for entry in start_report["layers"]:
        for check in entry["checks"]:
            if check["id"] == f"layer{entry['layer']}.not_run":
                assert f"time limit of {CPU_BUDGET_SECONDS:g} s was used up" in check["what"], check
    assert [entry["layer"] for entry in start_report["layers"]] == [1, 2, 3, 4, 5, 6]


def test_warn_mode_container_turns_healthy(warn_start: tuple[TrackedContainer, Container]) -> None:
    tracked, container = warn_start
    tracked.wait_healthy(container, timeout=90)
    container.reload()
    assert container.status == "running"


def test_strict_by_hand_exits_non_zero_without_a_gpu(
    warn_start: tuple[TrackedContainer, Container], variant: str
) -> None:
    tracked, container = warn_start
    code, output = tracked.exec(container, ["selfcheck", "--mode", "strict", "--output", scratch("strict")],
                                user="jovyan")
    if variant == "cpu":  # no GPU is expected there, and nothing fails on the CPU
        assert code == 0, output
        return
    assert code == 1, output
    assert "strict mode: exit 1" in output.splitlines()[-1]
    report = read_json(tracked, container, scratch("strict"))
    validate(tracked, container, report)
    assert report["mode"] == "strict" and report["exit_code"] == 1
    # The same by SELF_CHECK instead of --mode, and warn by hand stays 0 on the same findings.
    code, _ = tracked.exec(container, ["selfcheck", "--layers", "1,2,6", "--output", scratch("s2")], user="jovyan",
                           environment={"SELF_CHECK": "strict"})
    assert code == 1
    code, _ = tracked.exec(container, ["selfcheck", "--layers", "1,2,6", "--output", scratch("w")], user="jovyan")
    assert code == 0


def test_root_and_the_dev_user_can_both_rewrite_the_report(warn_start: tuple[TrackedContainer, Container]) -> None:
    # `docker exec tf selfcheck` runs as root, a terminal in JupyterLab as the dev user, in either order.
    tracked, container = warn_start
    for user in ("root", "jovyan", "root", "jovyan"):
        code, output = tracked.exec(container, ["selfcheck", "--layers", "6"], user=user)
        assert code == 0 and f"report: {REPORT}" in output, (user, output)
        assert read_json(tracked, container, REPORT)["host"]["uid"] == (0 if user == "root" else 1000)
    code, owner = tracked.exec(container, ["stat", "-c", "%u:%g %a", REPORT])
    assert owner.strip() == "1000:100 644"


def test_benchmark_code_runs_on_the_cpu_at_a_small_size(warn_start: tuple[TrackedContainer, Container]) -> None:
    # Layer 5 only runs with a GPU; its measuring code is exercised here on the CPU (soft placement).
    tracked, container = warn_start
    script = ("import json; from tf29image.selfcheck.checks import l5_performance as p, tfsupport as s; p.N = 256; "
              "c = p.benchmark(s.tf(), 0, 'cpu', (8, 0)); "
              "print(json.dumps([c.to_json(), s.tf().config.experimental.tensor_float_32_execution_enabled()]))")
    code, output = tracked.exec(container, ["/opt/venv/bin/python", "-c", script], user="jovyan",
                                environment={"TF_CPP_MIN_LOG_LEVEL": "3"},
                                stderr=False)
    assert code == 0, output
    check, tf32_enabled_after = json.loads(output.strip().splitlines()[-1])
    assert check["id"] == "perf.matmul" and check["data"]["fp32_tflops"] > 0 and check["data"]["tf32_tflops"] > 0
    assert tf32_enabled_after is True  # the strict-FP32 measurement put TensorFlow's default back


OVERFLOW = """
import json
from tf29image.selfcheck.checks import l4_mixed_precision as l4, tfsupport
tf = tfsupport.tf()
tf.keras.utils.set_random_seed(1)
tf.keras.mixed_precision.set_global_policy("mixed_float16")
model = l4.build_model(tf)
x = tf.random.uniform((32, 16))
y = tf.fill((32, 1), 10.0)  # far off: float16 gradients overflow at the initial loss scale 2**15
print(json.dumps(l4.custom_step(tf, model, x, y).to_json()))
"""


def test_custom_step_survives_a_float16_overflow(warn_start: tuple[TrackedContainer, Container]) -> None:
    # Real TensorFlow: the dynamic loss scale must halve on an overflow, skip it, then train.
    tracked, container = warn_start
    code, output = tracked.exec(container, ["/opt/venv/bin/python", "-c", OVERFLOW], user="jovyan",
                                environment={"TF_CPP_MIN_LOG_LEVEL": "3"},
                                stderr=False)
    assert code == 0, output
    check = json.loads(output.strip().splitlines()[-1])
    steps = check["data"]["steps"]
    assert check["status"] == "PASS", check
    assert len(steps) > 1 and steps[0]["grads_finite"] is False and steps[-1]["grads_finite"] is True
    for before, after in itertools.pairwise(steps):
        assert after["loss_scale"] == before["loss_scale"] / 2
        assert after["loss"] == before["loss"]  # the overflowed step was skipped: weights unchanged
    assert "overflow step(s) that halved the scale" in check["what"]


def test_json_flag_prints_the_report(warn_start: tuple[TrackedContainer, Container]) -> None:
    tracked, container = warn_start
    code, output = tracked.exec(container, ["selfcheck", "--json", "--layers", "1,2,6"], user="jovyan",
                                demux=False, stderr=False)
    assert code == 0
    report = json.loads(output)
    validate(tracked, container, report)
    assert [layer(report, n)["checks"][0]["id"] for n in (3, 4, 5)] == [
        "layer3.not_selected", "layer4.not_selected", "layer5.not_selected"]
    # It replaced the start report at the fixed path, now owned by whoever ran it last.
    assert read_json(tracked, container, REPORT)["started_at"] == report["started_at"]


@pytest.mark.parametrize(("args", "environment", "message"), [
    (["selfcheck"], {"SELF_CHECK": "loud"},
     "selfcheck: SELF_CHECK='loud' is not a mode: use warn (default), strict or off"),
    (["selfcheck", "--mode", "loud"], {}, "selfcheck: argument --mode: invalid choice: 'loud'"),
    (["selfcheck", "--layers", "1,7"], {}, "selfcheck: --layers '1,7': layers are numbered 1-6"),
])
def test_bad_input_is_one_line_and_exit_2(warn_start: tuple[TrackedContainer, Container], args: list[str],
                                          environment: dict[str, str], message: str) -> None:
    tracked, container = warn_start
    code, output = tracked.exec(container, args, user="jovyan", environment=environment)
    assert code == 2
    lines = output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(message), lines


def test_a_layer_over_the_time_limit_is_stopped_and_reported(warn_start: tuple[TrackedContainer, Container]) -> None:
    tracked, container = warn_start
    # TensorFlow's layers first: with 1 and 2 before them, a loaded machine could use the second up
    # between two layers, where nothing is in progress to stop (then all the rest is "not run").
    code, output = tracked.exec(container, ["selfcheck", "--layers", "3,4,5,6", "--time-limit", "1", "--output",
                                            scratch("t")], user="jovyan")
    assert code == 0, output  # warn mode
    report = read_json(tracked, container, scratch("t"))
    validate(tracked, container, report)
    assert report["seconds"] < 4  # TensorFlow alone needs longer than the limit: it was not waited for
    stopped = [entry for entry in report["layers"] if entry["timed_out"]]
    assert len(stopped) == 1 and stopped[0]["status"] == "FAIL", report["layers"]
    assert stopped[0]["layer"] == 3, report["layers"]
    assert stopped[0]["checks"][0]["id"] == f"layer{stopped[0]['layer']}.timeout"
    after = [entry for entry in report["layers"] if entry["layer"] > stopped[0]["layer"]]
    assert after and all("time limit" in entry["checks"][0]["what"] for entry in after), after
    # The killed child is really gone.
    code, processes = tracked.exec(container, ["ps", "-eo", "args"])
    assert "selfcheck.worker" not in processes


def processes(tracked: TrackedContainer, container: Container) -> list[tuple[int, str]]:
    code, output = tracked.exec(container, ["ps", "-eo", "pid=,args="])
    assert code == 0
    return [(int(pid), args) for pid, _, args in (line.strip().partition(" ") for line in output.splitlines())]


def test_sigterm_stops_the_check_and_its_tensorflow_child(warn_start: tuple[TrackedContainer, Container]) -> None:
    tracked, container = warn_start
    container.exec_run(["selfcheck", "--output", scratch("term")], user="jovyan", detach=True)

    def worker_running() -> list[tuple[int, str]]:
        return [p for p in processes(tracked, container) if "selfcheck.worker 3 4 5" in p[1]]

    wait_until(worker_running, timeout=20, what="the TensorFlow layers' child")
    command = f"-m tf29image.selfcheck --output {scratch('term')}"
    parents = [pid for pid, args in processes(tracked, container) if args.endswith(command)]
    assert len(parents) == 1, processes(tracked, container)
    code, _ = tracked.exec(container, ["kill", "-TERM", str(parents[0])], user="jovyan")
    assert code == 0
    # At once: not when the orphaned child would have died writing its next result (seconds later).
    wait_until(lambda: not any("selfcheck" in args for _, args in processes(tracked, container)), timeout=1.5,
               interval=0.1, what="no selfcheck process left")


def test_strict_start_without_gpu_stops_the_container_with_3(tracked: TrackedContainer, variant: str) -> None:
    container = tracked.run(environment={"SELF_CHECK": "strict"})
    if variant == "cpu":  # strict passes there: the container stays up and turns healthy
        tracked.wait_healthy(container, timeout=90)
        tracked.wait_log(container, SUMMARY, timeout=60)
        container.reload()
        assert container.status == "running"
        return
    assert tracked.wait_exit(container, timeout=90) == 3
    logs = tracked.logs(container)
    assert "strict mode: exit 1 because a check failed" in logs
    assert "self-check failed and SELF_CHECK=strict: stopping the container" in logs


def test_off_runs_nothing_and_the_container_turns_healthy(tracked: TrackedContainer) -> None:
    container = tracked.run(environment={"SELF_CHECK": "off"})
    tracked.wait_healthy(container, timeout=90)
    logs = tracked.logs(container)
    assert "self-check is off (SELF_CHECK=off)" in logs
    assert "selfcheck:" not in logs
    code, _ = tracked.exec(container, ["test", "-e", REPORT])
    assert code == 1
    code, processes = tracked.exec(container, ["ps", "-eo", "args"])
    assert "selfcheck" not in processes
    # By hand it still checks (SELF_CHECK=off only concerns the start), in warn mode.
    code, output = tracked.exec(container, ["selfcheck", "--layers", "6"], user="jovyan")
    assert code == 0 and "mode warn" in output
    wait_until(lambda: tracked.health(container) == "healthy", timeout=10, what="still healthy")
