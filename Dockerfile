# TensorFlow 2.9 GPU environment: JupyterLab and SSH as an unprivileged user, with a GPU / FP16
# self-check at every start. build.py builds it through the docker SDK, i.e. the classic builder,
# and a plain `docker build` on current Docker uses BuildKit: nothing here may need either's
# extensions (tests/buildkit builds it with `docker buildx build`).

# TF 2.9's tested configuration is CUDA 11.2 / cuDNN 8.1, and this tag carries libcudnn8 8.1.1.
# `python build.py build --base standin` builds the same file on a Debian 11 stand-in that carries
# the same libraries (for hosts that cannot reach a registry); `--variant cpu` on plain Debian 11.
ARG BASE_IMAGE=nvidia/cuda:11.2.2-cudnn8-runtime-ubuntu20.04
# DL3006: the tag is in BASE_IMAGE's value (hadolint cannot see through the ARG).
# hadolint ignore=DL3006
FROM ${BASE_IMAGE}

SHELL ["/bin/bash", "-o", "pipefail", "-c"]

# docker-stacks' convention, so that its documentation and habits carry over; gid 100 is "users".
ARG NB_USER=jovyan
ARG NB_UID=1000
ARG NB_GID=100

# CAs for the build only, for a TLS-intercepting proxy or a mirror's own CA (build.py --ca-cert;
# plain builds: --build-arg FTP_PROXY="$(cat CA.crt)"). They arrive in Docker's predefined FTP_PROXY
# build arg, the one way into a RUN step that both builders keep out of every layer, the history and
# the cache key: a COPY would stay in its layer even when a later step deletes the file, a declared
# ARG would be written into `docker history`, and the classic builder has no secret mounts
# (docs/build.md#ca-certificates). Each RUN that downloads sources build-ca.sh, which puts them in a
# bundle in /tmp for apt and pip, and ends with build_ca_done, which deletes it. The value counts only
# when it holds a PEM certificate, so a real ftp proxy setting is ignored; nothing here uses FTP.
COPY build-ca.sh /usr/local/lib/tf29-env-build/build-ca.sh

# An optional apt mirror for locked-down networks (build.py --apt-mirror); empty keeps the base's.
ARG APT_MIRROR=

