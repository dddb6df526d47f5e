# shellcheck shell=bash
# 40-ssh: sshd for the dev user, key-only. Host keys are made at first start in SSH_HOST_KEY_DIR
# (mount a volume there and clients never see "host key changed"), never baked into the image.

ssh_on=0
# Root-only: sshd's StrictModes refuses key files under a world-writable directory like RUN_DIR.
readonly SSHD_DIR=/run/tf29-env-sshd

prepare_ssh() {
  ((cfg_ssh)) || return 0
  if [[ -z ${cfg_ssh_keys} ]]; then
    log "SSH is off: no SSH_AUTHORIZED_KEYS or SSH_AUTHORIZED_KEYS_FILE given (login is key-only)"
    return 0
  fi
  if ((!is_root)); then
    warn "SSH is off: sshd needs root and this container runs as uid $(id -u) (drop --user, or set ENABLE_SSH=0)"
    return 0
  fi
  install -d -m 755 /run/sshd "${SSHD_DIR}"
  # sshd records logins there and complains on every login when a base image lacks it.
  [[ -e /var/log/lastlog ]] || : >/var/log/lastlog
  printf '%s\n' "${cfg_ssh_keys}" >"${SSHD_DIR}/authorized_keys"
  chmod 644 "${SSHD_DIR}/authorized_keys"
  write_ssh_environment >"${SSHD_DIR}/environment.conf"
  chmod 600 "${SSHD_DIR}/environment.conf"

  install -d -m 755 "${cfg_host_key_dir}"
  local type
  sshd_args=(-D -e -f /opt/tf29-env/ssh/sshd_config -p "${SSH_PORT}" -o "AllowUsers=${NB_USER}")
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

# SSH sessions get the container's environment (PATH with the venv, CUDA/NVIDIA/TF variables,
# LD_LIBRARY_PATH, ...), minus per-login variables and the secrets of this image, on ONE SetEnv
# line (sshd uses only the first SetEnv it reads). Values SetEnv cannot carry (quotes,
# backslashes, newlines) are left out.
write_ssh_environment() {
  local name value line="SetEnv"
  while IFS='=' read -r -d '' name value; do
    case "${name}" in
      HOSTNAME | HOME | PWD | OLDPWD | SHLVL | _ | TERM | USER | LOGNAME | SHELL | MAIL) continue ;;
      JUPYTER_TOKEN | JUPYTER_PASSWORD_HASH | SSH_AUTHORIZED_KEYS) continue ;;
    esac
    [[ ${value} != *[\"\\$'\n']* ]] || continue
    line+=" \"${name}=${value}\""
  done < <(env -0)
  # /etc/profile resets PATH for login shells; /etc/profile.d/tf29-env.sh puts this one back.
  printf '%s "TFENV_CONTAINER_PATH=%s"\n' "${line}" "${PATH}"
}

start_ssh() {
  ((ssh_on)) || return 0
  /usr/sbin/sshd "${sshd_args[@]}" 2> >(drop_healthcheck_noise >&2) &
  children[$!]=sshd
  log "SSH: listening on port ${SSH_PORT} for ${NB_USER} (public keys only)"
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
