# shellcheck shell=bash
# 90-supervise: a service that dies takes the container down non-zero, so a restart policy restarts it.

declare -A children=()
stopping=0
readonly STOP_GRACE_SECONDS=8

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

stop_children() {
  signal_children TERM
  local deadline=$((SECONDS + STOP_GRACE_SECONDS)) pid
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
  trap 'stopping=1; signal_children TERM' TERM INT HUP
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
