# shellcheck shell=bash
# 40-ssh: key-only sshd; host keys are made at first start in SSH_HOST_KEY_DIR, never baked into the image.

ssh_on=0
ssh_key_count=0
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
  # What sshd reads: the keys as given, without the CRs a Windows editor leaves; checked as such.
  printf '%s\n' "${cfg_ssh_keys//$'\r'/}" >"${cfg_sshd_dir}/authorized_keys"
  chmod 644 "${cfg_sshd_dir}/authorized_keys"
  check_authorized_keys "${cfg_sshd_dir}/authorized_keys"
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

# One ssh-keygen run over the whole file, as one per line is far too slow; from stdin, because given a file
# whose first line says PRIVATE KEY it would read a private key and pass it.
check_authorized_keys() {
  local source=SSH_AUTHORIZED_KEYS report status=0
  [[ -z ${SSH_AUTHORIZED_KEYS_FILE:-} ]] || source=SSH_AUTHORIZED_KEYS_FILE
  report=$(ssh-keygen -v -l -f - <"$1" 2>&1 >/dev/null) || status=$?
  if [[ ${report} =~ \(stdin\):([0-9]+):\ not\ a\ public\ key ]]; then
    die "${source}: line ${BASH_REMATCH[1]} is not an SSH public key (expected e.g. 'ssh-ed25519 AAAA... you@host')"
  fi
  if ((status != 0)); then
    [[ ${report} == *"is not a public key file"* ]] ||
      die "${source}: ssh-keygen could not check the keys: ${report//$'\n'/ }"
    die "${source}: no SSH public key in it, only comments and blank lines"
  fi
  ssh_key_count=$(grep -c -v -E '^[[:space:]]*(#|$)' "$1")
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
