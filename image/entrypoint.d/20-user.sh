# shellcheck shell=bash
# 20-user: make the dev user NB_USER have NB_UID/NB_GID (so files in bind mounts belong to the
# host user), and pick the command prefix that runs things as that user.

fit_user() {
  if ((!is_root)); then
    # Started with --user UID:GID: no root, so no user changes; keep HOME writable.
    NB_HOME=/home/${NB_USER}
    if [[ ! -w ${NB_HOME} ]]; then
      NB_HOME=/tmp/tf29-env-home-$(id -u)
      mkdir -p "${NB_HOME}"
      warn "uid $(id -u) cannot write /home/${NB_USER} (use --user UID:100, the 'users' group); HOME is ${NB_HOME}"
    fi
    export HOME=${NB_HOME} USER=${NB_USER} LOGNAME=${NB_USER}
    as_user=()
    return 0
  fi
  NB_HOME=$(getent passwd "${NB_USER}" | cut -d: -f6)
  local old_uid old_gid
  old_uid=$(id -u "${NB_USER}")
  old_gid=$(id -g "${NB_USER}")
  if ((old_uid != 10#${NB_UID} || old_gid != 10#${NB_GID})); then
    getent group "${NB_GID}" >/dev/null || groupadd --gid "${NB_GID}" "${NB_USER}"
    # Not usermod -u: it would also chown whatever the old uid owns under the home directory,
    # bind-mounted host folders included. Only the image's own files there are changed.
    local passwd
    passwd=$(awk -F: -v OFS=: -v u="${NB_USER}" -v uid="$((10#${NB_UID}))" -v gid="$((10#${NB_GID}))" \
      '$1 == u { $3 = uid; $4 = gid } { print }' /etc/passwd)
    printf '%s\n' "${passwd}" >/etc/passwd
    local prune=() mount_point
    while read -r mount_point; do
      prune+=(-path "${mount_point}" -prune -o)
    done < <(awk -v home="${NB_HOME}/" 'index($5 "/", home) == 1 && $5 != home { print $5 }' /proc/self/mountinfo)
    find "${NB_HOME}" -xdev "${prune[@]}" \( -uid "${old_uid}" -o -gid "${old_gid}" \) \
      -exec chown -h "$((10#${NB_UID})):$((10#${NB_GID}))" {} +
    log "dev user ${NB_USER} is now uid ${NB_UID}, gid ${NB_GID}"
  fi
  # Always in "users" (gid 100), which owns the venv: `pip install` works for any NB_UID/NB_GID.
  usermod -a -G users "${NB_USER}"
  as_user=(setpriv "--reuid=${NB_UID}" "--regid=${NB_GID}" --init-groups
    env "HOME=${NB_HOME}" "USER=${NB_USER}" "LOGNAME=${NB_USER}")
}

# A command given to `docker run IMAGE CMD...` runs as the dev user, in the same environment.
exec_command() {
  exec "${as_user[@]}" "$@"
}
