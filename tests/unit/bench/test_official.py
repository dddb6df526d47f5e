"""bench.official: TensorFlow's gpu-jupyter recipe as a bench fixture, on recorded data.

Everything recorded comes from one build of bench/official/Dockerfile (as committed with this
test) by `official.measure` on 2026-12-03 on the 2-core build machine (Docker 20.10), on
tf29-env-standin:bullseye-cuda11 (sha256:26a7ff94bbb9, 7 history entries), giving
tf29-env:bench-official sha256:aa2147da85c7, Size 5784294116:
- HISTORY is the engine's GET /images/tf29-env:bench-official/history (client.api.history). Ids are
  cut to 12 hex digits and the base's CreatedBy to its start; our CreatedBy are exact, with the CA
  prelude and its cleanup, the same text in every downloading RUN, written once as PRELUDE and CLEANUP.
- PIP_LIST is a cut of `python3 -m pip list --format json` in the image (15 of its 139 packages,
  the JSON on one line as pip prints it). PIP_CHECK is the whole output of official.PIP_CHECK.
  IMPORT_TAIL is lines 56-64 and 87-90 of the 90 lines official.IMPORT printed (the traceback
  frames between are left out; the first 55 lines are numpy's warning and the first traceback),
  with the prefix of the installed packages' paths written once as SITE."""

import io
import json
import tarfile
from typing import Any

import pytest

from bench import layers, official
from bench.errors import BenchError

IMAGE_SIZE = 5784294116
BASE_SIZE = 2875389240
BASE_ID = "sha256:26a7ff94bbb9"
BASE_ENTRIES = 7
ARGS = "|2 TF_PACKAGE=tensorflow TF_PACKAGE_VERSION=2.9.3 /bin/bash -c "
PRELUDE = ('if [[ "${FTP_PROXY:-}" == *"-----BEGIN CERTIFICATE-----"* ]]; then '
           "{ cat /etc/ssl/certs/ca-certificates.crt 2>/dev/null; printf '%s\\n' \"$FTP_PROXY\"; } >/tmp/ca.pem; "
           "echo 'Acquire::https::CaInfo \"/tmp/ca.pem\";' >/tmp/ca.conf; "
           "export PIP_CERT=/tmp/ca.pem APT_CONFIG=/tmp/ca.conf; unset FTP_PROXY; fi;     ")
