# shellcheck shell=bash
# 50-jupyter: JupyterLab or, in the hub mode, jupyterhub-singleuser, as the dev user, as startup/plan.py planned it.

start_jupyter() {
  ((cfg_jupyter)) || return 0
  local name
  local -A server_env=()
  if [[ ${cfg_mode} == hub ]]; then
    for name in "${!hub_secrets[@]}"; do server_env[${name}]=${hub_secrets[${name}]}; done
    log "hub mode: JupyterHub's single-user server for ${JUPYTERHUB_USER:-its user} on port ${cfg_jupyter_port} under ${cfg_base_url}; the hub's login is the only one (JUPYTER_PORT and JUPYTER_BASE_URL do not apply)"
  elif ((cfg_no_auth)); then
    warn "JUPYTER_INSECURE_NO_AUTH=1: JupyterLab accepts anyone who reaches port ${cfg_jupyter_port} as ${cfg_allowed_hosts[*]}, localhost or a loopback address, with no token or password"
  elif [[ -n ${cfg_token} ]]; then
    server_env[JUPYTER_TOKEN]=${cfg_token}
  fi
  # Secrets go in this subshell's environment, never argv (ps shows it to all); jupyter_server_config.py
  # takes JUPYTER_TOKEN out again before any kernel or terminal starts.
  (
    unset -v JUPYTER_TOKEN JUPYTER_TOKEN_FILE JUPYTER_PASSWORD_HASH
    for name in "${!server_env[@]}"; do export "${name}=${server_env[${name}]}"; done
    # Its terminals start in the server's working folder (a launcher's asks for cwd ""): the one Lab shows.
    cd -- "${cfg_server_folder}" 2>/dev/null || cd -- "${NB_HOME}"
    exec "${as_user[@]}" "${cfg_server_command[@]}"
  ) &
  children[$!]=jupyter
  if ((apptainer_mode)) && [[ ${cfg_mode} == services ]]; then
    announce_tunnel "$!" # the ssh -L line, once it listens
  elif ((cfg_token_generated)); then
    local scheme=http page=lab
    ((!cfg_gen_cert)) || scheme=https
    case ${cfg_jupyter_app} in server) page="" ;; notebook) page=tree ;; esac # its default page
    log "JupyterLab token (generated; set JUPYTER_TOKEN or JUPYTER_TOKEN_FILE to choose one):" \
      "${scheme}://127.0.0.1:${cfg_jupyter_port}${cfg_base_url}${page}?token=${cfg_token}"
  fi
}

# In the background: it waits for JupyterLab's runtime file, prints the ssh -L line and ends by itself.
announce_tunnel() {
  local node login
  node=${SLURMD_NODENAME:-$(hostname)}
  login=${LOGIN_HOST:-${SLURM_SUBMIT_HOST:-}}
  /usr/bin/python3 -I "${APPTAINER_PY}" announce "${JUPYTER_RUNTIME_DIR}" "$1" "${node}" "${login}" \
    "${USER:-$(id -un)}" "${cfg_token_generated}" &
}
