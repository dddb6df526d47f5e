"""The Dockerfile spells the variants too, for a plain `docker build` without build.py, and so do the
Makefile and the image's self-check, which cannot import the host package: their spelling is
checked against tf29env/core/variants.py, the one home of the names and bases."""

import re
from pathlib import Path

from tf29env.core.paths import REPO
from tf29env.core.variants import CPU, DEFAULT_VARIANT, GPU, VARIANTS
from tf29image.selfcheck.checks.common import variant

DOCKERFILE = (REPO / "Dockerfile").read_text()


def test_the_dockerfile_knows_exactly_the_variants() -> None:
    arms = re.search(r'case "\$\{VARIANT\}" in(.*?)esac', DOCKERFILE, re.DOTALL)
    assert arms, "the Dockerfile has no case over VARIANT"
    assert set(re.findall(r"^\s*([a-z]+)\)", arms.group(1), re.MULTILINE)) == set(VARIANTS)
    only = re.findall(r'if \[ "\$\{VARIANT\}" = ([a-z]+) \]', DOCKERFILE)  # the gpu-only step
    assert only and set(only) <= set(VARIANTS)


def test_the_dockerfiles_defaults_are_the_default_variants() -> None:
    variant = re.search(r"^ARG VARIANT=(\S+)$", DOCKERFILE, re.MULTILINE)
    assert variant and variant.group(1) == DEFAULT_VARIANT
    base = re.search(r"^ARG BASE_IMAGE=(\S+)$", DOCKERFILE, re.MULTILINE)
    assert base and base.group(1) == VARIANTS[DEFAULT_VARIANT].default_base


def test_the_makefiles_default_is_the_default_variant() -> None:
    default = re.search(r"^VARIANT \?= (\S+)$", (REPO / "Makefile").read_text(), re.MULTILINE)
    assert default and default.group(1) == DEFAULT_VARIANT


def test_the_self_check_names_a_variant_as_variants_py_does(tmp_path: Path) -> None:
    """Inside the image the self-check reads the variant from the lock file the Dockerfile writes."""
    lock = tmp_path / "requirements.lock"
    lock.write_text("numpy==1.23.5\ntensorflow-cpu==2.9.3\n")
    assert variant(str(lock)) == CPU
    lock.write_text("numpy==1.23.5\ntensorflow==2.9.3\n")
    assert variant(str(lock)) == GPU
