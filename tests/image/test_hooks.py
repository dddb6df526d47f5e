"""Start hooks (/etc/tf29-env/start.d, then docker-stacks' /usr/local/bin/start-notebook.d and
before-notebook.d): a sourced *.sh hook runs in a subshell of its own with `set -e` and without
`set -u`; what a hook that succeeded exports (or unsets) reaches later hooks, JupyterLab and SSH
sessions; a failing hook of either kind is logged and start-up goes on, in every folder."""

from pathlib import Path

from docker.models.containers import Container

from testkit import ssh
from testkit.containers import TrackedContainer
from testkit.ssh import KeyPair

HOOKS_DIR = "/etc/tf29-env/start.d"
# docker-stacks' folders, which its images' users mount hooks into; they run after ours, in this order.
START_NOTEBOOK_DIR = "/usr/local/bin/start-notebook.d"
BEFORE_NOTEBOOK_DIR = "/usr/local/bin/before-notebook.d"
# The hooks are what is tested here: spare the shared 2-core host the self-check's TensorFlow import.


def start(tracked: TrackedContainer, tmp_path: Path, hooks: dict[str, str],
          environment: dict[str, str] | None = None, publish: tuple[int, ...] = (8888,)) -> Container:
    """A container with these hooks in /etc/tf29-env/start.d, once it is healthy."""
    return start_with(tracked, tmp_path, {HOOKS_DIR: hooks}, environment, publish)


def start_with(tracked: TrackedContainer, tmp_path: Path, folders: dict[str, dict[str, str]],
               environment: dict[str, str] | None = None, publish: tuple[int, ...] = (8888,)) -> Container:
    """A container with these hook folders (files without .sh are made executable), once it is healthy."""
    volumes = {}
    for index, (where, hooks) in enumerate(folders.items()):
        folder = tmp_path / f"hooks{index}"
        folder.mkdir()
        for name, text in hooks.items():
            (folder / name).write_text(text)
            if not name.endswith(".sh"):
                (folder / name).chmod(0o755)
        volumes[str(folder)] = {"bind": where, "mode": "ro"}
    container = tracked.run(volumes=volumes, environment=environment or {}, publish=publish)
    tracked.wait_healthy(container)
    return container


def failed(name: str, code: int, folder: str = HOOKS_DIR) -> str:
    return f"start hook {folder}/{name} failed (exit {code}); continuing"


def jupyter_environment(tracked: TrackedContainer, container: Container) -> dict[str, str]:
    """The environment JupyterLab's server runs with (and hands to its kernels and terminals)."""
    code, pid = tracked.exec(container, ["pgrep", "-o", "-f", "jupyter-lab"])
    assert code == 0, pid
    # As the dev user: root without CAP_SYS_PTRACE (Docker's default) may not read another uid's.
    code, text = tracked.exec(container, ["cat", f"/proc/{pid.strip()}/environ"], user="jovyan")
    assert code == 0, text
    return dict(entry.split("=", 1) for entry in text.split("\0") if "=" in entry)


def test_a_sourced_hook_failing_in_its_middle_stops_there(tracked: TrackedContainer, tmp_path: Path) -> None:
    mark = "/root/ran-after-false"  # hooks run as root here
    container = start(tracked, tmp_path, {
        "10-midway.sh": f"export BEFORE_FALSE=set\nfalse\ntouch {mark}\nexport AFTER_FALSE=set\n",
    })
    assert failed("10-midway.sh", 1) in tracked.logs(container)
    code, _ = tracked.exec(container, ["test", "-e", mark])
    assert code == 1, "the hook went on after its failing command"
    environment = jupyter_environment(tracked, container)
    assert "BEFORE_FALSE" not in environment and "AFTER_FALSE" not in environment  # a failed hook's exports


def test_a_hook_reading_an_unset_variable_runs_to_its_end(tracked: TrackedContainer, tmp_path: Path) -> None:
    # Under the entrypoint's `set -u` this once killed the container before anything started.
    container = start(tracked, tmp_path, {
        "10-unset.sh": 'echo "unset reads as [${TF29_TEST_NEVER_SET}]"\nexport READ_UNSET=done\n',
    })
    logs = tracked.logs(container)
    assert "unset reads as []" in logs
    assert "10-unset.sh failed" not in logs  # an unset variable is not a failure
    assert jupyter_environment(tracked, container)["READ_UNSET"] == "done"


