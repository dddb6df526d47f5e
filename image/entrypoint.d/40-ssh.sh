# shellcheck shell=bash
# 40-ssh: key-only sshd; host keys are made at first start in SSH_HOST_KEY_DIR, never baked into the image.
# cfg_sshd_dir is root's: StrictModes refuses key files under a world-writable directory like RUN_DIR.

prepare_ssh() {
  ((ssh_starts)) || return 0 # the planner has said why not
  install -d -m 755 /run/sshd "${cfg_sshd_dir}"
  # sshd records logins there and complains on every login when a base image lacks it.
  [[ -e /var/log/lastlog ]] || : >/var/log/lastlog
  printf '%s\n' "${cfg_ssh_keys}" >"${cfg_sshd_keys_file}" # as the planner checked them
  chmod 644 "${cfg_sshd_keys_file}"
  # The environment after the hooks, on sshd's one SetEnv line (startup/environ.py).
  /usr/bin/env -0 | /usr/bin/python3 -I "${ENVIRON_PY}" ssh-setenv >"${cfg_sshd_env_file}"
  chmod 600 "${cfg_sshd_env_file}"

  install -d -m 755 "${cfg_host_key_dir}"
  local key type problem
  for key in "${cfg_host_keys[@]}"; do # DIR/ssh_host_TYPE_key
    type=${key%_key} && type=${type##*_}
    if [[ ! -s ${key} ]]; then
      ssh-keygen -q -t "${type}" -N '' -C "tf29-env host key" -f "${key}"
      log "SSH: made a new ${type} host key in ${cfg_host_key_dir}"
    fi
    chmod 600 "${key}"
  done
  problem=$(/usr/sbin/sshd -t "${cfg_sshd_args[@]}" 2>&1) || die "sshd refuses its configuration: ${problem}"
}
