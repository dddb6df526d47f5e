"""The user's own packages and settings (docs/packages.md) without an engine: tf29image.startup.userstate
(the links of the home folder into the ~/.local volume, the image's dotfiles, user packages built
under an older image, what breaks a pin) on real files in a temporary home (the venv's site hook:
test_usersite.py). tests/image/test_user_packages.py runs the same code in the image."""

import os
import re
import zipfile
from pathlib import Path

import pytest

from testkit.wheels import build_wheel, module_files
from tf29env.core.paths import REPO
from tf29image.startup import userstate
from tf29image.startup.userstate import DIR, FILE, PRIVATE_DIR, STORE, Mount

VOLUME_TARGET = "/home/jovyan/.local"  # docs/packages.md's table; README, Makefile, compose, hub and chart


MOUNTINFO = "\n".join([
    "100 90 0:50 / / rw,relatime - overlay overlay rw,lowerdir=/x",
    "101 100 0:51 / /tmp rw,nosuid - tmpfs tmpfs rw",
    "102 100 8:1 /var/lib/docker/volumes/v/_data /home/jovyan/.local rw,relatime - ext4 /dev/sda1 rw",
    "103 100 8:1 /srv/my\\040home /home/my\\040user rw,relatime - nfs4 srv:/home rw",
    "garbage",
])


@pytest.mark.parametrize(("path", "kept"), [
    ("/home/jovyan/.local/lib/python3.9/site-packages", True),  # the volume
    ("/home/jovyan/.local", True),
    ("/home/jovyan/.localx", False),
    ("/home/jovyan/work", False),  # on the container's root
    ("/tmp/tf29-env-home-1000/.local", False),  # noqa: S108 - a container's scratch home, on a tmpfs
    ("/home/my user/.local", True),  # Apptainer's home, a bind mount; \040 is a space
])
def test_what_outlives_the_container(path: str, kept: bool) -> None:
    mounts = userstate.read_mounts(MOUNTINFO)
    assert Mount("/home/my user", "nfs4", "rw,relatime") in mounts
    assert userstate.persisted(path, mounts) is kept
    assert userstate.is_mount_point("/home/jovyan/.local", mounts)
    assert not userstate.is_mount_point("/home/jovyan", mounts)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    (folder / ".local").mkdir(parents=True)
    return folder


def store(home: Path, name: str) -> Path:
    return home / STORE / name


def test_a_setting_becomes_a_link_into_the_volume(home: Path) -> None:
    assert userstate.link_entry(str(home), ".jupyter", DIR) == []
    assert os.readlink(home / ".jupyter") == f"{STORE}/.jupyter"
    assert store(home, ".jupyter").is_dir()
    assert userstate.link_entry(str(home), ".ssh", PRIVATE_DIR) == []
    assert store(home, ".ssh").stat().st_mode & 0o777 == 0o700
    assert userstate.link_entry(str(home), ".gitconfig", FILE) == []
    (home / ".gitconfig").write_text("[user]\n\tname = Ada\n")  # written through the link
    assert store(home, ".gitconfig").read_text() == "[user]\n\tname = Ada\n"
    # the next start (a restart, or a new container): the same link, nothing lost
    os.unlink(home / ".gitconfig")
    assert userstate.link_entry(str(home), ".gitconfig", FILE) == []
    assert (home / ".gitconfig").read_text() == "[user]\n\tname = Ada\n"


def test_what_the_image_or_a_hook_put_there_is_merged_and_yours_wins(home: Path) -> None:
    kept = store(home, ".jupyter") / "lab" / "user-settings"
    kept.mkdir(parents=True)
    (kept / "theme.json").write_text("yours")
    shipped = home / ".jupyter" / "lab" / "user-settings"
    shipped.mkdir(parents=True)
    (shipped / "theme.json").write_text("the image's")
    (shipped / "other.json").write_text("new from the image")
    assert userstate.link_entry(str(home), ".jupyter", DIR) == []
    assert (home / ".jupyter").is_symlink()
    assert (kept / "theme.json").read_text() == "yours"
    assert (kept / "other.json").read_text() == "new from the image"
    store(home, ".gitconfig").write_text("yours")
    (home / ".gitconfig").write_text("the image's")
    assert userstate.link_entry(str(home), ".gitconfig", FILE) == [
        f"~/.gitconfig from the image is not used: yours, kept in ~/{STORE}/.gitconfig, is"]
    assert (home / ".gitconfig").read_text() == "yours"


