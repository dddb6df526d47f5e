"""A custom op built the way TensorFlow's guide has users build one: compiled against the image's
headers with the image's own `tf.sysconfig` flags, linked against its libtensorflow_framework.so.2,
then loaded and run in the image. The image ships no compiler (users add one); the host's g++
stands in for it. So this proves that what the image ships is enough, after the build's two size
cuts that touch custom ops: the stripped framework library and the removed `include/external`."""

import io
import json
import subprocess
import tarfile
from pathlib import Path

from docker.models.containers import Container

from testkit.containers import TrackedContainer

SOURCE = Path(__file__).resolve().parents[1] / "fixtures" / "custom_op" / "keep_first.cc"

# Runs in the image: the flags a user's build takes from TensorFlow, and whether any shipped header
# names a path under include/external, the folder the Dockerfile removes (a header outside it can
# reach it only that way: the flags put just the include folder itself on the search path).
FLAGS = r"""
import json, os, re
import tensorflow as tf
include = tf.sysconfig.get_include()
into_external = []
for folder, _, files in os.walk(include):
    for name in files:
        with open(os.path.join(folder, name), "rb") as f:
            if re.search(rb'#\s*include\s*[<"]external/', f.read()):
                into_external.append(os.path.relpath(os.path.join(folder, name), include))
print(json.dumps({"include": include, "lib": tf.sysconfig.get_lib(),
                  "compile": tf.sysconfig.get_compile_flags(), "link": tf.sysconfig.get_link_flags(),
                  "external_exists": os.path.exists(os.path.join(include, "external")),
                  "into_external": into_external}))
"""

# Where the built library is mounted in the image (read-only, as a user's build output would be).
OP_LIBRARY = "/opt/custom-op/keep_first.so"
LOAD = f"""
import tensorflow as tf
ops = tf.load_op_library("{OP_LIBRARY}")
print(ops.keep_first([[5, 6], [7, 8]]).numpy().tolist())
"""


def copy_out(container: Container, path: str, destination: Path) -> Path:
    """The folder or file at path in the container, as destination/<its name>."""
    chunks, _ = container.get_archive(path)
    with tarfile.open(fileobj=io.BytesIO(b"".join(chunks))) as archive:
        archive.extractall(destination, filter="tar")
    return destination / Path(path).name


def test_a_custom_op_compiles_against_the_image_and_runs_in_it(tracked: TrackedContainer, tmp_path: Path) -> None:
    probe = tracked.run(publish=(), command=["python", "-c", FLAGS])
    assert tracked.wait_exit(probe, timeout=300) == 0, tracked.logs(probe)[-2000:]
    found = json.loads(tracked.logs(probe, stderr=False).strip().splitlines()[-1])
    assert found["external_exists"] is False  # the build's cut is in place, so this compile proves it
    assert found["into_external"] == []

    include = copy_out(probe, found["include"], tmp_path / "tf")
    framework = next(flag for flag in found["link"] if flag.startswith("-l:"))[3:]
    library = copy_out(probe, f"{found['lib']}/{framework}", tmp_path / "lib")
    assert library.is_file() and not library.is_symlink(), library  # wheels hold no symlinks

    # The image's flags, its two paths pointed at the copies: nothing else is added.
    flags = [flag.replace(found["include"], str(include)).replace(found["lib"], str(library.parent))
             for flag in [*found["compile"], *found["link"]]]
    output = tmp_path / "keep_first.so"
    build = subprocess.run(["g++", "-std=c++14", "-shared", "-fPIC", "-O1", str(SOURCE), "-o", str(output), *flags],
                           capture_output=True, text=True, timeout=600, check=False)
    assert build.returncode == 0, build.stderr[-3000:]

    run = tracked.run(publish=(), command=["python", "-c", LOAD],
                      volumes={str(output): {"bind": OP_LIBRARY, "mode": "ro"}})
    assert tracked.wait_exit(run, timeout=300) == 0, tracked.logs(run)[-2000:]
    assert tracked.logs(run, stderr=False).strip().splitlines()[-1] == "[[5, 0], [0, 0]]"
