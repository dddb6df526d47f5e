"""What a user installs and sets up stays, and cannot break the stack (issue 29, docs/packages.md), on
the real engine, offline: the wheels are built here and served from a folder (`--no-index
--find-links /wheels`). pip in a JupyterLab terminal and %pip in a notebook's kernel install into
~/.local, a volume; a package that would replace a pin (numpy==2.0.0) is refused in one line, one
that cannot be installed leaves the user site as it was; the self-check names a package that breaks
a pin; an environment of one's own becomes a kernel. Then the container is removed and a new one
started on the same volume, and then one of a newer image (built here FROM the image under test, with
a changed package that a compiled user package depends on, a new quickstart notebook and new
dotfiles): packages, environments, Lab's theme and git's identity are still there, the compiled
package is reported in one line and `user-packages reinstall` rebuilds it. Last, the Apptainer mode
as tests/image/test_apptainer_mode.py imitates it: pip installs into the host's home."""

import contextlib
import io
import json
import platform
import secrets
import shutil
import subprocess
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import requests
from docker import DockerClient
from docker.models.containers import Container

from testkit import ssh
from testkit.containers import LOOPBACK, TrackedContainer
from testkit.kernel import LabKernel
from testkit.ssh import KeyPair
from testkit.terminal import LabTerminal, screen_text, type_command
from testkit.wheels import build_wheel, module_files

pytestmark = pytest.mark.image

TOKEN = "userpkgs-token-5c1e9a"
HOME = "/home/jovyan"
LOCAL = f"{HOME}/.local"
FIND = "--no-index --find-links /wheels"
THEMES = "lab/api/settings/@jupyterlab/apputils-extension:themes"
DARK = "JupyterLab Dark"
REFUSED = "numpy2pin 1.0 needs numpy==2.0.0, but this image pins numpy==1.23.5"
OWN_ENV = "install it in an environment of your own: python -m venv ~/envs/NAME (docs/packages.md)"
NEW_NOTEBOOK = "9-what-is-new.ipynb"
BASHRC_MARK = "# tf29-env: the bashrc of the newer image"
PROFILE_MARK = "# tf29-env: the profile of the newer image"
ANSWER_C = "int tf29_answer(void) { return 42; }\n"
USEREXT = ("import ctypes, os\n"
           "ANSWER = ctypes.CDLL(os.path.join(os.path.dirname(__file__), '_answer.so')).tf29_answer()\n")


def compiled_library(folder: Path) -> bytes:
    """A real shared library, compiled here with the host's gcc (no libc: it loads anywhere)."""
    compiler = shutil.which("gcc")
    assert compiler, "gcc is not installed: the compiled user package cannot be built (scripts/host-setup.sh)"
    (folder / "answer.c").write_text(ANSWER_C)
    subprocess.run([compiler, "-shared", "-fPIC", "-nostdlib", "-o", str(folder / "_answer.so"),
                    str(folder / "answer.c")], check=True)
    return (folder / "_answer.so").read_bytes()


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("wheels")
    scratch = tmp_path_factory.mktemp("gcc")
    build_wheel(folder, "tf29probe", "1.0", module_files("tf29probe", "1.0"), requires=("numpy>=1.20",))
    build_wheel(folder, "tf29nb", "1.0", module_files("tf29nb", "1.0"))
    build_wheel(folder, "numpy2pin", "1.0", module_files("numpy2pin", "1.0"), requires=("numpy==2.0.0",))
    # Without the guard pip would take it: a numpy 2.0.0 that installs anywhere.
    build_wheel(folder, "numpy", "2.0.0", module_files("numpy", "2.0.0"))
    build_wheel(folder, "winonly", "1.0", module_files("winonly", "1.0"), tag="py3-none-win_amd64")
    (folder / "broken-1.0-py3-none-any.whl").write_bytes(b"PK\x03\x04 not a zip archive after all")
    for version in ("1.0", "2.0"):
        build_wheel(folder, "stackdep", version, module_files("stackdep", version))
    build_wheel(folder, "userext", "1.0",
                {"userext/__init__.py": USEREXT, "userext/_answer.so": compiled_library(scratch)},
                requires=("stackdep",), tag=f"py3-none-linux_{platform.machine()}")
    folder.chmod(0o755)
    for wheel in folder.iterdir():
        wheel.chmod(0o644)
    return folder


