"""image/python/tf29image/startup/settings.py: the environment parsed once into typed, frozen Settings; a
setting is checked where it applies (the planner's refusals: test_plan.py)."""

import dataclasses

import pytest

from tf29image.startup import settings, values

BASE = {"NB_USER": "jovyan", "NB_UID": "1000", "NB_GID": "100", "TFENV_IMAGE_USER": "jovyan",
        "TFENV_RUN_DIR": "/run/tf29-env"}


def test_values_are_typed_once() -> None:
    parsed = settings.parse({**BASE, "NB_UID": "04321", "ENABLE_SSH": "off", "JUPYTER_ALLOWED_HOSTS": "A.example, b",
                             "STOP_GRACE_SECONDS": "0120", "JUPYTER_BASE_URL": "/j"}, values.SERVICES)
    assert (parsed.uid, parsed.ssh, parsed.jupyter, parsed.allowed_hosts, parsed.stop_grace, parsed.base_url) == \
        (4321, False, True, ("a.example", "b"), 120, "/j/")
    assert parsed.text("NB_UID") == "04321" and parsed.text("SSH_PORT") == ""  # as given, for messages
    with pytest.raises(dataclasses.FrozenInstanceError):
        parsed.uid = 0  # type: ignore[misc]


def test_secrets_stay_out_of_the_repr() -> None:
    parsed = settings.parse({**BASE, "JUPYTER_TOKEN": "s" * 20, "JUPYTERHUB_API_TOKEN": "h" * 20}, values.SERVICES)
    assert "s" * 20 not in repr(parsed) and "h" * 20 not in repr(parsed)


@pytest.mark.parametrize(("env", "mode"), [
    ({"JUPYTER_PORT": "x", "JUPYTER_BASE_URL": "x", "JUPYTER_ALLOWED_HOSTS": "10.0.0.5"}, values.HUB),
    ({"JUPYTERHUB_SERVICE_URL": "x", "JUPYTERHUB_SERVICE_PREFIX": "x"}, values.SERVICES),
    ({"ENABLE_USER_SITE": "x", "LOGIN_HOST": "-"}, values.SERVICES),
    ({"APPTAINER_CONTAINER": "/x.sif", "LOGIN_HOST": "-"}, values.COMMAND),
])
def test_a_setting_is_checked_only_where_it_applies(env: dict[str, str], mode: str) -> None:
    settings.parse({**BASE, **env}, mode)


def test_the_hub_port_0_is_apptainers_alone() -> None:
    url = "http://x:0/user/ann/"
    parsed = settings.parse({**BASE, "APPTAINER_CONTAINER": "/x.sif", "JUPYTERHUB_SERVICE_URL": url}, values.HUB)
    assert parsed.hub_url == values.HubUrl(url, 0, "0")
    with pytest.raises(values.Refused, match="port 0 is not a TCP port"):
        settings.parse({**BASE, "JUPYTERHUB_SERVICE_URL": url}, values.HUB)
