"""`build.py audit IMAGE` against the image under test (a Debian 11 stand-in image, past its LTS):
the base's support status is its first line, read from the image offline, then the pinned protobuf
with its mitigation checked in the image; --fail-on-eol fails with exit 9 before any database is
asked; without it the audit goes on to the database as before (none answers through a dead proxy:
exit 8). docs/upgrade.md's block is typed as written."""

import datetime
import os

from docker import DockerClient

from testkit import docblocks
from testkit.docblocks import Plan
from tests.build.conftest import build_py
from tf29env.core import engine
from tf29env.core.errors import EXIT_NO_DATABASE, EXIT_UNSUPPORTED
from tf29env.core.paths import REPO

BLOCKS = docblocks.blocks_for(__file__)
DEAD_PROXY = "http://127.0.0.1:9"  # nothing listens there: no database answers through it
OFFLINE = {"HTTPS_PROXY": DEAD_PROXY, "https_proxy": DEAD_PROXY, "HTTP_PROXY": DEAD_PROXY, "http_proxy": DEAD_PROXY,
           "NO_PROXY": "", "no_proxy": ""}
LTS_END = datetime.date(2026, 8, 31)


def statements() -> set[str]:
    """The line for today (UTC), or for tomorrow should the day turn while the test runs."""
    today = datetime.datetime.now(datetime.UTC).date()
    return {f"base: Debian GNU/Linux 11 (bullseye): LTS ended 2026-08-31 ({(day - LTS_END).days} days ago); "
            "no security updates from Debian: see docs/upgrade.md"
            for day in (today, today + datetime.timedelta(days=1))}


PINNED = ("pinned: protobuf 3.19.6 (TensorFlow 2.9 requires protobuf<3.20); mitigation: protobuf's C++ backend "
          "(cpp) in use (checked in the image: cpp)")


def test_fail_on_eol_states_the_base_and_fails_before_any_database(image: str, docker_client: DockerClient) -> None:
    assert engine.image_exists(docker_client, image)
    run = build_py("audit", image, "--fail-on-eol", env=OFFLINE, timeout=300)
    assert run.code == EXIT_UNSUPPORTED, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] in statements(), run.stdout
    assert lines[1:] == [PINNED], run.stdout  # nothing after it: no database was asked
    assert run.stderr == ("error: --fail-on-eol: the base (Debian GNU/Linux 11 (bullseye)) is past its end of "
                          "support\n"), run.stderr


def test_without_the_flag_the_audit_goes_on_to_the_database(image: str) -> None:
    run = build_py("audit", image, "--timeout", "120", env=OFFLINE, timeout=300)
    assert run.code == EXIT_NO_DATABASE, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] in statements() and lines[1] == PINNED, run.stdout
    assert lines[2].startswith(f"==> auditing the Python packages of {image}:/usr/share/doc/tf29-env/sbom.cdx.json"), \
        run.stdout
    assert run.stderr.startswith("error: no vulnerability database answers") and run.stderr.count("\n") == 1


def test_the_docs_block_as_typed(image: str) -> None:
    plans = {("docs/upgrade.md", "python3 build.py audit"): Plan(placeholders={"tf29-env:latest-gpu": image},
                                                                 timeout=300)}
    said = {key[1]: docblocks.run_block(block, docblocks.bash(REPO, {**os.environ, **OFFLINE}), plan)
            for block, key, plan in docblocks.with_plans(BLOCKS, plans)}
    transcript = said["python3 build.py audit"]
    assert any(line in transcript for line in statements()), transcript
    assert PINNED in transcript and "audit exit 9" in transcript, transcript
