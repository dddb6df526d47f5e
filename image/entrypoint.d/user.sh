# shellcheck shell=bash
# The dev user, fitted to NB_UID/NB_GID so that files in bind mounts belong to the host user; its sudo, chowns,
# mounts and ~/.local. NB_HOME is passwd's home (JupyterLab's root), user_home is HOME, as_user runs as the user.

# A restart must find the renamed user again, not take another user of that name for it.
readonly RENAMED_USER_FILE=/etc/tf29-env/dev-user
readonly QUICKSTART_COPY_NAME=tf29-env-quickstart
readonly SUDO_GRANT_FILE=/etc/sudoers.d/tf29-env-grant-sudo

# As root: /etc/passwd and /etc/group say who the dev user is (the planner has checked what this needs).
fit_user() {
  if ((cfg_triplet)); then # the planner has warned
    make_home "/home/${IMAGE_USER}" "${NB_HOME}" copy
    # usermod refuses while root runs processes (tini), so sed sets the home getent and ssh-keygen see.
    if [[ -w /etc/passwd && -w /etc ]]; then
      sed -i -E "s#^(root:[^:]*:[^:]*:[^:]*:[^:]*:)[^:]*:#\\1${NB_HOME}:#" /etc/passwd
    fi
    return 0
  fi
  if ((user_rename)); then
    # Not --move-home: a bind mount under the old home cannot be moved, and Docker may have made the new one.
    usermod --login "${cfg_user}" --home "${NB_HOME}" "${user_from}"
    printf '%s\n' "${cfg_user}" >"${RENAMED_USER_FILE}"
    make_home "${user_old_home}" "${NB_HOME}" move
    log "dev user ${user_from} is now ${cfg_user}, home ${NB_HOME}"
  fi
  if ((user_group_rename)); then
    local entry
    entry=$(getent group "${cfg_ids#*:}")
    groupmod --new-name "${cfg_group}" "${entry%%:*}"
    log "group ${cfg_ids#*:} is now ${cfg_group} (NB_GROUP)"
  fi
  if ((user_refit)); then
    ((!user_new_group)) || groupadd --gid "${cfg_ids#*:}" "${cfg_group:-${cfg_user}}"
    # Not usermod -u: it would also chown the bind-mounted host folders under the home.
    local passwd
    passwd=$(awk -F: -v OFS=: -v u="${cfg_user}" -v uid="${cfg_ids%:*}" -v gid="${cfg_ids#*:}" \
      '$1 == u { $3 = uid; $4 = gid } { print }' /etc/passwd)
    printf '%s\n' "${passwd}" >/etc/passwd
    # Mounts below are pruned (home_prune), so bind-mounted host folders keep their owners.
    find "${NB_HOME}" -xdev "${home_prune[@]}" \( -uid "${user_old_uid}" -o -gid "${user_old_gid}" \) -exec chown -h "${cfg_ids}" {} +
    log "dev user ${cfg_user} is now uid ${cfg_ids%:*}, gid ${cfg_ids#*:}"
  fi
  # "users" owns the venv, for pip install; only when needed, as usermod rewrites /etc/group regardless.
  ((!user_join_users)) || usermod -a -G users "${cfg_user}"
  ((!user_join_team)) || join_team
  [[ ${user_home} == "${NB_HOME}" ]] || make_scratch_home # a read-only file system
}

# TEAM_GID, a group besides NB_GID (a team's shared folder): in /etc/group, where setpriv --init-groups
# (JupyterLab, the command), sshd's logins and `docker exec -u` all find it.
join_team() {
  ((!user_new_team_group)) || groupadd --gid "${user_team_gid}" "${user_team_group}"
  usermod -a -G "${user_team_group}" "${cfg_user}"
  log "${cfg_user} is in group ${user_team_group} (gid ${user_team_gid}, TEAM_GID)"
}