@dataclass
class Images:
    old: str
    new: str


def derived(client: DockerClient, base: str, tag: str, wheels: Path, steps: list[str]) -> str:
    """An image FROM BASE with STEPS, the wheels in its build context at /tmp/wheels."""
    context = io.BytesIO()
    dockerfile = "\n".join([f"FROM {base}", "COPY wheels /tmp/wheels", *steps, "RUN rm -rf /tmp/wheels", ""])
    with tarfile.open(fileobj=context, mode="w") as archive:
        data = dockerfile.encode()
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
        archive.add(str(wheels), arcname="wheels")
    context.seek(0)
    client.images.build(fileobj=context, custom_context=True, tag=tag, rm=True, forcerm=True)
    return tag


@pytest.fixture(scope="module")
def images(docker_client: DockerClient, image: str, wheels: Path) -> Iterator[Images]:
    """The image under test with stackdep 1.0 (root's pip install in a Dockerfile goes into the venv,
    as before), and a newer one built FROM it: stackdep 2.0 (root may change a pinned package of the
    venv on purpose), a new quickstart notebook, new .bashrc and .profile."""
    name = f"tf29-env-test-userpkgs-{secrets.token_hex(4)}"
    install = "RUN pip install --no-index --find-links /tmp/wheels stackdep=={}"
    try:
        old = derived(docker_client, image, f"{name}:old", wheels, [install.format("1.0")])
        new = derived(docker_client, old, f"{name}:new", wheels, [
            install.format("2.0"),
            f"RUN cp {HOME}/quickstart/1-environment.ipynb {HOME}/quickstart/{NEW_NOTEBOOK}"
            f" && echo '{BASHRC_MARK}' >> {HOME}/.bashrc && echo '{PROFILE_MARK}' >> {HOME}/.profile"])
        yield Images(old, new)
    finally:
        for tag in (f"{name}:old", f"{name}:new"):
            with contextlib.suppress(Exception):  # a build that failed made no image
                docker_client.images.remove(tag, force=True)


@dataclass
class Box:
    """Containers of the images on one ~/.local volume (and one ~/work): the user's state."""

    tracked: TrackedContainer
    volume: str
    work: str
    wheels: Path
    keypair: KeyPair
    container: Container | None = None
    installed: dict[str, tuple[int, str]] = field(default_factory=dict)

    def start(self, image: str, **environment: str) -> Container:
        self.tracked.image = image
        self.container = self.tracked.run(
            environment={"JUPYTER_TOKEN": TOKEN, "SSH_AUTHORIZED_KEYS": self.keypair.public_text,
                         **environment},
            volumes={self.volume: {"bind": LOCAL, "mode": "rw"}, self.work: {"bind": f"{HOME}/work", "mode": "rw"},
                     str(self.wheels): {"bind": "/wheels", "mode": "ro"}})
        self.tracked.wait_healthy(self.container, timeout=120)
        return self.container

    def remove(self) -> None:
        assert self.container is not None
        self.container.remove(force=True)
        self.container = None

    @property
    def url(self) -> str:
        assert self.container is not None
        return f"http://{LOOPBACK}:{self.tracked.port(self.container, 8888)}/"

    def terminal(self, command: str, timeout: float = 180) -> tuple[int, str]:
        """COMMAND typed into a JupyterLab terminal, as the launcher opens one."""
        terminal = LabTerminal(self.url, TOKEN, {"cwd": ""})
        try:
            return type_command(terminal, command, timeout=timeout)
        finally:
            terminal.close()

    def cell(self, code: str, kernel_name: str = "python3") -> tuple[str, str]:
        """CODE run as a cell of a new notebook's kernel."""
        kernel = LabKernel(self.url, TOKEN, kernel_name)
        try:
            return kernel.execute(code)
        finally:
            kernel.close()

    def ssh(self, command: str) -> tuple[int, str]:
        assert self.container is not None
        client = ssh.connect(self.tracked.port(self.container, 22), "jovyan", self.keypair)
        try:
            return ssh.run(client, command)
        finally:
            client.close()

    def exec(self, command: str) -> tuple[int, str]:
        assert self.container is not None
        return self.tracked.exec(self.container, ["bash", "-c", command], user="jovyan")

    def user_site(self) -> str:
        code, out = self.exec("python -c 'import site; print(site.getusersitepackages())'")
        assert code == 0, out
        return out.strip().splitlines()[-1]

    def listing(self) -> str:
        code, out = self.exec(f"cd {LOCAL}/lib && find . | sort && cat $(find . -type f | sort) | md5sum")
        assert code == 0, out
        return out

    def theme(self) -> str:
        response = requests.get(f"{self.url}{THEMES}", headers={"Authorization": f"token {TOKEN}"}, timeout=30)
        response.raise_for_status()
        return str(response.json()["settings"].get("theme", ""))


