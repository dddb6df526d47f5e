"""Health tells the truth in every mode: a container that runs a command in place of the services
(`docker run IMAGE CMD`), or another entrypoint (the Dev Containers tools' idle command), manages
nothing, so it is healthy, not "unhealthy" after the start period (which a restart policy or an
orchestrator acting on health would end it for)."""

import pytest

from testkit.containers import TrackedContainer

pytestmark = pytest.mark.image


@pytest.mark.parametrize(("command", "entrypoint"), [
    (["sleep", "300"], None),
    (["-c", "echo Container started; trap 'exit 0' 15; sleep infinity & wait"], "/bin/sh"),
])
def test_nothing_managed_is_healthy(tracked: TrackedContainer, command: list[str], entrypoint: str | None) -> None:
    container = tracked.run(command=command, entrypoint=entrypoint, publish=())
    tracked.wait_healthy(container, timeout=30)
    code, out = tracked.exec(container, ["/usr/bin/python3", "-I", "-m", "tf29image.healthcheck"])
    assert code == 0, out
    assert out.startswith("healthy: nothing to check"), out


def test_services_mode_still_checks_its_services(tracked: TrackedContainer) -> None:
    """The entrypoint runs: its services are checked (Jupyter here), not waved through."""
    container = tracked.run(environment={"ENABLE_SSH": "0"}, publish=())
    tracked.wait_healthy(container, timeout=60)
    code, out = tracked.exec(container, ["/usr/bin/python3", "-I", "-m", "tf29image.healthcheck"])
    assert (code, out.split(" (")[0]) == (0, "healthy: jupyter ok"), out
