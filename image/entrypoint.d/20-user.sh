# shellcheck shell=bash
# 20-user: make the dev user NB_USER have NB_UID/NB_GID (so files in bind mounts belong to the
# host user), and pick the command prefix that runs things as that user.
# NB_HOME is the home folder in /etc/passwd (JupyterLab's root, where ~/work is); HOME for the dev
# user's processes is user_home, the same folder unless the root file system is read-only.

# plan_user: what fit_user will change, without changing anything, so that 15-privileges can check
# beforehand that it is allowed to. user_refit: /etc/passwd gets NB_UID/NB_GID (and the home
# folder's files follow); user_new_group: NB_GID has no group yet (groupadd); user_join_users: the
# dev user is not in "users" yet (usermod). In the image as built all three are 0, so a start
# with the default ids writes nothing under /etc: that is what lets a read-only root work.
plan_user() {
  user_old_uid=$(id -u "${NB_USER}")
  user_old_gid=$(id -g "${NB_USER}")
  user_refit=0 user_new_group=0 user_join_users=0
  if ((user_old_uid != 10#${NB_UID} || user_old_gid != 10#${NB_GID})); then
    user_refit=1
    getent group "${NB_GID}" >/dev/null || user_new_group=1
  fi
  # In "users" once refitted: as its primary group, or as a listed member.
  local users_gid members
  IFS=: read -r _ _ users_gid members < <(getent group users) || true
  if ((10#${NB_GID} != users_gid)) && [[ ,${members}, != *,"${NB_USER}",* ]]; then
    user_join_users=1
  fi
}

fit_user() {
  if ((!is_root)); then
    # Started with --user UID:GID: no root, so no user changes; keep HOME writable.
    NB_HOME=/home/${NB_USER}
    user_home=${NB_HOME}
    as_user=()
    if [[ ! -w ${NB_HOME} ]]; then
      if on_read_only_fs "${NB_HOME}"; then
        # JupyterLab keeps the home folder as its root (~/work, a volume, is there); only the
        # dotfiles move.
        make_scratch_home
      else
        NB_HOME=/tmp/tf29-env-home-$(id -u)
        user_home=${NB_HOME}
        mkdir -p "${NB_HOME}"
        warn "uid $(id -u) cannot write /home/${NB_USER} (use --user UID:100, the 'users' group); HOME is ${NB_HOME}"
      fi
    fi
    export HOME=${user_home} USER=${NB_USER} LOGNAME=${NB_USER}
    return 0
  fi
  NB_HOME=$(getent passwd "${NB_USER}" | cut -d: -f6)
  plan_user
  local uid=$((10#${NB_UID})) gid=$((10#${NB_GID}))
  if ((user_refit)); then
    ((!user_new_group)) || groupadd --gid "${gid}" "${NB_USER}"
    # Not usermod -u: it would also chown whatever the old uid owns under the home directory,
    # bind-mounted host folders included. Only the image's own files there are changed.
    local passwd
    passwd=$(awk -F: -v OFS=: -v u="${NB_USER}" -v uid="${uid}" -v gid="${gid}" \
      '$1 == u { $3 = uid; $4 = gid } { print }' /etc/passwd)
    printf '%s\n' "${passwd}" >/etc/passwd
    local prune=() mount_point
    while read -r mount_point; do
      prune+=(-path "${mount_point}" -prune -o)
    done < <(awk -v home="${NB_HOME}/" 'index($5 "/", home) == 1 && $5 != home { print $5 }' /proc/self/mountinfo)
    find "${NB_HOME}" -xdev "${prune[@]}" \( -uid "${user_old_uid}" -o -gid "${user_old_gid}" \) \
      -exec chown -h "${uid}:${gid}" {} +
    log "dev user ${NB_USER} is now uid ${NB_UID}, gid ${NB_GID}"
  fi
  # Always in "users" (gid 100), which owns the venv: `pip install` works for any NB_UID/NB_GID.
  # Only when not yet: usermod rewrites /etc/group and /etc/gshadow even when nothing changes.
  ((!user_join_users)) || usermod -a -G users "${NB_USER}"
  as_user=(setpriv "--reuid=${uid}" "--regid=${gid}" --init-groups)
  user_home=${NB_HOME}
  ! on_read_only_fs "${NB_HOME}" || make_scratch_home
  as_user+=(env "HOME=${user_home}" "USER=${NB_USER}" "LOGNAME=${NB_USER}")
}

# make_scratch_home: the home folder is on a read-only root file system (--read-only), and
# JupyterLab, IPython and matplotlib write their settings and caches under HOME; so HOME moves to
# /tmp (a tmpfs there: 15-privileges has checked that it is writable). Made by the dev user
# itself (as_user without its env, when root), so that no chown, and no CAP_CHOWN, is needed.
make_scratch_home() {
  local uid=${EUID}
  ((!is_root)) || uid=$((10#${NB_UID}))
  user_home=/tmp/tf29-env-home-${uid}
  "${as_user[@]}" mkdir -p -m 700 "${user_home}" 2>/dev/null ||
    die "HOME: ${NB_HOME} is on a read-only file system and ${user_home} cannot be made: mount a tmpfs on /tmp (--tmpfs /tmp), or a volume on ${NB_HOME}"
  log "the root file system is read-only: HOME is ${user_home}, whose files are lost when the container stops (save work in ~/work); JupyterLab still opens ${NB_HOME}"
}

# A command given to `docker run IMAGE CMD...` runs as the dev user, in the same environment.
exec_command() {
  exec "${as_user[@]}" "$@"
}
