#!/usr/bin/env bash
# The install kit's install.sh (docs/kit.md; scripts/kit-install.sh in the repository): sets up a team
# box from the kit's folder alone, reaching no registry.
# Usage: ./install.sh [TARGET]   (TARGET: the folder the project goes to, default ./tf29-env)
# Order: every check first (tools, engine, checksums), then load, unpack, venvs, proxy; on a failure
# it stops with one line on stderr, removes what the failed step half-made and lists what it did.
set -euo pipefail

# No dirname: a PATH without docker must reach its one-line check before any other tool is run.
case "${BASH_SOURCE[0]}" in */*) KIT=${BASH_SOURCE[0]%/*} ;; *) KIT=. ;; esac
KIT=$(cd "$KIT" && pwd)
TARGET=${1:-tf29-env}
case "$TARGET" in
    -h | --help) sed -n '2,6p' "$KIT/install.sh" | sed 's/^# \{0,1\}//' && exit 0 ;;
    -*) printf 'tf29-kit: error: unknown option %s (usage: ./install.sh [TARGET])\n' "$TARGET" >&2 && exit 2 ;;
esac
if [ "$#" -gt 1 ]; then
    printf 'tf29-kit: error: one TARGET folder at most (usage: ./install.sh [TARGET])\n' >&2
    exit 2
fi
HUB_PYTHON=${HUB_PYTHON:-python3}
MIN_ENGINE_MAJOR=20
MIN_ENGINE_MINOR=10
DID=()
SKIPPED=()

_die() {
    printf 'tf29-kit: error: %s\n' "$1" >&2
    if [ "${#DID[@]}" -gt 0 ]; then _summary; fi
    exit "${2:-1}"
}

_summary() {
    local line
    echo "tf29-kit: done:"
    for line in "${DID[@]}"; do echo "  - $line"; done
    if [ "${#SKIPPED[@]}" -gt 0 ]; then
        echo "tf29-kit: not done:"
        for line in "${SKIPPED[@]}"; do echo "  - $line"; done
    fi
}

# kit.json's field NAME (a string, or a list's items one per line), read with the box's python3.
_kit_field() {
    python3 -c 'import json, sys
value = json.load(open(sys.argv[1]))[sys.argv[2]]
print("\n".join(value) if isinstance(value, list) else value)' "$KIT/kit.json" "$1"
}

check_tools() {
    local tool
    if ! command -v docker >/dev/null 2>&1; then
        _die "docker is not installed: install Docker Engine 20.10 or newer first (the kit does not include it: docs/kit.md)"
    fi
    for tool in sha256sum tar python3 make; do
        command -v "$tool" >/dev/null 2>&1 || _die "$tool is not installed: the kit needs it (docs/kit.md)"
    done
    if [ -e "$TARGET/docker-compose.yml" ]; then
        _die "$TARGET already holds a tf29-env project: give a new folder (./install.sh DIR)"
    fi
}

# Every file against SHA256SUMS before anything is loaded, in its order (the image archives last): the
# first one missing or different is named.
check_sums() {
    local sum name actual
    [ -f "$KIT/SHA256SUMS" ] || _die "$KIT/SHA256SUMS is missing: not a complete kit"
    while read -r sum name; do
        [ -f "$KIT/$name" ] || _die "$name is missing from the kit (SHA256SUMS lists it): copy the kit again"
        actual=$(sha256sum "$KIT/$name")
        if [ "${actual%% *}" != "$sum" ]; then
            _die "checksum mismatch: $name differs from SHA256SUMS (damaged or changed; copy the kit again)"
        fi
    done <"$KIT/SHA256SUMS"
}

check_engine() {
    local version major rest minor
    if ! version=$(docker version --format '{{.Server.Version}}' 2>/dev/null) || [ -z "$version" ]; then
        _die "no Docker engine answers (is dockerd running, may this user use it? DOCKER_HOST=${DOCKER_HOST:-unset})"
    fi
    major=${version%%.*}
    rest=${version#*.}
    minor=${rest%%[!0-9]*}
    if ! [[ "$major" =~ ^[0-9]+$ && "$minor" =~ ^[0-9]+$ ]]; then
        _die "cannot read the Docker engine's version ($version)"
    fi
    if [ "$major" -lt "$MIN_ENGINE_MAJOR" ] || { [ "$major" -eq "$MIN_ENGINE_MAJOR" ] && [ "$minor" -lt "$MIN_ENGINE_MINOR" ]; }; then
        _die "Docker Engine $version is too old: the kit needs $MIN_ENGINE_MAJOR.$MIN_ENGINE_MINOR or newer"
    fi
    ENGINE_VERSION=$version
}

check_python() {
    local want have
    want=$(_kit_field python)
    have=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    if [ "$have" != "$want" ]; then
        _die "python3 is $have, the kit's wheels are for Python $want: set PATH to a python3 $want"
    fi
}

load_images() {
    local archive loaded
    while IFS= read -r archive; do
        if ! loaded=$(docker load -q -i "$KIT/$archive" 2>&1); then
            _die "docker load -i $archive failed: ${loaded##*$'\n'}"
        fi
        DID+=("docker load: ${loaded//$'\n'/; } (engine $ENGINE_VERSION)")
    done < <(_kit_field archives)
}

unpack_project() {
    local image
    mkdir -p "$TARGET"
    tar -xzf "$KIT/project.tar.gz" -C "$TARGET" || _die "cannot unpack project.tar.gz into $TARGET"
    TARGET=$(cd "$TARGET" && pwd)
    image=$(_kit_field image)
    # compose reads .env: the team starts the image this kit loaded.
    sed "s|^TF29ENV_IMAGE=.*|TF29ENV_IMAGE=$image|" "$TARGET/.env.example" >"$TARGET/.env" ||
        _die "cannot write $TARGET/.env from .env.example"
    DID+=("project files in $TARGET; $TARGET/.env from .env.example with TF29ENV_IMAGE=$image")
}

# pip with the kit's wheels only: no index, and none of this box's pip config or find-links.
_pip_offline() {
    local venv=$1
    shift
    PIP_CONFIG_FILE=/dev/null PIP_FIND_LINKS='' PIP_CONSTRAINT='' \
        "$venv/bin/pip" install -q --disable-pip-version-check --no-index "$@"
}

host_venv() {
    local venv=$TARGET/.venv
    if ! { python3 -m venv "$venv" >/dev/null &&
        _pip_offline "$venv" --find-links "$KIT/wheels/host" -r "$TARGET/requirements-dev.txt"; }; then
        rm -rf "$venv"
        _die "the host tools' venv ($venv) failed: see pip's message above"
    fi
    touch "$venv/.done"  # the Makefile's `venv` target is then done
    DID+=("host tools' venv $venv (make venv: done)")
}

hub_venv() {
    local venv=$TARGET/hub/.venv
    if ! "$HUB_PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
        SKIPPED+=("the hub's venv: $HUB_PYTHON is not Python 3.11 or newer (rerun with HUB_PYTHON=python3.11)")
        return
    fi
    if ! { "$HUB_PYTHON" -m venv "$venv" >/dev/null &&
        _pip_offline "$venv" --no-deps --find-links "$KIT/wheels/hub" -r "$TARGET/hub/requirements.txt" &&
        "$venv/bin/pip" check >/dev/null; }; then
        rm -rf "$venv"
        _die "the hub's venv ($venv) failed: see pip's message above"
    fi
    touch "$venv/.done"  # hub.mk's `hub-venv` target is then done
    DID+=("the hub's venv $venv (make hub-venv: done)")
}

hub_proxy() {
    local cache registry
    if ! command -v npm >/dev/null 2>&1; then
        SKIPPED+=("the hub's proxy: npm is not installed (install Node.js 18+ and npm, then rerun into a new folder)")
        return
    fi
    cache=$(mktemp -d)
    # The registry the cache was filled from: its metadata is kept by that URL (--offline never asks it).
    registry=$(_kit_field npm_registry)
    # A copy: npm writes to its cache, and the kit stays as its checksums say.
    if ! { tar -xzf "$KIT/npm-cache.tar.gz" -C "$cache" &&
        (cd "$TARGET/hub" && npm ci --offline --cache "$cache" --registry "$registry" --no-audit --no-fund \
            --loglevel=error); }; then
        rm -rf "$cache" "$TARGET/hub/node_modules"
        _die "the hub's proxy (npm ci --offline) failed: see npm's message above"
    fi
    rm -rf "$cache"
    touch "$TARGET/hub/node_modules/.done"  # hub.mk's `hub-proxy` target is then done
    DID+=("the hub's proxy in $TARGET/hub/node_modules (make hub-proxy: done)")
}

# STEP, timed: its seconds go to the end of the line it added to DID.
_timed() {
    local began=$SECONDS count=${#DID[@]} last
    "$@"
    last=$((${#DID[@]} - 1))
    if [ "$last" -ge "$count" ]; then
        DID[last]="${DID[last]} ($((SECONDS - began)) s)"
    fi
}

main() {
    check_tools
    check_engine  # first: a second, where the checksums read the whole image
    check_sums
    check_python
    _timed load_images
    _timed unpack_project
    _timed host_venv
    _timed hub_venv
    _timed hub_proxy
    if [ -d "$KIT/sbom" ]; then
        DID+=("the build's SBOM and licenses are in $KIT/sbom (not copied)")
    fi
    SKIPPED+=("the GPU driver, Docker itself and the NVIDIA container toolkit: not in the kit (docs/kit.md)")
    _summary
    local image
    image=$(_kit_field image)
    echo "tf29-kit: next: cd $TARGET && make member NAME=alice KEY=alice.pub && make up"
    echo "tf29-kit: the team hub: cd $TARGET && make hub (it serves .env's TF29ENV_IMAGE, $image: nothing is built)"
}

main
