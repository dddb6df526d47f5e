# shellcheck shell=bash
# 10-config: the plan. startup/plan.py reads and checks every setting before anything starts and
# prints the plan as shell assignments, read here with one eval; a bad value is its one line naming
# the variable, exit 2, and nothing is left half-started. The plan's variables are the only state
# the pieces share (besides 00-common's paths); each is declared here, set by the plan.

# The run directory and what lives there, the dev user as built (startup/plan.py: plan_run_dir);
# also exported: TFENV_RUN_DIR, JUPYTER_RUNTIME_DIR.
declare apptainer_mode run_dir_per_run IMAGE_RUN_DIR RUN_DIR SERVICES_FILE IMAGE_USER cfg_cert_file cfg_key_file

# The mode: services, hub or command (startup/plan.py: select_mode), and the args for either.
declare cfg_mode
declare -a cfg_server_args cfg_command
# Settings (startup/plan.py says what each means).
declare is_root cfg_jupyter cfg_ssh cfg_no_auth cfg_self_check SSH_PORT cfg_host_key_dir
declare cfg_jupyter_app cfg_gen_cert cfg_jupyter_port cfg_base_url cfg_token cfg_token_generated
declare cfg_password_hash cfg_ssh_keys ssh_starts cfg_listen_ip cfg_sshd_family cfg_sshd_dir
# The Apptainer mode (startup/plan.py: load_apptainer_config).
declare cfg_report_port cfg_port_retries cfg_user_site cfg_dropped_pythonpath
# What fit_user (20-user) changes as root (startup/plan.py: plan_user).
declare user_from user_old_uid user_old_gid user_rename user_refit user_new_group user_group_rename user_join_users cfg_triplet cfg_group cfg_umask cfg_grant_sudo cfg_chown_home
# /proc/self/mountinfo as read once: mount point, options, mount point, options, ... (00-common).
declare -a mounts
declare -a cfg_unset_names cfg_allowed_hosts cfg_chown_home_opts cfg_chown_extra_opts cfg_chown_extra
# The planner is a module of /opt/tf29-env's packages, run by the distro's python3 -I (which adds no
# folder of its own to sys.path).
readonly PLANNER=(/usr/bin/python3 -I -c
  'import sys; sys.path.insert(0, "/opt/tf29-env"); from startup.plan import main; sys.exit(main(sys.argv[2:], int(sys.argv[1])))')

# load_config ARGS...: the plan for the container's command ARGS.
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
  readonly apptainer_mode run_dir_per_run IMAGE_RUN_DIR RUN_DIR SERVICES_FILE IMAGE_USER
  declare -grx TFENV_RUN_DIR JUPYTER_RUNTIME_DIR
}

# SSH_HOST_KEY_DIR is where 40-ssh makes the host keys at first start. Whether a folder can be made
# there (not under /proc, not a file, not on a read-only mount) is known only by trying, so it is
# made now, as it would be then, instead of failing then with a bare mkdir or ssh-keygen message.
check_host_key_dir() {
  local dir=${cfg_host_key_dir} error key
  error=$(mkdir -p -- "${dir}" 2>&1) || die "SSH_HOST_KEY_DIR=${dir}: no folder for host keys can be made there (${error//$'\n'/ })"
  [[ ! -w ${dir} ]] || return 0
  for key in "${dir}"/ssh_host_*_key; do
    [[ -s ${key} ]] && return 0 # keys kept on a read-only mount: nothing to write
  done
  die "SSH_HOST_KEY_DIR=${dir}: holds no host keys and none can be written there (read-only?)"
}
