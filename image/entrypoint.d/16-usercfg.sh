# shellcheck shell=bash
# 16-usercfg: the dev user's settings beyond NB_USER/NB_UID/NB_GID (10-config): docker-stacks'
# NB_GROUP, NB_UMASK, CHOWN_HOME(_OPTS), CHOWN_EXTRA(_OPTS), GRANT_SUDO, and its rootless-engine
# triplet NB_USER=root NB_UID=0 NB_GID=0. Checked before anything starts, like every setting: a bad
# value is one line and exit 2. Where docker-stacks is looser than this image (sudo, root), its
# behaviour is an opt-in that says so in one WARNING line at every start.

# The dev user as built: the Dockerfile's NB_USER, which the image's ENV keeps in TFENV_IMAGE_USER
# (NB_USER itself is the user's to override).
[[ -n ${TFENV_IMAGE_USER:-} ]] ||
  die "TFENV_IMAGE_USER is not set: the image's ENV sets it; do not override it with an empty value"
readonly IMAGE_USER=${TFENV_IMAGE_USER}
# Unix names for NB_USER and NB_GROUP (paired with NAME in startup/users.py).
readonly NAME_PATTERN='^[a-z_][a-z0-9_-]{0,31}$'
# The image-side helper that writes passwd/group copies and checks the CHOWN_* settings.
readonly USERS_PY=/opt/tf29-env/startup/users.py

# root_triplet: NB_USER=root NB_UID=0 NB_GID=0, all three at once: the one case where 10-config lets
# uid and gid 0 through. Under rootless Docker or Podman the container's root is the host user who
# started it, and docker-stacks documents this triplet for running so.
root_triplet() {
  [[ ${NB_USER:-} == root && ${NB_UID:-} =~ ^0+$ && ${NB_GID:-} =~ ^0+$ ]]
}

load_user_config() {
  cfg_triplet=0 cfg_grant_sudo=0 cfg_chown_home=0
  cfg_chown_home_opts=() cfg_chown_extra_opts=() cfg_chown_extra=()
  if root_triplet; then cfg_triplet=1; fi
  cfg_group=${NB_GROUP:-}
  [[ -z ${cfg_group} || ${cfg_group} =~ ${NAME_PATTERN} ]] ||
    die "NB_GROUP='${cfg_group}' is not a valid group name (lower-case letters, digits, _ and -)"
  cfg_umask=${NB_UMASK:-}
  [[ -z ${cfg_umask} || ${cfg_umask} =~ ^0?[0-7]{1,3}$ ]] ||
    die "NB_UMASK='${cfg_umask}' is not a umask: octal, like 022 (the default) or 002 (the group may write)"
  parse_switch cfg_grant_sudo GRANT_SUDO 0
  parse_switch cfg_chown_home CHOWN_HOME 0
  load_chown_plan

  if [[ ${NB_USER} == root ]] && ((!cfg_triplet)); then
    die "NB_USER=root: JupyterLab and SSH logins never run as root; only NB_USER=root NB_UID=0 NB_GID=0 together do (for rootless Docker or Podman, where root in the container is your own host account)"
  fi
  if ((cfg_triplet)); then
    load_root_triplet
  else
    local current entry
    current=$(dev_user_name) || current=""
    if [[ ${NB_USER} != "${current}" ]] && entry=$(getent passwd "${NB_USER}"); then
      die "NB_USER=${NB_USER} is already a user of the image (uid $(cut -d: -f3 <<<"${entry}")); pick another name"
    fi
  fi

  if ((!is_root)); then
    ((!cfg_grant_sudo)) ||
      warn "GRANT_SUDO=${GRANT_SUDO} is ignored: it needs a container started as root, and this one runs as uid ${EUID}"
    ((!cfg_chown_home)) ||
      warn "CHOWN_HOME=${CHOWN_HOME} is ignored: it needs a container started as root, and this one runs as uid ${EUID}"
    ((${#cfg_chown_extra[@]} == 0)) ||
      warn "CHOWN_EXTRA is ignored: it needs a container started as root, and this one runs as uid ${EUID}"
  fi
  if ((!cfg_chown_home && ${#cfg_chown_home_opts[@]} > 0)); then
    warn "CHOWN_HOME_OPTS is set but CHOWN_HOME is not: nothing is chowned (set CHOWN_HOME=yes)"
  fi
  if ((${#cfg_chown_extra[@]} == 0 && ${#cfg_chown_extra_opts[@]} > 0)); then
    warn "CHOWN_EXTRA_OPTS is set but CHOWN_EXTRA is not: nothing is chowned"
  fi
}

# dev_user_name: prints the name the dev user has in /etc/passwd now: the image's, or the NB_USER an
# earlier start of this container renamed it to (20-user records it); fails when neither exists.
dev_user_name() {
  local name=${IMAGE_USER}
  if ! getent passwd "${name}" >/dev/null; then
    [[ -r ${RENAMED_USER_FILE} ]] && read -r name <"${RENAMED_USER_FILE}" && [[ -n ${name} ]] || return 1
    getent passwd "${name}" >/dev/null || return 1
  fi
  printf '%s\n' "${name}"
}

# CHOWN_HOME_OPTS, CHOWN_EXTRA and CHOWN_EXTRA_OPTS: startup/users.py checks them (only options that
# cannot reach beyond the folder, only folders outside the system) and says what to run.
load_chown_plan() {
  [[ -n ${CHOWN_HOME_OPTS:-}${CHOWN_EXTRA:-}${CHOWN_EXTRA_OPTS:-} ]] || return 0
  local plan status=0 kind value
  plan=$(/usr/bin/python3 -I "${USERS_PY}" chown-plan 2>&1) || status=$?
  ((status == 0)) || die "${plan//$'\n'/ }"
  while read -r kind value; do
    case ${kind} in
      home-opt) cfg_chown_home_opts+=("${value}") ;;
      extra-opt) cfg_chown_extra_opts+=("${value}") ;;
      extra) cfg_chown_extra+=("${value}") ;;
    esac
  done <<<"${plan}"
}

# The triplet runs JupyterLab (or the command) as the container's root, with HOME /home/root (its
# WARNING line comes from 20-user, once the start is known to go ahead). sshd
# never lets root in, and the image's jovyan would write files as another host uid than the
# triplet exists for, so SSH stays off. Jupyter refuses root without allow_root: the server gets it,
# unless the extra args set it themselves (traitlets refuses an option given twice).
load_root_triplet() {
  ((is_root)) ||
    die "NB_USER=root NB_UID=0 NB_GID=0 runs JupyterLab as the container's root, but this container runs as uid ${EUID}: drop --user (under rootless Docker or Podman, root in the container is your own host account)"
  [[ ${cfg_mode} == command ]] || ((cfg_jupyter)) ||
    die "ENABLE_JUPYTER=0 with NB_USER=root NB_UID=0 NB_GID=0, where SSH stays off: nothing to run"
  cfg_ssh=0
  local arg
  for arg in "${cfg_server_args[@]}"; do
    [[ ${arg} != --ServerApp.allow_root=* && ${arg} != --allow-root ]] || return 0
  done
  cfg_server_args=(--ServerApp.allow_root=True "${cfg_server_args[@]}")
}
