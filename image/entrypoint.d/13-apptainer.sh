# shellcheck shell=bash
# 13-apptainer: the Apptainer mode (formerly Singularity; the plan detects it from
# APPTAINER_CONTAINER or SINGULARITY_CONTAINER). Apptainer runs the image as the calling user, on
# a read-only image, with the host's $HOME and the host's network, typically as a Slurm job on a
# shared compute node (docs/hpc.md). So, in this mode:
#   - no root steps and no sshd (it needs root): JupyterLab is reached through the login node with
#     `ssh -L`, and the start prints that line, with the node, the port and the URL to open;
#   - the run directory is this run's own under TMPDIR or /tmp (the plan names it,
#     15-privileges makes it), removed at the end; nothing is written under the image;
#   - the home folder is the host's $HOME (it must be writable: JupyterLab keeps settings, kernels'
#     files and the user's notebooks there), the quickstart notebooks are copied into it once;
#   - JUPYTER_PORT if one is asked for, else 8888 or the first free port after it: other users'
#     servers on the node share its ports (startup/apptainer.py);
#   - PYTHONNOUSERSITE=1, and a PYTHONPATH from the host (module systems and shell profiles set
#     one) is not passed on: packages installed on the host (~/.local is the host's home) cannot
#     shadow the image's pinned ones. ENABLE_USER_SITE=1 keeps both as they are.
# Slurm's end of a job (SIGTERM) stops JupyterLab as `docker stop` does (90-supervise), exit 0.

# apply_apptainer_settings: what startup/plan.py decided for this mode (load_apptainer_config: it has
# checked the home, LOGIN_HOST and the port): the host's user site and PYTHONPATH stay out, and
# batchspawner's hub, which gave port 0, is told the port.
apply_apptainer_settings() {
  ((apptainer_mode)) || return 0
  if ((!cfg_user_site)); then
    export PYTHONNOUSERSITE=1
    unset -v PYTHONPATH
  fi
  ((cfg_report_port)) || return 0
  local answer
  # The token in the helper's environment only (never its argv, which ps shows).
  answer=$(JUPYTERHUB_API_TOKEN=${hub_secrets[JUPYTERHUB_API_TOKEN]:-${hub_secrets[JPY_API_TOKEN]:-}} \
    /usr/bin/python3 -I "${APPTAINER_PY}" report-port "${cfg_jupyter_port}" 2>&1) || die "${answer//$'\n'/ }"
}
