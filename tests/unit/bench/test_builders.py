"""bench.builders: BuildKit's plain progress output, its versions and the buildx command line.

PROBE_COLD and PROBE_WARM are real `docker buildx build --progress plain --load` output, recorded on
2026-12-03 on the 2-core build machine (Docker 20.10.24, buildx 0.13.1+ds1, the engine's embedded
BuildKit v0.8, docker driver) for a 5-step probe Dockerfile on tf29-env-standin:bullseye: first
built, then again after its second COPY's file changed. VERSION and INSPECT are `docker buildx
version` and `docker buildx inspect` on the same machine; the failure lines come from the same
buildx, a probe Dockerfile whose `RUN false` fails. GPU_WARM is the same buildx's output for the
gpu variant (bench.builders.buildkit on build.py's context, same day), rebuilt after a comment was
appended to image/entrypoint.sh: lines cut at 100 characters, the bench's own `$ docker buildx`
line before them left out."""

from pathlib import Path

from bench import builders

PROBE_COLD = """\
#0 building with "default" instance using docker driver

#1 [internal] load build definition from Dockerfile
#1 transferring dockerfile: 143B 0.0s done
#1 DONE 0.1s

#2 [internal] load .dockerignore
#2 transferring context: 2B done
#2 DONE 0.0s

#3 [internal] load metadata for docker.io/library/tf29-env-standin:bullseye
#3 DONE 0.0s

#4 [1/5] FROM docker.io/library/tf29-env-standin:bullseye
#4 CACHED

#5 [internal] load build context
#5 transferring context: 70B done
#5 DONE 0.1s

#6 [2/5] COPY a.txt /a.txt
#6 DONE 0.0s

#7 [3/5] RUN cat /a.txt > /b.txt
#7 DONE 0.4s

#8 [4/5] COPY c.txt /c.txt
#8 DONE 0.2s

#9 [5/5] RUN echo hi
#9 0.314 hi
#9 DONE 0.6s

#10 exporting to image
#10 exporting layers
#10 exporting layers 0.2s done
#10 writing image sha256:60b5c66e47a96fe52a946c995c51c45019a463d430821406615367989f4f590c done
#10 naming to docker.io/library/tf29-env:bench-probe-helper done
#10 DONE 0.2s
"""

PROBE_WARM = """\
#0 building with "default" instance using docker driver

#1 [internal] load build definition from Dockerfile
#1 transferring dockerfile: 31B done
#1 DONE 0.0s

#2 [internal] load .dockerignore
#2 transferring context: 2B done
#2 DONE 0.0s

#3 [internal] load metadata for docker.io/library/tf29-env-standin:bullseye
#3 DONE 0.0s

#4 [1/5] FROM docker.io/library/tf29-env-standin:bullseye
#4 DONE 0.0s

#5 [internal] load build context
#5 transferring context: 63B done
#5 DONE 0.0s

#6 [2/5] COPY a.txt /a.txt
#6 CACHED

#7 [3/5] RUN cat /a.txt > /b.txt
#7 CACHED

#8 [4/5] COPY c.txt /c.txt
#8 DONE 0.1s

#9 [5/5] RUN echo hi
#9 0.255 hi
#9 DONE 0.3s

#10 exporting to image
#10 exporting layers 0.0s done
#10 writing image sha256:1bd27478bd7205f0cbd2edf950f85eae3bd4cbd1965e6d2028d82b36a57a6062 done
#10 naming to docker.io/library/tf29-env:bench-probe-helper done
#10 DONE 0.0s
"""

GPU_WARM = """\
#0 building with "default" instance using docker driver

#1 [internal] load build definition from Dockerfile
#1 transferring dockerfile: 23B done
#1 DONE 0.0s

#2 [internal] load .dockerignore
#2 transferring context: 2B done
#2 DONE 0.0s

#3 [internal] load metadata for docker.io/library/tf29-env-standin:bullseye-cuda11
#3 DONE 0.0s

#4 [ 1/12] FROM docker.io/library/tf29-env-standin:bullseye-cuda11
#4 DONE 0.0s

#5 [internal] load build context
#5 transferring context: 5.35kB done
#5 DONE 0.0s

#6 [ 3/12] RUN useradd --create-home --shell /bin/bash --uid "1000" --gid "100" "jovyan"  && usermod
#6 CACHED

#7 [ 8/12] COPY ca-certs/ /usr/local/share/ca-certificates/tf29-env/
#7 CACHED

#8 [ 5/12] RUN case "gpu" in       gpu) cp /opt/tf29-env/requirements.txt /opt/tf29-env/requirements
#8 CACHED

#9 [ 7/12] RUN if [ "gpu" = gpu ]; then       if [[ "${FTP_PROXY:-}" == *"-----BEGIN CERTIFICATE----
#9 CACHED

#10 [ 4/12] COPY requirements.txt /opt/tf29-env/requirements.txt
#10 CACHED

#11 [ 2/12] RUN if [[ "${FTP_PROXY:-}" == *"-----BEGIN CERTIFICATE-----"* ]]; then       { cat /etc/
#11 CACHED

#12 [ 6/12] RUN if [[ "${FTP_PROXY:-}" == *"-----BEGIN CERTIFICATE-----"* ]]; then       { cat /etc/
#12 CACHED

#13 [ 9/12] RUN dir=/usr/local/share/ca-certificates/tf29-env  && find "${dir}" -type f ! -name '*.c
#13 CACHED

#14 [10/12] COPY image/ /opt/tf29-env/
#14 DONE 0.0s

#15 [11/12] RUN ln -s /opt/tf29-env/entrypoint.sh /usr/local/bin/entrypoint.sh  && ln -s /opt/tf29-e
#15 DONE 0.2s

#16 [12/12] COPY notebooks/quickstart/ /home/jovyan/quickstart/
#16 DONE 0.0s

#17 exporting to image
#17 exporting layers 0.0s done
#17 writing image sha256:100631b9fcb6584fc5445935b6d0b0776ebd1a2906b22a5690551698a97c5412 done
#17 DONE 0.1s
"""