def test_a_first_start_moves_what_is_there_into_the_volume(home: Path) -> None:
    (home / ".keras" / "datasets").mkdir(parents=True)
    (home / ".keras" / "datasets" / "mnist.npz").write_text("data")
    assert userstate.link_entry(str(home), ".keras", DIR) == []
    assert (store(home, ".keras") / "datasets" / "mnist.npz").read_text() == "data"


def test_a_link_of_your_own_is_left_alone(home: Path, tmp_path: Path) -> None:
    (tmp_path / "dotfiles").mkdir()
    (home / ".gitconfig").symlink_to(tmp_path / "dotfiles" / "gitconfig")
    lines = userstate.link_entry(str(home), ".gitconfig", FILE)
    assert len(lines) == 1 and "a link of your own" in lines[0], lines
    assert os.readlink(home / ".gitconfig") == str(tmp_path / "dotfiles" / "gitconfig")


@pytest.mark.parametrize(("before", "yours", "image", "stored", "said"), [
    (None, None, "v1", "v1", None),  # the first start keeps the image's
    ("v1", "v1", "v1", "v1", None),  # nothing changed
    ("v1", "v1", "v2", "v2", "the image's new version replaces the old one"),  # you had not changed it
    ("v1", "mine", "v2", "mine", "yours is kept; the image's new version is in"),
    ("v1", "mine", "v1", "mine", None),  # yours, and the image is the same: nothing to say
    (None, "mine", "v2", "mine", "yours is kept"),  # no record of the image's last version: yours wins
])
def test_the_images_dotfiles_follow_the_image_until_you_change_them(
        home: Path, before: str | None, yours: str | None, image: str, stored: str, said: str | None) -> None:
    if before is not None:
        (home / userstate.IMAGE_COPIES).mkdir(parents=True)
        (home / userstate.IMAGE_COPIES / ".bashrc").write_text(before)
    if yours is not None:
        store(home, ".bashrc").parent.mkdir(parents=True, exist_ok=True)
        store(home, ".bashrc").write_text(yours)
    (home / ".bashrc").write_text(image)  # a fresh container: the image's file
    lines = userstate.sync_image_dotfile(str(home), ".bashrc")
    assert (home / ".bashrc").is_symlink()
    assert (home / ".bashrc").read_text() == stored
    assert (home / userstate.IMAGE_COPIES / ".bashrc").read_text() == image
    assert (said is None and lines == []) or (said is not None and len(lines) == 1 and said in lines[0]), lines
    assert userstate.sync_image_dotfile(str(home), ".bashrc") == []  # a restart: already a link


def write_dist(site: Path, name: str, version: str, *, requires: tuple[str, ...] = (), compiled: bool = False) -> None:
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                                   + "".join(f"Requires-Dist: {line}\n" for line in requires) + "\nbody\n")
    files = [f"{name}/__init__.py", *([f"{name}/_native.cpython-39-x86_64-linux-gnu.so"] if compiled else [])]
    (info / "RECORD").write_text("".join(f"{path},sha256=x,1\n" for path in files))


def test_compiled_packages_that_need_a_changed_pin_are_stale(tmp_path: Path) -> None:
    site = tmp_path / "site"
    write_dist(site, "userext", "1.0", requires=("stackdep>=1", "six"), compiled=True)
    write_dist(site, "purepkg", "1.0", requires=("stackdep",))  # pure Python: follows the new stackdep
    write_dist(site, "otherext", "1.0", requires=("numpy",), compiled=True)  # numpy did not change
    dists = userstate.dists_in(str(site))
    assert [(d.name, d.compiled) for d in dists] == [("otherext", True), ("purepkg", False), ("userext", True)]
    before, now = {"stackdep": "1.0", "numpy": "1.23.5"}, {"stackdep": "2.0", "numpy": "1.23.5"}
    stale = userstate.stale_dists(dists, before, now)
    assert [(item.dist.name, item.why) for item in stale] == [("userext", "stackdep 1.0 -> 2.0")]
    assert userstate.stale_dists(dists, now, now) == []
    assert userstate.stale_dists(dists, None, now) == []  # nothing recorded: nothing to compare with


