# shellcheck shell=bash
# 45-command: notes are printed only now, so a bad setting is the only line a failed start prints.

report_notes() {
  say "${cfg_notes[@]}" "${user_state_report[@]}"
}

# Not for the hooks, which ran before, nor SSH sessions: sshd sets its own (022) for each login.
apply_umask() {
  [[ -z ${cfg_umask} ]] || umask "${cfg_umask}"
}

exec_command() {
  exec "${as_user[@]}" "$@"
}
