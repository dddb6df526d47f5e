#!/usr/bin/env bash
# Prepare a Debian or Ubuntu host (as root) to build, run and test tf29-env: the Docker engine,
# debootstrap (for the stand-in base), docker-compose, make, an SSH client and Python's venv.
# Starts dockerd when no engine answers; if it had to start it by hand (no systemd), it records
# the pid in /run/tf29-env-dockerd.pid so that the caller can stop it again (.ci/run does).
set -euo pipefail

readonly PID_FILE=/run/tf29-env-dockerd.pid
readonly DOCKERD_LOG=/var/log/tf29-env-dockerd.log

die() {
  printf 'host-setup: ERROR: %s\n' "$*" >&2
  exit 1
}

((EUID == 0)) || die "run as root (sudo $0): it installs packages and starts dockerd"
command -v apt-get >/dev/null || die "this script knows Debian/Ubuntu (apt-get) only; install Docker Engine, debootstrap, docker-compose, make and python3-venv yourself"

# command -> the Debian package that provides it
declare -A wanted=(
  [dockerd]=docker.io
  [debootstrap]=debootstrap
  [docker-compose]=docker-compose
  [make]=make
  [ssh-keygen]=openssh-client
  [shellcheck]=shellcheck
)
missing=()
for cmd in "${!wanted[@]}"; do
  command -v "${cmd}" >/dev/null || missing+=("${wanted[${cmd}]}")
done
python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
if ((${#missing[@]} > 0)); then
  echo "host-setup: installing ${missing[*]}"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi

if docker info >/dev/null 2>&1; then
  echo "host-setup: the Docker engine answers"
  exit 0
fi
if [[ -d /run/systemd/system ]]; then
  systemctl start docker
else
  echo "host-setup: starting dockerd (log: ${DOCKERD_LOG})"
  nohup dockerd >"${DOCKERD_LOG}" 2>&1 &
  echo $! >"${PID_FILE}"
fi
for _ in $(seq 60); do
  docker info >/dev/null 2>&1 && { echo "host-setup: the Docker engine answers"; exit 0; }
  sleep 1
done
die "the Docker engine did not start within 60 s: see ${DOCKERD_LOG} (or journalctl -u docker)"
