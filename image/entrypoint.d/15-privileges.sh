# shellcheck shell=bash
# 15-privileges: hardened runtimes (Kubernetes' restricted pod security, --cap-drop ALL,
# --read-only) take away what later steps need. What each step needs is checked here, before
# anything starts, and what is missing stops the start with one line naming the capability or the
# path and the fix (exit 2), instead of a raw error halfway through ("usermod: cannot lock
# /etc/passwd", exit 1) or a container that never turns healthy. README's "Security" lists the modes.

# check_run_dir: the run directory is a writable folder; only in service mode, as the command mode
# never writes it. With `--tmpfs /run` it is empty, so it is made here, mode 1777 like the image's
# own (the dev user writes the self-check report there). A tmpfs on /run takes the mode of the
# image's /run (root's, 755), so without root only a tmpfs on the run directory itself will do.
check_run_dir() {
  if ((run_dir_per_run)); then
    make_run_dir # this run's own, under TMPDIR or /tmp
    return 0
  fi
  if [[ ! -e ${RUN_DIR} ]]; then
    local parent=${RUN_DIR%/*}
    mkdir -m 1777 "${RUN_DIR}" 2>/dev/null ||
      die "TFENV_RUN_DIR=${RUN_DIR} does not exist and cannot be made: ${parent:-/} is not writable$(why_not_writable "${parent:-/}"); mount a tmpfs on ${RUN_DIR} itself (--tmpfs ${RUN_DIR}: it keeps the image's mode 1777)"
  fi
  [[ -d ${RUN_DIR} && -w ${RUN_DIR} ]] ||
    die "TFENV_RUN_DIR=${RUN_DIR} is not a writable folder$(why_not_writable "${RUN_DIR}"): mount a tmpfs on it (--tmpfs ${RUN_DIR})"
}

# check_privileges: what the start needs beyond what the planner checked (as root: the files it
# rewrites and the capabilities, startup/plan.py: check_privileges): the run directory, in the
# services and hub mode, which can only be known by making it.
check_privileges() {
  [[ ${cfg_mode} == command ]] || check_run_dir
}

# make_run_dir: this run's own run directory (the plan named it), mode 700; a folder of the name
# that is the caller's own is left from an earlier process of the same pid and taken over.
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
