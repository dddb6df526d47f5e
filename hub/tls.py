"""HTTPS for the team hub (docs/hub.md, "HTTPS"): the admin's certificate and key (HUB_SSL_CERT,
HUB_SSL_KEY), or one the hub makes at its first start and keeps in its state folder, handed to the
proxy, which is what users reach. The pair is checked by compose/certs.py, as compose's is, and made
with the openssl command line: standard library only, like settings."""

from __future__ import annotations

import ipaddress
import socket
import subprocess
from pathlib import Path

from compose import certs

# HUB_TLS: auto (the admin's pair, else a made one beyond loopback, else plain HTTP), self-signed
# (a made one even on loopback), off (plain HTTP: a TLS proxy in front does HTTPS).
TLS_AUTO, TLS_SELF_SIGNED, TLS_OFF = "auto", "self-signed", "off"
TLS_MODES = (TLS_AUTO, TLS_SELF_SIGNED, TLS_OFF)
SELF_SIGNED_DAYS = 3650


class TlsError(Exception):
    """A certificate or key that cannot serve: one line for the admin."""


def cert_file(state: Path) -> Path:
    return state / "tls-cert.pem"


def key_file(state: Path) -> Path:
    return state / "tls-key.pem"


def is_loopback(address: str) -> bool:
    return address == "localhost" or ipaddress.ip_address(address).is_loopback


def _openssl(*args: str) -> subprocess.CompletedProcess[str]:
    try:
        return certs.openssl(*args)
    except certs.PairError as exc:
        raise TlsError(str(exc)) from None


def _reason(stderr: str) -> str:
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    return lines[0][:200] if lines else "openssl failed"


def check_pair(cert: Path, key: Path, cert_name: str = "HUB_SSL_CERT", key_name: str = "HUB_SSL_KEY") -> None:
    """TlsError unless CERT and KEY can serve (compose/certs.py: the check compose makes too)."""
    try:
        certs.check_pair(cert, key, cert_name, key_name)
    except certs.PairError as exc:
        raise TlsError(str(exc)) from None


def fingerprint(cert: Path) -> str:
    """The certificate's SHA-256 fingerprint as `openssl x509 -fingerprint -sha256` prints it."""
    done = _openssl("x509", "-in", str(cert), "-noout", "-fingerprint", "-sha256")
    if done.returncode != 0:
        raise TlsError(f"{cert} cannot be read as PEM ({_reason(done.stderr)})")
    return done.stdout.strip().partition("=")[2]


def _alt_names(address: str) -> str:
    """Every name a member may type: the hub's address (unless a wildcard), loopback, the host's name."""
    ips = ["127.0.0.1", "::1"]
    if not ipaddress.ip_address(address).is_unspecified and address not in ips:
        ips.insert(0, address)
    dns = dict.fromkeys(name for name in ("localhost", socket.gethostname(), socket.getfqdn()) if name)
    return ",".join([*(f"IP:{ip}" for ip in ips), *(f"DNS:{name}" for name in dns)])


def ensure_self_signed(state: Path, address: str) -> bool:
    """Make the hub's own certificate and key in STATE unless they are there (key mode 600); whether
    they were made now. A kept pair is checked like the admin's, so an expired one is refused."""
    cert, key = cert_file(state), key_file(state)
    if cert.exists():
        check_pair(cert, key, "the hub's certificate", "its key")
        return False
    made_key, made_cert = key.with_suffix(".new"), cert.with_suffix(".new")
    done = _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-days", str(SELF_SIGNED_DAYS), "-subj", f"/CN=tf29-hub {socket.gethostname()}"[:64],
                    "-addext", f"subjectAltName={_alt_names(address)}",
                    "-keyout", str(made_key), "-out", str(made_cert))
    if done.returncode != 0:
        made_key.unlink(missing_ok=True)
        made_cert.unlink(missing_ok=True)
        raise TlsError(f"openssl could not make the hub's certificate ({_reason(done.stderr)})")
    made_key.chmod(0o600)
    # The key first: a cert without its key would be refused at the next start, a key alone is made again.
    made_key.replace(key)
    made_cert.replace(cert)
    return True
