"""tf29image.dockerstacks.start_command, docker-stacks' start commands as files: what each name execs, as PID
1 (under tini) and otherwise, and the refusals; and that its names are those the image links and the
entrypoint knows. No engine needed (tests/image/test_dockerstacks_server.py runs them for real)."""

import importlib.machinery
import importlib.util
import re
from types import ModuleType

import pytest

from tests.unit.tf29image import IMAGE_PYTHON
from tf29env.core.paths import REPO
from tf29image.startup import services

SCRIPT = IMAGE_PYTHON / "tf29image" / "dockerstacks" / "start_command.py"  # loaded afresh: ENTRYPOINT is set
ENTRYPOINT = "/opt/tf29-env/entrypoint.sh"  # where the image has it, the healthcheck's ENTRYPOINT there


@pytest.fixture(scope="module")
def start_command() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("start_command", str(SCRIPT))
    spec = importlib.util.spec_from_loader("start_command", loader)
    assert spec
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    setattr(module, "ENTRYPOINT", ENTRYPOINT)  # noqa: B010 - in the repository it names the checkout's copy
    return module


@pytest.mark.parametrize("name", ["start-notebook.sh", "start-notebook.py", "start-singleuser.sh",
                                  "start-singleuser.py", "start.sh"])
def test_as_pid_1_the_name_and_args_go_to_the_entrypoint_under_tini(start_command: ModuleType, name: str) -> None:
    assert start_command.command_line(f"/usr/local/bin/{name}", ["--x=1", "a b"], 1, False) == [
        "/usr/bin/tini", "--", ENTRYPOINT, name, "--x=1", "a b"]


def test_otherwise_to_the_entrypoint_directly(start_command: ModuleType) -> None:
    assert start_command.command_line("start-singleuser.py", [], 57, False) == [ENTRYPOINT, "start-singleuser.py"]


def test_services_start_once_but_start_sh_runs_beside_them(start_command: ModuleType) -> None:
    with pytest.raises(start_command.Refused, match=r"^start-notebook.py: this container's services already run"):
        start_command.command_line("/usr/local/bin/start-notebook.py", [], 80, True)
    assert start_command.command_line("/usr/local/bin/start.sh", ["id"], 80, True) == [ENTRYPOINT, "start.sh", "id"]


def test_another_name_is_refused_in_one_line(start_command: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    assert start_command.main(["/opt/start-lab.sh", "x"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tf29-env: ERROR: /opt/start-lab.sh: not one of docker-stacks' start commands")
    assert err.count("\n") == 1


def test_the_image_links_every_name_and_the_entrypoint_knows_each(start_command: ModuleType) -> None:
    dockerfile = (REPO / "Dockerfile").read_text()
    linked = re.search(r"for name in ([^;]+); do \\\n\s+"
                       r"ln -s /opt/tf29-env/python/tf29image/dockerstacks/start_command.py", dockerfile)
    assert linked, "the Dockerfile's loop linking the start commands"
    assert tuple(linked.group(1).split()) == start_command.COMMANDS
    known = {*services.HUB_COMMANDS, *services.NOTEBOOK_COMMANDS, services.COMMAND_WRAPPER}
    assert set(start_command.COMMANDS) <= known