@pytest.fixture(scope="module")
def box(docker_client: DockerClient, images: Images, wheels: Path, keypair: KeyPair) -> Iterator[Box]:
    suffix = secrets.token_hex(4)
    volume, work = f"tf29-test-userpkgs-local-{suffix}", f"tf29-test-userpkgs-work-{suffix}"
    tracked = TrackedContainer(docker_client, images.old)
    try:
        started = Box(tracked, volume, work, wheels, keypair)
        started.start(images.old)
        yield started
    finally:
        tracked.remove_all()
        for name in (volume, work):
            with contextlib.suppress(Exception):  # never made: nothing to remove
                docker_client.volumes.get(name).remove(force=True)


@pytest.fixture(scope="module")
def installed(box: Box) -> Box:
    """What a user does in a first session: pip in a terminal, %pip in a notebook, a compiled package
    that needs stackdep, an environment of their own as a kernel, Lab's theme and git's identity."""
    box.installed["terminal"] = box.terminal(f"pip install {FIND} tf29probe && pip check")
    status, shown = box.cell(f"%pip install {FIND} tf29nb\nimport tf29nb\nprint('imported from', tf29nb.__file__)")
    box.installed["notebook"] = (0 if status == "ok" else 1, shown)
    box.installed["compiled"] = box.terminal(f"pip install {FIND} userext && python -c 'import userext; "
                                             "print(\"answer\", userext.ANSWER)'")
    box.installed["own-env"] = box.terminal(
        "python -m venv ~/envs/stack2 && "
        "echo /opt/venv/lib/python3.9/site-packages > $(echo ~/envs/stack2/lib/python3.*/site-packages)/image.pth && "
        f"~/envs/stack2/bin/pip install -q {FIND} numpy==2.0.0 && "
        "~/envs/stack2/bin/python -m ipykernel install --user --name stack2 --display-name 'numpy 2 stack'")
    box.installed["settings"] = box.terminal("git config --global user.name 'Ada Lovelace' && "
                                             "echo '# mine' >> ~/.profile && git config --global user.name")
    response = requests.put(f"{box.url}{THEMES}", headers={"Authorization": f"token {TOKEN}"},
                            data=json.dumps({"raw": json.dumps({"theme": DARK})}), timeout=30)
    box.installed["theme"] = (response.status_code, response.text)
    return box


def error_lines(output: str) -> list[str]:
    """pip's ERROR lines, as a person reads them (%pip runs pip on a pseudo-terminal: colours, CRs)."""
    return [line for line in screen_text(output).splitlines() if line.startswith("ERROR:")]


def test_pip_in_a_lab_terminal_installs_into_the_user_site(installed: Box) -> None:
    code, output = installed.installed["terminal"]
    assert code == 0, output
    assert "Successfully installed tf29probe-1.0" in output and "No broken requirements found." in output, output
    site = installed.user_site()
    assert site.startswith(f"{LOCAL}/lib/python3.") and site.endswith("/site-packages"), site
    code, where = installed.exec("python -c 'import tf29probe; print(tf29probe.__file__)'; "
                                 "ls /opt/venv/lib/python3.*/site-packages | grep -c tf29probe")
    assert where.splitlines() == [f"{site}/tf29probe/__init__.py", "0"], where


def test_percent_pip_in_a_notebook_installs_and_imports_in_the_same_kernel(installed: Box) -> None:
    code, shown = installed.installed["notebook"]
    assert code == 0, shown
    assert "Successfully installed tf29nb-1.0" in shown, shown
    assert f"imported from {installed.user_site()}/tf29nb/__init__.py" in shown, shown


