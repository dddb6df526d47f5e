# shellcheck shell=bash
# 55-cert: GEN_CERT's self-signed certificate, made at every start as the dev user, in Jupyter's
# runtime folder (the dev user's alone, mode 700: 50-jupyter), so that the key is never root's to
# hand over nor anyone else's to read. docker-stacks makes one the same way at each start; browsers
# will ask to trust it (it names localhost, 127.0.0.1, ::1 and the container's host name). HTTPS is
# added, nothing is taken away: the token or password stays required.

readonly CERT_FILE=${JUPYTER_RUNTIME_DIR}/tf29-env-cert.pem
readonly CERT_KEY_FILE=${JUPYTER_RUNTIME_DIR}/tf29-env-key.pem

make_certificate() {
  prepare_runtime_dir
  local error host
  host=$(hostname)
  # openssl comes with ca-certificates on both bases; an ECDSA P-256 key takes milliseconds.
  error=$("${as_user[@]}" openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -days 365 -subj /CN=tf29-env -addext "subjectAltName=DNS:${host},DNS:localhost,IP:127.0.0.1,IP:::1" \
    -keyout "${CERT_KEY_FILE}" -out "${CERT_FILE}" 2>&1) ||
    die "GEN_CERT: the certificate could not be made: ${error//$'\n'/ }"
  chmod 600 "${CERT_KEY_FILE}"
  log "GEN_CERT: JupyterLab speaks HTTPS with a self-signed certificate made now (${CERT_FILE}); the token or password is still required"
}
