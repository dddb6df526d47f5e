"""A real browser for the browser tests and the docs' pictures: Debian's Chromium, headless, driven
by Selenium through the system's chromedriver (never Selenium Manager, which would download one),
and what a person does with it in JupyterLab and on the team hub's pages, read back from the page.

Every wait has a deadline (WebDriverWait); a test that fails keeps a screenshot under
build-output/screenshots/ and says where in its error (`screenshot_on_failure`, `note_screenshots`)."""

import contextlib
import json
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

import pytest
import requests
from docker.models.containers import Container
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.wait import WebDriverWait

from testkit.containers import LOOPBACK, TrackedContainer

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
# What scripts/host-setup.sh installs for each binary (Debian's names).
PACKAGES = {CHROMIUM: "chromium", CHROMEDRIVER: "chromium-driver"}
SCREENSHOTS = REPO / "build-output" / "screenshots"
# What the launcher and a notebook's toolbar call the image's kernel.
KERNEL_NAME = json.loads((REPO / "image" / "jupyter" / "kernel.json").read_text())["display_name"]
WINDOW = (1280, 800)
WAIT = 60.0
# The title of the dialog Lab shows while it reconnects after a failed request to its server.
CONNECTION_ERROR = "Server Connection Error"
FLAGS = (
    "--headless=new",
    # Chromium's sandbox refuses to start as root, which CI runners and build containers are.
    "--no-sandbox",
    # Containers often give /dev/shm 64 MiB, too little for the renderer.
    "--disable-dev-shm-usage",
    # Every page is on 127.0.0.1; nothing else may be asked for (no proxy, no updates, no sync).
    "--no-proxy-server",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--no-first-run",
    "--lang=en-US",
    "--force-device-scale-factor=1",
)
T = TypeVar("T")


class BrowserUnavailable(RuntimeError):
    """Chromium or its driver is missing or does not start; the message is one line that says what
    to install."""


def missing_package() -> str | None:
    """One line naming the package that is not installed, or None."""
    for path, package in PACKAGES.items():
        if not path.is_file():
            return f"{package} is not installed ({path} is missing): scripts/host-setup.sh installs it"
    return None


class Browser:
    """One headless Chromium with a fixed viewport (WINDOW), so that pages lay out and pictures
    look the same on every machine."""

    def __init__(self, window: tuple[int, int] = WINDOW) -> None:
        missing = missing_package()
        if missing:
            raise BrowserUnavailable(missing)
        # Selenium Manager must never run: it would try to download a driver and a browser.
        os.environ["SE_OFFLINE"] = "true"
        options = Options()
        options.binary_location = str(CHROMIUM)
        for flag in (*FLAGS, f"--window-size={window[0]},{window[1]}"):
            options.add_argument(flag)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        self.log = Path(tempfile.mkstemp(prefix="chromedriver-", suffix=".log")[1])
        service = Service(executable_path=str(CHROMEDRIVER), log_output=str(self.log))
        try:
            self.driver = webdriver.Chrome(options=options, service=service)
        except WebDriverException as exc:
            first = (exc.msg or str(exc)).strip().splitlines()[0]
            raise BrowserUnavailable(f"chromium did not start through {CHROMEDRIVER}: {first} (chromium and "
                                     "chromium-driver must be the same version: scripts/host-setup.sh installs both)"
                                     ) from None
        self.viewport(*window)

    def viewport(self, width: int, height: int) -> None:
        """The page's size in CSS pixels (--window-size would include the window's frame)."""
        self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    def close(self) -> None:
        with contextlib.suppress(WebDriverException):
            self.driver.quit()
        self.log.unlink(missing_ok=True)

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # --- waiting and finding
    def wait(self, condition: Callable[[], T | None], what: str, timeout: float = WAIT) -> T:
        """condition's first truthy result within TIMEOUT; a TimeoutException naming WHAT otherwise.
        Elements that vanish while being read count as not yet."""
        def probe(_: WebDriver) -> T | Literal[False]:
            try:
                result = condition()
            except StaleElementReferenceException:
                return False
            return result if result else False

        wait: WebDriverWait[WebDriver] = WebDriverWait(self.driver, timeout, poll_frequency=0.25)
        return wait.until(probe, f"{what} (waited {timeout:.0f}s on {self.driver.current_url})")

    def all(self, css: str) -> list[WebElement]:
        return list(self.driver.find_elements(By.CSS_SELECTOR, css))

    def one(self, css: str, timeout: float = WAIT) -> WebElement:
        """The first visible element matching CSS."""
        return self.wait(lambda: next((e for e in self.all(css) if e.is_displayed()), None), f"{css} shown", timeout)

    def by_text(self, css: str, text: str, timeout: float = WAIT) -> WebElement:
        """The first visible element matching CSS whose text, stripped, is TEXT."""
        return self.wait(lambda: next((e for e in self.all(css) if e.is_displayed() and e.text.strip() == text), None),
                         f"{css} saying {text!r}", timeout)

    def present(self, css: str, timeout: float = WAIT) -> WebElement:
        """The first element matching CSS, shown or not (xterm's input field is a hidden textarea)."""
        return self.wait(lambda: next(iter(self.all(css)), None), f"{css} in the page", timeout)

    def type_into(self, css: str, text: str) -> None:
        field = self.one(css)
        field.clear()
        field.send_keys(text)

    def page_text(self) -> str:
        return str(self.driver.find_element(By.TAG_NAME, "body").text)

    def console(self) -> list[dict[str, str]]:
        """Chromium's console entries since the last call (level, source, message)."""
        entries = self.driver.get_log("browser")  # type: ignore[no-untyped-call]  # selenium leaves it untyped
        return [{key: str(entry.get(key, "")) for key in ("level", "source", "message")} for entry in entries]

    def page_errors(self) -> list[str]:
        """Uncaught JavaScript errors in the console since the last call."""
        return [entry["message"] for entry in self.console() if entry["source"] == "javascript"]

    # --- pictures
    def screenshot(self, path: Path) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        if not self.driver.save_screenshot(str(path)):
            raise RuntimeError(f"no screenshot could be taken for {path}")
        return path


