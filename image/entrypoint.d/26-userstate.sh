# shellcheck shell=bash
# 26-userstate: a volume on ~/.local keeps the user's packages and settings across containers (docs/packages.md).
# As the dev user (root must not follow the user's links), before the hooks so their writes land there.

readonly USERSTATE_PY=/opt/tf29-env/startup/userstate.py
user_state_report=()

prepare_user_state() {
  # Scripts of the user's packages (pip puts them in the user base's bin), after the image's own.
  [[ -n ${PYTHONNOUSERSITE:-} ]] || export PATH="${PATH}:${PYTHONUSERBASE:-${user_home}/.local}/bin"
  mapfile -t user_state_report < <("${as_user[@]}" /usr/bin/python3 -I "${USERSTATE_PY}" start "${user_home}" "${home_folder}" 2>&1 || true)
}
