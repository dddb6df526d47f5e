"""JupyterLab of the image under test in a real browser (headless Chromium), driven as a person
does: the token login, the launcher and file browser, the first quickstart notebook run from the
menu, a terminal, TensorBoard from the launcher and the GPU dashboards on a machine without a GPU."""

import json
import re

import pytest

from testkit.browser import KERNEL_NAME, Browser, Lab
from testkit.jupyter import put_file
from testkit.wait import wait_until
from tests.browser.conftest import TOKEN, LabServer

pytestmark = pytest.mark.image

# The notebook's summary line of the self-check (docs/selfcheck.md), as tests/notebooks reads it.
SELFCHECK_SUMMARY = re.compile(r"^selfcheck: \d+ PASS, .* GPU visible: (yes|no)", re.M)
# A scalar the way a Keras TensorBoard callback writes one, into the run "demo", as the dev user.
WRITE_EVENTS = ("import tensorflow as tf; w = tf.summary.create_file_writer('/home/jovyan/work/logs/demo'); "
                "w.as_default().__enter__(); [tf.summary.scalar('loss', 1.0 / (s + 1), step=s) for s in range(3)]; "
                "w.flush()")


def test_token_login(browser: Browser, lab_server: LabServer) -> None:
    """A wrong token is refused on Jupyter's login page; the right one opens Lab, with no pop-up
    asking about news or updates (the image turns both off)."""
    page = Lab(browser, lab_server.url)
    page.open()
    assert "/login" in browser.driver.current_url, browser.driver.current_url
    page.log_in("not-the-token-0123456789")
    assert page.login_error() == "Invalid credentials"
    assert "/login" in browser.driver.current_url
    page.log_in(TOKEN)
    page.wait_ready()
    assert browser.driver.current_url.startswith(f"{lab_server.url}lab"), browser.driver.current_url
    page.launcher_cards()
    # Lab asks about news once its settings are read after start; it must not, for a while.
    with pytest.raises(TimeoutError):
        wait_until(page.notifications, timeout=5, what="a notification")
    assert page.notifications() == []


def test_launcher_and_file_browser(lab: Lab) -> None:
    cards = lab.launcher_cards()
    assert KERNEL_NAME in cards, cards
    assert any(card.startswith("TensorBoard") for card in cards), cards
    assert "Start a new terminal session" in cards, cards
    assert "quickstart" in lab.file_names()
    assert lab.notifications() == []


def test_run_all_in_the_first_quickstart_notebook(lab: Lab) -> None:
    """Open quickstart/1-environment.ipynb from the file browser, Run, Run All Cells, and read the
    self-check's summary in the cell's output."""
    lab.open_in_file_browser("quickstart", "1-environment.ipynb")
    assert lab.wait_kernel_idle() == KERNEL_NAME
    lab.menu("Run", "Run All Cells")
    out = lab.browser.wait(lambda: lab.outputs() if SELFCHECK_SUMMARY.search(lab.outputs()) else None,
                           "the self-check's summary line in the output", timeout=180)
    assert "Traceback" not in out, out
    lab.wait_kernel_idle()
    assert "Traceback" not in lab.outputs()


def test_terminal_runs_the_images_python(lab: Lab) -> None:
    """A terminal from the launcher starts in the home folder, and `python` there is the image's,
    with TensorFlow (a login shell's /etc/profile must not lose the venv's PATH)."""
    lab.click_launcher("Start a new terminal session")
    prompt = lab.terminal_prompt()
    folder = lab.run_in_terminal(prompt, "pwd")
    version = lab.run_in_terminal(prompt, "python -c 'import tensorflow as tf; print(tf.__version__)'")
    wrong = [f"pwd showed {folder}"] if folder != ["/home/jovyan"] else []
    wrong += [] if "2.9.3" in version else ["python showed:\n" + "\n".join(version)]
    assert not wrong, "\n".join(wrong)


def test_tensorboard_tile_opens_tensorboard(lab: Lab, lab_server: LabServer) -> None:
    """The launcher's TensorBoard opens in a tab of its own, behind Lab's login, on ~/work/logs."""
    code, out = lab_server.tracked.exec(lab_server.container, ["python", "-c", WRITE_EVENTS], user="jovyan")
    assert code == 0, out
    driver = lab.browser.driver
    lab_tab = driver.current_window_handle
    lab.click_launcher("TensorBoard")
    new_tab = lab.browser.wait(lambda: next((h for h in driver.window_handles if h != lab_tab), None),
                               "a new browser tab")
    driver.switch_to.window(new_tab)
    try:
        lab.browser.wait(lambda: driver.title == "TensorBoard", "TensorBoard's page", timeout=150)
        assert driver.current_url.startswith(f"{lab_server.url}tensorboard/"), driver.current_url
        # TensorBoard lists the run it found in the log folder, and the scalar it holds.
        lab.browser.wait(lambda: "demo" in lab.browser.page_text() and "loss" in lab.browser.page_text(),
                         "the run 'demo' and its scalar 'loss' on TensorBoard's page", timeout=90)
    finally:
        driver.close()
        driver.switch_to.window(lab_tab)


def test_gpu_dashboards_without_a_gpu(lab: Lab) -> None:
    """On a machine without a GPU the GPU dashboards open and draw no GPU, with no error shown and
    no uncaught error in the page, while the machine's own (CPU) dashboard draws its feed."""
    lab.browser.page_errors()  # what loading Lab logged is not the dashboards'
    lab.open_side_panel("GPU Dashboards")
    lab.browser.by_text(".gpu-dashboard-button", "GPU Utilization").click()
    lab.browser.wait(lambda: "GPU Utilization" in lab.current_tab().text, "the GPU Utilization dashboard")
    assert not lab.browser.all(".jp-Dialog"), lab.browser.all(".jp-Dialog")[0].text
    assert not lab.browser.all("#jp-main-dock-panel .recharts-bar-rectangle"), "a GPU drawn where there is none"
    assert "Traceback" not in lab.current_tab().text
    lab.browser.by_text(".gpu-dashboard-button", "Machine Resources").click()
    lab.browser.wait(lambda: lab.browser.all(".lm-DockPanel-widget:not(.lm-mod-hidden) .recharts-line"),
                     "the Machine Resources dashboard's CPU lines")
    assert "CPU Utilization" in lab.current_tab().text
    assert lab.browser.page_errors() == []
    assert not lab.browser.all(".jp-Dialog")


def test_a_widget_draws_in_a_notebook(lab: Lab, lab_server: LabServer) -> None:
    """ipywidgets, one of the image's promises: a slider made in a cell is drawn as a slider (Lab's
    widget manager extension loaded and talking to the kernel), not as its text repr."""
    notebook = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                           "source": "import ipywidgets\nipywidgets.IntSlider(value=7, description='answer')"}],
                "metadata": {"kernelspec": {"name": "python3", "display_name": KERNEL_NAME, "language": "python"}},
                "nbformat": 4, "nbformat_minor": 5}
    put_file(lab_server.tracked.port(lab_server.container, 8888), TOKEN, "work/widget.ipynb", json.dumps(notebook))
    lab.open_in_file_browser("work", "widget.ipynb")
    lab.wait_kernel_idle()
    lab.menu("Run", "Run All Cells")
    slider = lab.browser.one(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output .widget-slider", 120)
    assert "answer" in slider.text, slider.text
    assert "IntSlider(value=7" not in lab.outputs(), lab.outputs()
