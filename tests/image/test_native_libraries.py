"""The shared objects in the venv after the Dockerfile's `strip --strip-unneeded` (issue 13's size
cut): the static symbol tables are gone, and what users need of the libraries is still there:
each one loads, TensorFlow's exported C++ API (what a custom op links against) resolves, its
headers and link flags point at real files, and a plugin built outside TensorFlow against it
(tensorflow-io-gcs-filesystem) loads and registers its filesystem."""

import json

from testkit.containers import TrackedContainer

# Runs in the image. The ELF section names are read with struct (no binutils in the image: the
# build removes them again); each library is mapped by the dynamic loader (`ld.so --list`: loads
# it and what it needs, runs none of its code) with its own folder and TensorFlow's on the path,
# as the importing extension module's RPATH provides them at run time.
PROBE = r"""
import glob, json, os, struct, subprocess, sysconfig

def sections(path):
    with open(path, "rb") as f:
        head = f.read(64)
        if head[:4] != b"\x7fELF":
            return None
        shoff, = struct.unpack_from("<Q", head, 0x28)
        entsize, num, strndx = struct.unpack_from("<HHH", head, 0x3A)
        f.seek(shoff)
        table = f.read(entsize * num)
        entries = [struct.unpack_from("<IIQQQQIIQQ", table, i * entsize) for i in range(num)]
        f.seek(entries[strndx][4])
        names = f.read(entries[strndx][5])
        return [names[e[0]:names.index(b"\0", e[0])].decode() for e in entries]

site = sysconfig.get_paths()["purelib"]
found = {}
for path in glob.glob(site + "/**/*.so*", recursive=True):
    if os.path.isfile(path) and not os.path.islink(path):
        names = sections(path)
        if names is not None:
            found[os.path.relpath(path, site)] = names
unloadable = {}
for rel, names in sorted(found.items()):
    path = os.path.join(site, rel)
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.dirname(path) + ":" + site + "/tensorflow")
    proc = subprocess.run(["/lib64/ld-linux-x86-64.so.2", "--list", path], capture_output=True, text=True, env=env)
    if proc.returncode or "not found" in proc.stdout:
        unloadable[rel] = (proc.stdout + proc.stderr)[-200:]
print(json.dumps({"libraries": len(found), "unloadable": unloadable,
                  "with_symtab": sorted(rel for rel, names in found.items() if ".symtab" in names)}))
"""

# The C++ API a custom op uses (REGISTER_OP's OpDefBuilder, an OpKernel's constructor), looked up
# by the loader as a custom op's own library would; then a plugin compiled outside TensorFlow
# (tensorflow-io-gcs-filesystem's libtensorflow_io_gcs_filesystem.so, linked against the framework).
API = r"""
import ctypes, json, os, sys
# TF 2.9 serves gs:// itself unless told to take it from the plugin, which it then loads at import.
os.environ["TF_USE_MODULAR_FILESYSTEM"] = "true"
import tensorflow as tf
framework = ctypes.CDLL(os.path.join(tf.sysconfig.get_lib(), "libtensorflow_framework.so.2"))
symbols = ["_ZN10tensorflow12OpDefBuilderC1ENSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE",
           "_ZN10tensorflow8OpKernelC2EPNS_20OpKernelConstructionEONS_7NodeDefEb"]
include = tf.sysconfig.get_include()
link_dir = [flag[2:] for flag in tf.sysconfig.get_link_flags() if flag.startswith("-L")][0]
print(json.dumps({
    "plugin": "tensorflow_io_gcs_filesystem" in sys.modules,
    "resolved": [name for name in symbols if hasattr(framework, name)],
    "header": os.path.isfile(os.path.join(include, "tensorflow/core/framework/op_kernel.h")),
    "link_lib": os.path.isfile(os.path.join(link_dir, "libtensorflow_framework.so.2")),
    "gs": "gs" in tf.io.gfile.get_registered_schemes(),
}))
"""


def run_python(tracked: TrackedContainer, script: str) -> dict[str, object]:
    result: dict[str, object] = json.loads(tracked.last_line_of(["python", "-c", script]))
    return result


def test_shared_objects_are_stripped_and_still_load(tracked: TrackedContainer) -> None:
    found = run_python(tracked, PROBE)
    assert isinstance(found["libraries"], int) and found["libraries"] > 100  # the glob found the venv's libraries
    assert found["unloadable"] == {}
    # Stripped by the build, except what it leaves alone: auditwheel's patchelf-edited *.libs folders,
    # and the gpu-only NVIDIA wheels installed after the strip.
    kept = [rel for rel in found["with_symtab"]  # type: ignore[attr-defined]
            if ".libs/" not in rel and not rel.startswith("nvidia/")]
    assert kept == []


def test_custom_op_api_and_a_plugin_built_against_tensorflow_work(tracked: TrackedContainer) -> None:
    found = run_python(tracked, API)
    assert len(found["resolved"]) == 2, found  # type: ignore[arg-type]
    assert found["header"] is True and found["link_lib"] is True
    assert found["plugin"] is True and found["gs"] is True