def browser_for_test() -> Browser:
    """A started Browser, or the test fails (never skips) with the one line that says what to install."""
    try:
        return Browser()
    except BrowserUnavailable as exc:
        why = str(exc)
    pytest.fail(why, pytrace=False)


def screenshot_name(test_id: str) -> Path:
    """build-output/screenshots/NAME.png for a test id such as tests/browser/test_lab.py::test_x."""
    return SCREENSHOTS / (re.sub(r"[^A-Za-z0-9_.-]+", "-", test_id.replace(".py::", "-")).strip("-") + ".png")


def note_screenshots(error: BaseException, browsers: Iterable[Browser], test_id: str) -> list[Path]:
    """Save what each browser shows, and add where to ERROR's message (pytest prints the note)."""
    saved = []
    for index, browser in enumerate(browsers):
        path = screenshot_name(test_id if index == 0 else f"{test_id}-{index}")
        try:
            saved.append(browser.screenshot(path))
        except (WebDriverException, RuntimeError) as exc:
            error.add_note(f"no screenshot of the browser: {exc}".splitlines()[0])
    for path in saved:
        error.add_note(f"screenshot of the browser: {path}")
        print(f"screenshot of the browser: {path}")
    return saved


@contextlib.contextmanager
def screenshot_on_failure(browser: Browser, test_id: str) -> Iterator[Browser]:
    """For code outside tests/browser (whose conftest hook does it): on an error, keep a screenshot."""
    try:
        yield browser
    except BaseException as exc:
        note_screenshots(exc, [browser], test_id)
        raise


def rows(text: str) -> list[str]:
    return [line.replace("\xa0", " ").rstrip() for line in text.splitlines()]


