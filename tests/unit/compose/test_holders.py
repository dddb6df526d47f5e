"""compose/holders.py, `make gpus`: nvidia-smi's CSV, /proc/PID/cgroup's container ID, and the lines
that join them. The recorded output and where it comes from:

- `--query-gpu ... --format=csv,noheader,nounits`: one field after another, joined by ", ", as in
  github.com/Ricks-Lab/gpu-utils issue #83 (KeithMyers, 2020: "200.00, 105.00, 292.00, 7979, ...");
  a GPU in a container without the rights prints `[Insufficient Permissions]` for memory.used/total
  and `[N/A]` where a field is unsupported (github.com/Stability-AI/StableSwarmUI issue #388, 2024,
  an A100-SXM4-80GB in MIG mode under driver 535.161.08).
- `--query-compute-apps=pid,used_memory --format=csv,noheader,nounits`: "1427169, 2892" (a public
  note on a llama.cpp host, found by its command line); gpu_uuid comes first here, as asked.
- /proc/PID/cgroup of a container's process: CGROUP_V1_CGROUPFS was read on this project's test
  host (Docker with the cgroupfs driver, cgroup v1) from `docker run ... sleep` and
  `docker inspect -f {{.State.Pid}}`; the cgroup v2 forms are the ones Docker's runtime metrics page
  names (docs.docker.com/engine/containers/runmetrics: /docker/LONGID, system.slice/docker-LONGID.scope).
The engine side (real containers, real PIDs, `make gpus`) is tests/gpu/test_gpu_holders.py."""

from pathlib import Path

import pytest

from compose import holders
from compose.holders import App, ContainerInfo, Gpu
from testkit.gpuengine import GPU0_UUID, GPU1_UUID

CID = "0cc5483c99e8f29aed95d5d5a24a6c87c0d23a454c22e21bdd3f453064770899"
CGROUP_V1_CGROUPFS = "".join(f"{n}:{c}:/docker/{CID}\n" for n, c in (
    (9, "name=systemd"), (8, "pids"), (7, "blkio"), (6, "freezer"), (5, "devices"), (4, "memory"), (3, "cpuset"),
    (2, "cpuacct"), (1, "cpu"))) + f"0::/docker/{CID}\n"
CGROUP_V2_SYSTEMD = f"0::/system.slice/docker-{CID}.scope\n"
CGROUP_V2_CGROUPFS = f"0::/docker/{CID}\n"
# A process in a container of a dockerd that itself runs in a container (the stand-in GPU engine's case).
CGROUP_NESTED = f"0::/docker/{'a' * 64}/docker/{CID}\n"
HOST_PROCESS = "0::/user.slice/user-1000.slice/session-3.scope\n"
HOST_V1 = "12:memory:/user.slice\n1:name=systemd:/user.slice/user-1000.slice/session-3.scope\n"

GPUS_CSV = (f"0, {GPU0_UUID}, NVIDIA A100-SXM4-40GB, 9216, 40960\n"
            f"1, {GPU1_UUID}, NVIDIA A100-SXM4-40GB, 0, 40960\n")
GPUS_NO_RIGHTS = f"0, {GPU0_UUID}, NVIDIA A100-SXM4-80GB, [Insufficient Permissions], [Insufficient Permissions]\n"
APPS_CSV = f"{GPU0_UUID}, 1427169, 2892\n{GPU0_UUID}, 1427385, 3472\n{GPU1_UUID}, 2594254, [N/A]\n"


def test_gpus_with_their_memory() -> None:
    assert holders.parse_gpus(GPUS_CSV) == (
        Gpu("0", GPU0_UUID, "NVIDIA A100-SXM4-40GB", 9216, 40960),
        Gpu("1", GPU1_UUID, "NVIDIA A100-SXM4-40GB", 0, 40960))


def test_memory_nvidia_smi_may_not_tell_is_unknown() -> None:
    (gpu,) = holders.parse_gpus(GPUS_NO_RIGHTS)
    assert (gpu.used_mib, gpu.total_mib) == (None, None)


def test_a_name_with_a_comma_stays_whole() -> None:
    (gpu,) = holders.parse_gpus(f"3, {GPU0_UUID}, Made-up GPU, rev 2, 10, 20\n")
    assert (gpu.index, gpu.name, gpu.used_mib, gpu.total_mib) == ("3", "Made-up GPU, rev 2", 10, 20)


def test_compute_apps() -> None:
    assert holders.parse_apps(APPS_CSV) == (
        App(GPU0_UUID, 1427169, 2892), App(GPU0_UUID, 1427385, 3472), App(GPU1_UUID, 2594254, None))
    assert holders.parse_apps("") == holders.parse_apps("No running processes found\n") == ()


