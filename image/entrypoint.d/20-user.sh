# shellcheck shell=bash
# 20-user: the dev user, fitted to NB_UID/NB_GID so that files in bind mounts belong to the host user.
# NB_HOME is passwd's home (JupyterLab's root), user_home is HOME, as_user runs as the user (all planned).

# A restart must find the renamed user again, not take another user of that name for it.
readonly RENAMED_USER_FILE=/etc/tf29-env/dev-user
readonly QUICKSTART_COPY_NAME=tf29-env-quickstart
readonly USERS_PY=/opt/tf29-env/startup/users.py

fit_user() {
  if ((!is_root)); then
    fit_user_without_root
    return 0
  fi
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
    usermod --login "${NB_USER}" --home "${NB_HOME}" "${user_from}"
    printf '%s\n' "${NB_USER}" >"${RENAMED_USER_FILE}"
    make_home "${user_old_home}" "${NB_HOME}" move
    log "dev user ${user_from} is now ${NB_USER}, home ${NB_HOME}"
  fi
  if ((user_group_rename)); then
    local entry
    entry=$(getent group "${cfg_ids#*:}")
    groupmod --new-name "${cfg_group}" "${entry%%:*}"
    log "group ${cfg_ids#*:} is now ${cfg_group} (NB_GROUP)"
  fi
  if ((user_refit)); then
    ((!user_new_group)) || groupadd --gid "${cfg_ids#*:}" "${cfg_group:-${NB_USER}}"
    # Not usermod -u: it would also chown the bind-mounted host folders under the home.
    local passwd
    passwd=$(awk -F: -v OFS=: -v u="${NB_USER}" -v uid="${cfg_ids%:*}" -v gid="${cfg_ids#*:}" \
      '$1 == u { $3 = uid; $4 = gid } { print }' /etc/passwd)
    printf '%s\n' "${passwd}" >/etc/passwd
    # Mounts below are pruned (home_prune), so bind-mounted host folders keep their owners.
    find "${NB_HOME}" -xdev "${home_prune[@]}" \( -uid "${user_old_uid}" -o -gid "${user_old_gid}" \) -exec chown -h "${cfg_ids}" {} +
    log "dev user ${NB_USER} is now uid ${NB_UID}, gid ${NB_GID}"
  fi
  # "users" owns the venv, for pip install; only when needed, as usermod rewrites /etc/group regardless.
  ((!user_join_users)) || usermod -a -G users "${NB_USER}"
  [[ ${user_home} == "${NB_HOME}" ]] || make_scratch_home # a read-only file system
}

# A folder mounted at NEW is the user's own: nothing is copied into it or chowned (home_copy is empty).
# NEW stays root's until complete: root with minimal capabilities (no DAC_OVERRIDE, no FSETID) may not
# write the user's folders.
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

# Nothing under /etc changes: the planner has said why NB_HOME is not home_folder, and whether passwd
# lacks the uid, so that libnss-wrapper serves it (cfg_nss_entry). Apptainer's HOME is the host's.
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

# Nothing under /etc may change here, so libnss-wrapper serves the entry; `docker exec` misses it.
write_nss_entry() {
  local dir=/tmp/tf29-env-nss-$1 answer
  mkdir -m 700 "${dir}" 2>/dev/null || true
  [[ -d ${dir} && ! -L ${dir} && -O ${dir} ]] ||
    die "${dir} is not a folder of uid $1 (made by another user?): the passwd entry for uid $1 cannot be written; start with a fresh /tmp (--tmpfs /tmp)"
  answer=$(/usr/bin/python3 -I "${USERS_PY}" nss "${dir}" "$1" "$2" "${NB_USER}" "${cfg_group:-${NB_USER}}" "${user_home}" 2>&1) ||
    die "${answer//$'\n'/ }"
  export LD_PRELOAD="libnss_wrapper.so${LD_PRELOAD:+ ${LD_PRELOAD}}" NSS_WRAPPER_PASSWD=${dir}/passwd NSS_WRAPPER_GROUP=${dir}/group
  log "uid $1 is ${NB_USER} (home ${user_home}): its passwd entry is in ${dir}, served by libnss-wrapper; nothing under /etc is written"
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
