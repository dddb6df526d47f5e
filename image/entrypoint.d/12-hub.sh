# shellcheck shell=bash
# 12-hub: the settings of the hub mode (05-mode), which the hub's spawner passes in the environment:
# where the single-user server listens and under which prefix (JUPYTERHUB_SERVICE_URL,
# JUPYTERHUB_SERVICE_PREFIX; jupyterhub-singleuser reads them itself), and the secrets of its OAuth
# client. The hub's login is the only one: the standalone JupyterLab's auth settings are refused
# rather than ignored, so that nobody believes a token guards a server that the hub guards.

# The hub's secrets: the server's API token (under both names) and its OAuth client's settings.
# They leave the environment here, before the hooks, sshd (whose sessions copy the entrypoint's
# environment) or the self-check start, and are handed to the single-user server alone (50-jupyter),
# whose kernels and terminals get them from it, as in any JupyterHub image. 40-ssh also skips these
# names, whatever the mode. `docker exec` sessions still get Docker's copy: they are the admin's.
readonly HUB_SECRET_PATTERN='^(JUPYTERHUB_API_TOKEN|JPY_API_TOKEN|JUPYTERHUB_CLIENT_ID|JUPYTERHUB_OAUTH_[A-Z_]*)$'
declare -A hub_secrets=()

load_hub_config() {
  [[ -n ${JUPYTERHUB_API_TOKEN:-}${JPY_API_TOKEN:-} ]] ||
    die "the hub mode (command jupyterhub-singleuser or start-singleuser) needs JUPYTERHUB_API_TOKEN, which JupyterHub's spawner sets: start it from a hub, or give no command for the standalone JupyterLab"
  local name
  for name in JUPYTER_TOKEN JUPYTER_TOKEN_FILE JUPYTER_PASSWORD_HASH JUPYTER_ALLOWED_HOSTS; do
    [[ -z ${!name:-} ]] ||
      die "${name} is set, but in the hub mode the hub's login is the only one: unset ${name} (it applies to the standalone JupyterLab)"
  done
  ((!cfg_no_auth)) || die "JUPYTER_INSECURE_NO_AUTH=1 in the hub mode, where the hub's login is the only one: unset it"
  ((cfg_jupyter)) || die "ENABLE_JUPYTER=0 in the hub mode, which exists to run the hub's single-user server: unset it"

  local url=${JUPYTERHUB_SERVICE_URL:-}
  [[ -n ${url} ]] || die "JUPYTERHUB_SERVICE_URL is not set: the hub mode needs it from the hub's spawner (JupyterHub 2 or later sets it)"
  [[ ${url} =~ ^(https?)://([A-Za-z0-9._-]*|\[[0-9A-Fa-f:.]+\])(:([0-9]{1,5}))?(/[[:graph:]]*)?$ ]] ||
    die "JUPYTERHUB_SERVICE_URL='${url}' is not a URL like http://0.0.0.0:8888/user/NAME/"
  cfg_jupyter_port=${BASH_REMATCH[4]}
  if [[ -z ${cfg_jupyter_port} ]]; then
    cfg_jupyter_port=80
    [[ ${BASH_REMATCH[1]} == http ]] || cfg_jupyter_port=443
  fi
  if ((apptainer_mode && 10#${cfg_jupyter_port} == 0)); then
    cfg_report_port=1 # 07-apptainer: batchspawner's hub waits to be told the port this start takes
  else
    ((10#${cfg_jupyter_port} >= 1 && 10#${cfg_jupyter_port} <= 65535)) ||
      die "JUPYTERHUB_SERVICE_URL='${url}': port ${cfg_jupyter_port} is not a TCP port (1-65535)"
  fi
  cfg_base_url=${JUPYTERHUB_SERVICE_PREFIX:-/}
  [[ ${cfg_base_url} =~ ^/[[:graph:]]*$ ]] ||
    die "JUPYTERHUB_SERVICE_PREFIX='${cfg_base_url}' is not a URL path like /user/NAME/"
  cfg_token="" cfg_token_generated=0 cfg_password_hash="" cfg_allowed_hosts=()

  for name in $(compgen -e); do
    [[ ${name} =~ ${HUB_SECRET_PATTERN} ]] || continue
    hub_secrets[${name}]=${!name}
    unset -v "${name}"
  done
}
