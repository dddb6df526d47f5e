"""The docs' pictures, taken from a real run of the image (`make screenshots`, or `python -m
scripts.screenshots --image REF` from the repository's root): JupyterLab after the first quickstart
notebook ran (README), TensorBoard inside Lab (README's TensorBoard section) and the team hub's spawn
form with its profiles (docs/hub.md). PNG files in docs/img/, at a fixed 1280x800 viewport.

The same headless Chromium and page helpers as the browser tests (testkit/browser.py); containers
publish on 127.0.0.1 only and are removed at the end. The hub is `make hub`'s, started the way
tests/hub starts it. Exits 0 with one line per picture, or 1 with the reason and a screenshot of
what the browser showed under build-output/screenshots/."""

import argparse
import json
import secrets
import subprocess
import sys
import tempfile
from pathlib import Path

from docker import DockerClient

from testkit.browser import (
    WINDOW,
    Browser,
    BrowserUnavailable,
    Lab,
    hub_log_in,
    screenshot_on_failure,
    start_lab,
)
from testkit.containers import TrackedContainer
from testkit.jupyter import put_file
from tests.hub.hubrun import ADMIN, HUB_PYTHON, HubRun, hub_environment
from tf29env.core import engine

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "docs" / "img"
TOKEN = secrets.token_hex(24)
SUMMARY = "selfcheck: "
HUB_FORM_HEIGHT = 520
# Above the notebook's second heading, the height of the self-check's last lines (in CSS pixels).
GPUS_HEADING = "The GPUs, as TensorFlow sees them"
SELFCHECK_LINES_SHOWN = 240
# A small Keras model trained for a few seconds with the TensorBoard callback, as a user's run would
# log it, so that TensorBoard has curves to draw.
TRAIN = """
import numpy as np, tensorflow as tf
np.random.seed(0); tf.random.set_seed(0)
x = np.random.rand(2048, 8).astype("float32"); y = (x.sum(axis=1) > 4).astype("float32")
layers = tf.keras.layers
model = tf.keras.Sequential([layers.Dense(32, activation="relu"), layers.Dense(1, activation="sigmoid")])
model.compile("adam", "binary_crossentropy", metrics=["accuracy"])
model.fit(x, y, epochs=25, batch_size=64, validation_split=0.2, verbose=0,
          callbacks=[tf.keras.callbacks.TensorBoard("/home/jovyan/work/logs/fit")])
"""
TENSORBOARD_NOTEBOOK = {
    "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Training curves\n",
                                                              "TensorBoard on `~/work/logs`, inside the notebook."]},
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
         "source": ["%load_ext tensorboard\n", "%tensorboard --logdir ~/work/logs"]},
    ],
    "metadata": {"kernelspec": {"display_name": "Python 3 (TensorFlow 2.9)", "language": "python", "name": "python3"}},
    "nbformat": 4, "nbformat_minor": 5,
}
# TensorBoard's line charts live in shadow DOM: the drawn curves (an SVG path with points each),
# found through every shadow root. Two charts (accuracy, loss), two runs (train, validation).
CURVES_DRAWN = """
const walk = (root) => [...root.querySelectorAll('*')].flatMap(e => e.shadowRoot ? [e, ...walk(e.shadowRoot)] : [e]);
return walk(document).filter(e => e.matches('path.line') && (e.getAttribute('d') || '').length > 20).length;
"""
CURVES = 4
# make hub offers only the CPU profile on an engine without the NVIDIA runtime; the picture shows
# the form of a box with two GPUs, so its ctl is told the engine has the runtime and HUB_GPUS names
# two GPUs (no nvidia-smi here to list them). No server is started from the form.
HUB_UP_AS_ON_A_GPU_BOX = ("import sys, hub.ctl as ctl; ctl.gpu_capable = lambda client: True; "
                          "sys.exit(ctl.main(['up']))")
HUB_GPUS = {"HUB_GPUS": "0,1"}