# make_home OLD NEW copy|move: a folder mounted at NEW is the user's own: nothing is copied into it or chowned
# (home_copy is empty). NEW stays root's until complete: root with minimal capabilities (no DAC_OVERRIDE,
# no FSETID) may not write the user's folders.
make_home() {
  local old=$1 new=$2 name mode owner=0:0
  mode=$(stat -c %a "${old}")
  [[ $3 != move ]] || owner=$(stat -c %u:%g "${old}")
  if ((!home_is_mount)); then # the planner has said that nothing is copied into a mount
    if [[ -e ${new} ]]; then chown 0:0 "${new}"; else mkdir -m 700 "${new}"; fi
    for name in "${home_copy[@]}"; do
      cp -a --no-preserve=ownership "${old}/${name}" "${new}/${name}"
      chown -h -R "${owner}" "${new}/${name}"
    done
    chmod "${mode}" "${new}"
    chown "${owner}" "${new}"
  fi
  # A mount in the old home keeps it (the planner has warned); root removes first, for its read-only files
  # (~/quickstart), then, without DAC_OVERRIDE, the owner the rest.
  [[ $3 == move && ${#old_home_mounts[@]} -eq 0 ]] || return 0
  find "${old}" -mindepth 1 -delete 2>/dev/null || true
  { setpriv "--reuid=${owner%:*}" "--regid=${owner#*:}" --clear-groups find "${old}" -mindepth 1 -delete 2>/dev/null &&
    rmdir -- "${old}" 2>/dev/null; } ||
    log "${old}, the image's home folder before NB_USER, could not be removed; it is left as it is"
}

# Without root nothing under /etc changes: the planner has said why NB_HOME is not home_folder, and whether
# passwd lacks the uid, so that libnss-wrapper serves it (cfg_nss_entry). Apptainer's HOME is the host's.
fit_user_without_root() {
  if ((apptainer_mode)); then
    [[ ${cfg_mode} == command ]] || copy_quickstart
  elif [[ ${NB_HOME} != "${home_folder}" ]]; then
    mkdir -p "${NB_HOME}"
  elif [[ ${user_home} != "${NB_HOME}" ]]; then
    make_scratch_home # only the dotfiles move: JupyterLab keeps the home folder (~/work is there) as its root
  fi
  ((!cfg_nss_entry)) || write_nss_entry "$(id -u)" "$(id -g)"
  export HOME=${user_home} USER=${cfg_login_name} LOGNAME=${cfg_login_name}
}

# JupyterLab, IPython and matplotlib write under HOME, so it moves to /tmp; made by the dev user itself,
# so no chown (and no CAP_CHOWN) is needed.
make_scratch_home() {
  "${as_user[@]}" mkdir -p -m 700 "${user_home}" 2>/dev/null ||
    die "HOME: ${NB_HOME} is on a read-only file system and ${user_home} cannot be made: mount a tmpfs on /tmp (--tmpfs /tmp), or a volume on ${NB_HOME}"
  log "the root file system is read-only: HOME is ${user_home}, whose files are lost when the container stops (save work in ~/work); JupyterLab still opens ${NB_HOME}"
}

# write_nss_entry UID GID: nothing under /etc may change here, so libnss-wrapper serves the entry; `docker exec` misses it.
write_nss_entry() {
  local dir=/tmp/tf29-env-nss-$1 answer
  mkdir -m 700 "${dir}" 2>/dev/null || true
  [[ -d ${dir} && ! -L ${dir} && -O ${dir} ]] ||
    die "${dir} is not a folder of uid $1 (made by another user?): the passwd entry for uid $1 cannot be written; start with a fresh /tmp (--tmpfs /tmp)"
  answer=$(/usr/bin/python3 -I -m tf29image.startup.users nss "${dir}" "$1" "$2" "${cfg_user}" "${cfg_group:-${cfg_user}}" "${user_home}" 2>&1) ||
    die "${answer//$'\n'/ }"
  export LD_PRELOAD="libnss_wrapper.so${LD_PRELOAD:+ ${LD_PRELOAD}}" NSS_WRAPPER_PASSWD=${dir}/passwd NSS_WRAPPER_GROUP=${dir}/group
  log "uid $1 is ${cfg_user} (home ${user_home}): its passwd entry is in ${dir}, served by libnss-wrapper; nothing under /etc is written"
}

# The image's own ~/quickstart is outside the home JupyterLab opens; a copy already there is the user's.
copy_quickstart() {
  local source=/home/${IMAGE_USER}/quickstart target=${HOME}/${QUICKSTART_COPY_NAME} error
  [[ -d ${source} && ${HOME} != "${source%/*}" ]] || return 0
  [[ ! -e ${target} && ! -L ${target} ]] || return 0
  error=$(cp -R -- "${source}" "${target}" 2>&1) || {
    warn "the quickstart notebooks could not be copied to ${target}: ${error//$'\n'/ }"
    return 0
  }
  log "the quickstart notebooks are in ~/${QUICKSTART_COPY_NAME} (copied from the image once; remove the folder to get this image's copy)"
}

# GRANT_SUDO, docker-stacks' passwordless sudo for NB_USER: a start without it takes an earlier grant back.
grant_sudo() {
  if ((!cfg_grant_sudo || cfg_triplet)); then
    rm -f -- "${SUDO_GRANT_FILE}"
    return 0
  fi
  # Written beside the target and renamed over it: sudo never reads a half-written rule.
  printf '%s ALL=(ALL:ALL) NOPASSWD: ALL\n' "${cfg_user}" >"${SUDO_GRANT_FILE}.partial"
  chmod 440 "${SUDO_GRANT_FILE}.partial"
  mv -f -- "${SUDO_GRANT_FILE}.partial" "${SUDO_GRANT_FILE}" # the planner's warning says what this grants
}

# CHOWN_HOME and CHOWN_EXTRA, the only way bind mounts get chowned (the planner has checked them).
chown_requested() {
  local path
  if ((cfg_chown_home)); then
    chown_or_die CHOWN_HOME "${NB_HOME}" "${cfg_chown_home_opts[@]}"
  fi
  for path in "${cfg_chown_extra[@]}"; do
    chown_or_die CHOWN_EXTRA "${path}" "${cfg_chown_extra_opts[@]}"
  done
}

# chown_or_die SETTING PATH [CHOWN_OPTION...]
chown_or_die() {
  local setting=$1 path=$2 output
  shift 2
  output=$(chown "$@" -- "${cfg_ids}" "${path}" 2>&1) ||
    die "${setting}: chown ${*:+$* }${cfg_ids} ${path} failed: ${output//$'\n'/ }"
  [[ -z ${output} ]] || printf '%s\n' "${output}" >&2
  log "${setting}: ${path} is now uid ${cfg_ids%:*}, gid ${cfg_ids#*:}${*:+ (chown $*)}"
}

# Docker makes a missing bind-mount source root:root 755, so every save fails; such an empty folder is
# handed to NB_UID/NB_GID, and anything else the dev user cannot write gets a warning.
check_mounts() {
  local i
  for ((i = 0; i < ${#home_mount_checks[@]}; i += 2)); do # a folder, and 1 where it holds only mount points
    check_mount "${home_mount_checks[i]}" "${home_mount_checks[i + 1]}"
  done
}

# check_mount DIR BARE
check_mount() {
  local dir=$1 bare=$2 owner mode error
  if "${as_user[@]}" test -w "${dir}" -a -x "${dir}"; then return 0; fi
  read -r owner mode < <(stat -c '%u:%g %a' "${dir}") || owner='?' mode='?'
  if ((!is_root)); then
    warn "uid ${EUID} cannot write the mount ${dir} (owner ${owner}, mode ${mode}) and, without root, nothing can be handed over: saving there fails with 'Permission denied'. Fix: on the host, chown -R ${EUID}:$(id -g) the folder, or start as root (no --user) with -e NB_UID=\$(id -u) -e NB_GID=\$(id -g)"
  elif [[ ${owner} == 0:* ]] && ((bare)); then
    if error=$(chown "${cfg_ids}" "${dir}" 2>&1); then
      log "handed ${dir} to uid ${cfg_ids%:*}, gid ${cfg_ids#*:}: it was an empty folder owned by root, as Docker creates a bind-mount source that does not exist yet"
    else
      warn "${cfg_user} cannot write the mount ${dir} (owner ${owner}, mode ${mode}) and it could not be handed over (${error//$'\n'/ }): saving there fails with 'Permission denied'. Fix: on the host, chown ${cfg_ids} the folder"
    fi
  else
    warn "${cfg_user} (uid ${cfg_ids%:*}, gid ${cfg_ids#*:}) cannot write the mount ${dir} (owner ${owner}, mode ${mode}), so saving there fails with 'Permission denied'; it is not an empty folder Docker just made, so it is left as it is. Fix: on the host, chown -R ${cfg_ids} the folder, or, if it is yours, start with -e NB_UID=\$(id -u) -e NB_GID=\$(id -g)"
  fi
}

# A volume on ~/.local keeps the user's packages and settings across containers (docs/packages.md).
# As the dev user (root must not follow the user's links), before the hooks so their writes land there.
prepare_user_state() {
  # Scripts of the user's packages (pip puts them in the user base's bin), after the image's own.
  [[ -n ${PYTHONNOUSERSITE:-} ]] || export PATH="${PATH}:${PYTHONUSERBASE:-${user_home}/.local}/bin"
  mapfile -t user_state_report < <("${as_user[@]}" /usr/bin/python3 -I -m tf29image.startup.userstate start "${user_home}" "${home_folder}" 2>&1 || true)
  # The venv's Python reads settings with Lab's json5 and jsonschema; Apptainer's home is the host's: report only.
  local settings_step=start
  ((!apptainer_mode)) || settings_step=report
  mapfile -t -O "${#user_state_report[@]}" user_state_report < <("${as_user[@]}" /opt/venv/bin/python -I -m tf29image.startup.keptaside "${settings_step}" "${user_home}" 2>&1 || true)
}