# System packages, each for a reason:
#   ca-certificates        TLS trust store (update-ca-certificates adds CAs kept on request, below)
#   python3 python3-venv   the distro's CPython (3.8 on Ubuntu 20.04, 3.9 on Debian 11) for the venv
#   openssh-server         key-only SSH for the dev user; host keys are made at first start instead
#   tini                   PID 1: forwards signals and reaps zombies of kernels and terminals
#   git less procps        what users reach for first in a terminal: clone, page, ps/top/free
# apt-get clean: the debootstrapped stand-in lacks the docker-clean hook of official images.
# dpkg skips documentation, man pages and message translations of what we install (about 20 MiB, most
# of it git's), as Ubuntu's minimized images (the CUDA bases') do already; copyright files stay.
# The package scripts' host keys are removed in the same layer: every container makes its own.
# NVIDIA's apt repository goes first: nothing comes from it (the CUDA libraries are the base's),
# and old nvidia/cuda tags carry its pre-2022 signing key, which makes `apt-get update` fail.
# DL3008: no apt version pins, because one Dockerfile serves Ubuntu 20.04 and Debian 11, whose
# versions differ; each distro's security updates are what we want. The Python stack is pinned.
# hadolint ignore=DL3008,SC1091
RUN . /usr/local/lib/tf29-env-build/build-ca.sh \
 && printf '%s\n' 'path-exclude=/usr/share/doc/*' 'path-include=/usr/share/doc/*/copyright' \
      'path-exclude=/usr/share/man/*' 'path-exclude=/usr/share/info/*' \
      'path-exclude=/usr/share/locale/*/LC_MESSAGES/*.mo' > /etc/dpkg/dpkg.cfg.d/tf29-env-nodoc \
 && rm -f /etc/apt/sources.list.d/cuda*.list /etc/apt/sources.list.d/nvidia-ml*.list \
 && if [ -n "${APT_MIRROR}" ]; then \
      sed -i -E "s#https?://(archive\.ubuntu\.com/ubuntu|deb\.debian\.org/debian)/?#${APT_MIRROR%/}#" \
        /etc/apt/sources.list; \
    fi \
 && apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ca-certificates \
      git \
      less \
      openssh-server \
      procps \
      python3 \
      python3-venv \
      tini \
 && build_ca_done \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/debconf/*-old /var/log/apt /var/log/dpkg.log \
 && rm -f /etc/ssh/ssh_host_*

# The dev user. ~/work is where notebooks go (a volume or bind mount); ~/.nv holds the CUDA JIT
# cache (a volume keeps it across containers). Its home and the venv are group-writable by "users" (gid 100), so that a container
# started with an arbitrary `--user UID:100` still works, as in docker-stacks. The password field
# is "*" (no password, not locked): sshd without PAM refuses locked accounts even for keys.
RUN useradd --create-home --shell /bin/bash --uid "${NB_UID}" --gid "${NB_GID}" "${NB_USER}" \
 && usermod --password '*' "${NB_USER}" \
 && install -d -m 2775 -o "${NB_UID}" -g "${NB_GID}" "/home/${NB_USER}/work" "/home/${NB_USER}/.nv" \
 && chmod 2775 "/home/${NB_USER}"

# Python packages. The step also cuts what no user of the image loads (each cut, its size and the
# test that what users do still works: bench/README.md#cutting-our-layers): the packages' tests,
# Debian's bootstrap wheels (unused; scanners flag their old certifi), TensorFlow's include/external,
# share/jupyterhub, debugpy's Windows and macOS helpers, JupyterLab's second app copy,
# widgetsnbextension/static and the shared objects' static symbol tables (binutils comes and goes;
# auditwheel's patchelf-edited *.libs stay). The .pyc files stay: `import tensorflow` is three times
# slower without them. PIP_CERT and REQUESTS_CA_BUNDLE (pip's requests takes the latter first) point
# at the system store, which holds the kept CAs.
ENV VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:${PATH} \
    PIP_CERT=/etc/ssl/certs/ca-certificates.crt \
    REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    LANG=C.UTF-8 \
    LC_ALL=C.UTF-8

# gpu: tensorflow (CUDA build); cpu: tensorflow-cpu, every other pin the same.
ARG VARIANT=gpu
# Optional package indexes for locked-down networks (build.py --pip-index-url / --pip-extra-index-url).
# pip reads them from the environment; as ARGs they stay out of the image's environment, but their
# values are written into its history (`docker history`), so build.py refuses credentials in them.
ARG PIP_INDEX_URL=
ARG PIP_EXTRA_INDEX_URL=
COPY requirements.txt /opt/tf29-env/requirements.txt
# hadolint ignore=DL3008,SC1091
RUN case "${VARIANT}" in \
      gpu) cp /opt/tf29-env/requirements.txt /opt/tf29-env/requirements.lock ;; \
      cpu) sed -E 's/^tensorflow==/tensorflow-cpu==/' /opt/tf29-env/requirements.txt \
             > /opt/tf29-env/requirements.lock ;; \
      *) echo "VARIANT must be gpu or cpu, not '${VARIANT}'" >&2; exit 1 ;; \
    esac \
 && . /usr/local/lib/tf29-env-build/build-ca.sh \
 && apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends binutils \
 && python3 -m venv "${VIRTUAL_ENV}" \
 && pip install --no-cache-dir --only-binary=:all: \
      "$(grep -E '^pip==' /opt/tf29-env/requirements.lock)" \
 && pip install --no-cache-dir --only-binary=:all: -r /opt/tf29-env/requirements.lock \
 && find "${VIRTUAL_ENV}/lib" -type d -name tests -path "*/site-packages/*" -prune -exec rm -rf {} + \
 && rm -rf "${VIRTUAL_ENV}"/lib/python3*/site-packages/tensorflow/include/external \
      "${VIRTUAL_ENV}/share/jupyterhub" \
      "${VIRTUAL_ENV}"/lib/python3*/site-packages/widgetsnbextension/static \
 && lab="$(echo "${VIRTUAL_ENV}"/lib/python3*/site-packages/jupyterlab)" \
 && { diff -rq "${lab}/static" "${VIRTUAL_ENV}/share/jupyter/lab/static" >&2 \
      || { echo "jupyterlab/static is not a copy of share/jupyter/lab/static: keep both" >&2; exit 1; }; } \
 && rm -rf "${lab}/static" && ln -s ../../../../share/jupyter/lab/static "${lab}/static" \
 && find "${VIRTUAL_ENV}"/lib/python3*/site-packages/debugpy -type f \
      \( -name '*.pdb' -o -name '*.dll' -o -name '*.exe' -o -name '*.dylib' \) -delete \
 && find "${VIRTUAL_ENV}/lib" -type f \( -name '*.so' -o -name '*.so.[0-9]*' \) ! -path '*.libs/*' \
      -exec strip --strip-unneeded {} + \
 && DEBIAN_FRONTEND=noninteractive apt-get purge -y --auto-remove binutils \
 && build_ca_done \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/debconf/*-old /var/log/apt /var/log/dpkg.log \
 && pip check \
 && python -c "import tensorflow, keras, jupyterlab, jupyterhub.singleuser, numpy, pandas, matplotlib, ipywidgets" \
 && rm -rf "${VIRTUAL_ENV}/share/python-wheels" \
 && chgrp -R "${NB_GID}" "${VIRTUAL_ENV}" \
 && chmod -R g+w "${VIRTUAL_ENV}" \
 && find "${VIRTUAL_ENV}" -type d -exec chmod g+s {} + \
 && rm -rf /root/.cache /tmp/*

# System packages for docker-stacks' user options (entrypoint.d/user.sh), in a step of their own after
# the Python stack so that adding them keeps its layer cached; the CAs as in the first step (the
# mirror, if any, is in sources.list already):
#   libnss-wrapper   a passwd entry for an arbitrary uid (--user 12345) without writing /etc (entrypoint.d/user.sh)
#   sudo             GRANT_SUDO=yes (entrypoint.d/user.sh); without it, nobody is granted anything
# hadolint ignore=DL3008,SC1091
RUN . /usr/local/lib/tf29-env-build/build-ca.sh \
 && apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libnss-wrapper sudo \
 && build_ca_done \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/*.bin /var/cache/debconf/*-old /var/log/apt /var/log/dpkg.log
# gpu only: what XLA and the profiler need on a GPU and CUDA's runtime bases leave out: ptxas and
# libdevice (nvidia-cuda-nvcc-cu11) and CUPTI (nvidia-cuda-cupti-cu11), CUDA 11.8's, which CUDA 11's
# minor-version compatibility runs on any R450+ driver. In the venv (so the SBOM lists them), linked
# where TF 2.9 finds them without settings: /usr/local/cuda/bin/ptxas, /usr/local/cuda/nvvm, and
# CUPTI under the soname TF 2.9 dlopens (libcupti.so.11.2) in a system library folder. A step of its
# own after the Python stack keeps that layer cached; the CAs and indexes as there. libnvvm.so (27 MiB)
# goes: TF 2.9's XLA makes PTX with LLVM and assembles it with ptxas; nothing in it loads NVVM. The self-check's
# lib.libdevice, lib.ptxas and lib.cupti check the result.
# SC1091: build-ca.sh is COPYed above (hadolint cannot follow it).
# hadolint ignore=SC1091
RUN if [ "${VARIANT}" = gpu ]; then \
      . /usr/local/lib/tf29-env-build/build-ca.sh \
      && pip install --no-cache-dir --only-binary=:all: --no-deps \
           nvidia-cuda-nvcc-cu11==11.8.89 nvidia-cuda-cupti-cu11==11.8.87 \
      && site="$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" \
      && install -d /usr/local/cuda/bin \
      && ln -s "${site}/nvidia/cuda_nvcc/bin/ptxas" /usr/local/cuda/bin/ptxas \
      && ln -s "${site}/nvidia/cuda_nvcc/nvvm" /usr/local/cuda/nvvm \
      && ln -s "${site}/nvidia/cuda_cupti/lib/libcupti.so.11.8" /usr/lib/x86_64-linux-gnu/libcupti.so.11.2 \
      && rm "${site}/nvidia/cuda_nvcc/nvvm/lib64/libnvvm.so" \
      && /usr/local/cuda/bin/ptxas --version \
      && test -r /usr/local/cuda/nvvm/libdevice/libdevice.10.bc \
      && python -c 'import ctypes; ctypes.CDLL("libcupti.so.11.2")' \
      && pip check \
      && chgrp -R "${NB_GID}" "${site}/nvidia" && chmod -R g+w "${site}/nvidia" \
      && build_ca_done \
      && rm -rf /root/.cache /tmp/*; \
    fi

# The dev user's name as built: NB_USER is the user's to override (-e NB_USER=alice renames it).
ENV TFENV_IMAGE_USER=${NB_USER}

# Runtime settings. TF_FORCE_GPU_ALLOW_GROWTH lets several notebooks share a GPU instead of the
# first one taking all its memory. TF 2.9 ships SASS only up to sm_75 plus compute_80 PTX, so
# Ampere and Hopper GPUs JIT-compile kernels on first use: the CUDA cache's default 256 MiB is too
# small to keep them, 4 GiB (its maximum) is not.
ENV NB_USER=${NB_USER} \
    NB_UID=${NB_UID} \
    NB_GID=${NB_GID} \
    SHELL=/bin/bash \
    NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility \
    TF_FORCE_GPU_ALLOW_GROWTH=true \
    CUDA_CACHE_MAXSIZE=4294967296 \
    JUPYTER_PORT=8888 \
    TFENV_RUN_DIR=/run/tf29-env \
    TINI_SUBREAPER=1
# TINI_SUBREAPER: where tini is not PID 1 (Apptainer runs the image in the host's PID namespace),
# it still reaps the orphans of kernels and terminals, and says nothing about it.
# TFENV_RUN_DIR is the one home of the run directory's path: the entrypoint, the healthcheck and the
# self-check take it from the environment. Jupyter's runtime files go under it, also for `docker
# exec ... jupyter server list`; a second ENV because one cannot use a variable it sets itself.
ENV JUPYTER_RUNTIME_DIR=${TFENV_RUN_DIR}/jupyter

EXPOSE 8888 22

# CAs the image keeps trusting, for every user (notebooks behind the same proxy): only on request,
# since whoever holds a trusted CA's key can read every TLS connection made in the container.
# build.py --trust-ca-cert puts them in ca-certs/, sets TRUST_CA_CERTS=1 and records
# their fingerprints in a label; a plain build takes ca-certs/*.crt with --build-arg TRUST_CA_CERTS=1, and
# without it refuses to build rather than trust them silently. This late, keeping a CA rebuilds
# seconds, not the stack; the steps above got them through FTP_PROXY (build.py passes both).
COPY ca-certs/ /usr/local/share/ca-certificates/tf29-env/
ARG TRUST_CA_CERTS=
# The downloads are done: build-ca.sh goes too.
RUN rm -rf /usr/local/lib/tf29-env-build \
 && dir=/usr/local/share/ca-certificates/tf29-env \
 && find "${dir}" -type f ! -name '*.crt' -delete \
 && if [ -z "$(find "${dir}" -type f)" ]; then \
      rm -rf "${dir}"; \
    elif [ "${TRUST_CA_CERTS}" = 1 ]; then \
      update-ca-certificates; \
    else \
      echo "ca-certs/ holds CA certificates, but TRUST_CA_CERTS is not 1: the image would trust them for" \
        "every user. Keep them with --build-arg TRUST_CA_CERTS=1; a CA for the build only goes in" \
        "--build-arg FTP_PROXY=\"\$(cat CA.crt)\" instead (docs/build.md#ca-certificates)" >&2; \
      exit 1; \
    fi

# The project's own files last, so that editing them rebuilds in seconds.
# /run/tf29-env holds runtime state (Jupyter's runtime files, the self-check report, which services
# were started); it is world-writable and sticky like /tmp, for arbitrary --user UIDs.
COPY image/ /opt/tf29-env/
# JupyterLab for servers without internet: image/jupyter/overrides.json turns the frontend's news
# prompt and update check off (the entrypoint turns the server's off), as a package's file in
# overrides.d, which leaves overrides.json to the admin (it wins over ours). The kernelspec keeps
# the name python3, so that existing notebooks open, and says what it runs; linked, not copied,
# so that editing either rebuilds this layer only. The folders are the venv's: group-writable.
# jupyter/jupyter_server_config.py is the venv's server config (a user's ~/.jupyter one wins): it
# keeps the token out of kernels and terminals, and saves by rename (a full disk breaks no file).
# jupyter/tensorboard.json, the venv's JSON server config (config.d holds only which extensions
# load), is TensorBoard behind Jupyter's login (jupyter-server-proxy: the launcher's tile,
# BASE_URL/tensorboard/, bin/tensorboard-proxied).
# docker-stacks' start commands (start-notebook.*, start-singleuser.*, start.sh) are files for what
# names their path (dockerstacks/start_command.py), and its hook folders are there (entrypoint.d/server.sh).
# The image's Python is one package, python/tf29image: python/tf29-env.pth puts its folder on the
# path of the distro's python3 (dist-packages, read under -I too) and of the venv (site-packages),
# so that `python3 -I -m tf29image.NAME` and the venv's commands import it with no PYTHONPATH; it is
# compiled here, so that its bytecode is the image's. The user's own packages (docs/packages.md):
# python/tf29-env-usersite.pth, named to come after it, puts the user site after the venv's packages
# and guards pip (tf29image/usersite.py). ~/.local is where the volume for them is mounted: made
# here the dev user's, so that a fresh named volume starts as the user's (Docker copies it up).
RUN ln -s /opt/tf29-env/entrypoint.sh /usr/local/bin/entrypoint.sh \
 && ln -s /opt/tf29-env/bin/selfcheck /usr/local/bin/selfcheck \
 && ln -s /opt/tf29-env/bin/healthcheck /usr/local/bin/healthcheck \
 && ln -s /opt/tf29-env/bin/job /usr/local/bin/job \
 && ln -s /opt/tf29-env/bin/user-packages /usr/local/bin/user-packages \
 && site="$("${VIRTUAL_ENV}/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" \
 && ln -s /opt/tf29-env/python/tf29-env.pth /usr/lib/python3/dist-packages/tf29-env.pth \
 && ln -s /opt/tf29-env/python/tf29-env.pth "${site}/tf29-env.pth" \
 && ln -s /opt/tf29-env/python/tf29-env-usersite.pth "${site}/zz-tf29-env-usersite.pth" \
 && "${VIRTUAL_ENV}/bin/python" -m compileall -q /opt/tf29-env/python \
 && /usr/bin/python3 -I -c 'import tf29image.healthcheck' \
 && "${VIRTUAL_ENV}/bin/python" -c 'import site, tf29image.usersite; assert site.ENABLE_USER_SITE' \
 && install -d -m 2775 -o "${NB_UID}" -g "${NB_GID}" "/home/${NB_USER}/.local" \
 && for name in start-notebook.sh start-notebook.py start-singleuser.sh start-singleuser.py start.sh; do \
      ln -s /opt/tf29-env/python/tf29image/dockerstacks/start_command.py "/usr/local/bin/${name}"; \
    done \
 && ln -s /opt/tf29-env/shell/profile.sh /etc/profile.d/tf29-env.sh \
 && sed -i '1i . /opt/tf29-env/shell/login-start.sh' /etc/profile \
 && install -d -m 2775 -g "${NB_GID}" \
      "${VIRTUAL_ENV}/share/jupyter/lab/settings" "${VIRTUAL_ENV}/share/jupyter/lab/settings/overrides.d" \
 && ln -s /opt/tf29-env/jupyter/overrides.json "${VIRTUAL_ENV}/share/jupyter/lab/settings/overrides.d/tf29-env.json" \
 && ln -sf /opt/tf29-env/jupyter/kernel.json "${VIRTUAL_ENV}/share/jupyter/kernels/python3/kernel.json" \
 && ln -s /opt/tf29-env/jupyter/jupyter_server_config.py "${VIRTUAL_ENV}/etc/jupyter/jupyter_server_config.py" \
 && ln -s /opt/tf29-env/jupyter/tensorboard.json "${VIRTUAL_ENV}/etc/jupyter/jupyter_server_config.json" \
 && install -d -m 1777 /run/tf29-env \
 && install -d -m 755 /etc/tf29-env/start.d /usr/local/bin/start-notebook.d /usr/local/bin/before-notebook.d \
      /etc/ssh/host-keys

# The quickstart notebooks (docs/notebooks.md), root's and read-only in the home folder beside work/,
# not in it: JupyterLab's file browser shows them at first open, a folder mounted at work/ is never
# written to, and no user's edited copy is ever overwritten (Save As puts one in work/). A renamed
# NB_USER's home takes them along with the image's other files there (entrypoint.d/user.sh).
COPY notebooks/quickstart/ /home/${NB_USER}/quickstart/

HEALTHCHECK --interval=5s --timeout=3s --start-period=60s --retries=3 \
  CMD ["/usr/bin/python3", "-I", "-m", "tf29image.healthcheck"]

ENTRYPOINT ["/usr/bin/tini", "--", "/opt/tf29-env/entrypoint.sh"]

# Dev Containers (VS Code's "Reopen in Container", the devcontainer CLI, Codespaces-style tools):
# with this label `{"image": "..."}` alone is a complete dev container (docs/devcontainer.md). The
# tools' idle command runs in the entrypoint's place (their default, overrideCommand): they match
# jovyan's uid to the host user's in an image of their own, which the entrypoint's NB_UID fitting
# would undo, and the editor runs kernels itself; postStartCommand shows the self-check's banner.
# Its values come from this file's ARG and ENV; build.py refuses an image whose label is not JSON.
LABEL devcontainer.metadata="[{\
\"remoteUser\": \"${NB_USER}\", \
\"hostRequirements\": {\"gpu\": \"optional\"}, \
\"forwardPorts\": [${JUPYTER_PORT}], \
\"portsAttributes\": {\"${JUPYTER_PORT}\": {\"label\": \"JupyterLab\", \"onAutoForward\": \"notify\"}}, \
\"postStartCommand\": \"selfcheck\", \
\"customizations\": {\"vscode\": {\
\"extensions\": [\"ms-python.python\", \"ms-toolsai.jupyter\"], \
\"settings\": {\"python.defaultInterpreterPath\": \"${VIRTUAL_ENV}/bin/python\"}}}}]"

