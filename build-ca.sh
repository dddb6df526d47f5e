# shellcheck shell=bash
# Sourced by each Dockerfile RUN step that downloads (apt, pip), the one home of what they share: the
# build-only CAs arrive in FTP_PROXY (the Dockerfile says why) and go, after the distro's, into a
# bundle apt and pip trust for this step only; build_ca_done removes it before the step ends.
if [[ "${FTP_PROXY:-}" == *"-----BEGIN CERTIFICATE-----"* ]]; then
  { cat /etc/ssl/certs/ca-certificates.crt 2>/dev/null || true; printf '%s\n' "${FTP_PROXY}"; } > /tmp/build-ca.pem
  echo 'Acquire::https::CaInfo "/tmp/build-ca.pem";' > /etc/apt/apt.conf.d/00tf29-env-build-ca
  # Both: pip's requests takes REQUESTS_CA_BUNDLE over PIP_CERT.
  export PIP_CERT=/tmp/build-ca.pem REQUESTS_CA_BUNDLE=/tmp/build-ca.pem
fi
unset FTP_PROXY ftp_proxy
# An empty index ARG would be taken as a URL.
if [ -z "${PIP_INDEX_URL:-}" ]; then unset PIP_INDEX_URL; fi
if [ -z "${PIP_EXTRA_INDEX_URL:-}" ]; then unset PIP_EXTRA_INDEX_URL; fi

build_ca_done() {
  rm -f /tmp/build-ca.pem /etc/apt/apt.conf.d/00tf29-env-build-ca
}