def test_exports_reach_later_hooks_jupyter_and_ssh(tracked: TrackedContainer, tmp_path: Path,
                                                   keypair: KeyPair) -> None:
    container = start(tracked, tmp_path, {
        "10-export.sh": "export HOOKED=from-a-sourced-hook\n",
        "20-later.sh": 'export SEEN_BY_LATER_HOOK="$HOOKED"\nunset TF29_TEST_UNSET_BY_HOOK\n',
        "30-early.sh": "export BEFORE_EXIT_0=kept\nexit 0\nexport AFTER_EXIT_0=set\n",
    }, environment={"SSH_AUTHORIZED_KEYS": keypair.public_text, "TF29_TEST_UNSET_BY_HOOK": "x"},
        publish=(8888, 22))
    logs = tracked.logs(container)
    assert "failed" not in logs, logs
    environment = jupyter_environment(tracked, container)
    assert environment["HOOKED"] == environment["SEEN_BY_LATER_HOOK"] == "from-a-sourced-hook"
    assert "TF29_TEST_UNSET_BY_HOOK" not in environment
    assert environment["BEFORE_EXIT_0"] == "kept" and "AFTER_EXIT_0" not in environment
    with ssh.connect(tracked.port(container, 22), "jovyan", keypair) as client:
        code, out = ssh.run(client, 'echo "HOOKED=$HOOKED"')
    assert (code, out.strip()) == (0, "HOOKED=from-a-sourced-hook")


def test_failing_hooks_of_both_kinds_are_logged_and_start_up_goes_on(tracked: TrackedContainer,
                                                                     tmp_path: Path) -> None:
    container = start(tracked, tmp_path, {
        "10-exits.sh": "export BEFORE_EXIT_4=set\nexit 4\n",  # ends the hook, no longer the container
        "20-fails": "#!/bin/sh\necho executable hook ran >&2\nexit 3\n",
        "30-after.sh": "export AFTER_FAILURES=yes\n",
    })
    logs = tracked.logs(container)
    assert failed("10-exits.sh", 4) in logs
    assert "executable hook ran" in logs and failed("20-fails", 3) in logs
    environment = jupyter_environment(tracked, container)
    assert environment["AFTER_FAILURES"] == "yes" and "BEFORE_EXIT_4" not in environment


def test_docker_stacks_hook_folders_run_after_ours_with_the_same_rules(tracked: TrackedContainer,
                                                                       tmp_path: Path) -> None:
    container = start_with(tracked, tmp_path, {
        HOOKS_DIR: {"10-ours.sh": "export HOOK_ORDER=ours\n"},
        START_NOTEBOOK_DIR: {
            "10-unset.sh": 'echo "docker-stacks unset reads as [${TF29_TEST_NEVER_SET}]"\n'
                           'export HOOK_ORDER="$HOOK_ORDER start-notebook.d"\n',
            # The hook's own `set -e` holds: it stops at `false`, and its exports are dropped.
            "20-errexit.sh": "set -e\nexport BEFORE_ERREXIT=set\nfalse\nexport AFTER_ERREXIT=set\n",
            # The hook's own `set -u` holds too, inside it alone.
            "30-nounset.sh": 'set -u\necho "never printed: $TF29_TEST_NEVER_SET"\nexport AFTER_NOUNSET=set\n',
        },
        BEFORE_NOTEBOOK_DIR: {
            "10-fails": "#!/bin/sh\necho docker-stacks executable hook ran >&2\nexit 5\n",
            "20-last.sh": 'export HOOK_ORDER="$HOOK_ORDER before-notebook.d"\n',
        },
    })
    logs = tracked.logs(container)
    assert "docker-stacks unset reads as []" in logs and "never printed" not in logs
    assert failed("20-errexit.sh", 1, START_NOTEBOOK_DIR) in logs
    assert failed("30-nounset.sh", 1, START_NOTEBOOK_DIR) in logs
    assert "docker-stacks executable hook ran" in logs and failed("10-fails", 5, BEFORE_NOTEBOOK_DIR) in logs
    environment = jupyter_environment(tracked, container)
    assert environment["HOOK_ORDER"] == "ours start-notebook.d before-notebook.d"
    assert not {"BEFORE_ERREXIT", "AFTER_ERREXIT", "AFTER_NOUNSET"} & environment.keys()
