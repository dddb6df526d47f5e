# shellcheck shell=bash
# 13-apptainer: Apptainer runs the image as the caller, read-only, with the host's $HOME and network (docs/hpc.md).
# The host's user site and PYTHONPATH stay out so they cannot shadow the image's pinned packages.

# batchspawner's hub started the server with port 0, so it must be told the port taken.
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
