"""compose/member.py's GPU memory budget (GPU_MEMORY_LIMIT_MB): `add --gpu-memory MB` and `set NAME
--gpu-memory MB|off` write it into the member's environment; a value that is no positive number, or
more than one of the member's GPUs has (nvidia-smi's memory.total), is one line and nothing written.
The variable in a running member is tests/compose/test_team_data.py."""

import argparse
import re
import shutil
from pathlib import Path

import pytest

from compose import member
from tf29env.core.paths import REPO

# nvidia-smi --query-gpu=index,uuid,memory.total --format=csv,noheader,nounits on a box of two GPUs.
MEMORY = "0, GPU-aaaaaaaa-0000-0000-0000-000000000000, 40960\n1, GPU-bbbbbbbb-0000-0000-0000-000000000000, 16384\n"
TOTALS = member.parse_memory(MEMORY)


@pytest.fixture
def project(tmp_path: Path) -> member.Project:
    """The shipped files, with alice's secrets so that she counts as a member."""
    shutil.copy(REPO / "docker-compose.yml", tmp_path)
    (tmp_path / "compose").mkdir()
    shutil.copy(REPO / "compose" / "gpu.yml", tmp_path / "compose")
    for name in ("jupyter_token", "authorized_keys"):
        member.write_secret(tmp_path / "compose" / "secrets" / "alice" / name, "x\n")
    return member.Project.at(tmp_path)


def environment(project: member.Project, name: str) -> str:
    (line,) = [line for line in member.entry_lines(project.read(project.compose_file), "services", name)
               if "environment:" in line]
    return line


def test_memory_listing_is_keyed_by_index_and_uuid() -> None:
    assert TOTALS["1"] == 16384
    assert TOTALS["GPU-aaaaaaaa-0000-0000-0000-000000000000"] == 40960
    assert member.parse_memory("") == {}
    assert member.parse_memory("No devices were found\n") == {}


@pytest.mark.parametrize(("value", "expected"), [("4096", 4096), ("1", 1), ("off", None)])
def test_budget_values(value: str, expected: int | None) -> None:
    assert member.parse_budget(value) == expected


@pytest.mark.parametrize("value", ["0", "-5", "4g", "1.5", "", " 12", "9999999999"])
def test_bad_budgets_are_one_line(value: str) -> None:
    with pytest.raises(member.MemberError, match=r"^--gpu-memory .* is not a positive whole number of MiB"):
        member.parse_budget(value)


@pytest.mark.parametrize(("budget", "held", "refused"), [
    (16384, ("1",), None),  # all of it: TensorFlow's cap, not more
    (16385, ("1",), "more than GPU 1 has (16384 MiB)"),
    (20000, ("0", "1"), "more than GPU 1 has"),  # the smallest of the member's GPUs counts
    (20000, ("all",), "more than GPU"),
    (20000, ("GPU-bbbbbbbb-0000-0000-0000-000000000000",), "16384 MiB"),
    (99999, ("MIG-cccccccc-0000-0000-0000-000000000000",), None),  # unknown to the listing: not checked
    (99999, ("7",), None),
])
def test_budget_against_the_gpus(budget: int, held: tuple[str, ...], refused: str | None) -> None:
    if refused is None:
        member.check_budget(budget, held, TOTALS)
        member.check_budget(budget, held, {})  # no nvidia-smi: nothing to check against
    else:
        with pytest.raises(member.MemberError, match=re.escape(refused)):
            member.check_budget(budget, held, TOTALS)


def test_set_changes_and_removes_the_budget(project: member.Project) -> None:
    before = project.compose_file.read_text()
    assert member.set_budget(project, "alice", "8192")[0].startswith("alice: 8192 MiB of each of its GPUs")
    line = environment(project, "alice")
    assert line == '    environment: {<<: *member-env, NB_UID: "1001", NB_GID: "1001", GPU_MEMORY_LIMIT_MB: "8192"}'
    member.set_budget(project, "alice", "2048")
    assert environment(project, "alice").count("GPU_MEMORY_LIMIT_MB") == 1
    assert environment(project, "alice").endswith('GPU_MEMORY_LIMIT_MB: "2048"}')
    member.set_budget(project, "alice", "off")
    assert project.compose_file.read_text() == before  # every other line as it was
    assert 'GPU_MEMORY_LIMIT_MB' not in environment(project, "bob")


@pytest.mark.parametrize(("name", "value", "words"), [
    ("carol", "1024", "'carol' is not a member"),
    ("alice", "lots", "--gpu-memory 'lots' is not a positive whole number"),
])
def test_set_refuses_without_writing(project: member.Project, name: str, value: str, words: str) -> None:
    before = project.compose_file.read_text()
    with pytest.raises(member.MemberError, match=words):
        member.set_budget(project, name, value)
    assert project.compose_file.read_text() == before


def test_add_writes_the_budget(project: member.Project, tmp_path: Path) -> None:
    key = tmp_path / "dana.pub"
    key.write_text("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB1 dana\n")
    args = argparse.Namespace(name="dana", uid=1105, gid=1105, jupyter_port=None, ssh_port=None, gpus="1",
                              gpu_ids=None, ssh_key=key, gpu_memory="3000")
    done = member.add(project, args)
    assert "3000 MiB of each GPU for TensorFlow" in done[-1]
    assert environment(project, "dana").endswith('NB_GID: "1105", GPU_MEMORY_LIMIT_MB: "3000"}')
    service = member.entry_lines(project.read(project.compose_file), "services", "dana")
    assert "      - *team-data" in service and "      - *tls-key" in service
    assert '      - "${TF29ENV_JUPYTER_ADDRESS:-127.0.0.1}:8803:8888"' in service