VERSION = "github.com/docker/buildx 0.13.1+ds1 0.13.1+ds1-3\n"
INSPECT = """\
Name:          default
Driver:        docker
Last Activity: 2026-12-03 16:19:14 +0000 UTC

Nodes:
Name:             default
Endpoint:         default
Status:           running
BuildKit version: v0.8+unknown
Platforms:        linux/amd64, linux/386
"""


def test_steps_and_cache_hits_of_a_first_build() -> None:
    # The local base counts as a step; BuildKit reports it CACHED even on a first build.
    assert builders.parse_progress(PROBE_COLD.splitlines()) == builders.Progress(steps=5, cached=1)


def test_steps_and_cache_hits_of_a_warm_build() -> None:
    # The steps before the changed COPY come from the cache; [internal] vertices are not steps.
    assert builders.parse_progress(PROBE_WARM.splitlines()) == builders.Progress(steps=5, cached=2)


def test_the_gpu_variant_rebuilt_after_a_script_change() -> None:
    # The 8 steps between FROM and COPY image/ (step 10 of 12) from the cache, listed out of order;
    # the local base says DONE here, not CACHED.
    assert builders.parse_progress(GPU_WARM.splitlines()) == builders.Progress(steps=12, cached=8)


def test_a_vertex_named_again_counts_once() -> None:
    # Plain progress repeats a vertex's header when its output interleaves with another's.
    lines = ["#6 [2/5] COPY a.txt /a.txt", "#7 [stage-1 3/5] RUN make", "#6 [2/5] COPY a.txt /a.txt", "#6 CACHED",
             "#7 12.3 building", "#7 DONE 12.5s"]
    assert builders.parse_progress(lines) == builders.Progress(steps=2, cached=1)


def test_failure_line_is_the_last_error() -> None:
    # The end of a real failed build (a probe Dockerfile's `RUN false`), same machine and day.
    lines = ["#5 [2/2] RUN false", "#5 ERROR: executor failed running [/bin/sh -c false]: exit code: 1", "------",
             " > [2/2] RUN false:", "------",
             "ERROR: failed to solve: executor failed running [/bin/sh -c false]: exit code: 1"]
    assert builders.failure_line(lines) == ("ERROR: failed to solve: executor failed running [/bin/sh -c false]: "
                                            "exit code: 1")
    assert builders.failure_line(["only this"]) == "only this"
    assert builders.failure_line([]) == "(no output)"


def test_versions() -> None:
    assert builders.buildx_version(VERSION) == "0.13.1+ds1"
    assert builders.buildkit_version(INSPECT) == "v0.8+unknown"
    assert builders.buildkit_version("Buildkit: v0.12.5\n") == "v0.12.5"
    assert builders.buildkit_version("Name: default\n") == ""


def test_command_passes_the_cas_by_name_only() -> None:
    argv = builders.command(Path("/ctx"), {"BASE_IMAGE": "tf29-env-standin:bullseye-cuda11", "VARIANT": "gpu"},
                            ["FTP_PROXY"], nocache=True, iidfile=Path("/work/iid"), tag="tf29-env:bench-buildkit-gpu")
    assert argv == ["docker", "buildx", "build", "--progress", "plain", "--load", "--iidfile", "/work/iid",
                    "--build-arg", "BASE_IMAGE=tf29-env-standin:bullseye-cuda11", "--build-arg", "VARIANT=gpu",
                    "--build-arg", "FTP_PROXY", "--no-cache", "--tag", "tf29-env:bench-buildkit-gpu", "/ctx"]
    pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    assert builders.environment({"FTP_PROXY": pem})["FTP_PROXY"] == pem
    assert not any("BEGIN CERTIFICATE" in arg for arg in argv)


def test_warm_command_has_no_tag_and_uses_the_cache() -> None:
    argv = builders.command(Path("/ctx"), {}, [], nocache=False, iidfile=Path("/work/iid"))
    assert "--no-cache" not in argv and "--tag" not in argv and argv[-1] == "/ctx"
