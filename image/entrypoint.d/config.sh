# shellcheck shell=bash
# The plan and what the steps share: logging, load_config, the hub's secrets, the Apptainer mode's settings.

log() { printf 'tf29-env: %s\n' "$*" >&2; }
warn() { printf 'tf29-env: WARNING: %s\n' "$*" >&2; }

# Each line is a note, or a warning where it starts "WARNING: " (the planner's and userstate's lines).
say() {
  local line
  for line in "$@"; do
    case ${line} in
      "WARNING: "*) warn "${line#WARNING: }" ;;
      *) log "${line}" ;;
    esac
  done
}

die() {
  printf 'tf29-env: ERROR: %s\n' "$*" >&2
  exit 2
}

# Each is set by the plan's eval, and each is read by a step; tf29image.startup.plan says what each means.
declare apptainer_mode run_dir_per_run IMAGE_RUN_DIR RUN_DIR SERVICES_FILE IMAGE_USER cfg_cert_file cfg_key_file
declare cfg_mode
declare -a cfg_command
declare is_root cfg_jupyter cfg_self_check SSH_PORT cfg_host_key_dir
declare cfg_gen_cert cfg_cert_source cfg_key_source cfg_jupyter_port cfg_token
declare cfg_ssh_keys ssh_starts cfg_sshd_dir cfg_sshd_keys_file cfg_sshd_env_file
declare cfg_report_port cfg_user_site cfg_login_name cfg_nss_entry cfg_stop_grace
declare user_from user_old_uid user_old_gid user_rename user_refit user_new_group user_group_rename user_join_users user_join_team user_new_team_group user_team_gid user_team_group cfg_triplet cfg_group cfg_umask cfg_grant_sudo cfg_chown_home
declare -a cfg_server_command home_mount_checks home_copy home_prune old_home_mounts as_user cfg_host_keys
declare home_is_mount cfg_ssh_key_count cfg_ids cfg_user
declare NB_HOME home_folder user_home user_old_home cfg_server_folder
declare -a cfg_unset_names cfg_chown_home_opts cfg_chown_extra_opts cfg_chown_extra cfg_hub_secret_names cfg_notes cfg_server_notes cfg_tunnel cfg_sshd_args

# Besides the plan, two steps' results for later ones (the services' children are services.sh's own).
declare -A hub_secrets=()         # take_hub_secrets: kept out of the environment; start_jupyter hands them on
declare -a user_state_report=()   # prepare_user_state's lines, said by main() with the planner's notes

# load_config ARGS...: the container's command; the planner also reads this shell's PID (the run directory's name).
# -I: no PYTHON* variable, user site or working folder can change the plan.
load_config() {
  local plan status=0
  plan=$(/usr/bin/python3 -I -m tf29image.startup.plan "$$" "$@") || status=$?
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

# The hub mode's: out before the hooks, sshd (whose sessions copy this environment) or the self-check start;
# the single-user server alone gets them back. `docker exec` still sees Docker's copy: the admin's.
take_hub_secrets() {
  local name
  for name in "${cfg_hub_secret_names[@]}"; do # tf29image.startup.environ names them
    hub_secrets[${name}]=${!name}
    unset -v "${name}"
  done
}

# Apptainer runs the image as the caller with the host's $HOME (docs/hpc.md): the host's user site and
# PYTHONPATH stay out so they cannot shadow the image's pinned packages.
keep_host_python_out() {
  export PYTHONNOUSERSITE=1
  unset -v PYTHONPATH
}

# batchspawner's hub started the server with port 0, so it must be told the port taken.
report_port_to_hub() {
  local answer
  # The token in the helper's environment only (never its argv, which ps shows).
  answer=$(JUPYTERHUB_API_TOKEN=${hub_secrets[JUPYTERHUB_API_TOKEN]:-${hub_secrets[JPY_API_TOKEN]:-}} \
    /usr/bin/python3 -I -m tf29image.startup.apptainer report-port "${cfg_jupyter_port}" 2>&1) || die "${answer//$'\n'/ }"
}
