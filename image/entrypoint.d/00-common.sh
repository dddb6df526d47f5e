# shellcheck shell=bash
# 00-common: logging and small helpers shared by the other pieces; it defines, it runs nothing.

log() { printf 'tf29-env: %s\n' "$*" >&2; }
warn() { printf 'tf29-env: WARNING: %s\n' "$*" >&2; }

# Each line is a note, or a warning where it starts "WARNING: " (the planner's and userstate.py's lines).
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

readonly USERS_PY=/opt/tf29-env/startup/users.py
readonly APPTAINER_PY=/opt/tf29-env/startup/apptainer.py
readonly ENVIRON_PY=/opt/tf29-env/startup/environ.py

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