CLEANUP = "  && rm -f /tmp/ca.pem /tmp/ca.conf"
TF_SPEC = "${TF_PACKAGE}${TF_PACKAGE_VERSION:+==${TF_PACKAGE_VERSION}}"
SITE = "/usr/local/lib/python3.9/dist-packages"
RECORDED = [
    ("aa2147da85c7", 0, '/bin/bash -c #(nop)  CMD ["bash" "-c" "source /etc/bash.bashrc && jupyter notebook '
                        '--notebook-dir=/tf --ip 0.0.0.0 --no-browser --allow-root"]'),
    ("e139f72f13f4", 3417, ARGS + "python3 -m ipykernel.kernelspec"),
    ("1b1140f55a39", 0, "/bin/bash -c #(nop)  EXPOSE 8888"),
    ("7574678d0f78", 0, "/bin/bash -c #(nop) WORKDIR /tf"),
    ("0eccb5e5806f", 37358211, ARGS + "apt-get autoremove -y && apt-get remove -y wget"),
    ("5145a744c916", 0, "/bin/bash -c #(nop) WORKDIR /tf/tensorflow-tutorials"),
    ("1d3e021dffbe", 122728189, ARGS + PRELUDE + "apt-get update && apt-get install -y --no-install-recommends wget git"
     + CLEANUP),
    ("7aafadd3f397", 0, ARGS + "mkdir /.local && chmod a+rwx /.local"),
    ("71c1c17347e0", 0, ARGS + "mkdir -p /tf/tensorflow-tutorials && chmod -R a+rwx /tf/"),
    ("edeb96dccbc1", 71, ARGS + "mkdir -p /usr/local/etc/jupyter/jupyter_server_config.d  && echo '{\"ServerApp\": "
                              "{\"jpserver_extensions\": {\"jupyter_http_over_ws\": true}}}'       > "
                              "/usr/local/etc/jupyter/jupyter_server_config.d/jupyter_http_over_ws.json"),
    ("d8dab5ed2bd2", 6763642, ARGS + PRELUDE + "python3 -m pip install --no-cache-dir jupyter_http_over_ws "
                                               "ipykernel==5.1.1 nbformat==4.4.0 jedi==0.17.2" + CLEANUP),
    ("b75fd16e05f5", 313643829, ARGS + PRELUDE + "python3 -m pip install --no-cache-dir jupyter matplotlib" + CLEANUP),
    ("430a2d66ce40", 1994, ARGS + "chmod a+rwx /etc/bash.bashrc"),
    ("acf8b5248f37", 1534614050, ARGS + PRELUDE + "python3 -m pip install --no-cache-dir " + TF_SPEC + CLEANUP),
    ("751f0c3e8465", 0, "/bin/bash -c #(nop)  ARG TF_PACKAGE_VERSION=2.9.3"),
    ("5057882d3162", 0, "/bin/bash -c #(nop)  ARG TF_PACKAGE=tensorflow"),
    ("8e54f64a1b21", 16, "|0 /bin/bash -c ln -s $(which python3) /usr/local/bin/python"),
    ("31016221d6ed", 13896796, "|0 /bin/bash -c " + PRELUDE + 'python3 -m pip --no-cache-dir install --upgrade     '
                               '"pip<20.3"     setuptools' + CLEANUP),
    ("ec697999ab26", 123270391, "|0 /bin/bash -c " + PRELUDE + "apt-get update && apt-get install -y     python3     "
                                "python3-pip" + CLEANUP),
    ("702661925d0a", 0, "/bin/bash -c #(nop)  ENV LANG=C.UTF-8"),
    ("2dc92721eacb", 756624270, "|0 /bin/bash -c " + PRELUDE + "apt-get update && apt-get install -y "
                                "--no-install-recommends         build-essential         curl         libfreetype6-dev"
                                "         libhdf5-serial-dev         libzmq3-dev         pkg-config         "
                                "software-properties-common         unzip" + CLEANUP),
    ("af0951237313", 0, "/bin/bash -c #(nop)  SHELL [/bin/bash -c]"),
    ("fdcc85907644", 0, "/bin/sh -c #(nop)  ENV DEBIAN_FRONTEND=noninteractive"),
    # The base, tf29-env-standin:bullseye-cuda11: its top entry carries its image id.
    ("26a7ff94bbb9", 0, "/bin/sh -c #(nop)  LABEL org.opencontainers.image.title=tf29-env stand-in CUDA base"),
    ("bc1f73a2141a", 0, "/bin/sh -c #(nop)  ENV CUDA_VERSION=11.8.89 NV_CUDNN_VERSION=8.9.6.50"),
    ("456f0c8ece67", 0, "/bin/sh -c #(nop)  ARG CUDNN_VERSION=8.9.6.50"),
    ("172dc2df11b8", 0, "/bin/sh -c #(nop)  ARG CUDA_VERSION=11.8.89"),
    ("ceef08826c44", 13282, "/bin/sh -c ln -s /usr/local/cuda-11 /usr/local/cuda  && echo /usr/local/cuda-11/lib64"),
    ("49e7d1d023d5", 2749010968, "/bin/sh -c #(nop) COPY dir:1fe0a3ce2382 in /usr/local/cuda-11/lib64/"),
    ("ceabddf70a76", 126364990, ""),  # the imported Debian 11 root filesystem
]
PIP_LIST = ('[{"name": "h5py", "version": "3.14.0"}, {"name": "ipykernel", "version": "5.1.1"}, '
            '{"name": "jedi", "version": "0.17.2"}, {"name": "jupyter-http-over-ws", "version": "0.0.8"}, '
            '{"name": "jupyter-server", "version": "2.18.2"}, {"name": "jupyterlab", "version": "4.5.11"}, '
            '{"name": "keras", "version": "2.9.0"}, {"name": "Keras-Preprocessing", "version": "1.1.2"}, '
            '{"name": "matplotlib", "version": "3.9.4"}, {"name": "nbformat", "version": "4.4.0"}, '
            '{"name": "notebook", "version": "7.5.8"}, {"name": "numpy", "version": "2.0.2"}, '
            '{"name": "protobuf", "version": "3.19.6"}, {"name": "PyGObject", "version": "3.38.0"}, '
            '{"name": "tensorflow", "version": "2.9.3"}]\n')
