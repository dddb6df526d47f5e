# shellcheck shell=bash
# 30-hooks: ours, then docker-stacks' two folders, so that hooks written for its images work where they were.
# *.sh is sourced in a subshell, so a bad hook never kills the start; a failing hook is only logged.
readonly HOOK_DIRS=(/etc/tf29-env/start.d /usr/local/bin/start-notebook.d /usr/local/bin/before-notebook.d)

run_start_hooks() {
  local dir hook status
  for dir in "${HOOK_DIRS[@]}"; do
    for hook in "${dir}"/*; do # each folder read when its turn comes: an earlier hook may add to it
      [[ -e ${hook} ]] || continue # an empty or missing folder's pattern
      if [[ ${hook} == *.sh ]]; then
        log "start hook: sourcing ${hook}"
        source_hook "${hook}"
        status=${hook_status}
      elif [[ -x ${hook} ]]; then
        log "start hook: running ${hook}"
        status=0
        "${hook}" || status=$?
      else
        log "start hook: ignoring ${hook} (neither *.sh nor executable)"
        continue
      fi
      ((status == 0)) || warn "start hook ${hook} failed (exit ${status}); continuing"
    done
  done
}

# Bash ignores set -e in a subshell run under ||, && or if, so it runs as a plain command with errexit off.
source_hook() {
  local exports changes names
  exports=$(mktemp)
  set +e
  (
    set -e +u +o pipefail
    # The path is expanded now: the hook may reassign any variable the trap could name.
    # shellcheck disable=SC2064
    trap "/usr/bin/env -0 >$(printf '%q' "${exports}")" EXIT
    # shellcheck source=/dev/null
    source "$1"
  )
  hook_status=$?
  set -e
  if ((hook_status == 0)); then
    if [[ -s ${exports} ]]; then
      # What it exported, changed or unset applies from here on (startup/environ.py).
      mapfile -t names < <(compgen -v)
      changes=$(/usr/bin/env -0 | /usr/bin/python3 -I "${ENVIRON_PY}" after-hook "$1" "${exports}" "${names[@]}") ||
        die "the environment start hook $1 left could not be read"
      eval "${changes}"
    else
      warn "start hook $1 left no environment behind (an EXIT trap of its own, or exec?): nothing it exported applies"
    fi
  fi
  rm -f "${exports}"
}
