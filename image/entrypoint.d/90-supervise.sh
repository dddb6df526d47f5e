# shellcheck shell=bash
# 90-supervise: a service that dies takes the container down non-zero, so a restart policy restarts it.
# A stop interrupts the runs first (jobs, busy kernels), so their last checkpoint stands (docs/jobs.md).

declare -A children=()
stopping=0

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

# All but the last 2 s of the grace go to the runs; the services then have what is left.
interrupt_runs() {
  local pid server=0
  for pid in "${!children[@]}"; do [[ ${children[${pid}]} != jupyter ]] || server=${pid}; done
  "${as_user[@]}" /opt/tf29-env/bin/job _interrupt-all --wait "$(( cfg_stop_grace > 3 ? cfg_stop_grace - 2 : 1 ))" \
    --server-pid "${server}" || warn "the jobs and kernels could not all be interrupted"
}

stop_children() {
  local deadline=$((SECONDS + cfg_stop_grace)) pid
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

supervise() {
  trap 'stopping=1' TERM INT HUP # wait -n returns at once; stop_if_asked does the rest
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
  log "no service left running; exiting"
  exit 1
}

stop_if_asked() {
  ((stopping)) || return 0
  log "stopping (signal received)"
  stop_children
  exit 0
}

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
