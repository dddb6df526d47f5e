# shellcheck shell=bash
# 60-selfcheck: the GPU / FP16 self-check, started beside JupyterLab (not before it) at a lower
# priority so that it never delays Jupyter's readiness. SELF_CHECK=strict makes a failed check
# stop the container (90-supervise); warn only reports; off skips it.

start_selfcheck() {
  if [[ ${cfg_self_check} == off ]]; then
    log "self-check is off (SELF_CHECK=off); run 'selfcheck' in the container at any time"
    return 0
  fi
  "${as_user[@]}" nice -n 10 /opt/tf29-env/bin/selfcheck --mode "${cfg_self_check}" & # the report: TFENV_RUN_DIR/selfcheck.json
  children[$!]=selfcheck
}
