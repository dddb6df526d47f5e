# shellcheck shell=bash
# 32-serveropts: docker-stacks' server options (startup/plan.py: load_server_options), applied after the hooks.

# After the hooks, which may still use them; JUPYTER_ENV_VARS_TO_UNSET itself goes too, as in docker-stacks.
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
