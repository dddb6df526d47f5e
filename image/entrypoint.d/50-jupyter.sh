# shellcheck shell=bash
# 50-jupyter: JupyterLab or, in the hub mode, jupyterhub-singleuser, as the dev user; extra args come last to win.

start_jupyter() {
  ((cfg_jupyter)) || return 0
  local args=() name
  local -A server_env=()
  if [[ ${cfg_mode} == hub ]]; then
    hub_server_args
  else
    lab_server_args
  fi
  # No network calls from a server that often has none: no update checks, no news feed.
  args+=(--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate --LabApp.news_url=None)
  without_overridden_options
  args+=("${cfg_server_args[@]}")
  # Secrets go in this subshell's environment, never argv (ps shows it to all); jupyter_server_config.py
  # takes JUPYTER_TOKEN out again before any kernel or terminal starts.
  local folder
  folder=$(server_folder)
  (
    unset -v JUPYTER_TOKEN JUPYTER_TOKEN_FILE JUPYTER_PASSWORD_HASH
    for name in "${!server_env[@]}"; do export "${name}=${server_env[${name}]}"; done
    # Its terminals start in the server's working folder (a launcher's asks for cwd ""): the one Lab shows.
    cd -- "${folder}" 2>/dev/null || cd -- "${NB_HOME}"
    exec "${as_user[@]}" "${args[@]}"
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

server_folder() {
  local arg folder=${JUPYTERHUB_ROOT_DIR:-${NB_HOME}}
  for arg in "${args[@]}"; do
    case ${arg} in
      --ServerApp.root_dir=* | --ServerApp.notebook_dir=* | --NotebookApp.notebook_dir=* | --notebook-dir=*) folder=${arg#*=} ;;
    esac
  done
  printf '%s\n' "${folder}"
}

# Traitlets refuses an option given twice, so an image option that an extra arg names again is dropped.
without_overridden_options() {
  local -A named=()
  local arg kept=()
  for arg in "${cfg_server_args[@]}"; do
    [[ ${arg} != --* ]] || named[${arg%%=*}]=1
  done
  for arg in "${args[@]}"; do
    [[ ${arg} == --* && -n ${named[${arg%%=*}]+set} ]] || kept+=("${arg}")
  done
  args=("${kept[@]}")
}

# jupyterhub-singleuser reads the hub's login, port and prefix from the environment.
hub_server_args() {
  args=(jupyterhub-singleuser)
  [[ -n ${JUPYTERHUB_ROOT_DIR:-} ]] || args+=("--ServerApp.root_dir=${NB_HOME}")
  for name in "${!hub_secrets[@]}"; do server_env[${name}]=${hub_secrets[${name}]}; done
  log "hub mode: JupyterHub's single-user server for ${JUPYTERHUB_USER:-its user} on port ${cfg_jupyter_port} under ${cfg_base_url}; the hub's login is the only one (JUPYTER_PORT and JUPYTER_BASE_URL do not apply)"
}

lab_server_args() {
  args=(
    jupyter "${cfg_jupyter_app}" # 52: DOCKER_STACKS_JUPYTER_CMD
    "--ServerApp.ip=${cfg_listen_ip}"
    "--ServerApp.port=${cfg_jupyter_port}"
    "--ServerApp.port_retries=${cfg_port_retries}" # 0 but for a port the plan chose under Apptainer
    --ServerApp.open_browser=False
    "--ServerApp.root_dir=${NB_HOME}"
    "--ServerApp.base_url=${cfg_base_url}"
  )
  ((!cfg_gen_cert)) || args+=("--ServerApp.certfile=${cfg_cert_file}" "--ServerApp.keyfile=${cfg_key_file}") # 34
  if ((cfg_no_auth)); then
    warn "JUPYTER_INSECURE_NO_AUTH=1: JupyterLab accepts anyone who reaches port ${cfg_jupyter_port} as ${cfg_allowed_hosts[*]}, localhost or a loopback address, with no token or password"
    args+=(--IdentityProvider.token= --PasswordIdentityProvider.hashed_password=)
  else
    if [[ -n ${cfg_token} ]]; then
      server_env[JUPYTER_TOKEN]=${cfg_token}
    else
      args+=(--IdentityProvider.token=)
    fi
    if [[ -n ${cfg_password_hash} ]]; then
      args+=("--PasswordIdentityProvider.hashed_password=${cfg_password_hash}")
    fi
  fi
  # Jupyter drops its DNS-rebinding check when listening on every address; this keeps it.
  if ((${#cfg_allowed_hosts[@]} > 0)); then
    local host
    args+=(--ServerApp.allow_remote_access=False --ServerApp.local_hostnames=localhost)
    for host in "${cfg_allowed_hosts[@]}"; do
      args+=("--ServerApp.local_hostnames=${host}")
    done
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
