# shellcheck shell=bash
# Before the services: the run directory, the start hooks, the server's options, Jupyter's runtime folder and
# certificate, sshd's files. Hardened runtimes take away what later steps need: fail early naming the fix.

# Ours, then docker-stacks' two folders, so that hooks written for its images work where they were.
readonly HOOK_DIRS=(/etc/tf29-env/start.d /usr/local/bin/start-notebook.d /usr/local/bin/before-notebook.d)

# A tmpfs on /run takes root's 755 from the image, so without root only one on the run directory itself will do;
# 1777 because the dev user writes the self-check report there.
prepare_run_dir() {
  if ((run_dir_per_run)); then
    make_run_dir # this run's own, under TMPDIR or /tmp
    return 0
  fi
  # The planner has checked that it is a writable folder or can be made; mkdir can still fail (a quota, a race).
  local error
  if [[ ! -e ${RUN_DIR} ]]; then
    error=$(mkdir -m 1777 -- "${RUN_DIR}" 2>&1) ||
      die "TFENV_RUN_DIR=${RUN_DIR} does not exist and cannot be made (${error//$'\n'/ }): mount a tmpfs on ${RUN_DIR} itself (--tmpfs ${RUN_DIR}: it keeps the image's mode 1777)"
  fi
}

# A folder of that name that is the caller's own was left by an earlier process of the same pid: taken over.
make_run_dir() {
  local error
  if [[ -e ${RUN_DIR} || -L ${RUN_DIR} ]]; then
    [[ -d ${RUN_DIR} && ! -L ${RUN_DIR} && -O ${RUN_DIR} ]] ||
      die "${RUN_DIR} exists and is not a folder of uid ${EUID}: set TMPDIR to a folder of your own"
    find "${RUN_DIR}" -mindepth 1 -delete
    chmod 700 "${RUN_DIR}"
  else
    error=$(mkdir -m 700 -- "${RUN_DIR}" 2>&1) ||
      die "${IMAGE_RUN_DIR} is not writable here, and the run directory ${RUN_DIR} cannot be made (${error//$'\n'/ }): set TMPDIR to a writable folder, or mount a tmpfs on /tmp"
  fi
  trap 'rm -rf -- "${RUN_DIR}"' EXIT
  log "runtime files in ${RUN_DIR} (${IMAGE_RUN_DIR} is not writable here), removed when the server stops"
}

