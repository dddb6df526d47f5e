#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR/entrypoint.d
# The container's main process, under tini: one numbered step per entrypoint.d/ file, called in order.
# The steps share startup/plan.py's plan and three results: hub_secrets (12, kept out of the environment),
# user_state_report (26, said at 45) and children (started by 48-60, supervised by 90).
set -euo pipefail

# Listed, not globbed: a missing piece fails loudly, and shellcheck -x reads them as one program.
cd /opt/tf29-env/entrypoint.d
source 00-common.sh
source 10-config.sh
source 12-hub.sh
source 13-apptainer.sh
source 15-privileges.sh
source 20-user.sh
source 22-sudo.sh
source 24-chown.sh
source 25-mounts.sh
source 26-userstate.sh
source 30-hooks.sh
source 32-serveropts.sh
source 34-runtime.sh
source 40-ssh.sh
source 45-command.sh
source 48-services.sh
source 50-jupyter.sh
source 60-selfcheck.sh
source 90-supervise.sh
cd /

main() {
  load_config "$@"                  # 10: every setting checked; bad input stops here
  [[ ${cfg_mode} != hub ]] || take_hub_secrets # 12: the hub's secrets leave the environment
  apply_apptainer_settings          # 13: Apptainer only
  if ((ssh_starts)); then
    check_host_key_dir              # 15: SSH_HOST_KEY_DIR can be made (known only by trying)
  fi
  check_run_dir                     # 15: the run directory, made if it is missing
  fit_user                          # 20: NB_USER, NB_UID, NB_GID (without root: libnss-wrapper)
  grant_sudo                        # 22: GRANT_SUDO, only when asked
  chown_requested                   # 24: CHOWN_HOME, CHOWN_EXTRA, only when asked
  check_mounts                      # 25: what is mounted under the home folder is writable
  prepare_user_state                # 26: ~/.local: the user's packages, environments and settings
  run_start_hooks                   # 30: ours, then docker-stacks' start-notebook.d, before-notebook.d
  apply_server_options              # 32: JUPYTER_ENV_VARS_TO_UNSET
  if [[ ${cfg_mode} != command ]] && ((cfg_jupyter)); then
    prepare_runtime_dir             # 34: Jupyter's runtime folder, the dev user's alone
    if ((cfg_gen_cert)) && [[ ${cfg_mode} == services ]]; then make_certificate; fi # 34: GEN_CERT
  fi
  [[ ${cfg_mode} == command ]] || prepare_ssh # 40: host keys, authorized keys, `sshd -t`
  report_notes                      # 45: the planner's and 26's notes, now that every setting has passed
  apply_umask                       # 45: NB_UMASK, for what starts from here on
  [[ ${cfg_mode} != command ]] || exec_command "${cfg_command[@]}" # 45
  write_services                    # 48: what the healthcheck must find answering
  start_ssh                         # 48
  start_jupyter                     # 50
  start_selfcheck                   # 60: beside Jupyter, never in front of it
  supervise                         # 90: until a signal or a service dies
}

main "$@"
