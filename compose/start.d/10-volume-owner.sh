# shellcheck shell=bash
# Sourced by the entrypoint as root, after it fitted the dev user to NB_UID/NB_GID and before any
# service starts. A fresh named volume on a directory the image lacks belongs to root, and one on
# ~/work, ~/.nv or ~/.local keeps the image's uid 1000: either way the member could not write the
# top of their own volume. Only the top directory is changed, never what the member keeps inside it,
# and never through a link: the member may replace a folder that is not a mount with a link (to /etc,
# say), which root must not follow.
# Every *.sh here is sourced for every member: team-wide hooks can sit beside this one.

if ((EUID == 0)); then
  for tf29_volume_dir in "${NB_HOME}/work" "${NB_HOME}/.nv" "${NB_HOME}/.local"; do
    if [[ -d ${tf29_volume_dir} && ! -L ${tf29_volume_dir} ]] &&
      [[ $(stat -c %u:%g "${tf29_volume_dir}") != "$((10#${NB_UID})):$((10#${NB_GID}))" ]]; then
      chown -h "$((10#${NB_UID})):$((10#${NB_GID}))" "${tf29_volume_dir}"
      log "volume ${tf29_volume_dir} now belongs to uid ${NB_UID}, gid ${NB_GID}"
    fi
  done
  unset tf29_volume_dir
fi