@dataclass
class Lab:
    """JupyterLab in a Browser, at URL (the server's base URL, ending in /)."""

    browser: Browser
    url: str

    def open(self, path: str = "lab") -> None:
        """Open PATH with a fresh layout (?reset), not what an earlier visit left in the workspace."""
        self.browser.driver.get(f"{self.url}{path}?reset")

    def log_in(self, token: str) -> None:
        """On Jupyter's login page: type the token, press Log in."""
        self.browser.type_into("#password_input", token)
        self.browser.one("#login_submit").click()

    def login_error(self) -> str:
        return self.browser.one(".message.error").text.strip()

    def wait_ready(self, timeout: float = 120) -> None:
        """Lab has restored its layout: the splash screen is gone and the menu bar is drawn."""
        self.browser.one("#jp-MainMenu", timeout)
        self.browser.wait(lambda: not self.browser.all("#jupyterlab-splash"), "JupyterLab's splash screen gone",
                          timeout)

    def launcher_cards(self) -> list[str]:
        self.browser.one(".jp-LauncherCard")
        return [card.get_attribute("title") or card.text for card in self.browser.all(".jp-LauncherCard")]

    def click_launcher(self, title: str) -> None:
        """Click the launcher card whose tooltip (its full label) starts with TITLE."""
        card = self.browser.wait(lambda: next((c for c in self.browser.all(".jp-LauncherCard")
                                               if (c.get_attribute("title") or "").startswith(title)), None),
                                 f"the launcher's {title!r} card")
        card.click()

    def file_names(self) -> list[str]:
        self.browser.one(".jp-DirListing-itemText")
        return [item.text.strip() for item in self.browser.all(".jp-DirListing-itemText")]

    def open_in_file_browser(self, *names: str) -> None:
        """Double-click each name in turn in the file browser: folders, then the file."""
        for name in names:
            item = self.browser.by_text(".jp-DirListing-itemText", name)
            ActionChains(self.browser.driver).double_click(item).perform()

    def close_connection_error(self) -> None:
        """Close Lab's "Server Connection Error" dialog, as a person does, if one is shown: on a loaded
        2-core machine one poll of the server now and then fails, and Lab says so in a modal dialog while
        it reconnects by itself. Said on stderr (pytest shows it with the test), so that it stays visible."""
        for dialog in self.browser.all(f"dialog.jp-Dialog[aria-label^='{CONNECTION_ERROR}']"):
            if dialog.is_displayed():
                print(f"testkit.browser: closed JupyterLab's {CONNECTION_ERROR!r} dialog", file=sys.stderr)
                dialog.find_element(By.CSS_SELECTOR, ".jp-Dialog-button.jp-mod-accept, .jp-Dialog-button").click()

    def menu(self, menu: str, item: str) -> None:
        """Menu bar MENU, then its entry ITEM (as a person reads them)."""
        self.close_connection_error()
        self.browser.by_text("#jp-MainMenu .lm-MenuBar-itemLabel", menu).click()
        self.browser.by_text(".lm-Menu-content .lm-Menu-itemLabel", item).click()

    def open_side_panel(self, title: str) -> None:
        """Click the left side bar's tab whose tooltip starts with TITLE (File Browser, GPU Dashboards, ...)."""
        tab = self.browser.wait(lambda: next((t for t in self.browser.all(".jp-SideBar.jp-mod-left .lm-TabBar-tab")
                                              if (t.get_attribute("title") or "").startswith(title)), None),
                                f"the side bar's {title!r} tab")
        if "lm-mod-current" not in (tab.get_attribute("class") or ""):
            tab.click()

    def collapse_side_panel(self) -> None:
        """Fold the left side panel away (a click on its open tab), leaving the main area more room."""
        for tab in self.browser.all(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current"):
            tab.click()

    def current_tab(self) -> WebElement:
        """The main area's visible document or panel."""
        return self.browser.one("#jp-main-dock-panel .lm-DockPanel-widget:not(.lm-mod-hidden)")

    def wait_kernel_idle(self, timeout: float = 120) -> str:
        """The open notebook's kernel has started and is idle; its display name (the toolbar's)."""
        panel = ".jp-NotebookPanel:not(.lm-mod-hidden)"

        def idle() -> str | None:
            name = self.browser.one(f"{panel} .jp-Toolbar-kernelName", timeout).text.strip()
            ready = self.browser.all(f"{panel} .jp-Notebook-ExecutionIndicator[data-status=idle]")
            return name if ready and name not in ("", "No Kernel") else None

        return self.browser.wait(idle, "the notebook's kernel started and idle", timeout)

    def outputs(self) -> str:
        """The text of the current notebook's drawn cell outputs."""
        shown = self.browser.all(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output")
        return "\n".join(output.text for output in shown)

    def notifications(self) -> list[str]:
        """Pop-ups (toasts) on screen, and the count on the status bar's notification bell."""
        shown = [toast.text for toast in self.browser.all(".Toastify__toast")]
        bell = [e.text.strip() for e in self.browser.all(".jp-Notification-Status")]
        return shown + [f"{count} in the notification center" for count in bell if count not in ("", "0")]

    # --- the terminal: xterm draws on a canvas; in screen-reader mode (a Lab setting) it mirrors
    # every row of the screen in its accessibility tree, which is what is read here.
    def terminal_rows(self) -> list[str]:
        tree = self.browser.all(".jp-Terminal:not(.lm-mod-hidden) .xterm-accessibility-tree > [role=listitem]")
        return rows("\n".join(str(row.get_attribute("textContent") or "") for row in tree))

    def terminal_prompt(self, timeout: float = WAIT) -> str:
        """Wait for the shell's first prompt (a row ending in $ or #) and return it."""
        def prompt() -> str | None:
            shown = [row for row in self.terminal_rows() if row]
            return shown[-1] if shown and shown[-1].endswith(("$", "#")) else None

        return self.browser.wait(prompt, "the terminal's shell prompt (is its screen-reader mode on?)", timeout)

    def run_in_terminal(self, prompt: str, command: str, timeout: float = 120) -> list[str]:
        """Type COMMAND and Enter at PROMPT; wait for the prompt to come back; return the rows between."""
        self.browser.present(".jp-Terminal:not(.lm-mod-hidden) .xterm-helper-textarea").send_keys(command + Keys.ENTER)
        typed = f"{prompt} {command}"

        def finished() -> list[str] | None:
            shown = self.terminal_rows()
            starts = [i for i, row in enumerate(shown) if row == typed]
            if not starts:
                return None
            after = shown[starts[-1] + 1:]
            ends = [i for i, row in enumerate(after) if row == prompt]
            return after[:ends[0]] if ends else None

        try:
            return self.browser.wait(finished, f"{command!r} run in the terminal", timeout)
        except WebDriverException as exc:
            exc.add_note("the terminal showed:\n" + "\n".join(row for row in self.terminal_rows() if row))
            raise


def lab_setting(url: str, token: str, plugin: str, values: dict[str, object]) -> None:
    """Save a user setting of PLUGIN through Lab's settings API, as its Settings Editor does."""
    response = requests.put(f"{url}lab/api/settings/{plugin}", headers={"Authorization": f"token {token}"},
                            json={"raw": json.dumps(values)}, timeout=30)
    assert response.status_code == 204, f"PUT settings of {plugin}: {response.status_code} {response.text[:300]}"


def start_lab(tracked: TrackedContainer, token: str, **environment: str) -> tuple[Container, str]:
    """A JupyterLab container of the image for a browser, healthy, on its 127.0.0.1 port, with the
    terminal's screen-reader mode on (Lab.terminal_rows reads it); the container and Lab's URL."""
    container = tracked.run(environment={"JUPYTER_TOKEN": token, **environment},
                            publish=(8888,))
    tracked.wait_healthy(container)
    url = f"http://{LOOPBACK}:{tracked.port(container, 8888)}/"
    lab_setting(url, token, "@jupyterlab/terminal-extension:plugin", {"screenReaderMode": True})
    return container, url


# --- the team hub's own pages (JupyterHub with NativeAuthenticator)
def hub_sign_up(browser: Browser, hub_url: str, name: str, password: str) -> str:
    """Fill in /hub/signup as a new member does; the page's answer (NativeAuthenticator's alert)."""
    browser.driver.get(f"{hub_url}/hub/signup")
    browser.type_into("#username_input", name)
    browser.type_into("#password_input", password)
    browser.type_into("#password_confirmation_input", password)
    browser.one("#signup_submit").click()
    return browser.one("div.alert").text.strip()


def hub_log_in(browser: Browser, hub_url: str, name: str, password: str) -> None:
    browser.driver.get(f"{hub_url}/hub/login")
    browser.type_into("#username_input", name)
    browser.type_into("#password_input", password)
    browser.one("#login_submit").click()
