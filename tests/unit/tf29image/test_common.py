"""tf29image.common, what several of the image's modules share: PEP 503 names, whether a process
lives, the venv's installed distributions."""

import os
import subprocess
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

from tf29image import common


def test_the_venv_pins_are_its_dist_info_folders(tmp_path: Path) -> None:
    for name in ("numpy-1.23.5.dist-info", "Jinja2-3.1.6.dist-info", "zope.interface-7.0.dist-info",
                 "tensorflow", "README.txt"):
        (tmp_path / name).mkdir()
    assert common.venv_pins(str(tmp_path)) == {"numpy": "1.23.5", "jinja2": "3.1.6", "zope-interface": "7.0"}


@pytest.mark.parametrize("name", ["TensorFlow-IO-GCS-FileSystem", "zope.interface", "a__b.-c", "Keras",
                                  "nvidia_cudnn_cu11"])
def test_the_images_name_normaliser_agrees_with_packaging(name: str) -> None:
    """The inventory probe, the start-up and the venv's site hook run without packaging: they share PEP 503's
    rule, common.canonical, which must say what the host's packaging says."""
    assert common.canonical(name) == canonicalize_name(name)


def test_a_process_lives_until_it_is_gone() -> None:
    assert common.pid_alive(os.getpid())
    assert common.pid_alive(1)  # init, whoever runs this (as another user: signal 0 refused, yet alive)
    done = subprocess.Popen(["true"])
    done.wait()
    assert not common.pid_alive(done.pid)
