"""The Dockerfile spells the variants too, for a plain `docker build` without build.py: its spelling
is checked against tf29env/build/variants.py, the one home of the names and bases."""

import re

from tf29env.build.variants import DEFAULT_VARIANT, VARIANTS
from tf29env.paths import REPO

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
