# shellcheck shell=bash
# 12-hub: the hub mode's secrets (its settings are checked by startup/plan.py: load_hub_config).

# The hub's secrets: the server's API token (under both names) and its OAuth client's settings.
# They leave the environment here, before the hooks, sshd (whose sessions copy the entrypoint's
# environment) or the self-check start, and are handed to the single-user server alone (50-jupyter),
# whose kernels and terminals get them from it, as in any JupyterHub image. 40-ssh also skips these
# names, whatever the mode. `docker exec` sessions still get Docker's copy: they are the admin's.
readonly HUB_SECRET_PATTERN='^(JUPYTERHUB_API_TOKEN|JPY_API_TOKEN|JUPYTERHUB_CLIENT_ID|JUPYTERHUB_OAUTH_[A-Z_]*)$'
declare -A hub_secrets=()

# take_hub_secrets: the hub's secrets leave the environment, kept for the single-user server alone.
take_hub_secrets() {
  local name
  for name in $(compgen -e); do
    [[ ${name} =~ ${HUB_SECRET_PATTERN} ]] || continue
    hub_secrets[${name}]=${!name}
    unset -v "${name}"
  done
}