# *.sh is sourced in a subshell, so a bad hook never kills the start; a failing hook is only logged.
run_start_hooks() {
  local dir hook status
  for dir in "${HOOK_DIRS[@]}"; do
    for hook in "${dir}"/*; do # each folder read when its turn comes: an earlier hook may add to it
      [[ -e ${hook} ]] || continue # an empty or missing folder's pattern
      if [[ ${hook} == *.sh ]]; then
        log "start hook: sourcing ${hook}"
        source_hook "${hook}"
        status=${hook_status}
      elif [[ -x ${hook} ]]; then
        log "start hook: running ${hook}"
        status=0
        "${hook}" || status=$?
      else
        log "start hook: ignoring ${hook} (neither *.sh nor executable)"
        continue
      fi
      ((status == 0)) || warn "start hook ${hook} failed (exit ${status}); continuing"
    done
  done
}

# source_hook FILE, its exit status in hook_status. Bash ignores set -e in a subshell run under ||, && or if,
# so it runs as a plain command with errexit off.
source_hook() {
  local exports changes names
  exports=$(mktemp)
  set +e
  (
    set -e +u +o pipefail
    # The path is expanded now: the hook may reassign any variable the trap could name.
    # shellcheck disable=SC2064
    trap "/usr/bin/env -0 >$(printf '%q' "${exports}")" EXIT
    # shellcheck source=/dev/null
    source "$1"
  )
  hook_status=$?
  set -e
  if ((hook_status == 0)); then
    if [[ -s ${exports} ]]; then
      # What it exported, changed or unset applies from here on (tf29image.startup.environ).
      mapfile -t names < <(compgen -v)
      changes=$(/usr/bin/env -0 | /usr/bin/python3 -I -m tf29image.startup.environ after-hook "$1" "${exports}" "${names[@]}") ||
        die "the environment start hook $1 left could not be read"
      eval "${changes}"
    else
      warn "start hook $1 left no environment behind (an EXIT trap of its own, or exec?): nothing it exported applies"
    fi
  fi
  rm -f "${exports}"
}

# docker-stacks' JUPYTER_ENV_VARS_TO_UNSET, after the hooks, which may still use them; it goes too, as there.
apply_server_options() {
  local name gone=()
  for name in "${cfg_unset_names[@]}"; do
    # Only what is in the environment: the entrypoint's own (unexported) variables are not the user's.
    if [[ -n $(compgen -e -X "!${name}") ]]; then
      unset -v "${name}"
      gone+=("${name}")
    fi
  done
  unset -v JUPYTER_ENV_VARS_TO_UNSET
  ((${#gone[@]} == 0)) || log "JUPYTER_ENV_VARS_TO_UNSET: ${gone[*]} taken out of the environment of everything started from here on"
}

# Mode 700: it holds the token and kernel keys, and Jupyter makes -open.html readable by all. It outlives
# restarts in the world-writable run directory, so a link left there goes first: chown would follow it.
prepare_runtime_dir() {
  local dir=${JUPYTER_RUNTIME_DIR}
  if ((is_root)) && [[ -L ${dir} ]]; then rm -f -- "${dir}"; fi
  mkdir -p -- "${dir}"
  ((!is_root)) || chown -h "${cfg_ids}" "${dir}"
  chmod 700 "${dir}"
}

# GEN_CERT's certificate, made as the dev user so the key is never root's.
make_certificate() {
  local error host cert=${cfg_cert_file} key=${cfg_key_file}
  host=$(hostname)
  # ECDSA P-256: quick enough to make at every start.
  error=$("${as_user[@]}" openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -days 365 -subj /CN=tf29-env -addext "subjectAltName=DNS:${host},DNS:localhost,IP:127.0.0.1,IP:::1" \
    -keyout "${key}" -out "${cert}" 2>&1) ||
    die "GEN_CERT: the certificate could not be made: ${error//$'\n'/ }"
  chmod 600 "${key}"
  log "GEN_CERT: JupyterLab speaks HTTPS with a self-signed certificate made now (${cert}); the token or password is still required"
}

# JUPYTER_CERT_FILE and JUPYTER_KEY_FILE (checked by the planner) where the dev user's Jupyter reads them: a
# secret may be root's. install unlinks what is there first, so a link left in the folder is never followed.
copy_certificate() {
  local error owner=()
  if ((is_root)); then owner=(-o "${cfg_ids%%:*}" -g "${cfg_ids##*:}"); fi
  error=$({ install -m 644 "${owner[@]}" -- "${cfg_cert_source}" "${cfg_cert_file}" &&
    install -m 600 "${owner[@]}" -- "${cfg_key_source}" "${cfg_key_file}"; } 2>&1) ||
    die "JUPYTER_CERT_FILE: the certificate and key could not be copied for Jupyter: ${error//$'\n'/ }"
  log "JUPYTER_CERT_FILE: JupyterLab speaks HTTPS with the certificate in ${cfg_cert_source}; the token or password is still required"
}

# Whether a folder can be made there is known only by trying: fail now, not with ssh-keygen's message later.
check_host_key_dir() {
  local dir=${cfg_host_key_dir} error key
  error=$(mkdir -p -- "${dir}" 2>&1) || die "SSH_HOST_KEY_DIR=${dir}: no folder for host keys can be made there (${error//$'\n'/ })"
  [[ ! -w ${dir} ]] || return 0
  for key in "${cfg_host_keys[@]}"; do
    [[ -s ${key} ]] && return 0 # keys kept on a read-only mount: nothing to write
  done
  die "SSH_HOST_KEY_DIR=${dir}: holds no host keys and none can be written there (read-only?)"
}

# Key-only sshd; host keys are made at first start in SSH_HOST_KEY_DIR, never baked into the image.
# cfg_sshd_dir is root's: StrictModes refuses key files under a world-writable directory like RUN_DIR.
prepare_ssh() {
  install -d -m 755 /run/sshd "${cfg_sshd_dir}"
  # sshd records logins there and complains on every login when a base image lacks it.
  [[ -e /var/log/lastlog ]] || : >/var/log/lastlog
  printf '%s\n' "${cfg_ssh_keys}" >"${cfg_sshd_keys_file}" # as the planner checked them
  chmod 644 "${cfg_sshd_keys_file}"
  # The environment after the hooks, on sshd's one SetEnv line (tf29image.startup.environ).
  /usr/bin/env -0 | /usr/bin/python3 -I -m tf29image.startup.environ ssh-setenv >"${cfg_sshd_env_file}"
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
