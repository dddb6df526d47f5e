"""tf29env/imagebuild/devcontainer.py: the Dev Containers label must parse and name the image's own user and
Jupyter port. The label text is the one the Dockerfile produced (read back from a built image with
`docker inspect -f '{{index .Config.Labels "devcontainer.metadata"}}'`, 2026-12-03)."""

import json
from typing import Any

import pytest

from tf29env.core.errors import EXIT_BUILD, UserError
from tf29env.imagebuild import devcontainer

BUILT = ('[{"remoteUser": "jovyan", "hostRequirements": {"gpu": "optional"}, "forwardPorts": [8888], '
         '"portsAttributes": {"8888": {"label": "JupyterLab", "onAutoForward": "notify"}}, '
         '"postStartCommand": "selfcheck", "customizations": {"vscode": {"extensions": ["ms-python.python", '
         '"ms-toolsai.jupyter"], "settings": {"python.defaultInterpreterPath": "/opt/venv/bin/python"}}}}]')
ENV = ["PATH=/opt/venv/bin:/usr/bin", "NB_USER=jovyan", "JUPYTER_PORT=8888"]


def attrs(label: str | None, env: list[str] = ENV) -> dict[str, Any]:
    return {"Config": {"Env": env, "Labels": {} if label is None else {devcontainer.KEY: label}}}


def test_the_built_label_passes() -> None:
    assert devcontainer.metadata_problems(attrs(BUILT)) == []
    devcontainer.check(attrs(BUILT), "img")


@pytest.mark.parametrize(("label", "env", "problem"), [
    (None, ENV, "no devcontainer.metadata label"),
    (BUILT[:-3], ENV, "is not JSON"),
    ('{"remoteUser": "jovyan"}', ENV, "not a JSON array of objects"),
    (BUILT, ["NB_USER=alice", "JUPYTER_PORT=8888"], "remoteUser 'jovyan' is not the image's NB_USER 'alice'"),
    (BUILT, ["NB_USER=jovyan", "JUPYTER_PORT=9999"], "lacks the image's JUPYTER_PORT '9999'"),
    (json.dumps([{"remoteUser": "jovyan"}]), ENV, "forwardPorts None lacks"),
])
def test_bad_labels_are_refused(label: str | None, env: list[str], problem: str) -> None:
    problems = devcontainer.metadata_problems(attrs(label, env))
    assert len(problems) == 1 and problem in problems[0], problems
    with pytest.raises(UserError) as raised:
        devcontainer.check(attrs(label, env), "img")
    assert raised.value.exit_code == EXIT_BUILD