def test_a_package_that_needs_another_numpy_is_refused_in_one_line(installed: Box) -> None:
    before = installed.listing()
    code, output = installed.terminal(f"pip install {FIND} numpy2pin")
    assert code != 0, output
    (line,) = error_lines(output)
    assert line == f"ERROR: {REFUSED} (part of its TensorFlow 2.9 stack), so nothing was installed. To use another " \
                   f"numpy, {OWN_ENV}", output
    _status, shown = installed.cell(f"%pip install {FIND} numpy==2.0.0")
    (line,) = error_lines(shown)
    assert line.startswith("ERROR: you asked for numpy==2.0.0, but this image pins numpy==1.23.5"), shown
    code, output = installed.terminal("pip uninstall -y numpy")
    (line,) = error_lines(output)
    assert code != 0 and line.startswith("ERROR: numpy 1.23.5 is part of the image's pinned stack"), output
    assert installed.listing() == before
    code, output = installed.exec("python -c 'import numpy, tensorflow; print(numpy.__version__)' 2>/dev/null; "
                                  "pip check")
    assert output.splitlines() == ["1.23.5", "No broken requirements found."], output


@pytest.mark.parametrize(("package", "pips_error"), [
    ("/wheels/broken-1.0-py3-none-any.whl", "ERROR: Wheel 'broken' located at /wheels/broken-1.0-py3-none-any.whl "
                                            "is invalid."),
    (f"{FIND} winonly", "ERROR: No matching distribution found for winonly"),
], ids=["broken-archive", "no-wheel-for-this-platform"])
def test_a_package_that_cannot_be_installed_leaves_the_user_site_as_it_was(
        installed: Box, package: str, pips_error: str) -> None:
    before = installed.listing()
    code, output = installed.terminal(f"pip install {package}")
    assert code != 0 and pips_error in output.splitlines(), output
    assert "this image pins" not in output
    assert installed.listing() == before


def test_the_selfcheck_names_a_package_that_breaks_a_pin(installed: Box) -> None:
    """--no-deps installs it anyway, on purpose: the self-check then says what breaks and the fix."""
    code, output = installed.terminal(f"pip install --no-deps {FIND} numpy2pin && selfcheck --layers 6 | "
                                      "grep env.user_packages")
    assert code == 0, output
    assert ("WARN env.user_packages: user package numpy2pin 1.0 needs numpy==2.0.0, but the image pins numpy "
            f"1.23.5 -> fix: pip uninstall numpy2pin, or {OWN_ENV}") in output, output
    code, output = installed.terminal("pip uninstall -y numpy2pin && pip check && selfcheck --layers 6 | "
                                      "grep env.user_packages")
    assert code == 0 and "No broken requirements found." in output, output
    assert "PASS env.user_packages: 3 user package(s) in ~/.local/lib/python3." in output, output
    # a copy of numpy put first on purpose (PYTHONPATH): the image's is no longer the one imported
    code, output = installed.terminal("mkdir -p ~/work/mine/numpy && touch ~/work/mine/numpy/__init__.py && "
                                      "PYTHONPATH=~/work/mine selfcheck --layers 6 | grep env.user_packages")
    assert (f"WARN env.user_packages: {HOME}/work/mine/numpy comes before the image's numpy 1.23.5 on sys.path, so "
            f"the pinned package is not the one imported -> fix: take {HOME}/work/mine off PYTHONPATH"
            ) in output, output


def test_an_environment_of_ones_own_is_a_kernel_with_its_own_numpy(installed: Box) -> None:
    code, output = installed.installed["own-env"]
    assert code == 0, output
    specs = requests.get(f"{installed.url}api/kernelspecs", headers={"Authorization": f"token {TOKEN}"},
                         timeout=30).json()["kernelspecs"]
    assert specs["stack2"]["spec"]["display_name"] == "numpy 2 stack", specs
    status, shown = installed.cell("import numpy, sys; print(numpy.__version__, sys.prefix)", "stack2")
    assert status == "ok" and shown.split() == ["2.0.0", f"{HOME}/envs/stack2"], shown


