# shellcheck shell=bash
# 24-chown: CHOWN_HOME and CHOWN_EXTRA, docker-stacks' explicit requests to hand folders to the dev
# user (NB_UID:NB_GID), bind mounts included, which the image otherwise never chowns (25-mounts only
# hands over the empty folders Docker makes). startup/plan.py has checked the options (-R and the like,
# nothing that follows links out of a folder) and the paths (none of the system's). Root only.

chown_requested() {
  ((is_root)) || return 0
  local ids=$((10#${NB_UID})):$((10#${NB_GID})) path
  if ((cfg_chown_home)); then
    chown_or_die CHOWN_HOME "${NB_HOME}" "${ids}" "${cfg_chown_home_opts[@]}"
  fi
  for path in "${cfg_chown_extra[@]}"; do
    chown_or_die CHOWN_EXTRA "${path}" "${ids}" "${cfg_chown_extra_opts[@]}"
  done
}

# chown_or_die SETTING PATH UID:GID OPTION...: one log line when done (with what chown -v/-c said),
# one error line when chown fails (a read-only mount, a path that went away).
chown_or_die() {
  local setting=$1 path=$2 ids=$3 output
  shift 3
  output=$(chown "$@" -- "${ids}" "${path}" 2>&1) ||
    die "${setting}: chown ${*:+$* }${ids} ${path} failed: ${output//$'\n'/ }"
  [[ -z ${output} ]] || printf '%s\n' "${output}" >&2
  log "${setting}: ${path} is now uid ${ids%:*}, gid ${ids#*:}${*:+ (chown $*)}"
}
