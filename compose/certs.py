"""The one check of a TLS certificate and its key on the host, before anything serves them: compose's
TF29ENV_TLS_CERT/KEY (teamenv.py) and the team hub's HUB_SSL_CERT/KEY (hub/tls.py). Standard library
and the openssl command only: it runs on the host's python3 too."""

from __future__ import annotations

import os
import shutil
import ssl
import subprocess
from pathlib import Path

OPENSSL_TIMEOUT = 60


class PairError(Exception):
    """A certificate or key that cannot serve: one line that names the setting."""


def openssl(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    path = shutil.which("openssl")
    if path is None:
        raise PairError("openssl is not on this host: install it (apt-get install openssl)")
    return subprocess.run([path, *args], input=stdin, capture_output=True, text=True, timeout=OPENSSL_TIMEOUT,
                          check=False)


def check_pair(cert: Path, key: Path, cert_name: str, key_name: str) -> None:
    """PairError unless CERT and KEY are readable PEM files, KEY is CERT's key, and CERT has not expired.
    CERT_NAME and KEY_NAME are what the admin set (e.g. HUB_SSL_CERT), for the message."""
    for name, path in ((cert_name, cert), (key_name, key)):
        if not path.is_file() or not os.access(path, os.R_OK):
            raise PairError(f"{name}={path}: no such file, or this user cannot read it")
    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(str(cert), str(key))
    except ssl.SSLError as exc:
        if "MISMATCH" in str(exc):
            raise PairError(f"{key_name}={key} is not the key of {cert_name}={cert}") from None
        raise PairError(f"{cert_name}={cert} or {key_name}={key} cannot be read as PEM ({exc.reason})") from None
    if openssl("x509", "-in", str(cert), "-noout", "-checkend", "0").returncode != 0:
        end = openssl("x509", "-in", str(cert), "-noout", "-enddate").stdout.strip().partition("=")[2]
        raise PairError(f"{cert_name}={cert} has expired ({end or 'its end date is unreadable'}): renew it")
