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
  # The token travels in the environment (not argv, which every process can read in ps), and
  # jupyter/jupyter_server_config.py takes it out of the server's before any kernel or terminal
  # starts with a copy. What the entrypoint has read already, the server and they get no copy of.
  local token_env=(env -u JUPYTER_TOKEN -u JUPYTER_TOKEN_FILE -u JUPYTER_PASSWORD_HASH)
  if ((cfg_no_auth)); then
    warn "JUPYTER_INSECURE_NO_AUTH=1: JupyterLab accepts anyone who reaches port ${JUPYTER_PORT} as ${cfg_allowed_hosts[*]}, localhost or a loopback address, with no token or password"
    args+=(--IdentityProvider.token= --PasswordIdentityProvider.hashed_password=)
  else
    if [[ -n ${cfg_token} ]]; then
      token_env+=("JUPYTER_TOKEN=${cfg_token}")
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
  prepare_runtime_dir
  "${token_env[@]}" "${as_user[@]}" jupyter "${args[@]}" &
  children[$!]=jupyter
  if ((cfg_token_generated)); then
    log "JupyterLab token (generated; set JUPYTER_TOKEN or JUPYTER_TOKEN_FILE to choose one):" \
      "http://127.0.0.1:${JUPYTER_PORT}${cfg_base_url}lab?token=${cfg_token}"
  fi
}

# Jupyter's runtime files (jpserver-PID.json and jpserver-PID-open.html with the token, the cookie
# secret, the kernels' connection files with their keys) are for the dev user alone: their folder is
# the dev user's, mode 700 (jupyter_client adds the sticky bit), whatever mode Jupyter gives a file;
# it makes the -open.html readable by all and has no setting against it. The folder sits in the
# world-writable run directory and outlives a restart, so a link left there by the dev user is
# removed first: root's chown and chmod would otherwise act on the link's target.
prepare_runtime_dir() {
  local dir=${JUPYTER_RUNTIME_DIR}
  if ((is_root)); then
    if [[ -L ${dir} ]]; then rm -f -- "${dir}"; fi
    mkdir -p -- "${dir}"
    chown -h "${NB_UID}:${NB_GID}" "${dir}"
  else
    mkdir -p -- "${dir}"
  fi
  chmod 700 "${dir}"
}
