#!/usr/bin/env bash
# Prepare a Debian or Ubuntu host to build, run and test tf29-env: the Docker engine, debootstrap
# (for the stand-in base), both compose implementations (Debian 12's docker-compose 1.29 and the
# `docker compose` v2 plugin), the buildx plugin (BuildKit), a local registry for build.py's push
# tests, make, an SSH client, shellcheck and Python's venv. Run it as root; a user with sudo can
# run it as is: it runs itself again through sudo.
# Starts dockerd when no engine answers; if it had to start it by hand (no systemd), it records
# the pid in /run/tf29-env-dockerd.pid so that the caller can stop it again (.ci/run does).
set -euo pipefail

readonly PID_FILE=/run/tf29-env-dockerd.pid
readonly DOCKERD_LOG=/var/log/tf29-env-dockerd.log

die() {
  printf 'host-setup: ERROR: %s\n' "$*" >&2
  exit 1
}

if ((EUID != 0)); then
  command -v sudo >/dev/null || die "run as root: it installs packages and starts dockerd (and sudo is not installed)"
  echo "host-setup: not root: running again through sudo"
  exec sudo -- "$0" "$@"
fi
command -v apt-get >/dev/null || die "this script knows Debian/Ubuntu (apt-get) only; install Docker Engine, debootstrap, docker-compose, make and python3-venv yourself"

# command -> the Debian package that provides it
declare -A wanted=(
  [dockerd]=docker.io
  [debootstrap]=debootstrap
  [docker-compose]=docker-compose
  [docker-registry]=docker-registry
  # tests/image/test_custom_op.py builds a custom op against the image's headers, as a user would
  # (the image ships no compiler)
  [g++]=g++
  # tests/gpu makes a bridge of its own for a second dockerd (testkit/gpuengine.py)
  [ip]=iproute2
  # tests/browser and scripts/screenshots.py drive a real headless Chromium through its chromedriver
  [chromium]=chromium
  [chromedriver]=chromium-driver
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
# Debian's docker-registry package starts a registry on :5000 as a service; the tests start
# their own on a free loopback port, so a service that packaging started is not needed.

# Node.js 20 or newer with npm: the team hub's configurable-http-proxy and the Dev Containers CLI
# (tests/devcontainer) come from the npm registry, pinned by their package-lock.json files, and
# the CLI needs Node 20. Debian 12 packages Node 18, so an older one is named, not replaced.
node_major=$(node --version 2>/dev/null | sed -E 's/^v([0-9]+).*/\1/') || true
if [[ ! ${node_major} =~ ^[0-9]+$ ]] || ((node_major < 20)) || ! command -v npm >/dev/null; then
  die "Node.js 20 or newer with npm is needed (found: $(node --version 2>/dev/null || echo none)): install it from nodejs.org or Debian 13's nodejs and npm packages"
fi

# --- Docker CLI plugins: `docker compose` (v2) and `docker buildx` (BuildKit)
# Debian 12 has neither; Debian 13 (trixie) packages both as static binaries that run on
# Debian 12 (they need glibc >= 2.34). They are fetched with apt itself, through a private
# configuration (its own sources, lists and cache under PLUGIN_APT; the host's apt setup is not
# touched), so apt checks them as it checks any package: the trixie archive key signs the
# Release file, which holds the hash of the package list, which holds each .deb's SHA256. The
# versions are pinned here, and so are the .debs' SHA256 sums, so a host gets these bytes or
# nothing. Only the plugin binary is unpacked, into the plugin folder the Docker CLI searches.
readonly PLUGIN_DIR=/usr/local/lib/docker/cli-plugins
readonly PLUGIN_APT=/var/cache/tf29-env/trixie-apt
readonly TRIXIE_KEYRING=/usr/share/keyrings/debian-archive-trixie-automatic.gpg
declare -A plugin_package=([compose]=docker-compose [buildx]=docker-buildx)
declare -A plugin_version=([compose]=2.26.1-4 [buildx]=0.13.1+ds1-3)
declare -A plugin_sha256=(
  [compose]=47681197cb2b1ab88206b42a1a92fc75f50d9530a6322d03494a473eed0408ea
  [buildx]=fcf8c48204d1603c8f209451d7827eb91bf30759578baf7704e9e1a87e5f1d7f
)

trixie_apt() {
  apt-get -q \
    -o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=${PLUGIN_APT}/sources.list.d" \
    -o Dir::Etc::Preferences=/dev/null -o "Dir::Etc::PreferencesParts=${PLUGIN_APT}/preferences.d" \
    -o "Dir::State::Lists=${PLUGIN_APT}/lists" -o "Dir::State::status=${PLUGIN_APT}/status" \
    -o "Dir::Cache=${PLUGIN_APT}/cache" -o APT::Sandbox::User=root "$@"
}

install_plugins() {
  local want=() plugin
  for plugin in compose buildx; do
    docker "${plugin}" version >/dev/null 2>&1 || want+=("${plugin}")
  done
  ((${#want[@]} > 0)) || return 0
  [[ -f ${TRIXIE_KEYRING} ]] ||
    die "docker ${want[*]} missing and ${TRIXIE_KEYRING} not found (debian-archive-keyring of Debian 12): install the docker-compose-plugin and docker-buildx-plugin packages yourself"
  echo "host-setup: installing the Docker CLI plugins ${want[*]} (Debian 13's packages)"
  rm -rf "${PLUGIN_APT}"
  mkdir -p "${PLUGIN_APT}"/{sources.list.d,preferences.d,lists/partial,cache/archives/partial,debs}
  touch "${PLUGIN_APT}/status"
  printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: trixie\nComponents: main\nSigned-By: %s\n' \
    "${TRIXIE_KEYRING}" >"${PLUGIN_APT}/sources.list.d/trixie.sources"
  trixie_apt update >/dev/null
  local pins=() deb
  for plugin in "${want[@]}"; do
    pins+=("${plugin_package[${plugin}]}=${plugin_version[${plugin}]}")
  done
  (cd "${PLUGIN_APT}/debs" && trixie_apt download "${pins[@]}" >/dev/null)
  mkdir -p "${PLUGIN_DIR}"
  for plugin in "${want[@]}"; do
    deb=$(echo "${PLUGIN_APT}/debs/${plugin_package[${plugin}]}_"*.deb)
    echo "${plugin_sha256[${plugin}]}  ${deb}" | sha256sum --check --quiet ||
      die "${deb}: SHA256 differs from the pinned one"
    dpkg-deb --fsys-tarfile "${deb}" |
      tar -xO "./usr/libexec/docker/cli-plugins/docker-${plugin}" >"${PLUGIN_DIR}/docker-${plugin}.new"
    chmod 755 "${PLUGIN_DIR}/docker-${plugin}.new"
    mv "${PLUGIN_DIR}/docker-${plugin}.new" "${PLUGIN_DIR}/docker-${plugin}"
    docker "${plugin}" version >/dev/null ||
      die "docker ${plugin} does not run from ${PLUGIN_DIR} (it needs glibc >= 2.34)"
  done
  rm -rf "${PLUGIN_APT}"
}
install_plugins

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
  docker info >/dev/null 2>&1 && {
    echo "host-setup: the Docker engine answers"
    exit 0
  }
  sleep 1
done
die "the Docker engine did not start within 60 s: see ${DOCKERD_LOG} (or journalctl -u docker)"
