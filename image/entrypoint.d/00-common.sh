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

readonly APPTAINER_PY=/opt/tf29-env/startup/apptainer.py
readonly ENVIRON_PY=/opt/tf29-env/startup/environ.py
