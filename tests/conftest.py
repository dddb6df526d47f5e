"""Session fixtures: the Docker engine, the image under test (built once per session on the
stand-in base, reusing the engine's cache, unless TF29ENV_IMAGE names one) and per-test
containers that are always removed. No engine means the image tests fail, never skip."""

import datetime
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from docker import DockerClient

from testkit import docblocks
from testkit.containers import TrackedContainer
from testkit.ssh import KeyPair, make_keypair
from tf29env.core import engine, labels
from tf29env.core.variants import DEFAULT_VARIANT, VARIANTS
from tf29env.pipeline import BuildRequest, build, last_image_commit, source_date

# Debian keeps locally added CAs here; behind a TLS-intercepting proxy the build needs them.
HOST_EXTRA_CAS = Path("/usr/local/share/ca-certificates")
BUILD_LOG = Path(__file__).resolve().parent.parent / "build-output" / "test-image-build.log"
BUILD_LOCK = BUILD_LOG.with_suffix(".lock")
# Under pytest-xdist a group runs on one worker, in order (build.py test: --dist loadgroup). A folder
# is one group, for the hubs, engines and builds its fixtures start once; these folders' files are
# independent of each other, so each file is a group of its own.
GROUPED_BY_FILE = ("image", "unit", "deploy", "notebooks")
# pip resolutions wait on the network, not the engine, and share nothing: each test is a group, so
# they spread over the workers beside the engine tests.
GROUPED_BY_TEST = ("pins",)
# Checkouts side by side (git worktrees) on one engine each build their own image under test.
TEST_TAG = os.environ.get("TF29ENV_TEST_TAG") or "tf29-env:test-gpu"


def commit_time() -> datetime.datetime | None:
    """The time of the last commit that changed the image's files (its revision label), or None
    outside a git checkout."""
    return source_date({"SOURCE_DATE_EPOCH": last_image_commit("%ct")})


def host_ca_certs() -> list[Path]:
    return [HOST_EXTRA_CAS] if any(HOST_EXTRA_CAS.glob("*.crt")) else []


@pytest.fixture(scope="session")
def docker_client() -> DockerClient:
    return engine.connect()


@pytest.fixture(scope="session")
def image(docker_client: DockerClient) -> str:
    """The image under test: TF29ENV_IMAGE, or TEST_TAG built now on the stand-in base."""
    named = os.environ.get("TF29ENV_IMAGE")
    if named:
        assert engine.image_exists(docker_client, named), f"TF29ENV_IMAGE={named} is not on the engine"
        return named
    BUILD_LOG.parent.mkdir(exist_ok=True)
    # Under pytest-xdist every worker asks: the first builds, the others wait and take its image.
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID", "")
    with BUILD_LOCK.open("a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        lock.seek(0)
        done = lock.read().split()
        if run_id and len(done) == 2 and done[0] == run_id and engine.image_exists(docker_client, done[1]):
            return done[1]
        with BUILD_LOG.open("w") as log_file:
            def log(line: str) -> None:
                print(line, file=log_file, flush=True)

            # Built at the commit's time (SOURCE_DATE_EPOCH's way): a rebuild of the same tree is the
            # same image, so what is kept by image id (the SIF, the GPU engine's copy) is reused.
            request = BuildRequest(variant=VARIANTS["gpu"], base="standin", tag=TEST_TAG,
                                   ca_certs=host_ca_certs(), created=commit_time())
            built = build(docker_client, request, log).image
        lock.seek(0)
        lock.truncate()
        lock.write(f"{run_id} {built}\n")
        return built


@pytest.fixture(scope="session")
def variant(docker_client: DockerClient, image: str) -> str:
    """gpu or cpu, from the label build.py sets (an image without it is taken as gpu): the image
    tests hold both variants to what each must be."""
    found = labels.of_image(docker_client.images.get(image).attrs).get(labels.VARIANT) or DEFAULT_VARIANT
    assert found in VARIANTS, f"{image}: unknown variant label {found!r}"
    return found


@pytest.fixture
def tracked(docker_client: DockerClient, image: str) -> Iterator[TrackedContainer]:
    containers = TrackedContainer(docker_client, image)
    yield containers
    containers.remove_all()


@pytest.fixture(scope="module")
def module_tracked(docker_client: DockerClient, image: str) -> Iterator[TrackedContainer]:
    """Containers shared by a module's read-only checks (exec, GET, file reads), removed after its last
    test: one start and health wait instead of one per test. A test that changes state uses `tracked`."""
    containers = TrackedContainer(docker_client, image)
    yield containers
    containers.remove_all()


@pytest.fixture(scope="session")
def keypair(tmp_path_factory: pytest.TempPathFactory) -> KeyPair:
    return make_keypair(tmp_path_factory.mktemp("ssh"))


@pytest.fixture(scope="session")
def other_keypair(tmp_path_factory: pytest.TempPathFactory) -> KeyPair:
    return make_keypair(tmp_path_factory.mktemp("ssh-other"), "id_other")


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the group
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        parts = Path(item.nodeid.split("::", 1)[0]).parts
        group = parts[1] if len(parts) > 2 else parts[0]
        if group in GROUPED_BY_TEST:
            # xdist reads no group after a "]", so a parametrized test's brackets become parentheses.
            group = f"{parts[1]}/{item.name}".translate(str.maketrans("[]", "()"))
        elif group in GROUPED_BY_FILE:
            group = "/".join(parts[1:3])
        item.add_marker(pytest.mark.xdist_group(group))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """After a run that checked the docs' blocks, the blocks that are not typed here and why."""
    ran = [report.nodeid for reports in terminalreporter.stats.values() for report in reports
           if hasattr(report, "nodeid")]
    if not any("test_docs_blocks.py" in nodeid for nodeid in ran):
        return
    not_run = [block for block in docblocks.all_blocks() if block.reason]
    terminalreporter.write_sep("=", f"docs: {len(not_run)} shell blocks not run here")
    for block in not_run:
        terminalreporter.write_line(f"{block.where}: {block.reason}")