PIP_CHECK = """pygobject 3.38.0 requires pycairo, which is not installed.
nbconvert 7.17.2 has requirement nbformat>=5.7, but you have nbformat 4.4.0.
nbclient 0.10.2 has requirement nbformat>=5.1, but you have nbformat 4.4.0.
jupyterlab 4.5.11 has requirement ipykernel!=6.30.0,>=6.5.0, but you have ipykernel 5.1.1.
jupyter-server 2.18.2 has requirement nbformat>=5.3.0, but you have nbformat 4.4.0.
jupyter-console 6.6.3 has requirement ipykernel>=6.14, but you have ipykernel 5.1.1.
"""
IMPORT_TAIL = f"""  File "{SITE}/tensorflow/python/framework/dtypes.py", line 26, in <module>
    from tensorflow.python.lib.core import _pywrap_bfloat16
AttributeError: _ARRAY_API not found
ImportError: numpy.core._multiarray_umath failed to import
ImportError: numpy.core.umath failed to import
Traceback (most recent call last):
  File "<string>", line 1, in <module>
  File "{SITE}/tensorflow/__init__.py", line 37, in <module>
    from tensorflow.python.tools import module_util as _module_util
  File "{SITE}/tensorflow/python/framework/dtypes.py", line 29, in <module>
    _np_bfloat16 = _pywrap_bfloat16.TF_bfloat16_type()
TypeError: Unable to convert function return value to a Python type! The signature was
\t() -> handle

"""


def history() -> list[dict[str, Any]]:
    return [{"Id": f"sha256:{short_id}", "Size": size, "CreatedBy": created_by}
            for short_id, size, created_by in RECORDED]


def split() -> layers.LayerSplit:
    return layers.split(history(), BASE_ID, BASE_ENTRIES)


def test_the_recipes_layers_on_the_base_add_up_to_the_engines_size() -> None:
    sizes = official.size_json(split(), IMAGE_SIZE, "tf29-env:bench-official")
    assert (sizes["total_bytes"], sizes["base_bytes"]) == (IMAGE_SIZE, BASE_SIZE)
    assert sizes["added_bytes"] == IMAGE_SIZE - BASE_SIZE == 2908904876
    assert sizes["split_by"] == "base id"


def test_a_size_that_does_not_add_up_is_refused() -> None:
    with pytest.raises(BenchError, match="add up to 5784294116 bytes, the engine says 5784294117"):
        official.size_json(split(), IMAGE_SIZE + 1, "tf29-env:bench-official")


def test_the_largest_layers_are_named_by_the_recipes_command_not_our_ca_prelude() -> None:
    top = official.size_json(split(), IMAGE_SIZE, "x")["largest_layers"]
    assert [layer["bytes"] for layer in top] == [1534614050, 756624270, 313643829, 123270391, 122728189]
    assert top[0]["step"] == "RUN python3 -m pip install --no-cache-dir " + TF_SPEC
    assert top[1]["step"].startswith("RUN apt-get update && apt-get install -y --no-install-recommends build-essential")
    assert top[2]["step"] == "RUN python3 -m pip install --no-cache-dir jupyter matplotlib"
    assert all(len(layer["step"]) <= 120 and "FTP_PROXY" not in layer["step"] for layer in top)


def test_steps_without_the_prelude_are_left_as_they_are() -> None:
    assert official.recipe_step("RUN apt-get autoremove -y") == "RUN apt-get autoremove -y"
    assert official.recipe_step("ENV X=unset FTP_PROXY; fi; y") == "ENV X=unset FTP_PROXY; fi; y"


def test_pip_list_is_read_by_normalized_name() -> None:
    packages = official.parse_pip_list("WARNING: something on stderr first\n" + PIP_LIST)
    assert packages["keras-preprocessing"] == "1.1.2"
    assert packages["pygobject"] == "3.38.0"
    assert official.versions(packages) == {"tensorflow": "2.9.3", "numpy": "2.0.2", "notebook": "7.5.8",
                                           "jupyterlab": "4.5.11"}


def test_a_package_not_installed_has_no_version() -> None:
    without_lab = json.dumps([p for p in json.loads(PIP_LIST) if p["name"] != "jupyterlab"])
    assert official.versions(official.parse_pip_list(without_lab))["jupyterlab"] is None


def test_pip_list_without_json_is_an_error() -> None:
    with pytest.raises(BenchError, match="pip list printed no JSON: /usr/bin/python3: No module named pip"):
        official.parse_pip_list("/usr/bin/python3: No module named pip\n")


