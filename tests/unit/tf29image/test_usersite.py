"""tf29image.usersite, the venv's site hook (docs/packages.md): which processes are pip, who installs
where, the one-line refusal. tests/image/test_user_packages.py runs it in the image."""

import pytest

from tf29image import usersite


def command_line(*words: str) -> list[str]:
    return ["/opt/venv/bin/python", *words]


@pytest.mark.parametrize(("argv", "cmdline", "expected"), [
    (["/opt/venv/bin/pip", "install", "x"], [], ["install", "x"]),
    (["/opt/venv/bin/pip3", "uninstall", "-y", "x"], [], ["uninstall", "-y", "x"]),
    (["/opt/venv/bin/pip3.9", "list"], [], ["list"]),
    (["/opt/venv/bin/pipx", "install", "x"], [], None),
    (["/usr/local/bin/jupyter", "lab"], [], None),
    (["-m", "install", "x"], command_line("-m", "pip", "install", "x"), ["install", "x"]),  # IPython's %pip
    (["-m", "install"], command_line("-Im", "pip", "install"), ["install"]),
    (["-m", "install"], command_line("-mpip", "install"), ["install"]),
    (["-m", "install"], command_line("-W", "ignore", "-m", "pip", "install"), ["install"]),
    (["-m", "install"], command_line("-Wignore", "-X", "dev", "-m", "pip", "install"), ["install"]),
    (["-m", "x"], command_line("-m", "venv", "x"), None),
    (["-m", "x"], command_line("-m", "pipx", "x"), None),
    (["-c", "x"], command_line("-c", "import pip"), None),
    ([""], [], None),
    ([], [], None),
], ids=lambda value: " ".join(value) if isinstance(value, list) else str(value))
def test_which_processes_are_pip(argv: list[str], cmdline: list[str], expected: list[str] | None) -> None:
    assert usersite.pip_arguments(argv, lambda: cmdline) == expected


@pytest.mark.parametrize(("euid", "home", "user"), [
    (1000, "/home/jovyan", True),
    (4242, "/tmp/tf29-env-home-4242", True),  # noqa: S108 - a container's scratch home
    (0, "/root", False),  # a Dockerfile's RUN pip install, docker exec -u root: the venv, as before
    (0, "/", False),
    (0, "", False),
    (0, "/home/root", True),  # NB_USER=root NB_UID=0 NB_GID=0: root is the dev user
])
def test_who_installs_into_the_user_site(euid: int, home: str, user: bool) -> None:
    assert usersite.user_mode(euid, home) is user


PINS = {"numpy": "1.23.5", "protobuf": "3.19.6", "tensorflow": "2.9.3"}


@pytest.mark.parametrize(("causes", "expected"), [
    ([("numpy", "numpy==2.0.0", "numpy2pin 1.0", False)],
     "numpy2pin 1.0 needs numpy==2.0.0, but this image pins numpy==1.23.5"),
    ([("numpy", "numpy==2.0.0", None, False)], "you asked for numpy==2.0.0, but this image pins numpy==1.23.5"),
    # two users of protobuf: the one the pin does not satisfy is named
    ([("protobuf", "protobuf>=3.9", "a 1", True), ("Protobuf", "protobuf>=4", "b 2", False)],
     "b 2 needs protobuf>=4, but this image pins protobuf==3.19.6"),
    ([("six", "six>=2", "a 1", False), ("numpy", "numpy<1.20", "c 3", False)],
     "c 3 needs numpy<1.20, but this image pins numpy==1.23.5"),
    ([("six", "six>=2", "a 1", False)], None),  # not the image's business: pip's own report
])
def test_a_conflict_with_a_pin_is_one_line(causes: list[usersite.Cause], expected: str | None) -> None:
    message = usersite.conflict_message(causes, PINS)
    if expected is None:
        assert message is None
        return
    assert message is not None and message.startswith(expected), message
    assert "\n" not in message
    assert message.endswith("install it in an environment of your own: python -m venv ~/envs/NAME "
                            "(docs/packages.md)"), message
