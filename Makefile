# tf29-env: `make help` lists the targets. Python tools live in .venv (made on first use).
SHELL := /bin/bash
.DEFAULT_GOAL := help

VENV := .venv
PY := $(VENV)/bin/python
# standin: the Debian 11 + CUDA 11 stand-in, which needs no registry; or an image reference, e.g.
# BASE=nvidia/cuda:11.2.2-cudnn8-runtime-ubuntu20.04 (the Dockerfile's default) where Docker Hub is reachable.
BASE ?= standin
VARIANT ?= gpu
IMAGE ?= tf29-env:latest-$(VARIANT)
# Extra CAs of a TLS-intercepting proxy: Debian/Ubuntu keep locally added ones here.
CA_DIR ?= /usr/local/share/ca-certificates
CA_ARGS := $(if $(wildcard $(CA_DIR)/*.crt),--ca-cert $(CA_DIR))
# `make run`: the container (its volumes are CONTAINER-work, -local, -nv, -hostkeys), where it listens
# on the host and which public key may log in.
CONTAINER ?= tf29-env
HOST_ADDRESS ?= 0.0.0.0
JUPYTER_HOST_PORT ?= 8888
SSH_HOST_PORT ?= 2222
SSH_PUBLIC_KEY ?= $(firstword $(wildcard $(HOME)/.ssh/id_ed25519.pub $(HOME)/.ssh/id_rsa.pub))
# `make run`'s GPUs: unset gives every GPU where the engine has the NVIDIA runtime (none elsewhere);
# GPUS=all, GPUS=none, or the devices to give, e.g. GPUS=0,1 or GPU/MIG UUIDs (compose/gpus.py).
GPUS ?=
export GPUS
# `make run`/`make stop`: the seconds a stop gives running jobs and busy kernels to checkpoint
# (docs/jobs.md); unset: the team's, docker-compose.yml's STOP_GRACE_SECONDS (30).
STOP_GRACE_SECONDS ?=
# `make upgrade`/`make rollback` (docs/upgrade.md): where snapshots go, how many of them stay, and how
# long the new container has to turn healthy and pass the self-check before it is rolled back.
BACKUP_DIR ?= backups
BACKUP_KEEP ?= 3
UPGRADE_TIMEOUT ?= 300
UPGRADE = $(PY) -m compose.upgrade --container '$(CONTAINER)' --backup-dir '$(BACKUP_DIR)' --timeout '$(UPGRADE_TIMEOUT)'

.PHONY: help venv base build run stop upgrade rollback gpus test lint bench clean screenshots kit

help: ## list the targets
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

$(VENV)/.done: requirements-dev.txt
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q -r requirements-dev.txt
	touch $@

venv: $(VENV)/.done ## make the host tools' virtualenv (build.py, tests, linters)

base: $(VENV)/.done ## bootstrap the stand-in base images (no registry needed)
	$(PY) build.py base --variant $(VARIANT)

build: $(VENV)/.done ## build the image (BASE=standin|IMAGE, VARIANT=gpu|cpu)
	$(PY) build.py build --variant $(VARIANT) --base $(BASE) $(CA_ARGS) --tag $(IMAGE)

# The GPU arguments come first: a bad GPUS is one line, and the running container stays. /dev/shm, the
# stack ulimit and the log rotation are the team's (docker-compose.yml's x-member, compose/limits.py).
# The old container is stopped as `make stop` does: its jobs are interrupted and checkpoint first.
run: build ## build, then start the environment as container tf29-env (CONTAINER=NAME for another; Jupyter on 8888, SSH on 2222; GPUS=0,1 picks GPUs)
	gpu_args=$$(python3 compose/gpus.py docker-args) && \
	limit_args=$$($(PY) compose/limits.py docker-args $(if $(STOP_GRACE_SECONDS),--stop-grace '$(STOP_GRACE_SECONDS)')) && \
	{ docker stop $(CONTAINER) >/dev/null 2>&1 || true; } && { docker rm -f $(CONTAINER) >/dev/null 2>&1 || true; } && \
	docker run -d --name $(CONTAINER) --restart unless-stopped $$gpu_args $$limit_args \
	  -p $(HOST_ADDRESS):$(JUPYTER_HOST_PORT):8888 -p $(HOST_ADDRESS):$(SSH_HOST_PORT):22 \
	  $(if $(SSH_PUBLIC_KEY),-e SSH_AUTHORIZED_KEYS="$$(cat $(SSH_PUBLIC_KEY))") \
	  -v $(CONTAINER)-work:/home/jovyan/work -v $(CONTAINER)-hostkeys:/etc/ssh/host-keys -v $(CONTAINER)-nv:/home/jovyan/.nv \
	  -v $(CONTAINER)-local:/home/jovyan/.local \
	  $(IMAGE)
	@echo "waiting for $(CONTAINER) to turn healthy..."
	@python3 compose/access.py run --container '$(CONTAINER)' --bind '$(HOST_ADDRESS)' --jupyter-port '$(JUPYTER_HOST_PORT)' \
	  --ssh-port '$(SSH_HOST_PORT)' --ssh-key '$(SSH_PUBLIC_KEY)'

# docker stop waits the container's own stop timeout (make run set it: STOP_GRACE_SECONDS + 5).
stop: ## stop the tf29-env container gracefully (jobs checkpoint first: docs/jobs.md), then remove it (volumes stay)
	docker stop $(CONTAINER) && docker rm $(CONTAINER)

# IMAGE given on the command line is taken as it is (built elsewhere, or loaded); else built first.
upgrade: $(VENV)/.done $(if $(filter command line,$(origin IMAGE)),,build) ## move the running environment to the new image: snapshot, health gate, automatic rollback (docs/upgrade.md)
	$(UPGRADE) upgrade --image '$(IMAGE)' --keep '$(BACKUP_KEEP)'

rollback: $(VENV)/.done ## back to the image and volumes of the last upgrade's snapshot (what runs now is snapshotted first)
	$(UPGRADE) rollback

gpus: $(VENV)/.done ## who holds each GPU: memory in use, and per process the member or hub user and its container (docs/team.md)
	@$(PY) -m compose.holders

test: $(VENV)/.done ## run the whole test suite (builds the image on the stand-in base first)
	$(PY) build.py test

lint: $(VENV)/.done ## ruff, mypy (host and image/), shellcheck, hadolint (the list is tests/unit/lint/test_lint.py)
	$(PY) -m pytest -q -p no:cacheprovider tests/unit/lint/test_lint.py

bench: $(VENV)/.done ## measure size, build, start-up and self-check times; BENCH_ARGS=--side-by-side adds TF's own recipe (bench/README.md)
	$(PY) -m bench $(BENCH_ARGS)

clean: ## stop and remove the tf29-env container, build output and caches (images and volumes stay)
	{ docker stop $(CONTAINER) >/dev/null 2>&1 || true; } && { docker rm -f $(CONTAINER) >/dev/null 2>&1 || true; }
	rm -rf build-output .pytest_cache .mypy_cache .ruff_cache

# `make kit`: the install kit for a box with no internet (docs/kit.md) goes to KIT, a new folder; IMAGE given
# on the command line is put in as it is, else the last build of VARIANT.
KIT ?= tf29-env-kit-$(VARIANT)
kit: $(VENV)/.done ## write the install kit for a box with no internet: image, project, wheels, npm cache, install.sh (KIT=DIR, or KIT=FILE.tar for one tarball; docs/kit.md)
	$(PY) build.py kit --output '$(KIT)' $(if $(filter command line,$(origin IMAGE)),--image '$(IMAGE)',--variant $(VARIANT))

screenshots: build hub-venv hub-proxy ## build the image, then take the docs' pictures from a real run (docs/img/*.png, scripts/screenshots.py)
	$(PY) -m scripts.screenshots --image $(IMAGE)

include compose.mk
include hub.mk
