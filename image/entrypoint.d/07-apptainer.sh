# shellcheck shell=bash
# 07-apptainer: the Apptainer mode (formerly Singularity; 00-common detects it from
# APPTAINER_CONTAINER or SINGULARITY_CONTAINER). Apptainer runs the image as the calling user, on
# a read-only image, with the host's $HOME and the host's network, typically as a Slurm job on a
# shared compute node (docs/hpc.md). So, in this mode:
#   - no root steps and no sshd (it needs root): JupyterLab is reached through the login node with
#     `ssh -L`, and the start prints that line, with the node, the port and the URL to open;
#   - the run directory is this run's own under TMPDIR or /tmp (00-common, made here), removed at
#     the end; nothing is written under the image;
#   - the home folder is the host's $HOME (it must be writable: JupyterLab keeps settings, kernels'
#     files and the user's notebooks there), the quickstart notebooks are copied into it once;
#   - JUPYTER_PORT if one is asked for, else 8888 or the first free port after it: other users'
#     servers on the node share its ports (startup/apptainer.py);
#   - PYTHONNOUSERSITE=1, and a PYTHONPATH from the host (module systems and shell profiles set
#     one) is not passed on: packages installed on the host (~/.local is the host's home) cannot
#     shadow the image's pinned ones. ENABLE_USER_SITE=1 keeps both as they are.
# Slurm's end of a job (SIGTERM) stops JupyterLab as `docker stop` does (90-supervise), exit 0.

readonly APPTAINER_PY=/opt/tf29-env/startup/apptainer.py
# The image's quickstart notebooks, and where a host home gets its copy.
readonly QUICKSTART_SOURCE=/home/${TFENV_IMAGE_USER:-jovyan}/quickstart
readonly QUICKSTART_COPY_NAME=tf29-env-quickstart

cfg_port_retries=0 cfg_user_site=0 cfg_dropped_pythonpath=0 cfg_report_port=0

# load_apptainer_config: after load_config (10): every check of this mode, before anything is
# written or said, so that bad input is one line (exit 2).
load_apptainer_config() {
  ((apptainer_mode)) || return 0
  # As root (--fakeroot) the planner has refused already.
  cfg_user_site=0
  parse_switch cfg_user_site ENABLE_USER_SITE 0
  if ((!cfg_user_site)); then
    export PYTHONNOUSERSITE=1
    [[ -z ${PYTHONPATH:-} ]] || cfg_dropped_pythonpath=1
    unset -v PYTHONPATH
  fi
  [[ ${HOME:-} == /?* && -d ${HOME} ]] ||
    die "HOME='${HOME:-}' is not a folder: Apptainer mounts your home there; run without --no-home, or give one with --home DIR"
  [[ ${cfg_mode} != command ]] || return 0
  [[ -w ${HOME} ]] ||
    die "HOME=${HOME} is not writable$(why_not_writable "${HOME}"): JupyterLab keeps your notebooks, its settings and the kernels' files there; give Apptainer a writable home (--home DIR)"
  [[ -z ${LOGIN_HOST:-} || (${#LOGIN_HOST} -le 253 && ${LOGIN_HOST} =~ ^[A-Za-z0-9][A-Za-z0-9._-]*$) ]] ||
    die "LOGIN_HOST is not a host name (letters, digits, dots and dashes, e.g. login.cluster.example.org)"
  [[ ${cfg_mode} == services ]] && ((cfg_jupyter)) || ((cfg_report_port)) || return 0
  local plan status=0
  plan=$(/usr/bin/python3 -I "${APPTAINER_PY}" port 2>&1) || status=$?
  ((status == 0)) || die "${plan//$'\n'/ }"
  read -r cfg_jupyter_port cfg_port_retries <<<"${plan}"
  ((cfg_report_port)) || return 0
  # The hub mode under batchspawner (docs/hpc.md): the hub gave port 0 and waits to be told the
  # port; jupyterhub-singleuser binds the one in JUPYTERHUB_SERVICE_URL, so that one is it (no retries).
  cfg_port_retries=0
  local url=${JUPYTERHUB_SERVICE_URL} answer
  [[ ${url} =~ ^(https?://[^/]*):0+(/.*)?$ ]] && url=${BASH_REMATCH[1]}:${cfg_jupyter_port}${BASH_REMATCH[2]}
  export JUPYTERHUB_SERVICE_URL=${url}
  # The token in the helper's environment only (never its argv, which ps shows).
  answer=$(JUPYTERHUB_API_TOKEN=${hub_secrets[JUPYTERHUB_API_TOKEN]:-${hub_secrets[JPY_API_TOKEN]:-}} \
    /usr/bin/python3 -I "${APPTAINER_PY}" report-port "${cfg_jupyter_port}" 2>&1) || die "${answer//$'\n'/ }"
}

# fit_user_apptainer: 20-user's fit_user in this mode. The user is the caller, with the passwd
# entry Apptainer gives the container (or, where there is none, libnss-wrapper's, 20-user).
fit_user_apptainer() {
  local uid entry name
  uid=$(id -u)
  ((!cfg_user_site)) ||
    log "ENABLE_USER_SITE=1: the host's PYTHONPATH and ~/.local (pip install --user) are used as they are and may shadow the image's pinned packages"
  ((!cfg_dropped_pythonpath)) ||
    warn "PYTHONPATH from the host is not passed on: its packages would come before the image's pinned ones (ENABLE_USER_SITE=1 keeps it)"
  NB_HOME=${HOME} home_folder=${HOME} user_home=${HOME}
  as_user=()
  entry=$(getent passwd "${uid}") || entry=""
  if [[ -n ${entry} ]]; then
    name=${entry%%:*}
  else
    write_nss_entry "${uid}" "$(id -g)"
    name=${NB_USER}
  fi
  export USER=${name} LOGNAME=${name}
  [[ ${cfg_mode} != command ]] || return 0
  log "Apptainer: running as ${name} (uid ${uid}) with the host's home and network; no sshd (it needs root): reach JupyterLab through the login node with ssh -L (the line below)"
  copy_quickstart
}

# copy_quickstart: the image's quickstart notebooks, once, into the home folder that JupyterLab
# opens (the image's own ~/quickstart is not under it). A copy that is there already is the user's.
copy_quickstart() {
  local target=${HOME}/${QUICKSTART_COPY_NAME} error
  [[ -d ${QUICKSTART_SOURCE} && ${HOME} != "${QUICKSTART_SOURCE%/*}" ]] || return 0
  [[ ! -e ${target} && ! -L ${target} ]] || return 0
  error=$(cp -R -- "${QUICKSTART_SOURCE}" "${target}" 2>&1) || {
    warn "the quickstart notebooks could not be copied to ${target}: ${error//$'\n'/ }"
    return 0
  }
  log "the quickstart notebooks are in ~/${QUICKSTART_COPY_NAME} (copied from the image once; remove the folder to get this image's copy)"
}

# make_run_dir: this run's own run directory (00-common named it), mode 700; a folder of the name
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

# announce_tunnel PID: once JupyterLab (PID) listens, the line to paste on a laptop and the URL,
# from its runtime file (the port it took, the token). In the background: it ends by itself.
announce_tunnel() {
  local node login
  node=${SLURMD_NODENAME:-$(hostname)}
  login=${LOGIN_HOST:-${SLURM_SUBMIT_HOST:-}}
  /usr/bin/python3 -I "${APPTAINER_PY}" announce "${JUPYTER_RUNTIME_DIR}" "$1" "${node}" "${login}" \
    "${USER:-$(id -un)}" "${cfg_token_generated}" &
}
