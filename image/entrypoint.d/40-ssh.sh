# shellcheck shell=bash
# 40-ssh: key-only sshd; host keys are made at first start in SSH_HOST_KEY_DIR, never baked into the image.

ssh_on=0
# cfg_sshd_dir is root's: StrictModes refuses key files under a world-writable directory like RUN_DIR.

prepare_ssh() {
  ((cfg_ssh && !apptainer_mode)) || return 0 # 13-apptainer: no sshd in that mode
  if [[ -z ${cfg_ssh_keys} ]]; then
    log "SSH is off: no SSH_AUTHORIZED_KEYS or SSH_AUTHORIZED_KEYS_FILE given (login is key-only)"
    return 0
  fi
  if ((!is_root)); then
    warn "SSH is off: sshd needs root and this container runs as uid $(id -u) (drop --user, or set ENABLE_SSH=0)"
    return 0
  fi
  install -d -m 755 /run/sshd "${cfg_sshd_dir}"
  # sshd records logins there and complains on every login when a base image lacks it.
  [[ -e /var/log/lastlog ]] || : >/var/log/lastlog
  printf '%s\n' "${cfg_ssh_keys}" >"${cfg_sshd_dir}/authorized_keys" # as the planner checked them
  chmod 644 "${cfg_sshd_dir}/authorized_keys"
  write_ssh_environment >"${cfg_sshd_dir}/environment.conf"
  chmod 600 "${cfg_sshd_dir}/environment.conf"

  install -d -m 755 "${cfg_host_key_dir}"
  local type
  sshd_args=(-D -e -f /opt/tf29-env/ssh/sshd_config -p "${SSH_PORT}" -o "AllowUsers=${NB_USER}"
    -o "AddressFamily=${cfg_sshd_family}")
  for type in ed25519 rsa; do
    if [[ ! -s ${cfg_host_key_dir}/ssh_host_${type}_key ]]; then
      ssh-keygen -q -t "${type}" -N '' -C "tf29-env host key" -f "${cfg_host_key_dir}/ssh_host_${type}_key"
      log "SSH: made a new ${type} host key in ${cfg_host_key_dir}"
    fi
    chmod 600 "${cfg_host_key_dir}/ssh_host_${type}_key"
    sshd_args+=(-h "${cfg_host_key_dir}/ssh_host_${type}_key")
  done
  local problem
  problem=$(/usr/sbin/sshd -t "${sshd_args[@]}" 2>&1) || die "sshd refuses its configuration: ${problem}"
  ssh_on=1
}

# sshd uses only the first SetEnv it reads, so one line; values SetEnv cannot carry are left out.
write_ssh_environment() {
  local name value line="SetEnv"
  while IFS='=' read -r -d '' name value; do
    case "${name}" in
      HOSTNAME | HOME | PWD | OLDPWD | SHLVL | _ | TERM | USER | LOGNAME | SHELL | MAIL) continue ;;
      JUPYTER_TOKEN | JUPYTER_PASSWORD_HASH | SSH_AUTHORIZED_KEYS) continue ;;
    esac
    [[ ! ${name} =~ ${HUB_SECRET_PATTERN} ]] || continue # 12-hub has withheld them; whatever the mode
    [[ ${value} != *[\"\\$'\n']* ]] || continue
    line+=" \"${name}=${value}\""
  done < <(env -0)
  # PATH among them: sshd's SetEnv wins over its default, and the login shell keeps it (shell/profile.sh).
  printf '%s\n' "${line}"
}
