# shellcheck shell=bash
# 45-command: every setting has passed. The notes on the user's own state (26 gathered them) are
# printed now, so a bad setting is the only line a failed start prints; then NB_UMASK, and in the
# command mode the command itself.

# report_user_state: what prepare_user_state found, once every setting has passed its check (a bad
# one is the only line a failed start prints).
report_user_state() {
  local line
  for line in "${user_state_report[@]}"; do
    case ${line} in
      "WARNING: "*) warn "${line#WARNING: }" ;;
      *) log "${line}" ;;
    esac
  done
}

# apply_umask: NB_UMASK for what starts from here on as the dev user: JupyterLab, its kernels and
# terminals, or the command (docker-stacks: the server only). The start hooks, which ran before,
# keep the default, and so do SSH sessions: sshd sets its own (022) for each login.
apply_umask() {
  [[ -n ${cfg_umask} ]] || return 0
  umask "${cfg_umask}"
  log "umask ${cfg_umask} (NB_UMASK) for JupyterLab and the command (not SSH sessions)"
}

# A command given to `docker run IMAGE CMD...` runs as the dev user, in the same environment.
exec_command() {
  exec "${as_user[@]}" "$@"
}
