"""What a newer image may not read, it keeps aside and says so (issue 40, docs/packages.md), on the
real engine: a ~/.local volume holds a person's state as an earlier image left it (written by a
first container, as the dev user, through the links the entrypoint makes), with Lab settings that
this JupyterLab takes, one with a key its schema does not know, one that is not JSON5, one for an
extension it lacks, and two kernelspecs, one of an environment whose Python is gone. The next
container's start keeps the rejected files aside, whole, in a dated folder beside the settings
(renamed: the same inode and owner), names each and the gone kernel in one line, and leaves the rest;
JupyterLab then serves the valid settings through its settings API, whose listing a file it cannot
parse would have failed (HTTP 500)."""

import base64
import contextlib
import io
import json
import re
import secrets
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import requests
from docker import DockerClient
from docker.models.containers import Container

from testkit.containers import LOOPBACK, TrackedContainer

pytestmark = pytest.mark.image

TOKEN = "keptaside-token-8d2f61"
HOME = "/home/jovyan"
SETTINGS = f"{HOME}/.jupyter/lab/user-settings"
OWNER = "1000:100"  # jovyan:users, the dev user as built
PREFIX = "tf29-env: kept aside Lab settings "  # what the upgrade tool greps the log for

VALID = "@jupyterlab/apputils-extension/themes"  # JSON5 with a comment and a trailing comma, as Lab writes it
FEDERATED = "@jupyter-widgets/jupyterlab-manager/plugin"  # a federated extension's own schema
UNKNOWN_KEY = "@jupyterlab/notebook-extension/tracker"
NOT_JSON5 = "@jupyterlab/fileeditor-extension/plugin"
NO_PLUGIN = "@nosuch/extension/plugin"
FILES = {
    VALID: b'{\n  // chosen in the Settings menu\n  "theme": "JupyterLab Dark",\n}\n',
    FEDERATED: b'{"saveState": true}',
    UNKNOWN_KEY: b'{\n  "kernelShutdown": true,\n  "noSuchSetting": 1\n}\n',
    NOT_JSON5: b'{"editorConfig": {"lineNumbers": true}',
    NO_PLUGIN: b'{"anything": [1, 2, 3]}',
}
KEPT = {
    UNKNOWN_KEY: "rejected by this JupyterLab's schema (Additional properties are not allowed "
                 "('noSuchSetting' was unexpected))",
    NOT_JSON5: "not valid JSON5 (<string>:1 Unexpected end of input at column 39)",
}
GONE_KERNEL = {"argv": [f"{HOME}/envs/gone/bin/python", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
               "display_name": "Gone env", "language": "python"}
FINE_KERNEL = {"argv": ["/opt/venv/bin/python", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
               "display_name": "Fine env", "language": "python"}
GONE_LINE = (f"tf29-env: kernel gone (Gone env) points at {HOME}/envs/gone/bin/python, which is gone: rebuild it "
             "with: mv ~/envs/gone ~/envs/gone.old && python -m venv ~/envs/gone && ~/envs/gone/bin/pip install "
             "ipykernel && ~/envs/gone/bin/python -m ipykernel install --user --name gone --display-name 'Gone env'")


def settings_path(name: str) -> str:
    return f".jupyter/lab/user-settings/{name}.jupyterlab-settings"


def seed_archive() -> bytes:
    """The state, relative to the home folder: files and one link, no folder entries (tar would
    replace the entrypoint's links ~/.jupyter and ~/envs with folders)."""
    kernels = ".local/share/jupyter/kernels"
    files = {settings_path(name): data for name, data in FILES.items()}
    files[f"{kernels}/gone/kernel.json"] = json.dumps(GONE_KERNEL).encode()
    files[f"{kernels}/fine/kernel.json"] = json.dumps(FINE_KERNEL).encode()
    files["envs/gone/pyvenv.cfg"] = b"home = /usr/bin\nversion = 3.7.3\n"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            archive.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("envs/gone/bin/python")
        link.type, link.linkname = tarfile.SYMTYPE, "/usr/bin/python3.7"  # an interpreter no image of ours has
        archive.addfile(link)
    return buffer.getvalue()


@dataclass
class Started:
    tracked: TrackedContainer
    container: Container
    seeded: dict[str, str]  # settings name -> "INODE UID:GID" when the first container wrote it
    log: str

    def exec(self, command: str) -> str:
        code, out = self.tracked.exec(self.container, ["bash", "-c", command], user="jovyan")
        assert code == 0, out
        return out

    def get(self, path: str) -> requests.Response:
        port = self.tracked.port(self.container, 8888)
        return requests.get(f"http://{LOOPBACK}:{port}/{path}", headers={"Authorization": f"token {TOKEN}"},
                            timeout=30)


@pytest.fixture(scope="module")
def started(docker_client: DockerClient, module_tracked: TrackedContainer) -> Iterator[Started]:
    volume = f"tf29-test-keptaside-local-{secrets.token_hex(4)}"
    docker_client.volumes.create(volume)
    mounts = {volume: {"bind": f"{HOME}/.local", "mode": "rw"}}
    listing = ("cd ~/.jupyter/lab/user-settings && find . -name '*.jupyterlab-settings' "
               "-printf '%P %i %U:%G\\n'")
    try:
        # An earlier container: the entrypoint links ~/.jupyter and ~/envs into the volume, then the dev
        # user writes the state there, as Lab's Settings editor and `ipykernel install --user` would.
        first = module_tracked.run(
            publish=(), environment={"SEED": base64.b64encode(seed_archive()).decode()},
            command=["bash", "-c", 'set -euo pipefail; echo "$SEED" | base64 -d | '
                     f'tar -x -C "$HOME" --keep-directory-symlink; {listing}'],
            volumes=mounts)
        assert module_tracked.wait_exit(first, timeout=120) == 0, module_tracked.logs(first)
        seeded = {}
        for line in module_tracked.logs(first, stderr=False).splitlines():
            name, _, rest = line.partition(".jupyterlab-settings ")
            if rest:
                seeded[name] = rest
        assert sorted(seeded) == sorted(FILES), module_tracked.logs(first)
        first.remove(force=True)
        container = module_tracked.run(environment={"JUPYTER_TOKEN": TOKEN}, volumes=mounts)
        module_tracked.wait_healthy(container, timeout=120)
        yield Started(module_tracked, container, seeded, module_tracked.logs(container))
    finally:
        module_tracked.remove_all()
        with contextlib.suppress(Exception):  # never made: nothing to remove
            docker_client.volumes.get(volume).remove(force=True)


def kept_lines(log: str) -> dict[str, tuple[str, str]]:
    """name -> (reason, new path), from the log's kept-aside lines."""
    found = {}
    for line in log.splitlines():
        if line.startswith(PREFIX):
            match = re.fullmatch(r"(\S+): (.*) -> (\S+)", line[len(PREFIX):])
            assert match, line
            assert match.group(1) not in found, f"{match.group(1)} named twice"
            found[match.group(1)] = (match.group(2), match.group(3))
    return found


def test_each_rejected_file_is_kept_aside_whole_with_one_line(started: Started) -> None:
    kept = kept_lines(started.log)
    assert sorted(kept) == sorted(KEPT), started.log
    folders = set()
    for name, (reason, path) in kept.items():
        assert reason == KEPT[name]
        folder = rf"{re.escape(SETTINGS)}-kept-aside-\d{{8}}-\d{{6}}"
        match = re.fullmatch(rf"({folder})/{re.escape(name)}\.jupyterlab-settings", path)
        assert match, path
        folders.add(match.group(1))
        # Renamed, not copied: the inode, owner and bytes the first container wrote.
        assert started.exec(f"stat -c '%i %u:%g' {path}").strip() == started.seeded[name]
        assert started.seeded[name].endswith(f" {OWNER}")
        assert base64.b64decode(started.exec(f"base64 -w0 {path}")) == FILES[name]
        assert started.exec(f"test ! -e {HOME}/{settings_path(name)} && echo gone").strip() == "gone"
    assert len(folders) == 1, folders
    assert started.exec(f"stat -c '%U:%G %F' {folders.pop()}").strip() == "jovyan:users directory"


def test_what_jupyterlab_takes_and_an_unknown_plugins_file_stay(started: Started) -> None:
    for name in (VALID, FEDERATED, NO_PLUGIN):
        path = f"{HOME}/{settings_path(name)}"
        assert started.exec(f"stat -c '%i %u:%g' {path}").strip() == started.seeded[name], name
        assert base64.b64decode(started.exec(f"base64 -w0 {path}")) == FILES[name], name
    assert f"Lab settings {NO_PLUGIN}" not in started.log


def test_jupyterlab_serves_the_valid_settings(started: Started) -> None:
    themes = started.get("lab/api/settings/@jupyterlab/apputils-extension:themes")
    assert themes.status_code == 200, themes.text
    assert themes.json()["settings"] == {"theme": "JupyterLab Dark"}
    assert themes.json()["raw"] == FILES[VALID].decode()  # the comment kept, as the Settings editor shows it
    widgets = started.get("lab/api/settings/@jupyter-widgets/jupyterlab-manager:plugin")
    assert widgets.status_code == 200, widgets.text
    assert widgets.json()["settings"] == {"saveState": True}
    # The plugins whose files were kept aside start from their defaults; the whole listing answers, which
    # the file that is not JSON5 would have failed.
    tracker = started.get("lab/api/settings/@jupyterlab/notebook-extension:tracker")
    assert tracker.status_code == 200 and tracker.json()["settings"] == {}, tracker.text
    listing = started.get("lab/api/settings/")
    assert listing.status_code == 200, listing.text[-2000:]
    by_id = {entry["id"]: entry for entry in listing.json()["settings"]}
    assert by_id["@jupyterlab/apputils-extension:themes"]["settings"] == {"theme": "JupyterLab Dark"}
    assert by_id["@jupyterlab/fileeditor-extension:plugin"]["settings"] == {}


def test_a_kernel_whose_python_is_gone_is_named_with_the_rebuild(started: Started) -> None:
    lines = [line for line in started.log.splitlines() if line.startswith("tf29-env: kernel ")]
    assert lines == [GONE_LINE], started.log
    # Nothing is moved for kernels.
    assert started.exec("ls ~/.local/share/jupyter/kernels").split() == ["fine", "gone"]
    specs = started.get("api/kernelspecs")
    assert specs.status_code == 200 and {"fine", "gone"} <= set(specs.json()["kernelspecs"]), specs.text
