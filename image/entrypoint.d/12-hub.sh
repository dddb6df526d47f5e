# shellcheck shell=bash
# 12-hub: the hub mode's secrets (its settings are checked by startup/plan.py: load_hub_config).

# Out before the hooks, sshd (whose sessions copy this environment) or the self-check start;
# the single-user server alone gets them back. `docker exec` still sees Docker's copy: the admin's.
readonly HUB_SECRET_PATTERN='^(JUPYTERHUB_API_TOKEN|JPY_API_TOKEN|JUPYTERHUB_CLIENT_ID|JUPYTERHUB_OAUTH_[A-Z_]*)$'
declare -A hub_secrets=()

take_hub_secrets() {
  local name
  for name in $(compgen -e); do
    [[ ${name} =~ ${HUB_SECRET_PATTERN} ]] || continue
    hub_secrets[${name}]=${!name}
    unset -v "${name}"
  done
}
