# shellcheck shell=bash
# 50-jupyter: JupyterLab as the dev user (never root), on 0.0.0.0:JUPYTER_PORT under
# JUPYTER_BASE_URL, with the auth that 10-config settled on.

start_jupyter() {
  ((cfg_jupyter)) || return 0
  local args=(
    lab
    --ServerApp.ip=0.0.0.0
    "--ServerApp.port=${JUPYTER_PORT}"
    --ServerApp.port_retries=0
    --ServerApp.open_browser=False
    "--ServerApp.root_dir=${NB_HOME}"
    "--ServerApp.base_url=${cfg_base_url}"
    # No network calls from a server that often has none: no update checks, no news feed.
    --LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate
    --LabApp.news_url=None
  )
  # The token travels in the environment (not argv, which every process can read in ps).
  local token_env=(env -u JUPYTER_TOKEN)
  if ((cfg_no_auth)); then
    warn "JUPYTER_INSECURE_NO_AUTH=1: JupyterLab accepts anyone who reaches port ${JUPYTER_PORT} as ${cfg_allowed_hosts[*]}, localhost or a loopback address, with no token or password"
    args+=(--IdentityProvider.token= --PasswordIdentityProvider.hashed_password=)
  else
    if [[ -n ${cfg_token} ]]; then
      token_env=(env "JUPYTER_TOKEN=${cfg_token}")
    else
      args+=(--IdentityProvider.token=)
    fi
    if [[ -n ${cfg_password_hash} ]]; then
      args+=("--PasswordIdentityProvider.hashed_password=${cfg_password_hash}")
    fi
  fi
  # Only requests whose Host header names an allowed host or a loopback address (the healthcheck's)
  # are served: Jupyter's own DNS-rebinding check, which it switches off when listening on 0.0.0.0.
  if ((${#cfg_allowed_hosts[@]} > 0)); then
    local name
    args+=(--ServerApp.allow_remote_access=False --ServerApp.local_hostnames=localhost)
    for name in "${cfg_allowed_hosts[@]}"; do
      args+=("--ServerApp.local_hostnames=${name}")
    done
  fi
  mkdir -p "${JUPYTER_RUNTIME_DIR}"
  ((!is_root)) || chown "${NB_UID}:${NB_GID}" "${JUPYTER_RUNTIME_DIR}"
  "${token_env[@]}" "${as_user[@]}" jupyter "${args[@]}" &
  children[$!]=jupyter
  if ((cfg_token_generated)); then
    log "JupyterLab token (generated; set JUPYTER_TOKEN or JUPYTER_TOKEN_FILE to choose one):" \
      "http://127.0.0.1:${JUPYTER_PORT}${cfg_base_url}lab?token=${cfg_token}"
  fi
}