def test_packages_of_another_python_are_named(tmp_path: Path) -> None:
    base = tmp_path / "base"
    write_dist(base / "lib/python3.8/site-packages", "oldpkg", "2.1")
    write_dist(base / "lib/python3.8/site-packages", "both", "1.0")
    current = userstate.user_site(str(base))
    write_dist(Path(current), "both", "1.0")
    moved = userstate.other_pythons(str(base), userstate.dists_in(current))
    assert [(item.dist.name, item.python) for item in moved] == [("oldpkg", "3.8")]
    (line,) = userstate.report_lines(moved, "~/.local/lib/python3.11/site-packages")
    assert line.startswith("WARNING: user package oldpkg 2.1 was installed for Python 3.8"), line
    assert "`user-packages reinstall`" in line


def fake_venv(tmp_path: Path, pins: dict[str, str]) -> dict[str, str]:
    venv = tmp_path / "venv"
    site = Path(userstate.venv_site_packages({"VIRTUAL_ENV": str(venv)}))
    site.mkdir(parents=True, exist_ok=True)
    for entry in site.iterdir():
        entry.rmdir()
    for name, version in pins.items():
        (site / f"{name}-{version}.dist-info").mkdir()
    return {"VIRTUAL_ENV": str(venv)}


def test_a_start_on_a_volume_links_reports_and_records(home: Path, tmp_path: Path) -> None:
    (home / ".bashrc").write_text("the image's bashrc\n")
    environ = fake_venv(tmp_path, {"stackdep": "1.0", "numpy": "1.23.5"})
    mounts = [Mount("/", "overlay"), Mount(str(home / ".local"), "ext4")]
    lines = userstate.start(str(home), str(home), environ, mounts)
    assert lines[0].startswith("~/.local is a volume: your packages (~/.local/lib/python"), lines
    assert len(lines) == 1, lines
    for name, _ in userstate.PERSISTED:
        assert os.readlink(home / name) == f"{STORE}/{name}"
    assert os.readlink(home / ".bashrc") == f"{STORE}/.bashrc"
    site = Path(userstate.user_site(str(home / ".local")))
    assert site.is_dir()
    stack = site.parent / userstate.STACK_FILE
    assert userstate.read_stack(str(stack)) == {"stackdep": "1.0", "numpy": "1.23.5"}

    write_dist(site, "userext", "1.0", requires=("stackdep",), compiled=True)
    environ = fake_venv(tmp_path, {"stackdep": "2.0", "numpy": "1.23.5"})  # a newer image
    for _ in range(2):  # reported at every start until reinstalled
        lines = userstate.start(str(home), str(home), environ, mounts)
        stale = [line for line in lines if line.startswith("WARNING: ")]
        assert len(stale) == 1 and "userext 1.0" in stale[0] and "(stackdep 1.0 -> 2.0)" in stale[0], lines
        assert userstate.read_stack(str(stack)) == {"stackdep": "1.0", "numpy": "1.23.5"}


def test_a_start_without_a_volume_says_so_and_links_nothing(home: Path, tmp_path: Path) -> None:
    environ = fake_venv(tmp_path, {"numpy": "1.23.5"})
    lines = userstate.start(str(home), str(home), environ, [Mount("/", "overlay")])
    assert lines == ["~/.local is not a volume: what pip installs and the settings you change last until the "
                     "container is re-created; mount one there to keep them (docs/packages.md)"]
    assert not (home / ".jupyter").exists()
    assert Path(userstate.user_site(str(home / ".local"))).is_dir()
    assert userstate.start(str(home), str(home), {**environ, "PYTHONNOUSERSITE": "1"}, []) == []


def test_a_home_in_tmp_still_keeps_its_state_on_the_volume(tmp_path: Path) -> None:
    """--read-only: HOME is /tmp/tf29-env-home-UID, the volume is at the home folder's .local."""
    folder, scratch = tmp_path / "home", tmp_path / "scratch"
    (folder / ".local").mkdir(parents=True)
    scratch.mkdir()
    environ = fake_venv(tmp_path, {"numpy": "1.23.5"})
    userstate.start(str(scratch), str(folder), environ, [Mount(str(folder / ".local"), "ext4")])
    assert os.readlink(scratch / ".local") == str(folder / ".local")
    (scratch / ".gitconfig").write_text("kept")
    assert (folder / STORE / ".gitconfig").read_text() == "kept"


