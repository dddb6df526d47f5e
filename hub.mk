# The team hub (docs/hub.md), included by the Makefile: JupyterHub + DockerSpawner on this host.
# Its settings are HUB_* variables, from the environment or the make command line
# (`make hub HUB_ADDRESS=0.0.0.0`); hub/settings.py holds their defaults and checks them.

HUB_ROOT := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))
HUB_DIR := $(HUB_ROOT)/hub
HUB_VENV := $(HUB_DIR)/.venv
# The hub's own Python (3.11 or newer: hub/requirements.txt is resolved on 3.11); not the image's.
HUB_PYTHON ?= python3
# HUB_* given on the make command line reach hub/ctl.py as environment variables.
HUB_CTL = $(MAKE_HUB_ENV) PYTHONPATH=$(HUB_ROOT) $(HUB_VENV)/bin/python -m hub.ctl
MAKE_HUB_ENV = $(foreach v,$(filter HUB_%,$(.VARIABLES)),$(if $(filter command line,$(origin $(v))),$(v)='$($(v))'))

.PHONY: hub hub-down hub-status hub-logs hub-venv hub-proxy

$(HUB_VENV)/.done: $(HUB_DIR)/requirements.txt
	@$(HUB_PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "tf29-hub: ERROR: the hub needs Python 3.11 or newer: set HUB_PYTHON (e.g. HUB_PYTHON=python3.11)")'
	rm -rf $(HUB_VENV)
	$(HUB_PYTHON) -m venv $(HUB_VENV)
	$(HUB_VENV)/bin/pip install -q --disable-pip-version-check --no-deps -r $(HUB_DIR)/requirements.txt
	$(HUB_VENV)/bin/pip check
	touch $@

$(HUB_DIR)/node_modules/.done: $(HUB_DIR)/package-lock.json
	cd $(HUB_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

hub-venv: $(HUB_VENV)/.done ## make the hub's virtualenv (hub/.venv, from hub/requirements.txt)

hub-proxy: $(HUB_DIR)/node_modules/.done ## install the hub's proxy (configurable-http-proxy, from hub/package-lock.json)

# What `make hub` serves, as it is: HUB_IMAGE; else, on a box with team settings (.env, which the kit's
# install.sh writes, or TF29ENV_IMAGE in the environment), the team's TF29ENV_IMAGE, read by hub/ctl.py
# as compose reads it. With neither, it builds the image first, as `make run` does, and serves IMAGE.
HUB_BUILD := $(if $(or $(HUB_IMAGE),$(TF29ENV_IMAGE),$(wildcard $(HUB_ROOT)/.env)),,build)
hub: hub-venv hub-proxy $(HUB_BUILD) ## start the team hub in the background, print its URL: HUB_IMAGE, else .env's image, else the image built first (docs/hub.md)
	$(if $(HUB_BUILD),HUB_IMAGE='$(IMAGE)') $(HUB_CTL) up

hub-down: ## stop the team hub (users' servers keep running; the hub finds them again at its next start)
	@if [ -x $(HUB_VENV)/bin/python ]; then $(HUB_CTL) down; else echo "tf29-hub: not installed, nothing to stop"; fi

hub-status: hub-venv ## say whether the hub and its proxy run
	$(HUB_CTL) status

hub-logs: ## follow the hub's and the proxy's logs
	tail -F $${HUB_STATE_DIR:-$(HUB_DIR)/state}/logs/hub.log $${HUB_STATE_DIR:-$(HUB_DIR)/state}/logs/proxy.log
