# shellcheck shell=bash
# 10-config: startup/plan.py checks every setting before anything starts; its plan is the only shared state.

# Each is set by the plan's eval (with others only the planner reads); startup/plan.py says what each means.
declare apptainer_mode run_dir_per_run IMAGE_RUN_DIR RUN_DIR SERVICES_FILE IMAGE_USER cfg_cert_file cfg_key_file

declare cfg_mode
declare -a cfg_command
declare is_root cfg_jupyter cfg_self_check SSH_PORT cfg_host_key_dir
declare cfg_gen_cert cfg_jupyter_port cfg_token
declare cfg_ssh_keys ssh_starts cfg_sshd_dir cfg_sshd_keys_file cfg_sshd_env_file
declare cfg_report_port cfg_user_site cfg_login_name cfg_nss_entry cfg_stop_grace
declare user_from user_old_uid user_old_gid user_rename user_refit user_new_group user_group_rename user_join_users cfg_triplet cfg_group cfg_umask cfg_grant_sudo cfg_chown_home
declare -a cfg_server_command home_mount_checks home_copy home_prune old_home_mounts as_user cfg_host_keys
declare home_is_mount cfg_ssh_key_count cfg_ids
declare NB_HOME home_folder user_home user_old_home cfg_server_folder
declare -a cfg_unset_names cfg_chown_home_opts cfg_chown_extra_opts cfg_chown_extra cfg_hub_secret_names cfg_notes cfg_server_notes cfg_tunnel cfg_sshd_args
# python3 -I adds no folder of its own to sys.path, so the package's is inserted by hand.
readonly PLANNER=(/usr/bin/python3 -I -c
  'import sys; sys.path.insert(0, "/opt/tf29-env"); from startup.plan import main; sys.exit(main(sys.argv[2:], int(sys.argv[1])))')

load_config() {
  local plan status=0
  plan=$("${PLANNER[@]}" "$$" "$@") || status=$?
  case ${status} in
    0) ;;
    2) exit 2 ;; # the planner has said why, in one line
    *) die "the start-up plan could not be made (exit ${status})" ;;
  esac
  eval "${plan}"
  # Fixed from here on: a sourced hook cannot move what Jupyter, the healthcheck and SSH agree on.
  readonly apptainer_mode run_dir_per_run IMAGE_RUN_DIR RUN_DIR SERVICES_FILE IMAGE_USER NB_HOME home_folder user_home as_user
  declare -grx TFENV_RUN_DIR JUPYTER_RUNTIME_DIR
}