def test_what_breaks_a_pin(tmp_path: Path) -> None:
    site = tmp_path / "site"
    write_dist(site, "numpy2pin", "1.0", requires=("numpy==2.0.0",))
    write_dist(site, "fine", "1.0", requires=("numpy>=1.20", "torch; extra == 'gpu'", "numpy<1; python_version < '3'"))
    write_dist(site, "numpy", "2.0.0")
    found = userstate.conflicts(userstate.dists_in(str(site)), {"numpy": "1.23.5"})
    assert [(item.kind, item.what) for item in found] == [
        ("hidden", "the user site holds a second numpy (2.0.0); the image's 1.23.5 is the one imported"),
        ("broken", "user package numpy2pin 1.0 needs numpy==2.0.0, but the image pins numpy 1.23.5")]
    assert found[0].fix == "user-packages remove numpy"
    assert found[1].fix.startswith("pip uninstall numpy2pin, or install it in an environment of your own")


def test_a_module_before_the_venv_shadows_a_pin(tmp_path: Path) -> None:
    venv, early, late, image = (tmp_path / name for name in ("venv", "early", "late", "image"))
    for folder in (venv / "numpy", venv / "six.py", early / "numpy", early / "notpinned", late / "numpy",
                   image / "jupyter", early / "six.py", early / "ns"):
        folder.parent.mkdir(parents=True, exist_ok=True)
        if folder.suffix:
            folder.write_text("")
        else:
            folder.mkdir()
    for package in (venv / "numpy", early / "numpy", late / "numpy", early / "notpinned"):
        (package / "__init__.py").write_text("")
    (venv / "ns").mkdir()
    (venv / "ns" / "__init__.py").write_text("")
    found = userstate.shadowing([str(image), "", str(early), str(venv), str(late)], str(venv), [str(image)])
    assert found == [("numpy", str(early / "numpy")), ("six", str(early / "six.py"))]
    assert userstate.shadowing([str(early)], str(venv), []) == []  # the venv is not on this path


def test_the_volumes_in_container_path_is_the_same_everywhere() -> None:
    """One volume, mounted at the home folder's .local (userstate.STATE), by every way of running."""
    assert f"/home/jovyan/{userstate.STATE}" == VOLUME_TARGET
    places = {
        "Makefile": (REPO / "Makefile").read_text(),
        "README.md": (REPO / "README.md").read_text(),
        "docker-compose.yml": (REPO / "docker-compose.yml").read_text(),
        "compose/member.py": (REPO / "compose" / "member.py").read_text(),
        "hub/spawner.py": (REPO / "hub" / "spawner.py").read_text(),
        "deploy/z2jh/values.yaml": (REPO / "deploy" / "z2jh" / "values.yaml").read_text(),
    }
    patterns = {
        "Makefile": r"-v \$\(CONTAINER\)-local:/home/jovyan/\.local\b",
        "README.md": r"-v tf-local:/home/jovyan/\.local\b",
        "docker-compose.yml": r"- alice-local:/home/jovyan/\.local\n(.|\n)*- bob-local:/home/jovyan/\.local\n",
        "compose/member.py": r"\{m\.name\}-local:/home/jovyan/\.local\"",
        "hub/spawner.py": r"-\{\{username\}\}-local\": \"/home/jovyan/\.local\"",
        "deploy/z2jh/values.yaml": r"mountPath: /home/jovyan/\.local\n\s+subPath: local\n",
    }
    for place, pattern in patterns.items():
        assert re.search(pattern, places[place]), f"{place} does not mount the volume at {VOLUME_TARGET}"


def test_a_wheel_the_tests_build_is_a_wheel(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path, "tf29probe", "1.0", module_files("tf29probe", "1.0"), requires=("numpy>=1.20",))
    assert wheel.name == "tf29probe-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = archive.read("tf29probe-1.0.dist-info/METADATA").decode()
    assert "tf29probe-1.0.dist-info/RECORD" in names and "Requires-Dist: numpy>=1.20" in metadata
