# Team setup targets (docs/team.md), included by the Makefile. They run compose in the folder of
# docker-compose.yml, so .env there (COMPOSE_FILE, COMPOSE_PROJECT_NAME, ...) applies to each.
# COMPOSE: `docker compose` (v2) where the engine has it, else Debian's docker-compose 1.29.

TEAM_DIR := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
COMPOSE ?= $(shell docker compose version >/dev/null 2>&1 && echo 'docker compose' || echo docker-compose)
TEAM_COMPOSE = cd $(TEAM_DIR) && $(COMPOSE)
# down and restart wait each member's stop_grace_period (docker-compose.yml: STOP_GRACE_SECONDS + 5,
# for jobs to checkpoint: docs/jobs.md) before they kill; STOP_TIMEOUT=SECONDS waits that long instead.
STOP_TIMEOUT ?=
# MEMBER=alice limits logs, ps and restart to one member.
MEMBER ?=

.PHONY: up down logs ps config restart member member-secrets

# compose/rollout.py upgrades members on another image one at a time (snapshot, health gate, rollback:
# docs/upgrade.md); it needs the host tools' venv only then, so without one python3 runs it. The Makefile's
# BACKUP_DIR, BACKUP_KEEP and UPGRADE_TIMEOUT apply where set; alone (make -f compose.mk) its own defaults.
TEAM_PY = $(or $(wildcard $(abspath $(TEAM_DIR))/.venv/bin/python),python3)
ROLLOUT_ARGS = $(if $(BACKUP_DIR), --backup-dir '$(abspath $(BACKUP_DIR))')$(if $(BACKUP_KEEP), --keep '$(BACKUP_KEEP)')$\
  $(if $(UPGRADE_TIMEOUT), --timeout '$(UPGRADE_TIMEOUT)')

# First compose/teamenv.py: team data and HTTPS (.env) checked, and the variables compose reads for them;
# compose/memlock.py: the locked-memory limit this engine can grant (each: or one line and a stop).
# Members without secrets (the shipped examples) are not started: access.py says so, one line each. New
# members and those on the image already start at once, as ever; the others move one at a time (rollout.py).
# Once the started ones are healthy, their URLs and SSH lines.
up: ## start every team member's environment, or update it after a change (compose/member.py, .env, image: member by member)
	cd $(TEAM_DIR) && derived=$$(python3 compose/teamenv.py) && eval "$$derived" && \
	memlock=$$(python3 compose/memlock.py) && members=$$(python3 compose/access.py ready) && \
	TF29ENV_MEMLOCK=$$memlock $(TEAM_PY) -m compose.rollout --compose '$(COMPOSE)'$(ROLLOUT_ARGS) $$members && \
	python3 compose/access.py team --compose '$(COMPOSE)' $$members

down: ## stop and remove the team's containers; notebooks, CUDA caches and host keys stay in their volumes
	$(TEAM_COMPOSE) down --remove-orphans$(if $(STOP_TIMEOUT), -t $(STOP_TIMEOUT))

logs: ## follow the team's logs (MEMBER=alice for one)
	$(TEAM_COMPOSE) logs -f --tail=200 $(MEMBER)

ps: ## list the team's containers with their state, health and host ports (MEMBER=alice for one)
	$(TEAM_COMPOSE) ps $(MEMBER)

config: ## check the compose files that COMPOSE_FILE names (docker-compose.yml, compose/gpu.yml)
	$(TEAM_COMPOSE) config -q

restart: ## restart the team's containers (MEMBER=alice for one), e.g. after rotating a key
	$(TEAM_COMPOSE) restart$(if $(STOP_TIMEOUT), -t $(STOP_TIMEOUT)) $(MEMBER)

member: ## add a member: make member NAME=dana KEY=dana.pub [ARGS='--gpu-ids 2 --uid 1005 --gpu-memory 8192']
	python3 $(TEAM_DIR)/compose/member.py add $(NAME) --ssh-key $(KEY) $(ARGS)

member-secrets: ## (re)write a member's token and keys: make member-secrets NAME=alice KEY=alice.pub [ARGS=--new-token]
	python3 $(TEAM_DIR)/compose/member.py secrets $(NAME) $(if $(KEY),--ssh-key $(KEY)) $(ARGS)
