# shellcheck shell=bash
# 25-mounts: Docker makes a missing bind-mount source root:root 755, so every save fails; such an empty
# folder is handed to NB_UID/NB_GID, and anything else the dev user cannot write gets a warning.

check_mounts() {
  local i
  for ((i = 0; i < ${#home_mount_checks[@]}; i += 2)); do # a folder, and 1 where it holds only mount points
    check_mount "${home_mount_checks[i]}" "${home_mount_checks[i + 1]}"
  done
}

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
      warn "${NB_USER} cannot write the mount ${dir} (owner ${owner}, mode ${mode}) and it could not be handed over (${error//$'\n'/ }): saving there fails with 'Permission denied'. Fix: on the host, chown ${cfg_ids} the folder"
    fi
  else
    warn "${NB_USER} (uid ${cfg_ids%:*}, gid ${cfg_ids#*:}) cannot write the mount ${dir} (owner ${owner}, mode ${mode}), so saving there fails with 'Permission denied'; it is not an empty folder Docker just made, so it is left as it is. Fix: on the host, chown -R ${cfg_ids} the folder, or, if it is yours, start with -e NB_UID=\$(id -u) -e NB_GID=\$(id -g)"
  fi
}
