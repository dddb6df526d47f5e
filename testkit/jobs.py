"""Driving `job` (image/python/tf29image/jobs/) in a container of the image as its user does: through `docker exec`,
reading `job list --json` and the job's files."""

import json
import re
from typing import Any

from docker.models.containers import Container

from testkit.containers import TrackedContainer
from testkit.wait import wait_until

USER = "jovyan"
HOME = "/home/jovyan"
TRAINING = f"{HOME}/quickstart/5-training-job.ipynb"  # the quickstart's notebook made to run as a job
# A script that runs until interrupted and says so: what a training loop's KeyboardInterrupt handler does.
STOPPABLE = """\
import sys, time
print("started", sys.argv[1:], flush=True)
try:
    while True:
        time.sleep(0.1)
except KeyboardInterrupt:
    print("interrupted: saving", flush=True)
    raise
"""


def notebook(*cells: str, parameters: str = "") -> str:
    """An .ipynb of code cells; PARAMETERS, if given, is the cell tagged `parameters`."""
    sources = ([(parameters, ["parameters"])] if parameters else []) + [(cell, []) for cell in cells]
    return json.dumps({
        "cells": [{"cell_type": "code", "execution_count": None, "id": f"c{index}", "metadata": {"tags": tags},
                   "outputs": [], "source": source} for index, (source, tags) in enumerate(sources)],
        "metadata": {"kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python",
                                    "name": "python3"}},
        "nbformat": 4, "nbformat_minor": 5})


def job(tracked: TrackedContainer, container: Container, *args: str) -> tuple[int, str]:
    return tracked.exec(container, ["job", *args], user=USER)


def job_id(out: str) -> str:
    """The id `job run` and `job resume` print first: ID<TAB>FOLDER."""
    found = re.search(r"^(\S+)\t/home/jovyan/work/jobs/\1$", out, re.MULTILINE)
    assert found, out
    return found.group(1)


def record(tracked: TrackedContainer, container: Container, ident: str) -> dict[str, Any]:
    code, out = job(tracked, container, "list", "--json")
    assert code == 0, out
    found = [entry for entry in json.loads(out) if entry["id"] == ident]
    assert len(found) == 1, out
    return dict(found[0])


def wait_state(tracked: TrackedContainer, container: Container, ident: str, state: str,
               timeout: float = 120) -> dict[str, Any]:
    def probe() -> dict[str, Any] | None:
        found = record(tracked, container, ident)
        return found if found["state"] == state else None

    return wait_until(probe, timeout=timeout, what=f"job {ident} {state}")


def read(tracked: TrackedContainer, container: Container, path: str) -> str:
    code, out = tracked.exec(container, ["cat", path], user=USER)
    assert code == 0, out
    return out


def wait_log(tracked: TrackedContainer, container: Container, ident: str, text: str, timeout: float = 120) -> str:
    def probe() -> str | None:
        code, out = job(tracked, container, "log", ident)
        return out if code == 0 and text in out else None

    return wait_until(probe, timeout=timeout, what=f"{text!r} in job {ident}'s log")
