"""The team hub in a real browser (headless Chromium, testkit/browser.py): a new member signs up on
the hub's page, cannot log in until the admin approves them, then logs in, starts a CPU server
from the spawn form and lands in JupyterLab. A failure keeps a screenshot and names it."""

import secrets
from collections.abc import Iterator

import pytest

from testkit.browser import KERNEL_NAME, Browser, Lab, browser_for_test, hub_log_in, hub_sign_up, screenshot_on_failure
from tests.hub.hubrun import ADMIN, SPAWN_TIMEOUT, HubRun

pytestmark = pytest.mark.image



@pytest.fixture
def browser() -> Iterator[Browser]:
    with browser_for_test() as started:
        yield started


def test_sign_up_approval_and_login_land_in_lab(team_hub: HubRun, browser: Browser,
                                                request: pytest.FixtureRequest) -> None:
    with screenshot_on_failure(browser, request.node.nodeid):
        sign_up_approval_and_login(team_hub, browser)


def sign_up_approval_and_login(team_hub: HubRun, browser: Browser) -> None:
    admin = team_hub.signup(ADMIN)
    assert team_hub.login(admin), "the admin named in HUB_ADMIN_USERS could not log in after signing up"
    name, password = "dana", secrets.token_urlsafe(18)

    said = hub_sign_up(browser, team_hub.url, name, password)
    assert "sent to the admin" in said, said
    hub_log_in(browser, team_hub.url, name, password)
    refused = browser.one("p.login_error").text
    assert "has not been authorized" in refused, refused

    team_hub.approve(name)
    hub_log_in(browser, team_hub.url, name, password)
    browser.one("#spawn_form input[name=profile][value=cpu]").click()
    browser.by_text("#spawn_form button[type=submit]", "Start").click()
    lab = Lab(browser, f"{team_hub.url}/user/{name}/")
    lab.wait_ready(timeout=SPAWN_TIMEOUT + 60)
    assert browser.driver.current_url.startswith(f"{lab.url}lab"), browser.driver.current_url
    assert KERNEL_NAME in lab.launcher_cards()
    assert "quickstart" in lab.file_names()