def kept_state(box: Box) -> None:
    """Everything the first session left, seen from the current container."""
    site = box.user_site()
    code, output = box.terminal("python -c 'import tf29probe, tf29nb; print(tf29probe.__file__)'; git config user.name")
    assert code == 0 and output.splitlines() == [f"{site}/tf29probe/__init__.py", "Ada Lovelace"], output
    status, shown = box.cell("import tf29probe, tf29nb; print(tf29nb.__file__)")
    assert status == "ok" and shown.strip() == f"{site}/tf29nb/__init__.py", shown
    code, output = box.ssh("python -c 'import tf29probe; print(tf29probe.__version__)'")
    assert code == 0 and output.strip() == "1.0", output
    assert box.theme() == DARK
    status, shown = box.cell("import numpy; print(numpy.__version__)", "stack2")
    assert status == "ok" and shown.strip() == "2.0.0", shown


def test_a_re_created_container_keeps_packages_environments_and_settings(installed: Box, images: Images) -> None:
    assert installed.installed["theme"][0] == 204, installed.installed["theme"]
    code, output = installed.installed["settings"]
    assert code == 0 and output.splitlines()[-1] == "Ada Lovelace", output
    installed.remove()
    installed.start(images.old)
    kept_state(installed)


def test_a_newer_image_keeps_them_and_reports_the_compiled_package(installed: Box, images: Images) -> None:
    code, output = installed.installed["compiled"]
    assert code == 0 and "answer 42" in output, output
    installed.remove()
    container = installed.start(images.new)
    kept_state(installed)
    logs = installed.tracked.logs(container)
    stale = [line for line in logs.splitlines() if "user package userext" in line]
    assert len(stale) == 1, logs
    assert stale[0].startswith("tf29-env: WARNING: user package userext 1.0 in ~/.local/lib/python3."), stale
    assert "is compiled and was installed under an older image (stackdep 1.0 -> 2.0)" in stale[0], stale
    assert "`user-packages reinstall` rebuilds it" in stale[0], stale
    # the image's own files in the home: its new quickstart, its new .bashrc (never changed by the
    # user), and not its .profile, which the user changed
    code, output = installed.exec(f"ls ~/quickstart; tail -1 ~/.bashrc; tail -1 ~/.profile; "
                                  f"tail -1 {LOCAL}/state/tf29-env/image-home/.profile")
    assert output.splitlines()[-3:] == [BASHRC_MARK, "# mine", PROFILE_MARK], output
    assert NEW_NOTEBOOK in output.split(), output
    assert "tf29-env: ~/.profile: yours is kept; the image's new version is in " in logs, logs

    code, output = installed.terminal(f"user-packages reinstall {FIND} && python -c 'import userext; "
                                      "print(\"answer\", userext.ANSWER)' && user-packages check")
    assert code == 0 and "answer 42" in output and "none breaks or shadows" in output, output
    container.restart(timeout=10)
    installed.tracked.wait_healthy(container, timeout=120)
    logs = installed.tracked.logs(container)
    assert len([line for line in logs.splitlines() if "user package userext" in line]) == 1, logs


def test_under_apptainer_pip_installs_into_the_hosts_home(tracked: TrackedContainer, wheels: Path,
                                                           tmp_path: Path) -> None:
    """The Apptainer mode (imitated as tests/image/test_apptainer_mode.py does: a read-only image, the
    caller's uid, the host's home) with the user site on (ENABLE_USER_SITE=1): the package lands in
    the host's $HOME/.local, and the image's numpy still wins."""
    home = tmp_path / "home"
    home.mkdir()
    shutil.chown(home, 2001, 2001)
    container = tracked.run(
        publish=(), user="2001:2001", read_only=True, tmpfs={"/tmp": ""},  # noqa: S108 - the container's
        environment={"APPTAINER_CONTAINER": "/shared/tf29-env.sif", "HOME": "/home/user", "NB_USER": "alice",
                     "ENABLE_USER_SITE": "1"},
        volumes={str(home): {"bind": "/home/user", "mode": "rw"}, str(wheels): {"bind": "/wheels", "mode": "ro"}},
        command=["bash", "-c", f"pip install {FIND} tf29probe && python -c 'import tf29probe, numpy; "
                               "print(tf29probe.__file__, numpy.__version__)'"])
    assert tracked.wait_exit(container, timeout=180) == 0, tracked.logs(container)
    last = tracked.logs(container, stderr=False).strip().splitlines()[-1].split()
    assert last[1] == "1.23.5" and last[0].startswith("/home/user/.local/lib/python3."), last
    assert list(home.glob(".local/lib/python3.*/site-packages/tf29probe/__init__.py")), list(home.rglob("*"))