def test_a_failed_import_shows_its_last_exception_with_its_message_continued() -> None:
    result = official.command_json(1, IMPORT_TAIL)
    assert result == {"exit": 1, "tail": "TypeError: Unable to convert function return value to a Python type! "
                                         "The signature was () -> handle"}


def test_a_command_that_works_shows_its_last_line() -> None:
    assert official.command_json(0, "some warning\n2.9.3\n\n") == {"exit": 0, "tail": "2.9.3"}
    # An exception line in the output of a command that worked is not its result.
    assert official.command_json(0, "ValueError: logged\n2.9.3\n")["tail"] == "2.9.3"


def test_a_failure_without_a_traceback_shows_its_last_line() -> None:
    assert official.command_json(1, PIP_CHECK) == {
        "exit": 1, "tail": "jupyter-console 6.6.3 has requirement ipykernel>=6.14, but you have ipykernel 5.1.1."}
    assert official.command_json(137, "") == {"exit": 137, "tail": ""}


def test_startup_is_summarized_or_null_with_the_logs() -> None:
    assert official.startup_json([2.5, 1.5, 2.0], None) == {
        "jupyter_s": {"median": 2.0, "min": 1.5, "max": 2.5, "runs": 3}}
    logs = "".join(f"line {n}\n" for n in range(40)) + IMPORT_TAIL
    failed = official.startup_json([], official.NoAnswer(exited=True, logs=logs))
    assert failed["jupyter_s"] is None and failed["exited"] is True
    assert len(failed["log_tail"]) == official.LOG_TAIL_LINES
    assert failed["log_tail"][-1] == "\t() -> handle"


def test_deviations_are_joined_with_their_continuation_lines() -> None:
    text = ("# deviation: one\n#   continued\n#   and more\n# not a continuation\n#   so not this\n"
            "RUN true\n# deviation: two\n\n#   after a blank line: not two's\n")
    assert official.deviations(text) == ["one continued and more", "two"]


def test_the_fixture_lists_each_of_its_deviations() -> None:
    found = official.deviations(official.DOCKERFILE.read_text())
    assert [item.split(":")[0].split()[0] for item in found] == [
        "base", "CUDA", "bash.bashrc", "the", "TF_PACKAGE_VERSION", "`jupyter", "build-only"]
    assert found[0].endswith("so Python is Debian 11's 3.9 where Ubuntu 20.04 has 3.8.")
    assert all("#" not in item and "  " not in item for item in found)


def test_the_fixture_names_its_source_commits() -> None:
    text = official.DOCKERFILE.read_text()
    assert "91754f4f0790961e2e38654e47bbdcf560662fcd" in text
    assert "bff4d71358240ea68845c58a937cbef402ef02b4" in text


def test_every_downloading_run_of_the_fixture_takes_and_removes_the_cas() -> None:
    """apt-get update and pip install reach the network: each such RUN needs the CA prelude, and
    must remove its files in the same RUN so that the layers stay as the recipe's."""
    runs = official.DOCKERFILE.read_text().replace("\\\n", " ").split("\nRUN ")[1:]
    downloading = [run for run in runs if "apt-get update" in run or "pip install" in run or "--upgrade" in run]
    assert len(downloading) == 7
    for run in downloading:
        assert run.startswith('if [[ "${FTP_PROXY:-}"') and official.PRELUDE_END in run
        assert run.splitlines()[0].rstrip().endswith(official.PRELUDE_CLEANUP)


def test_the_context_holds_the_dockerfile_and_what_it_copies_only() -> None:
    dockerfile = "FROM x\nCOPY --chown=1:1 a.txt b.txt /dst/\nADD c /c\nRUN echo COPY d e\n"
    assert official.copied_sources(dockerfile) == ["a.txt", "b.txt", "c"]
    tar = official.context_tar(dockerfile, {"a.txt": b"A", "b.txt": b"BB", "c": b""})
    with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
        assert archive.getnames() == ["Dockerfile", "a.txt", "b.txt", "c"]
        dockerfile_member = archive.extractfile("Dockerfile")
        assert dockerfile_member is not None and dockerfile_member.read().decode() == dockerfile


def test_the_fixture_copies_nothing() -> None:
    """Its two COPYs (TF's bashrc banner and README) are left out: the context is the Dockerfile."""
    assert official.copied_sources(official.DOCKERFILE.read_text()) == []
