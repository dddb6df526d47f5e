# shellcheck shell=bash
# 26-userstate: the dev user's own packages, environments and settings outlive the container
# (docs/packages.md). Where a volume is mounted at ~/.local, startup/userstate.py links the user's
# settings in the home folder (~/.jupyter, ~/.gitconfig, ~/envs, ...) into it and keeps the image's
# dotfiles there until the user changes them; it makes the user site that the venv reads after its
# own packages (usersite/tf29env_usersite.py) and reports user packages built for an older image.
# It runs as the dev user, never as root: the folder is the user's, and root must not follow links
# that the user made. Before the start hooks, so that what a hook writes in the home lands where
# the user's own copy is kept. A failure here is a warning line, never a failed start.

readonly USERSTATE_PY=/opt/tf29-env/startup/userstate.py
user_state_report=()

prepare_user_state() {
  local folder=${NB_HOME}
  ((is_root)) || folder=${home_folder}
  # Scripts of the user's packages (pip puts them in the user base's bin), after the image's own.
  [[ -n ${PYTHONNOUSERSITE:-} ]] || export PATH="${PATH}:${PYTHONUSERBASE:-${user_home}/.local}/bin"
  mapfile -t user_state_report < <("${as_user[@]}" /usr/bin/python3 -I "${USERSTATE_PY}" start "${user_home}" "${folder}" 2>&1 || true)
}

