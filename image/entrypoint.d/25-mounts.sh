# shellcheck shell=bash
# 25-mounts: Docker makes a missing bind-mount source root:root 755, so every save fails; such an empty
# folder is handed to NB_UID/NB_GID, and anything else the dev user cannot write gets a warning.

check_mounts() {
  local mount_point
  for mount_point in "${home_rw_mounts[@]}"; do
    check_mount "${mount_point}"
  done
}

check_mount() {
  local dir=$1 owner mode uid=$((10#${NB_UID})) gid=$((10#${NB_GID})) error
  local ids=${uid}:${gid}
  [[ -d ${dir} && ! -L ${dir} ]] || return 0
  if ((!is_root)) && [[ ${dir} == "${home_folder}" ]]; then return 0; fi # fit_user has warned already
  if "${as_user[@]}" test -w "${dir}" -a -x "${dir}"; then return 0; fi
  read -r owner mode < <(stat -c '%u:%g %a' "${dir}") || owner='?' mode='?'
  if ((!is_root)); then
    warn "uid ${EUID} cannot write the mount ${dir} (owner ${owner}, mode ${mode}) and, without root, nothing can be handed over: saving there fails with 'Permission denied'. Fix: on the host, chown -R ${EUID}:$(id -g) the folder, or start as root (no --user) with -e NB_UID=\$(id -u) -e NB_GID=\$(id -g)"
  elif [[ ${owner} == 0:* ]] && holds_only_mount_points "${dir}"; then
    if error=$(chown "${ids}" "${dir}" 2>&1); then
      log "handed ${dir} to uid ${uid}, gid ${gid}: it was an empty folder owned by root, as Docker creates a bind-mount source that does not exist yet"
    else
      warn "${NB_USER} cannot write the mount ${dir} (owner ${owner}, mode ${mode}) and it could not be handed over (${error//$'\n'/ }): saving there fails with 'Permission denied'. Fix: on the host, chown ${ids} the folder"
    fi
  else
    warn "${NB_USER} (uid ${uid}, gid ${gid}) cannot write the mount ${dir} (owner ${owner}, mode ${mode}), so saving there fails with 'Permission denied'; it is not an empty folder Docker just made, so it is left as it is. Fix: on the host, chown -R ${ids} the folder, or, if it is yours, start with -e NB_UID=\$(id -u) -e NB_GID=\$(id -g)"
  fi
}

# A second -v inside the first makes Docker create root's empty mount points in it.
holds_only_mount_points() {
  local entry point
  while IFS= read -r -d '' entry; do
    for point in "${home_mounts[@]}"; do
      [[ ${point} != "${entry}" ]] || continue 2
    done
    return 1
  done < <(find "$1" -mindepth 1 -maxdepth 1 -print0)
  return 0
}
