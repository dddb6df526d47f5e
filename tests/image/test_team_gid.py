"""TEAM_GID: the dev user joins one more group (a team's shared folder's), in everything a member runs:
the command and JupyterLab (setpriv --init-groups), `docker exec -u jovyan`, and SSH sessions, whose
groups sshd computes itself. Bad values stop the container with one line, exit 2; so does TEAM_GID
without root. The planner's rows: tests/unit/tf29image/startup/test_dev_user.py."""

import pytest

from testkit import ssh
from testkit.containers import TrackedContainer
from testkit.ssh import KeyPair
from tests.image.test_bad_input import assert_refused

TEAM_GID = "4321"  # a gid the image has no group for: the start makes one, named team


def test_the_command_and_jupyterlab_run_with_the_team_group(tracked: TrackedContainer) -> None:
    container = tracked.run(publish=(), environment={"TEAM_GID": TEAM_GID}, command=["id", "-G"])
    assert tracked.wait_exit(container, timeout=60) == 0, tracked.logs(container)
    # stdout alone: the entrypoint's notes on stderr may reach the log before or after it.
    assert container.logs(stdout=True, stderr=False).decode().split() == ["100", TEAM_GID]
    assert f"jovyan is in group team (gid {TEAM_GID}, TEAM_GID)" in tracked.logs(container)


def test_docker_exec_ssh_and_jupyter_have_the_team_group(tracked: TrackedContainer, keypair: KeyPair) -> None:
    container = tracked.run(environment={"TEAM_GID": TEAM_GID, "SSH_AUTHORIZED_KEYS": keypair.public_text})
    tracked.wait_healthy(container)
    code, out = tracked.exec(container, ["id", "-Gn"], user="jovyan")
    assert (code, out.split()) == (0, ["users", "team"])
    with ssh.connect(tracked.port(container, 22), "jovyan", keypair) as client:
        assert ssh.run(client, "id -G") == (0, f"100 {TEAM_GID}\n")
    # JupyterLab's own groups, which its kernels and terminals inherit.
    code, out = tracked.exec(container, ["sh", "-c", "grep ^Groups: /proc/$(pgrep -u 1000 -o -f jupyter-lab)/status"],
                             user="root")
    assert (code, out.split()) == (0, ["Groups:", "100", TEAM_GID])


@pytest.mark.parametrize(("value", "message"), [
    ("0", "TEAM_GID=0 is root's group, whose rights everything run in the notebooks and SSH sessions would get"),
    ("abc", "TEAM_GID='abc' is not a numeric id (0-2147483647)"),
    ("42", "TEAM_GID=42 is the image's system group 'shadow'"),
])
def test_a_bad_team_gid_is_refused(tracked: TrackedContainer, value: str, message: str) -> None:
    assert_refused(tracked, tracked.run(publish=(), environment={"TEAM_GID": value}), message)


def test_team_gid_without_root_is_refused(tracked: TrackedContainer) -> None:
    container = tracked.run(publish=(), user="1000:100", environment={"TEAM_GID": TEAM_GID})
    assert_refused(tracked, container, f"TEAM_GID={TEAM_GID} needs a container started as root, which adds jovyan to "
                                       f"the group in /etc/group, and this one runs as uid 1000: drop --user, or unset "
                                       f"TEAM_GID and pass the group with --group-add {TEAM_GID}")
