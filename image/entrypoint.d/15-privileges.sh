# shellcheck shell=bash
# 15-privileges: hardened runtimes take away what later steps need; fail now naming the fix, not halfway through.

# A tmpfs on /run takes root's 755 from the image, so without root only one on the run directory itself will do;
# 1777 because the dev user writes the self-check report there.
check_run_dir() {
  [[ ${cfg_mode} != command ]] || return 0 # the planner checked root's needs; this one is known by trying
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
