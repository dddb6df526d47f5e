# shellcheck shell=bash
# The services and their supervision: a service that dies takes the container down non-zero, so a restart
# policy restarts it. A stop interrupts the runs first (jobs, busy kernels), so their last checkpoint stands
# (docs/jobs.md).

# The healthcheck's connections log two lines each (sshd -e ends lines with CR LF); all else is kept.
readonly HEALTHCHECK_NOISE='/^kex_exchange_identification: Connection closed by remote host$/d; /^Connection closed by 127\.0\.0\.1 port [0-9]/d'

declare -A children=() # pid: sshd, jupyter or selfcheck
stopping=0
waker=0 # supervise's wake-up child

# What the healthcheck must find answering. A restart leaves the last start's jpserver files, whose pid a new
# process may have: they go first.
write_services() {
  local services=""
  ((cfg_jupyter)) && services+="jupyter ${JUPYTER_RUNTIME_DIR}"$'\n'
  ((ssh_starts)) && services+="ssh ${SSH_PORT}"$'\n'
  rm -f "${JUPYTER_RUNTIME_DIR}"/jpserver-* 2>/dev/null || true
  printf '%s' "${services}" >"${SERVICES_FILE}"
}

# sshd as prepare_ssh prepared and checked it.
start_ssh() {
  /usr/sbin/sshd "${cfg_sshd_args[@]}" 2> >(sed -u -e 's/\r$//' -e "${HEALTHCHECK_NOISE}" >&2) &
  children[$!]=sshd
  log "SSH: listening on port ${SSH_PORT} for ${cfg_user} (${cfg_ssh_key_count} public keys; no passwords)"
}

# JupyterLab or, in the hub mode, jupyterhub-singleuser, as the dev user, as the planner planned it.
start_jupyter() {
  local name
  local -A server_env=()
  if [[ ${cfg_mode} == hub ]]; then
    for name in "${!hub_secrets[@]}"; do server_env[${name}]=${hub_secrets[${name}]}; done
  elif [[ -n ${cfg_token} ]]; then
    server_env[JUPYTER_TOKEN]=${cfg_token}
  fi
  say "${cfg_server_notes[@]}" # the hub's or the token's line
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
    /usr/bin/python3 -I -m tf29image.startup.apptainer announce "${JUPYTER_RUNTIME_DIR}" "$!" "${cfg_tunnel[@]}" &
  fi
}

# At a lower priority beside JupyterLab, so it never delays Jupyter's readiness.
start_selfcheck() {
  "${as_user[@]}" nice -n 10 /opt/tf29-env/bin/selfcheck --mode "${cfg_self_check}" & # the report: TFENV_RUN_DIR/selfcheck.json
  children[$!]=selfcheck
}

# Until a signal or a service's exit; the container's exit code says which.
supervise() {
  # A signal between two waits would leave wait -n sleeping until a service exits: the trap also ends
  # this child, which wakes it.
  sleep infinity &
  waker=$!
  trap 'stopping=1; kill "${waker}" 2>/dev/null || true' TERM INT HUP
  local pid name code
  while ((${#children[@]} > 0)); do
    wait -n || true
    stop_if_asked
    for pid in "${!children[@]}"; do
      ! running "${pid}" || continue
      # The signal may have come while an earlier exit (the self-check's) was handled: then this one is its doing.
      stop_if_asked
      name=${children[${pid}]}
      unset "children[${pid}]"
      code=0
      wait "${pid}" || code=$?
      on_child_exit "${name}" "${code}"
    done
  done
  if ((waker)); then kill "${waker}" 2>/dev/null || true; fi
  log "no service left running; exiting"
  exit 1
}

stop_if_asked() {
  ((stopping)) || return 0
  log "stopping (signal received)"
  stop_children
  exit 0
}

# on_child_exit NAME CODE: only the self-check may end without taking the container down.
on_child_exit() {
  local name=$1 code=$2
  if [[ ${name} == selfcheck ]]; then
    if ((code != 0)) && [[ ${cfg_self_check} == strict ]]; then
      log "self-check failed and SELF_CHECK=strict: stopping the container"
      stop_children
      exit 3
    fi
    return 0
  fi
  if [[ ${name} == jupyter ]]; then name=JupyterLab; fi
  log "${name} exited (code ${code}); stopping the container"
  stop_children
  exit $((code == 0 ? 1 : code))
}

stop_children() {
  local deadline=$((SECONDS + cfg_stop_grace)) pid
  if ((waker)); then kill "${waker}" 2>/dev/null || true; fi
  interrupt_runs
  signal_children TERM
  while ((SECONDS < deadline)); do
    for pid in "${!children[@]}"; do
      if running "${pid}"; then sleep 0.1; continue 2; fi
    done
    break
  done
  signal_children KILL
  wait || true
}

# All but the last 2 s of the grace go to the runs; the services then have what is left.
interrupt_runs() {
  local pid server=0
  for pid in "${!children[@]}"; do [[ ${children[${pid}]} != jupyter ]] || server=${pid}; done
  "${as_user[@]}" /opt/tf29-env/bin/job _interrupt-all --wait "$(( cfg_stop_grace > 3 ? cfg_stop_grace - 2 : 1 ))" \
    --server-pid "${server}" || warn "the jobs and kernels could not all be interrupted"
}

signal_children() {
  local pid
  for pid in "${!children[@]}"; do
    kill "-$1" "${pid}" 2>/dev/null || true
  done
}

# A child that exited but was not yet waited for is a zombie: gone, though kill -0 still finds it.
running() {
  kill -0 "$1" 2>/dev/null && [[ $(ps -o stat= -p "$1" 2>/dev/null) != Z* ]]
}
