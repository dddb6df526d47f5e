# shellcheck shell=bash
# 30-hooks: start hooks, as in docker-stacks. In name order, each file of the directory is:
#   *.sh          sourced (it can export variables for what follows),
#   executable    run,
#   anything else ignored, with a log line.
# A failing hook is logged and start-up goes on. Hooks run as root when the container does.

run_hooks() {
  local dir=$1 hook status
  [[ -d ${dir} ]] || return 0
  for hook in "${dir}"/*; do
    [[ -e ${hook} ]] || continue
    if [[ ${hook} == *.sh ]]; then
      log "start hook: sourcing ${hook}"
      status=0
      # shellcheck source=/dev/null
      source "${hook}" || status=$?
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
}
