# shellcheck shell=bash
# 60-selfcheck: beside JupyterLab at a lower priority, so it never delays Jupyter's readiness.

start_selfcheck() {
  [[ ${cfg_self_check} != off ]] || return 0 # the planner has said how to run it by hand
  "${as_user[@]}" nice -n 10 /opt/tf29-env/bin/selfcheck --mode "${cfg_self_check}" & # the report: TFENV_RUN_DIR/selfcheck.json
  children[$!]=selfcheck
}
