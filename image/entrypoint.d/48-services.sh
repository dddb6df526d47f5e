# shellcheck shell=bash
# 48-services: the services file the healthcheck reads, then sshd (prepared and checked by 40-ssh).

# SERVICES_FILE, rewritten at every start once SSH's fate is known and before anything starts. A
# restarted container still holds the last start's Jupyter runtime files, whose pid a new process
# may well have now: they go first, so that the healthcheck only finds the new server's.
write_services() {
  local services=""
  ((cfg_jupyter)) && services+="jupyter ${JUPYTER_RUNTIME_DIR}"$'\n'
  ((ssh_on)) && services+="ssh ${SSH_PORT}"$'\n'
  rm -f "${JUPYTER_RUNTIME_DIR}"/jpserver-* 2>/dev/null || true
  printf '%s' "${services}" >"${SERVICES_FILE}"
}

start_ssh() {
  ((ssh_on)) || return 0
  /usr/sbin/sshd "${sshd_args[@]}" 2> >(drop_healthcheck_noise >&2) &
  children[$!]=sshd
  log "SSH: listening on port ${SSH_PORT} for ${NB_USER} (${ssh_key_count} public keys; no passwords)"
}

# The healthcheck opens a connection every few seconds and closes it after the greeting; sshd
# logs two lines for each. Keep everything else, failed logins from loopback included.
drop_healthcheck_noise() {
  local line
  while IFS= read -r line; do
    line=${line%$'\r'}
    case "${line}" in
      "kex_exchange_identification: Connection closed by remote host" | "Connection closed by 127.0.0.1 port "[0-9]*) ;;
      *) printf '%s\n' "${line}" ;;
    esac
  done
}
