"""Fixtures of the browser tests: one JupyterLab container of the image under test per module, a
fresh headless Chromium per test (testkit/browser.py), and a screenshot of it when a test fails,
whose path the failure names. Without Chromium or its driver a test fails, in one line, never skips."""

import contextlib
import warnings
from collections.abc import Generator, Iterator
from dataclasses import dataclass

import pytest
from docker import DockerClient
from docker.models.containers import Container
from selenium.common.exceptions import TimeoutException

from testkit.browser import Browser, Lab, browser_for_test, note_screenshots, screenshot_name, start_lab
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


# How long Lab may take to draw itself (normally under 15 s here) before it is reloaded once, as a
# person would; seen once in many runs: still on its splash screen after 120 s, cause not yet known.
LAB_START_SECONDS = 90


@pytest.fixture
def lab(browser: Browser, lab_server: LabServer, request: pytest.FixtureRequest) -> Lab:
    """JupyterLab, logged in with the token, its layout restored. A Lab that does not draw itself is
    reloaded once, with a warning in the run's summary and what it showed kept; if the reload does not
    help either, the error carries that (the hook below sees only the test's own fixtures)."""
    page = Lab(browser, lab_server.url)
    page.open()
    page.log_in(TOKEN)
    try:
        page.wait_ready(LAB_START_SECONDS)
    except TimeoutException as stuck:
        kept = keep_what_lab_showed(stuck, browser, lab_server, request.node.nodeid + "-first")
        warnings.warn(f"JupyterLab did not draw itself within {LAB_START_SECONDS} s and was reloaded "
                      f"({request.node.nodeid}; {kept})", stacklevel=1)
        try:
            page.open()
            if browser.all("#password_input"):
                page.log_in(TOKEN)
            page.wait_ready(LAB_START_SECONDS)
        except Exception as error:
            keep_what_lab_showed(error, browser, lab_server, request.node.nodeid)
            raise
    return page


def keep_what_lab_showed(error: BaseException, browser: Browser, lab_server: LabServer, name: str) -> str:
    """A screenshot, and the page's console and the end of the server's log in a text file beside it,
    both named in notes on ERROR (a reloaded Lab's error is not reported); the two paths."""
    shots = note_screenshots(error, [browser], name)
    console = "(not read)"
    with contextlib.suppress(Exception):
        console = "\n".join(entry["message"] for entry in browser.console()[-20:])
    text = screenshot_name(name).with_suffix(".txt")
    text.parent.mkdir(parents=True, exist_ok=True)
    text.write_text(f"the page's console:\n{console}\n\nthe server's log ends:\n"
                    f"{lab_server.tracked.logs(lab_server.container)[-3000:]}\n")
    error.add_note(f"the page's console and the server's log: {text}")
    return f"{shots[0] if shots else 'no screenshot'}, {text}"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None]:
    """Before the failure is reported: a screenshot of each browser the test had, named in the error."""
    if call.excinfo is not None and call.when in ("setup", "call"):
        funcargs = getattr(item, "funcargs", {})
        browsers = {id(value): value for value in funcargs.values() if isinstance(value, Browser)}
        browsers.update({id(value.browser): value.browser for value in funcargs.values() if isinstance(value, Lab)})
        note_screenshots(call.excinfo.value, browsers.values(), item.nodeid)
    yield
