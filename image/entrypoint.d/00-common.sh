# shellcheck shell=bash
# 00-common: logging, the run directory, and small helpers shared by the other pieces.

log() { printf 'tf29-env: %s\n' "$*" >&2; }
warn() { printf 'tf29-env: WARNING: %s\n' "$*" >&2; }

# One line naming the problem, exit 2, before anything was started.
die() {
  printf 'tf29-env: ERROR: %s\n' "$*" >&2
  exit 2
}

# The run directory: runtime state that the healthcheck and the self-check read too. Its path has
# one home, the Dockerfile's `ENV TFENV_RUN_DIR`; every reader takes it from the environment
# (docker exec and Kubernetes exec probes get the image's ENV as well), none has a default of its
# own that could drift. So a missing one is a broken image or an empty override: say so now, not
# as a failed write halfway through the start.
[[ -n ${TFENV_RUN_DIR:-} ]] ||
  die "TFENV_RUN_DIR is not set: the image's ENV sets it; do not override it with an empty value"
# The Apptainer mode (13-apptainer): Apptainer (formerly Singularity) sets one of these in every
# container it runs, as the calling user, with a read-only image and the host's home and network.
apptainer_mode=0
[[ -z ${APPTAINER_CONTAINER:-}${SINGULARITY_CONTAINER:-} ]] || apptainer_mode=1
readonly apptainer_mode
# Where the image's run directory cannot be written (Apptainer's read-only image, or `docker run
# --read-only --tmpfs /run --user UID`, whose /run is root's), the run directory is a folder of this
# run's own under TMPDIR or /tmp, made and removed at the end by 15-privileges (make_run_dir): one
# per run, as under Apptainer /tmp is the node's, shared with other users' servers. Root keeps the
# image's (sshd needs /run anyway). The name is paired with per_run_dir in healthchecks/healthcheck.py.
readonly IMAGE_RUN_DIR=${TFENV_RUN_DIR}
run_dir_per_run=0
image_run_parent=${IMAGE_RUN_DIR%/*}
if ((apptainer_mode)) || {
  ((EUID != 0)) && ! [[ -d ${IMAGE_RUN_DIR} && -w ${IMAGE_RUN_DIR} ]] &&
    ! [[ ! -e ${IMAGE_RUN_DIR} && -w ${image_run_parent:-/} ]]
}; then
  run_dir_per_run=1
  per_run_parent=${TMPDIR:-/tmp}
  [[ ${per_run_parent} == /?* ]] || per_run_parent=/tmp
  # Jupyter's runtime files follow, unless -e moved them elsewhere.
  [[ ${JUPYTER_RUNTIME_DIR:-} != "${IMAGE_RUN_DIR}/jupyter" ]] || JUPYTER_RUNTIME_DIR=""
  export TFENV_RUN_DIR=${per_run_parent%/}/tf29-env-${EUID}-$$
fi
readonly run_dir_per_run
readonly RUN_DIR=${TFENV_RUN_DIR}

# What lives in RUN_DIR, each named here once for the shell side. The Python side spells a name
# again only where it must find the file without the entrypoint's help (a probe, a run by hand);
# those places say "paired with entrypoint.d/00-common.sh".
# The services the healthcheck must find answering, one a line: "jupyter RUNTIME_DIR", "ssh PORT";
# written by write_services (48), read by healthchecks/healthcheck.py (paired).
readonly SERVICES_FILE=${RUN_DIR}/services
# The last self-check report: the start-up run is given it as --output (60); a run by hand writes
# the same file by default (selfcheck/cli.py, paired).
readonly SELFCHECK_REPORT=${RUN_DIR}/selfcheck.json
# Jupyter's runtime files (jpserver-PID.json: its port and base_url). JUPYTER_RUNTIME_DIR is
# Jupyter's own variable, which the image's ENV points here too, so that `docker exec ... jupyter
# server list` finds the server; -e may move it (empty counts as unset). Fixed from here on, so that
# Jupyter, the healthcheck (told through SERVICES_FILE) and SSH sessions agree: a hook cannot move it.
[[ -n ${JUPYTER_RUNTIME_DIR:-} ]] || JUPYTER_RUNTIME_DIR=${RUN_DIR}/jupyter
readonly JUPYTER_RUNTIME_DIR
export JUPYTER_RUNTIME_DIR

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

# The dev user as built: the Dockerfile's NB_USER, which the image's ENV keeps in TFENV_IMAGE_USER
# (NB_USER itself is the user's to override).
[[ -n ${TFENV_IMAGE_USER:-} ]] ||
  die "TFENV_IMAGE_USER is not set: the image's ENV sets it; do not override it with an empty value"
readonly IMAGE_USER=${TFENV_IMAGE_USER}
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
