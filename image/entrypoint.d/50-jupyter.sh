# shellcheck shell=bash
# 50-jupyter: JupyterLab or, in the hub mode, jupyterhub-singleuser, as the dev user, as startup/plan.py planned it.

start_jupyter() {
  ((cfg_jupyter)) || return 0
  local name
  local -A server_env=()
  if [[ ${cfg_mode} == hub ]]; then
    for name in "${!hub_secrets[@]}"; do server_env[${name}]=${hub_secrets[${name}]}; done
  elif [[ -n ${cfg_token} ]]; then
    server_env[JUPYTER_TOKEN]=${cfg_token}
  fi
  say "${cfg_server_notes[@]}" # the hub's or the token's line (startup/plan.py: server_notes)
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
  if ((${#cfg_tunnel[@]})); then # Apptainer: the ssh -L line once the server listens; it ends by itself
    /usr/bin/python3 -I "${APPTAINER_PY}" announce "${JUPYTER_RUNTIME_DIR}" "$!" "${cfg_tunnel[@]}" &
  fi
}
