# shellcheck shell=bash
# 15-privileges: hardened runtimes (Kubernetes' restricted pod security, --cap-drop ALL,
# --read-only) take away what later steps need. What each step needs is checked here, before
# anything starts, and what is missing stops the start with one line naming the capability or the
# path and the fix (exit 2), instead of a raw error halfway through ("usermod: cannot lock
# /etc/passwd", exit 1) or a container that never turns healthy. README's "Security" lists the modes.

# The capabilities some step needs, with their bits in /proc/PID/status (linux/capability.h).
declare -rA CAP_BITS=([CHOWN]=0 [DAC_OVERRIDE]=1 [DAC_READ_SEARCH]=2 [FOWNER]=3 [KILL]=5
  [SETGID]=6 [SETUID]=7 [NET_BIND_SERVICE]=10 [SYS_CHROOT]=18 [AUDIT_WRITE]=29)

# check_run_dir: the run directory is a writable folder; only in service mode, as the command mode
# never writes it. With `--tmpfs /run` it is empty, so it is made here, mode 1777 like the image's
# own (the dev user writes the self-check report there). A tmpfs on /run takes the mode of the
# image's /run (root's, 755), so without root only a tmpfs on the run directory itself will do.
check_run_dir() {
  if ((run_dir_per_run)); then
    make_run_dir # 07-apptainer: this run's own, under TMPDIR or /tmp
    return 0
  fi
  if [[ ! -e ${RUN_DIR} ]]; then
    local parent=${RUN_DIR%/*}
    mkdir -m 1777 "${RUN_DIR}" 2>/dev/null ||
      die "TFENV_RUN_DIR=${RUN_DIR} does not exist and cannot be made: ${parent:-/} is not writable$(why_not_writable "${parent:-/}"); mount a tmpfs on ${RUN_DIR} itself (--tmpfs ${RUN_DIR}: it keeps the image's mode 1777)"
  fi
  [[ -d ${RUN_DIR} && -w ${RUN_DIR} ]] ||
    die "TFENV_RUN_DIR=${RUN_DIR} is not a writable folder$(why_not_writable "${RUN_DIR}"): mount a tmpfs on it (--tmpfs ${RUN_DIR})"
}

# check_privileges: after the settings are read (startup/plan.py has checked their lengths, the ports
# and the host key folder), what the start they ask for needs: the run directory (services and hub
# mode), and of root the files it rewrites and the capabilities.
check_privileges() {
  local service_mode=1 jupyter=0 ssh=0
  [[ ${cfg_mode} != command ]] || service_mode=0
  ((!service_mode)) || check_run_dir
  ((is_root)) || return 0 # without root, nothing below is attempted
  ((service_mode && cfg_jupyter)) && jupyter=1
  ((service_mode && cfg_ssh)) && [[ -n ${cfg_ssh_keys} ]] && ssh=1

  plan_user
  if ((user_refit)); then
    writable_or_die /etc/passwd "NB_UID=${NB_UID}/NB_GID=${NB_GID} means rewriting /etc/passwd (${NB_USER} is ${user_old_uid}/${user_old_gid} as built)" \
      "use NB_UID/NB_GID as built, or a writable root file system"
  fi
  if ((user_new_group || user_join_users)); then
    writable_or_die /etc/group "NB_GID=${NB_GID} means rewriting /etc/group" \
      "use NB_GID as built (${user_old_gid}), or a writable root file system"
  fi
  if ((user_rename)); then
    local why="NB_USER=${NB_USER} means renaming ${user_from} in /etc/passwd and /etc/shadow and a home folder /home/${NB_USER}"
    writable_or_die /etc/passwd "${why}" "use NB_USER as built (${IMAGE_USER}), or a writable root file system"
    writable_or_die /etc/shadow "${why}" "use NB_USER as built (${IMAGE_USER}), or a writable root file system"
    writable_or_die "/home/${NB_USER}" "${why}" "use NB_USER as built (${IMAGE_USER}), or a writable root file system"
  fi
  if ((user_group_rename)); then
    writable_or_die /etc/group "NB_GROUP=${cfg_group} means renaming group ${NB_GID} in /etc/group" \
      "leave NB_GROUP unset, or a writable root file system"
  fi
  if ((cfg_triplet)); then
    writable_or_die /home/root "NB_USER=root NB_UID=0 NB_GID=0 means a home folder /home/root" \
      "a writable root file system, or a volume on /home/root"
  fi
  # chown fails on a read-only file system (--read-only, a :ro mount) whatever the capabilities.
  local home=/home/${NB_USER} path
  ((!cfg_triplet)) || home=/home/root
  if ((cfg_chown_home)) && on_read_only_fs "${home}"; then
    die "CHOWN_HOME=${CHOWN_HOME}, but ${home} is on a read-only file system: drop CHOWN_HOME, or mount a volume there"
  fi
  for path in "${cfg_chown_extra[@]}"; do
    ! on_read_only_fs "${path}" || die "CHOWN_EXTRA: ${path} is on a read-only file system (a :ro mount?): drop it from CHOWN_EXTRA"
  done
  if ((cfg_grant_sudo && !cfg_triplet)); then
    writable_or_die /etc/sudoers.d "GRANT_SUDO=${GRANT_SUDO} means a rule in /etc/sudoers.d" "a writable root file system"
  fi
  if ((ssh)); then
    writable_or_die "${SSHD_DIR}" "SSH needs ${SSHD_DIR} and /run/sshd" "mount a tmpfs on /run (--tmpfs /run), or ENABLE_SSH=0"
    writable_or_die /run/sshd "SSH needs ${SSHD_DIR} and /run/sshd" "mount a tmpfs on /run (--tmpfs /run), or ENABLE_SSH=0"
    # 40-ssh makes it when a base image lacks it.
    [[ -e /var/log/lastlog ]] || writable_or_die /var/log/lastlog "sshd keeps its login records in /var/log/lastlog" \
      "a writable root file system, or ENABLE_SSH=0"
  fi

  local key value
  caps_effective=0 caps_missing=()
  while read -r key value; do
    if [[ ${key} == CapEff: ]]; then caps_effective=$((16#${value})); fi
  done </proc/self/status
  if ((service_mode)); then
    need_cap SETUID "to run JupyterLab and the self-check as ${NB_USER}"
    need_cap SETGID "to run JupyterLab and the self-check as ${NB_USER}"
  else
    need_cap SETUID "to run the command as ${NB_USER}"
    need_cap SETGID "to run the command as ${NB_USER}"
  fi
  need_cap KILL "to pass docker stop's signal on to ${NB_USER}'s processes"
  ((!user_refit)) || need_cap CHOWN "for NB_UID=${NB_UID}/NB_GID=${NB_GID}: ${NB_USER}'s files follow the new ids"
  ((!user_new_group && !user_join_users)) || need_cap CHOWN "for NB_GID=${NB_GID}: groupadd and usermod write /etc/gshadow"
  ((!user_rename)) || need_cap CHOWN "for NB_USER=${NB_USER}: usermod writes /etc/shadow, the home folder's files keep their owner"
  ((!user_group_rename)) || need_cap CHOWN "for NB_GROUP=${cfg_group}: groupmod writes /etc/gshadow"
  ((!cfg_chown_home && ${#cfg_chown_extra[@]} == 0)) || need_cap CHOWN "for CHOWN_HOME/CHOWN_EXTRA"
  if ((jupyter)); then
    need_cap CHOWN "to hand JupyterLab's runtime directory to ${NB_USER}"
    need_cap FOWNER "to set the mode of JupyterLab's runtime directory, once it is ${NB_USER}'s"
    need_cap DAC_READ_SEARCH "for the healthcheck, run as root, to read JupyterLab's runtime file in ${NB_USER}'s private runtime directory"
  fi
  if ((ssh)); then
    need_cap SYS_CHROOT "for sshd's privilege separation"
    need_cap CHOWN "for sshd to hand a login's terminal to ${NB_USER}"
    need_cap AUDIT_WRITE "for sshd's login records of terminal sessions"
    if ((10#${SSH_PORT} < cfg_unprivileged_ports)); then
      need_cap NET_BIND_SERVICE "for sshd to listen on SSH_PORT=${SSH_PORT}, below ${cfg_unprivileged_ports} (net.ipv4.ip_unprivileged_port_start; or use SSH_PORT=2222)"
    fi
  fi
  if ((${#caps_missing[@]} > 0)); then
    # Names that share a reason are listed together: "SETUID, SETGID (to run ...)".
    local missing="" i
    for ((i = 0; i < ${#caps_missing[@]}; i += 2)); do
      missing+=${caps_missing[i]}
      if ((i + 2 < ${#caps_missing[@]})) && [[ ${caps_missing[i + 3]} == "${caps_missing[i + 1]}" ]]; then
        missing+=", "
      else
        missing+=" (${caps_missing[i + 1]}); "
      fi
    done
    die "missing capabilities: ${missing%; }. Add them (--cap-add; README 'Security' lists the minimal set), or start without root (--user ${NB_UID}:100, no SSH)"
  fi
}

# need_cap NAME REASON: note NAME as missing (once, with the first reason) unless it is effective;
# caps_missing holds name, reason, name, reason, ... DAC_OVERRIDE allows all DAC_READ_SEARCH does.
need_cap() {
  local i
  if ((caps_effective >> CAP_BITS[$1] & 1)); then return 0; fi
  if [[ $1 == DAC_READ_SEARCH ]] && ((caps_effective >> CAP_BITS[DAC_OVERRIDE] & 1)); then return 0; fi
  for ((i = 0; i < ${#caps_missing[@]}; i += 2)); do
    [[ ${caps_missing[i]} != "$1" ]] || return 0
  done
  caps_missing+=("$1" "$2")
}

# writable_or_die PATH WHY FIX: PATH (or, where it does not exist yet, the nearest folder above it,
# where it would be made) is writable; else one line: WHY, what stands in the way, FIX.
writable_or_die() {
  local path=$1
  while [[ ! -e ${path} && ${path} == /?* ]]; do path=${path%/*}; done
  [[ -n ${path} ]] || path=/
  [[ -w ${path} ]] || die "$2, but ${path} is not writable$(why_not_writable "${path}"): $3"
}

# why_not_writable PATH: " (read-only file system)", or " for uid N (owner U:G, mode M)".
why_not_writable() {
  if on_read_only_fs "$1"; then
    printf ' (read-only file system)'
  else
    printf ' for uid %s (%s)' "${EUID}" "$(stat -c 'owner %u:%g, mode %a' "$1" 2>/dev/null || echo missing)"
  fi
}
