#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR/entrypoint.d
# The container's main process, under tini. The planner (tf29image.startup.plan) decides; main() runs the
# plan's steps in order and alone decides from the planned values which run: no step checks again.
set -euo pipefail

# Listed, not globbed: a missing piece fails loudly, and shellcheck -x reads them as one program.
cd /opt/tf29-env/entrypoint.d
source config.sh   # logging, load_config and what the steps share; the hub's secrets; Apptainer
source user.sh     # the dev user: fitting, sudo, chowns, mounts, ~/.local
source server.sh   # the run directory, start hooks, server options, Jupyter's runtime folder, sshd's files
source services.sh # starting the services and supervising them
cd /

main() {
  load_config "$@" # every setting checked; bad input stops here
  if [[ ${cfg_mode} == hub ]]; then take_hub_secrets; fi # out of the environment before anything else starts
  if ((apptainer_mode)); then
    if ((!cfg_user_site)); then keep_host_python_out; fi
    if ((cfg_report_port)); then report_port_to_hub; fi
  fi
  # Folders only trying tells about: fail now, naming the fix, not halfway through.
  if ((ssh_starts)); then check_host_key_dir; fi
  if [[ ${cfg_mode} != command ]]; then prepare_run_dir; fi # a command starts no service that needs it

  if ((is_root)); then
    fit_user        # NB_USER, NB_UID, NB_GID in /etc/passwd
    grant_sudo      # GRANT_SUDO, or an earlier grant taken back
    chown_requested # CHOWN_HOME, CHOWN_EXTRA
  else
    fit_user_without_root # libnss-wrapper serves the user where /etc cannot change
  fi
  check_mounts       # what is mounted under the home folder is writable
  prepare_user_state # ~/.local: the user's packages, environments and settings

  run_start_hooks      # ours, then docker-stacks' start-notebook.d, before-notebook.d
  apply_server_options # JUPYTER_ENV_VARS_TO_UNSET
  if [[ ${cfg_mode} != command ]] && ((cfg_jupyter)); then
    prepare_runtime_dir
    if ((cfg_gen_cert)) && [[ ${cfg_mode} == services ]]; then make_certificate; fi
    if [[ -n ${cfg_cert_source} && ${cfg_mode} == services ]]; then copy_certificate; fi
  fi
  if [[ ${cfg_mode} != command ]] && ((ssh_starts)); then prepare_ssh; fi # host keys, authorized keys, `sshd -t`

  # Notes only now, so that a bad setting is the only line a failed start prints.
  say "${cfg_notes[@]}" "${user_state_report[@]}"
  # NB_UMASK: not for the hooks, which ran before, nor SSH sessions: sshd sets its own (022) for each login.
  if [[ -n ${cfg_umask} ]]; then umask "${cfg_umask}"; fi
  if [[ ${cfg_mode} == command ]]; then exec "${as_user[@]}" "${cfg_command[@]}"; fi

  write_services # what the healthcheck must find answering
  if ((ssh_starts)); then start_ssh; fi
  if ((cfg_jupyter)); then start_jupyter; fi
  if [[ ${cfg_self_check} != off ]]; then start_selfcheck; fi # the planner has said how to run it by hand
  supervise # until a signal or a service dies
}

main "$@"
