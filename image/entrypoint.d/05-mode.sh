# shellcheck shell=bash
# 05-mode: what this start is, from the container's command (its args after the entrypoint):
#   services  no command: JupyterLab with the image's auth, sshd, the self-check;
#   hub       a JupyterHub single-user server in JupyterLab's place, the hub's login the only one:
#             the command `jupyterhub-singleuser [ARGS]` (KubeSpawner and Zero to JupyterHub give it
#             as the container's args, so this entrypoint still runs), or no command while
#             JUPYTERHUB_API_TOKEN is set (DockerSpawner with cmd=None runs the image's CMD, none);
#   command   anything else runs once as the dev user.
# docker-stacks' start commands, which hub configs and compose files name, mean the same here:
# start-notebook.{sh,py} [ARGS] is the services mode with ARGS for the server (hub mode when
# JUPYTERHUB_API_TOKEN is set, as there), start-singleuser.{sh,py} [ARGS] the hub mode, and
# start.sh CMD the command mode. A path (/usr/local/bin/start-notebook.sh) counts by its name.

# select_mode ARGS...: cfg_mode, and cfg_server_args (extra args for the server) or cfg_command.
select_mode() {
  cfg_mode=services cfg_server_args=() cfg_command=()
  (($# > 0)) || {
    [[ -z ${JUPYTERHUB_API_TOKEN:-} ]] || cfg_mode=hub
    return 0
  }
  case ${1##*/} in
    jupyterhub-singleuser | start-singleuser.sh | start-singleuser.py) cfg_mode=hub ;;
    start-notebook.sh | start-notebook.py)
      [[ -z ${JUPYTERHUB_API_TOKEN:-} ]] || cfg_mode=hub
      ;;
    start.sh)
      (($# > 1)) || die "start.sh needs a command to run (start.sh CMD [ARGS]); without one, give no command at all"
      cfg_mode=command cfg_command=("${@:2}")
      return 0
      ;;
    *)
      cfg_mode=command cfg_command=("$@")
      return 0
      ;;
  esac
  cfg_server_args=("${@:2}")
}
