# shellcheck shell=bash
# 12-hub: the hub mode's secrets (its settings are checked by startup/plan.py: load_hub_config).

# Out before the hooks, sshd (whose sessions copy this environment) or the self-check start;
# the single-user server alone gets them back. `docker exec` still sees Docker's copy: the admin's.
declare -A hub_secrets=()

take_hub_secrets() {
  local name
  for name in "${cfg_hub_secret_names[@]}"; do # startup/environ.py names them
    hub_secrets[${name}]=${!name}
    unset -v "${name}"
  done
}
