# shellcheck shell=bash
# 45-command: notes are printed only now, so a bad setting is the only line a failed start prints.

report_user_state() {
  local line
  for line in "${user_state_report[@]}"; do
    case ${line} in
      "WARNING: "*) warn "${line#WARNING: }" ;;
      *) log "${line}" ;;
    esac
  done
}

# Not for the hooks, which ran before, nor SSH sessions: sshd sets its own (022) for each login.
apply_umask() {
  [[ -n ${cfg_umask} ]] || return 0
  umask "${cfg_umask}"
  log "umask ${cfg_umask} (NB_UMASK) for JupyterLab and the command (not SSH sessions)"
}

exec_command() {
  exec "${as_user[@]}" "$@"
}
