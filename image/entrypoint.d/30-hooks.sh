# shellcheck shell=bash
# 30-hooks: start hooks, as in docker-stacks but safer. Three folders, in this order: ours, then
# docker-stacks' two, so that hooks written for its images work when mounted or copied where they
# were. docker-stacks runs start-notebook.d before it fits the user (as the container's user) and
# before-notebook.d after (as root when it starts as root); here all three run after the user is
# fitted, as the container's user (root when it runs as root), before any service or command
# starts. In name order, each file of a folder is:
#   *.sh          sourced, in a subshell with `set -e` and without `set -u`: a command that fails
#                 ends the hook as failed, an unset variable reads as empty (never kills the
#                 container), and `exit N` ends only the hook (0: success). What a hook that
#                 succeeded exported (or unset) is then copied into the entrypoint's environment,
#                 for later hooks, JupyterLab and SSH sessions; a failed hook changes nothing.
#   executable    run,
#   anything else ignored, with a log line.
# A failing hook is logged and start-up goes on. A missing folder is no error.
readonly HOOK_DIRS=(/etc/tf29-env/start.d /usr/local/bin/start-notebook.d /usr/local/bin/before-notebook.d)

run_start_hooks() {
  local dir
  for dir in "${HOOK_DIRS[@]}"; do run_hooks "${dir}"; done
}

run_hooks() {
  local dir=$1 hook status
  [[ -d ${dir} ]] || return 0
  for hook in "${dir}"/*; do
    [[ -e ${hook} ]] || continue
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
}

# source_hook HOOK: source it in a subshell; hook_status=its exit status. Bash ignores `set -e` in
# a subshell run as part of `||`, `&&` or `if`, even where the subshell sets it again; so the
# subshell is a plain command, with the entrypoint's own errexit switched off around it. Its
# environment as it ends (exit or error included) goes to a file, through an EXIT trap.
source_hook() {
  local exports
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
      apply_exports "$1" "${exports}"
    else
      warn "start hook $1 left no environment behind (an EXIT trap of its own, or exec?): nothing it exported applies"
    fi
  fi
  rm -f "${exports}"
}

# apply_exports HOOK FILE: make the entrypoint's exported variables what the hook left (FILE: its
# `env -0`): new or changed ones exported, removed ones unset. A name the entrypoint uses as a
# variable of its own, unexported (cfg_*, the readonly names of 00-common, ...), is not the hook's
# to set: skipped with a warning.
apply_exports() {
  local hook=$1 file=$2 entry name value
  local -A exported=() left=()
  for name in $(compgen -e); do exported[${name}]=1; done
  while IFS= read -r -d '' entry; do
    name=${entry%%=*}
    value=${entry#*=}
    # Not variables (exported functions: BASH_FUNC_f%%), or what each process has of its own.
    [[ ${name} =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || continue
    case ${name} in _ | PWD | OLDPWD | SHLVL) continue ;; esac
    left[${name}]=1
    if [[ -n ${exported[${name}]+set} ]]; then
      [[ ${!name-} == "${value}" ]] || export "${name}=${value}"
    elif [[ -v ${name} ]]; then
      warn "start hook ${hook} exported ${name}, a variable of the entrypoint's own: ignored"
    else
      export "${name}=${value}"
    fi
  done <"${file}"
  for name in "${!exported[@]}"; do
    case ${name} in _ | PWD | OLDPWD | SHLVL) continue ;; esac
    if [[ -z ${left[${name}]+set} && -v ${name} ]]; then unset -v "${name}"; fi
  done
}
