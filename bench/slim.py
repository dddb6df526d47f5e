"""The size experiment (--slim VARIANT): the Dockerfile with more dead weight removed from our
layers, built under the bench's own tag, measured, and checked with `pip check`, the imports and
the self-check.

What goes: TensorFlow's C++ headers (tensorflow/include, needed only to compile custom ops). The
Dockerfile itself already drops apt's caches and the site-packages `tests` folders, which this
experiment measured first. The removal runs before the Dockerfile's own `pip check` and import
line, so the build itself proves that both still work."""

from typing import Any

from docker import DockerClient

from bench import builds, contexts, incontainer, sizes
from bench.sizes import ImageSize
from tf29env.core import engine
from tf29env.core.log import Log
from tf29env.core.variants import Variant

SLIM_TAG_PREFIX = "tf29-env:bench-slim-"
# The du figures (bench.sizes.WEIGHT) of what the slim Dockerfile removes: the expected saving.
SLIM_WEIGHTS = ("TensorFlow C++ headers (tensorflow/include)",)

# The main pip step's check, at the start of its line (the gpu-only step's own, indented, is not it).
ANCHOR = "\n && pip check \\\n"
SLIM_LINE = '\n && rm -rf "${VIRTUAL_ENV}"/lib/python3*/site-packages/tensorflow/include \\'
CHECKS = {
    "pip check": ["/opt/venv/bin/pip", "check"],
    "imports": ["/opt/venv/bin/python", "-c", "import tensorflow as tf, keras, jupyterlab, numpy, pandas, matplotlib, "
                "ipywidgets; tf.test.is_built_with_cuda(); print(tf.reduce_sum(tf.ones([4, 4])).numpy())"],
}


def slim_dockerfile(text: str) -> str:
    """The Dockerfile with SLIM_LINE before `pip check`."""
    if text.count(ANCHOR) != 1:
        raise ValueError(f"the Dockerfile has {text.count(ANCHOR)} '{ANCHOR.strip()}' lines, expected exactly one")
    return text.replace(ANCHOR, SLIM_LINE + ANCHOR)


def measure(client: DockerClient, original: bytes, base: str, variant: Variant, cas: dict[str, str],
            reference: ImageSize, log: Log) -> dict[str, Any]:
    """Build the slim Dockerfile under SLIM_TAG; its size against `reference` and its checks."""
    tag = f"{SLIM_TAG_PREFIX}{variant.name}"
    tar = contexts.replace_member(original, "Dockerfile", lambda data: slim_dockerfile(data.decode()).encode())
    old_id = builds.previous_id(client, tag)
    image_id, seconds = builds.single_pass(client, tar, base, variant, cas, log, tag=tag)
    builds.drop_replaced(client, old_id, image_id)
    split = sizes.history_split(client, tag, base)
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
