# shellcheck shell=bash
# 34-runtime: Jupyter's runtime folder and GEN_CERT's certificate, made as the dev user so the key is never root's.

# Mode 700: it holds the token and kernel keys, and Jupyter makes -open.html readable by all. It outlives
# restarts in the world-writable run directory, so a link left there goes first: chown would follow it.
prepare_runtime_dir() {
  local dir=${JUPYTER_RUNTIME_DIR}
  if ((is_root)) && [[ -L ${dir} ]]; then rm -f -- "${dir}"; fi
  mkdir -p -- "${dir}"
  ((!is_root)) || chown -h "${cfg_ids}" "${dir}"
  chmod 700 "${dir}"
}

make_certificate() {
  local error host cert=${cfg_cert_file} key=${cfg_key_file}
  host=$(hostname)
  # ECDSA P-256: quick enough to make at every start.
  error=$("${as_user[@]}" openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -days 365 -subj /CN=tf29-env -addext "subjectAltName=DNS:${host},DNS:localhost,IP:127.0.0.1,IP:::1" \
    -keyout "${key}" -out "${cert}" 2>&1) ||
    die "GEN_CERT: the certificate could not be made: ${error//$'\n'/ }"
  chmod 600 "${key}"
  log "GEN_CERT: JupyterLab speaks HTTPS with a self-signed certificate made now (${cert}); the token or password is still required"
}
