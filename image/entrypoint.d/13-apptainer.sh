# shellcheck shell=bash
# 13-apptainer: the Apptainer mode's settings (formerly Singularity; 00-common detects it from
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

