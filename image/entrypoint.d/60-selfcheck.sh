# shellcheck shell=bash
# 60-selfcheck: beside JupyterLab at a lower priority, so it never delays Jupyter's readiness.

start_selfcheck() {
  if [[ ${cfg_self_check} == off ]]; then
    log "self-check is off (SELF_CHECK=off); run 'selfcheck' in the container at any time"
    return 0
  fi
  "${as_user[@]}" nice -n 10 /opt/tf29-env/bin/selfcheck --mode "${cfg_self_check}" & # the report: TFENV_RUN_DIR/selfcheck.json
  children[$!]=selfcheck
}