@pytest.mark.parametrize(("parse", "text", "message"), [
    (holders.parse_gpus, "0, GPU-x, 10\n", "nvidia-smi --query-gpu printed a line this does not understand: "
                                           "'0, GPU-x, 10'"),
    (holders.parse_apps, "GPU-x, 12\n", "nvidia-smi --query-compute-apps printed a line this does not understand"),
    (holders.parse_apps, "GPU-x, [N/A], 12\n", "nvidia-smi --query-compute-apps printed a pid that is not a number: "
                                               "'[N/A]'"),
])
def test_output_it_does_not_understand_is_one_line(parse: object, text: str, message: str) -> None:
    with pytest.raises(holders.HoldersError) as raised:
        parse(text)  # type: ignore[operator]
    assert str(raised.value).startswith(message) and "\n" not in str(raised.value)


@pytest.mark.parametrize("cgroup", [CGROUP_V1_CGROUPFS, CGROUP_V2_SYSTEMD, CGROUP_V2_CGROUPFS, CGROUP_NESTED])
def test_a_containers_process_names_its_container(cgroup: str) -> None:
    assert holders.container_id(cgroup) == CID


@pytest.mark.parametrize("cgroup", [HOST_PROCESS, HOST_V1, "0::/\n", f"0::/docker/{CID[:12]}\n",
                                    f"0::/system.slice/docker-{CID}.scope.d\n"])
def test_a_host_process_names_none(cgroup: str) -> None:
    assert holders.container_id(cgroup) is None


def test_who_holds_each_gpu() -> None:
    member = ContainerInfo(CID, "tf29-dana-1", {holders.SERVICE_LABEL: "dana", holders.PROJECT_LABEL: "tf29"})
    plain = ContainerInfo("b" * 64, "scratch", {})
    said = {
        1427169: holders.describe_process(1427169, member, CID, None, [holders.compose_member]),
        1427385: holders.describe_process(1427385, None, None, "python3 bench.py", [holders.compose_member]),
        2594254: holders.describe_process(2594254, plain, plain.id, None, [holders.compose_member]),
    }
    lines = holders.report(holders.parse_gpus(GPUS_CSV), holders.parse_apps(APPS_CSV), said)
    assert lines == [
        f"GPU 0 (NVIDIA A100-SXM4-40GB, {GPU0_UUID}): 9216 / 40960 MiB in use",
        "  member dana (project tf29): container tf29-dana-1, pid 1427169, 2892 MiB",
        "  host process 1427385 (python3 bench.py), 3472 MiB",
        f"GPU 1 (NVIDIA A100-SXM4-40GB, {GPU1_UUID}): 0 / 40960 MiB in use",
        "  container scratch, pid 2594254, ? MiB",
    ]


def test_a_gpu_without_processes_and_holders_that_are_gone() -> None:
    gone = holders.describe_process(7, None, None, None, [])
    elsewhere = holders.describe_process(8, None, CID, None, [])
    lines = holders.report(holders.parse_gpus(GPUS_NO_RIGHTS), [App(GPU0_UUID, 7, 1), App(GPU0_UUID, 8, 2)],
                           {7: gone, 8: elsewhere})
    assert lines == [f"GPU 0 (NVIDIA A100-SXM4-80GB, {GPU0_UUID}): ? / ? MiB in use",
                     "  process 7 (gone), 1 MiB", f"  container {CID[:12]} (not on this Docker engine), pid 8, 2 MiB"]
    assert holders.report(holders.parse_gpus(GPUS_CSV), [], {})[1] == "  no processes"


def test_the_first_describer_that_knows_wins() -> None:
    container = ContainerInfo(CID, "tf29-hub-ann", {holders.SERVICE_LABEL: "x"})
    said = holders.describe_process(5, container, CID, None, [lambda c: "hub user ann", holders.compose_member])
    assert said == "hub user ann: container tf29-hub-ann, pid 5"


def test_no_driver_is_one_line_and_exit_1(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                          tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert holders.main([]) == holders.EXIT_NO_DRIVER == 1
    out, err = capsys.readouterr()
    assert (out, err) == ("", "tf29-env: ERROR: no NVIDIA driver on this host: nvidia-smi is not on PATH\n")


def test_a_failing_nvidia_smi_is_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                          tmp_path: Path) -> None:
    # What nvidia-smi prints where the kernel module is not loaded (exit 9).
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'NVIDIA-SMI has failed because it couldn'\"'\"'t communicate with the NVIDIA "
                   "driver. Make sure that the latest NVIDIA driver is installed and running.'\nexit 9\n")
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert holders.main([]) == 1
    _, err = capsys.readouterr()
    assert err == ("tf29-env: ERROR: nvidia-smi failed (is the NVIDIA driver loaded?): NVIDIA-SMI has failed because "
                   "it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is "
                   "installed and running.\n")
