# shellcheck shell=bash
# 22-sudo: GRANT_SUDO, docker-stacks' way to let the dev user `sudo apt-get install` in a running
# environment: passwordless sudo for NB_USER, so everything run in JupyterLab and SSH sessions may
# become root. Only when the container starts as root (startup/plan.py warns otherwise) and only when
# asked, with one WARNING line at every start; a start without it takes an earlier grant back.
# sudo is setuid: under --security-opt no-new-privileges it cannot become root, whatever is granted.

readonly SUDO_GRANT_FILE=/etc/sudoers.d/tf29-env-grant-sudo

grant_sudo() {
  ((is_root)) || return 0
  if ((!cfg_grant_sudo || cfg_triplet)); then
    rm -f -- "${SUDO_GRANT_FILE}"
    return 0
  fi
  # Written beside the target and renamed over it: sudo never reads a half-written rule.
  printf '%s ALL=(ALL:ALL) NOPASSWD: ALL\n' "${NB_USER}" >"${SUDO_GRANT_FILE}.partial"
  chmod 440 "${SUDO_GRANT_FILE}.partial"
  mv -f -- "${SUDO_GRANT_FILE}.partial" "${SUDO_GRANT_FILE}"
  warn "GRANT_SUDO=${GRANT_SUDO}: ${NB_USER} may run anything as root with sudo, without a password, and so may everything run in JupyterLab and SSH sessions: only for users you would give the container's root"
}