def quickstart_ran(lab: Lab, out: Path) -> Path:
    """Lab with quickstart/1-environment.ipynb after Run All: the self-check's lines in its output."""
    lab.open()
    lab.log_in(TOKEN)
    lab.wait_ready()
    lab.open_in_file_browser("quickstart", "1-environment.ipynb")
    lab.wait_kernel_idle()
    lab.menu("Run", "Run All Cells")
    lab.browser.wait(lambda: SUMMARY in lab.outputs() and "GPU visible" in lab.outputs(),
                     "the self-check's summary in the output", timeout=180)
    lab.wait_kernel_idle()
    lab.collapse_side_panel()
    # The self-check's last lines, then TensorFlow's cell and what it says. Lab draws only the cells
    # in view: the notebook is scrolled to its end first, then back to those lines.
    panel = ".jp-NotebookPanel:not(.lm-mod-hidden)"
    scroller = lab.browser.one(f"{panel} .jp-WindowedPanel-outer")
    lab.browser.driver.execute_script("arguments[0].scrollTop = arguments[0].scrollHeight", scroller)
    lab.browser.wait(lambda: "TensorFlow 2.9" in lab.outputs(), "TensorFlow's line in the last output")
    heading = lab.browser.wait(lambda: next((cell for cell in lab.browser.all(f"{panel} .jp-MarkdownCell")
                                             if GPUS_HEADING in cell.text), None), "the GPUs' heading")
    lab.browser.driver.execute_script("arguments[0].scrollIntoView({block: 'start'}); arguments[1].scrollTop -= "
                                      "arguments[2]", heading, scroller, SELFCHECK_LINES_SHOWN)
    return lab.browser.screenshot(out / "lab-quickstart.png")


def tensorboard_in_lab(lab: Lab, tracked: TrackedContainer, out: Path) -> Path:
    """A notebook whose %tensorboard shows a training run's curves inside Lab."""
    container = tracked.containers[0]
    code, printed = tracked.exec(container, ["python", "-c", TRAIN], user="jovyan")
    if code != 0:
        raise RuntimeError(f"training for the TensorBoard picture failed: {printed[-2000:]}")
    put_file(tracked.port(container, 8888), TOKEN, "work/training-curves.ipynb", json.dumps(TENSORBOARD_NOTEBOOK))
    lab.open()
    lab.wait_ready()
    lab.open_in_file_browser("work", "training-curves.ipynb")
    lab.collapse_side_panel()  # before TensorBoard draws, which it does for the width it gets
    lab.wait_kernel_idle()
    lab.menu("Run", "Run All Cells")
    frame = lab.browser.one(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output iframe", timeout=120)
    driver = lab.browser.driver
    driver.switch_to.frame(frame)
    try:
        lab.browser.wait(lambda: driver.execute_script(CURVES_DRAWN) >= CURVES, "TensorBoard's curves drawn",
                         timeout=120)
    finally:
        driver.switch_to.default_content()
    cell = lab.browser.one(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell")
    driver.execute_script("arguments[0].scrollIntoView({block: 'start'})", cell)
    return lab.browser.screenshot(out / "tensorboard-in-lab.png")


def hub_spawn_form(client: DockerClient, image: str, browser: Browser, out: Path) -> Path:
    """The spawn form a new member sees after the admin approved them: profiles and the SSH key field."""
    with tempfile.TemporaryDirectory(prefix="tf29-screenshots-hub-") as state:
        hub = HubRun(client, hub_environment(image, Path(state) / "state", **HUB_GPUS))
        try:
            started = subprocess.run([str(HUB_PYTHON), "-c", HUB_UP_AS_ON_A_GPU_BOX], cwd=REPO, capture_output=True,
                                     text=True, timeout=300, check=False, env={**hub.env, "PYTHONPATH": str(REPO)})
            if started.returncode != 0:
                raise RuntimeError(f"the hub did not start: {started.stderr.strip()[-2000:]}")
            admin = hub.signup(ADMIN)
            if not hub.login(admin):
                raise RuntimeError("the hub's admin could not log in")
            member = hub.signup("alice")
            hub.approve(member.name)
            hub_log_in(browser, hub.url, member.name, member.password)
            browser.one("#spawn_form input[name=profile]")
            browser.viewport(WINDOW[0], HUB_FORM_HEIGHT)  # the form fills the top of the page only
            return browser.screenshot(out / "hub-spawn-form.png")
        finally:
            hub.remove_everything()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.screenshots", description=__doc__.splitlines()[0])
    parser.add_argument("--image", default="tf29-env:latest-gpu", help="the image to run (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=OUT, help="folder for the PNG files (default: docs/img)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    client = engine.connect()
    tracked = TrackedContainer(client, args.image)
    try:
        with Browser() as browser, screenshot_on_failure(browser, "scripts-screenshots"):
            lab = Lab(browser, start_lab(tracked, TOKEN)[1])
            pictures = [quickstart_ran(lab, args.out), tensorboard_in_lab(lab, tracked, args.out)]
            pictures.append(hub_spawn_form(client, args.image, browser, args.out))
    except BrowserUnavailable as exc:
        print(f"screenshots: ERROR: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - one line for any failure; the screenshot shows the rest
        print(f"screenshots: ERROR: {type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc) else ''}",
              file=sys.stderr)
        return 1
    finally:
        tracked.remove_all()
    for picture in pictures:
        print(f"screenshots: {picture.relative_to(REPO) if picture.is_relative_to(REPO) else picture} "
              f"({picture.stat().st_size // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
