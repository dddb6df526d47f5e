"""The size experiment (--slim VARIANT): the Dockerfile with dead weight removed from our layers,
built under the bench's own tag, measured, and checked with `pip check`, the imports and the self-check.

What goes: apt's download cache and package caches in the apt layer (/var/cache/apt: the .debs and
pkgcache.bin / srcpkgcache.bin; Docker's official Debian and Ubuntu images drop them through
/etc/apt/apt.conf.d/docker-clean, a debootstrapped base such as the stand-in keeps them); the
`tests` folders inside site-packages (pandas, numpy, matplotlib, ... ship their test suites;
nothing imports them at run time); TensorFlow's C++ headers (tensorflow/include, needed only to
compile custom ops). The pip-layer removal runs before the Dockerfile's own `pip check` and
import line, so the build itself proves that both still work."""

from typing import Any

from docker import DockerClient

from bench import builds, contexts, incontainer, layers
from bench.sizes import ImageSize
from tf29env import engine
from tf29env.log import Log
from tf29env.variants import Variant

SLIM_TAG_PREFIX = "tf29-env:bench-slim-"
# The du figures (bench.sizes.WEIGHT) of what the slim Dockerfile removes: the expected saving.
SLIM_WEIGHTS = ("apt caches (/var/cache/apt)", "tests folders in site-packages",
                "TensorFlow C++ headers (tensorflow/include)")

APT_ANCHOR = " && rm -rf /var/lib/apt/lists/* "
APT_LINE = " && apt-get clean && rm -f /var/cache/apt/*.bin \\\n"
ANCHOR = " && pip check \\\n"
SLIM_LINES = (
    ' && find "${VIRTUAL_ENV}/lib" -type d -name tests -path "*/site-packages/*" -prune -exec rm -rf {} + \\\n',
    ' && rm -rf "${VIRTUAL_ENV}"/lib/python3*/site-packages/tensorflow/include \\\n',
)
CHECKS = {
    "pip check": ["/opt/venv/bin/pip", "check"],
    "imports": ["/opt/venv/bin/python", "-c", "import tensorflow as tf, keras, jupyterlab, numpy, pandas, matplotlib, "
                "ipywidgets; tf.test.is_built_with_cuda(); print(tf.reduce_sum(tf.ones([4, 4])).numpy())"],
}


def slim_dockerfile(text: str) -> str:
    """The Dockerfile with APT_LINE before the apt layer's cleanup and SLIM_LINES before `pip check`,
    each only where the Dockerfile does not do it already (it adopted apt-get clean and the tests
    folders' removal after the first measurement)."""
    for anchor in (APT_ANCHOR, ANCHOR):
        if text.count(anchor) != 1:
            raise ValueError(f"the Dockerfile has {text.count(anchor)} '{anchor.strip()}' lines, expected exactly one")
    apt = "" if " && apt-get clean" in text else APT_LINE
    pip = "".join(line for line in SLIM_LINES if line not in text)
    return text.replace(APT_ANCHOR, apt + APT_ANCHOR).replace(ANCHOR, pip + ANCHOR)


def measure(client: DockerClient, original: bytes, base: str, variant: Variant, reference: ImageSize,
            log: Log) -> dict[str, Any]:
    """Build the slim Dockerfile under SLIM_TAG; its size against `reference` and its checks."""
    tag = f"{SLIM_TAG_PREFIX}{variant.name}"
    tar = contexts.replace_member(original, "Dockerfile", lambda data: slim_dockerfile(data.decode()).encode())
    old_id = builds.previous_id(client, tag)
    image_id, seconds = builds.single_pass(client, tar, base, variant, log, tag=tag)
    builds.drop_replaced(client, old_id, image_id)
    split = layers.split(client.api.history(tag), str(engine.inspect(client, base)["Id"]),
                         len(client.api.history(base)))
    checks = []
    for name, argv in CHECKS.items():
        status, output = engine.run_command(client, tag, argv)
        checks.append({"name": name, "exit": status, "tail": output.strip()[-200:]})
    selfcheck = incontainer.selfcheck_once(client, tag)
    imports = incontainer.import_once(client, tag)
    return {
        "image": tag, "build_s": round(seconds, 1), "ours_bytes": split.ours_bytes, "total_bytes": split.total,
        "saved_bytes": reference.split.ours_bytes - split.ours_bytes,
        "expected_bytes": sum(reference.weight[name] for name in SLIM_WEIGHTS),
        "checks": checks, "selfcheck_statuses": selfcheck.statuses, "import_tensorflow_cold_s": imports.cold_s,
        # The other candidate, the venv's bytecode, is not removed: this is what removing it would cost.
        "reference_import_without_bytecode_s": incontainer.import_without_bytecode(client, reference.image),
    }
