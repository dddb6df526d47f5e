# shellcheck shell=bash
# 22-sudo: GRANT_SUDO, docker-stacks' passwordless sudo for NB_USER; root only, and only when asked,
# so a start without it takes an earlier grant back.

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
  mv -f -- "${SUDO_GRANT_FILE}.partial" "${SUDO_GRANT_FILE}" # the planner's warning says what this grants
}
