# shellcheck shell=bash
# 48-services: the services file the healthcheck reads, then sshd (prepared and checked by 40-ssh).

# A restart leaves the last start's jpserver files, whose pid a new process may have: they go first.
write_services() {
  local services=""
  ((cfg_jupyter)) && services+="jupyter ${JUPYTER_RUNTIME_DIR}"$'\n'
  ((ssh_starts)) && services+="ssh ${SSH_PORT}"$'\n'
  rm -f "${JUPYTER_RUNTIME_DIR}"/jpserver-* 2>/dev/null || true
  printf '%s' "${services}" >"${SERVICES_FILE}"
}

# The healthcheck's connections log two lines each (sshd -e ends lines with CR LF); all else is kept.
readonly HEALTHCHECK_NOISE='/^kex_exchange_identification: Connection closed by remote host$/d; /^Connection closed by 127\.0\.0\.1 port [0-9]/d'

start_ssh() {
  ((ssh_starts)) || return 0
  /usr/sbin/sshd "${cfg_sshd_args[@]}" 2> >(sed -u -e 's/\r$//' -e "${HEALTHCHECK_NOISE}" >&2) &
  children[$!]=sshd
  log "SSH: listening on port ${SSH_PORT} for ${NB_USER} (${cfg_ssh_key_count} public keys; no passwords)"
}
