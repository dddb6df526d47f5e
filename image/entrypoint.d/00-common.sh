# shellcheck shell=bash
# 00-common: logging and small helpers shared by the other pieces; it defines, it runs nothing.

log() { printf 'tf29-env: %s\n' "$*" >&2; }
warn() { printf 'tf29-env: WARNING: %s\n' "$*" >&2; }

# One line naming the problem, exit 2, before anything was started.
die() {
  printf 'tf29-env: ERROR: %s\n' "$*" >&2
  exit 2
}

# on_read_only_fs PATH: PATH lies on a file system mounted read-only (`docker run --read-only`, a
# read-only volume), not merely one the caller lacks permission for. The mount on top whose
# mount point is the longest prefix of PATH decides (the plan's mounts: point, options, ...).
on_read_only_fs() {
  local i point best=-1 options=""
  for ((i = 0; i < ${#mounts[@]}; i += 2)); do
    point=${mounts[i]}
    if [[ $1 == "${point}" || $1 == "${point%/}/"* ]] && ((${#point} >= best)); then
      best=${#point} options=${mounts[i + 1]}
    fi
  done
  [[ ,${options}, == *,ro,* ]]
}

# is_mount_point DIR: something is mounted at DIR itself.
is_mount_point() {
  local i
  for ((i = 0; i < ${#mounts[@]}; i += 2)); do
    [[ ${mounts[i]} != "$1" ]] || return 0
  done
  return 1
}

# mount_points_under DIR: the mount points at or below DIR, one a line, in mountinfo's order.
mount_points_under() {
  local i
  for ((i = 0; i < ${#mounts[@]}; i += 2)); do
    [[ ${mounts[i]} != "$1" && ${mounts[i]} != "${1%/}/"* ]] || printf '%s\n' "${mounts[i]}"
  done
}

# The image-side helper that writes passwd/group copies (20-user).
readonly USERS_PY=/opt/tf29-env/startup/users.py
# The Apptainer mode's helper: the port on a shared node, the hub's port report, the tunnel line.
readonly APPTAINER_PY=/opt/tf29-env/startup/apptainer.py

# why_not_writable PATH: " (read-only file system)", or " for uid N (owner U:G, mode M)".
why_not_writable() {
  if on_read_only_fs "$1"; then
    printf ' (read-only file system)'
  else
    printf ' for uid %s (%s)' "${EUID}" "$(stat -c 'owner %u:%g, mode %a' "$1" 2>/dev/null || echo missing)"
  fi
}

# write_nss_entry UID GID: passwd and group copies with NB_USER (and NB_GROUP, or NB_USER, for a gid
# without a group) in a folder of the uid's own under /tmp, served by libnss-wrapper to every process
# started from here on (LD_PRELOAD). `docker exec` sessions start elsewhere and see /etc/passwd only.
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
