# shellcheck shell=bash
# 34-runtime: Jupyter's runtime folder, the dev user's alone, and GEN_CERT's self-signed certificate
# in it, made at every start as the dev user, so that the key is never root's to hand over nor
# anyone else's to read. docker-stacks makes one the same way at each start; browsers will ask to
# trust it (it names localhost, 127.0.0.1, ::1 and the container's host name). HTTPS is added,
# nothing is taken away: the token or password stays required.

# Jupyter's runtime files (jpserver-PID.json and jpserver-PID-open.html with the token, the cookie
# secret, the kernels' connection files with their keys) are for the dev user alone: their folder is
# the dev user's, mode 700 (jupyter_client adds the sticky bit), whatever mode Jupyter gives a file;
# it makes the -open.html readable by all and has no setting against it. The folder sits in the
# world-writable run directory and outlives a restart, so a link left there by the dev user is
# removed first: root's chown and chmod would otherwise act on the link's target.
prepare_runtime_dir() {
  local dir=${JUPYTER_RUNTIME_DIR}
  if ((is_root)); then
    if [[ -L ${dir} ]]; then rm -f -- "${dir}"; fi
    mkdir -p -- "${dir}"
    chown -h "${NB_UID}:${NB_GID}" "${dir}"
  else
    mkdir -p -- "${dir}"
  fi
  chmod 700 "${dir}"
}

make_certificate() {
  local error host cert=${cfg_cert_file} key=${cfg_key_file}
  host=$(hostname)
  # openssl comes with ca-certificates on both bases; an ECDSA P-256 key takes milliseconds.
  error=$("${as_user[@]}" openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -days 365 -subj /CN=tf29-env -addext "subjectAltName=DNS:${host},DNS:localhost,IP:127.0.0.1,IP:::1" \
    -keyout "${key}" -out "${cert}" 2>&1) ||
    die "GEN_CERT: the certificate could not be made: ${error//$'\n'/ }"
  chmod 600 "${key}"
  log "GEN_CERT: JupyterLab speaks HTTPS with a self-signed certificate made now (${cert}); the token or password is still required"
}
