"""What `make hub` serves (hub.mk, hub/ctl.py): HUB_IMAGE as it is; else, on a box with team settings
(.env, as the kit's install.sh writes it, or TF29ENV_IMAGE in the environment), the team's image,
nothing built; with neither, the image `make build` builds first. `make -n hub` in a copy of the
Makefiles shows what would run."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from compose import memlock
from hub.ctl import with_team_image
from tf29env.core.paths import REPO

LOADED = "tf29-env:kit-loaded"  # not the default: only .env or the environment can name it


def test_hub_image_is_served_as_it_is(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(f"TF29ENV_IMAGE={LOADED}\n")
    environ, setting = with_team_image({"HUB_IMAGE": "mine:1", "TF29ENV_IMAGE": "theirs:2"}, tmp_path)
    assert (environ["HUB_IMAGE"], setting) == ("mine:1", "HUB_IMAGE")


def test_without_it_the_team_image_as_compose_reads_it(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(f"# the kit's image\nTF29ENV_IMAGE='{LOADED}'\n")
    environ, setting = with_team_image({"HUB_IMAGE": " ", "HUB_PORT": "9000"}, tmp_path)
    assert environ == {"HUB_IMAGE": LOADED, "HUB_PORT": "9000"} and setting == "TF29ENV_IMAGE"
    assert with_team_image({"TF29ENV_IMAGE": "env:3"}, tmp_path)[0]["HUB_IMAGE"] == "env:3"  # as compose: env first
    assert with_team_image({}, tmp_path / "no-env")[0]["HUB_IMAGE"] == memlock.DEFAULTS["TF29ENV_IMAGE"]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """The Makefiles in a folder of their own, the venvs' and the proxy's stamps newer than their pins."""
    for name in ("Makefile", "compose.mk", "hub.mk"):
        shutil.copy(REPO / name, tmp_path / name)
    for name in ("requirements-dev.txt", "hub/requirements.txt", "hub/package-lock.json"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("")
    for stamp in (".venv/.done", "hub/.venv/.done", "hub/node_modules/.done"):
        (tmp_path / stamp).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / stamp).write_text("")
        os.utime(tmp_path / stamp, (2**31, 2**31))
    return tmp_path


def make_n_hub(project: Path, *args: str, **env: str) -> str:
    base = {key: value for key, value in os.environ.items()
            if not key.startswith(("HUB_", "TF29ENV_", "MAKE", "MFLAGS"))}
    done = subprocess.run(["make", "-n", "hub", *args], cwd=project, env={**base, **env}, capture_output=True,
                          text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_dev_box_builds_first(project: Path) -> None:
    said = make_n_hub(project)
    assert "build.py build --variant gpu" in said and "HUB_IMAGE='tf29-env:latest-gpu'" in said, said


@pytest.mark.parametrize(("args", "env"), [((), {"TF29ENV_IMAGE": LOADED}), ((f"HUB_IMAGE={LOADED}",), {}),
                                           ((), {"HUB_IMAGE": LOADED})])
def test_a_named_image_is_not_built(project: Path, args: tuple[str, ...], env: dict[str, str]) -> None:
    said = make_n_hub(project, *args, **env)
    assert "build.py" not in said and "hub.ctl up" in said, said


def test_a_box_with_team_settings_serves_their_image(project: Path) -> None:
    (project / ".env").write_text(f"TF29ENV_IMAGE={LOADED}\n")
    said = make_n_hub(project)
    assert "build.py" not in said and "HUB_IMAGE=" not in said and "hub.ctl up" in said, said
