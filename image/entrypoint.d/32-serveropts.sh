# shellcheck shell=bash
# 32-serveropts: docker-stacks' options for the server, read and checked with the other settings
# (startup/plan.py: load_server_options), applied once the hooks have run (apply_server_options):
#   DOCKER_STACKS_JUPYTER_CMD  lab (default), server or notebook: the app the services mode starts.
#                              notebook needs the notebook package, which the image lacks unless
#                              installed. In the hub mode jupyterhub-singleuser runs instead.
#   NOTEBOOK_ARGS              extra args for the server (services and hub mode), split as
#                              docker-stacks does (dockerstacks/notebook_args.py), before the
#                              command's own ARGS; the same rule holds for both: no auth in args.
#   JUPYTER_ENV_VARS_TO_UNSET  names (comma- or space-separated) taken out of the environment once
#                              the hooks have run (hooks may still use them), so that the server,
#                              its kernels, SSH sessions and a command never see them.
#   GEN_CERT                   a switch: JupyterLab speaks HTTPS with a self-signed certificate made
#                              at every start (34-runtime); the token or password stays required.

# After the hooks, before anything starts (the command included): the named variables go, then
# JUPYTER_ENV_VARS_TO_UNSET itself, as in docker-stacks.
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
