# shellcheck shell=bash
# 24-chown: CHOWN_HOME and CHOWN_EXTRA, the only way bind mounts get chowned (startup/plan.py checked them).

chown_requested() {
  ((is_root)) || return 0
  local path
  if ((cfg_chown_home)); then
    chown_or_die CHOWN_HOME "${NB_HOME}" "${cfg_chown_home_opts[@]}"
  fi
  for path in "${cfg_chown_extra[@]}"; do
    chown_or_die CHOWN_EXTRA "${path}" "${cfg_chown_extra_opts[@]}"
  done
}

chown_or_die() {
  local setting=$1 path=$2 output
  shift 2
  output=$(chown "$@" -- "${cfg_ids}" "${path}" 2>&1) ||
    die "${setting}: chown ${*:+$* }${cfg_ids} ${path} failed: ${output//$'\n'/ }"
  [[ -z ${output} ]] || printf '%s\n' "${output}" >&2
  log "${setting}: ${path} is now uid ${cfg_ids%:*}, gid ${cfg_ids#*:}${*:+ (chown $*)}"
}
