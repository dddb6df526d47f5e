"""Fixtures of the browser tests: one JupyterLab container of the image under test per module, a
fresh headless Chromium per test (testkit/browser.py), and a screenshot of it when a test fails,
whose path the failure names. Without Chromium or its driver a test fails, in one line, never skips."""

from collections.abc import Generator, Iterator
from dataclasses import dataclass

import pytest
from docker import DockerClient
from docker.models.containers import Container

from testkit.browser import Browser, Lab, browser_for_test, note_screenshots, start_lab
from testkit.containers import TrackedContainer

TOKEN = "tok-browser-5d2a8c61e09f4b7a"


@dataclass
class LabServer:
    tracked: TrackedContainer
    container: Container
    url: str


@pytest.fixture
def browser() -> Iterator[Browser]:
    with browser_for_test() as started:
        yield started


@pytest.fixture(scope="module")
def lab_server(docker_client: DockerClient, image: str) -> Iterator[LabServer]:
    """One JupyterLab for the module's tests (each opens it with a fresh layout)."""
    tracked = TrackedContainer(docker_client, image)
    try:
        container, url = start_lab(tracked, TOKEN)
        yield LabServer(tracked, container, url)
    finally:
        tracked.remove_all()


@pytest.fixture
def lab(browser: Browser, lab_server: LabServer) -> Lab:
    """JupyterLab, logged in with the token, its layout restored."""
    page = Lab(browser, lab_server.url)
    page.open()
    page.log_in(TOKEN)
    page.wait_ready()
    return page


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None]:
    """Before the failure is reported: a screenshot of each browser the test had, named in the error."""
    if call.excinfo is not None and call.when in ("setup", "call"):
        funcargs = getattr(item, "funcargs", {})
        browsers = {id(value): value for value in funcargs.values() if isinstance(value, Browser)}
        browsers.update({id(value.browser): value.browser for value in funcargs.values() if isinstance(value, Lab)})
        note_screenshots(call.excinfo.value, browsers.values(), item.nodeid)
    yield
