"""JUPYTER_CERT_FILE and JUPYTER_KEY_FILE, checked as Jupyter would use them, so that a bad pair stops the
start with one line instead of a server that fails its first TLS handshake: the key is the certificate's
(ssl's load_cert_chain, as tornado loads them), unencrypted (Jupyter cannot ask for a passphrase), and the
certificate has not expired (openssl x509 -checkend). Standard library only, run by the distro's python3 -I
(3.8 or newer); System.certificate_problem calls it, unit tests call it on files openssl made.
"""

import ssl
import subprocess
from typing import List

CERT, KEY = "JUPYTER_CERT_FILE", "JUPYTER_KEY_FILE"
PEM_CERT = "-----BEGIN CERTIFICATE-----"


def pem_problem(cert_text: str, key_text: str, cert: str, key: str) -> str:
    """Why the files' contents are not a PEM certificate and a PEM private key ("" when they are)."""
    if PEM_CERT not in cert_text:
        return f"{CERT}={cert}: not a PEM certificate (no '{PEM_CERT}' line; convert DER with: openssl x509 -in " \
               "CERT.der -inform der -out CERT.pem)"
    if "-----BEGIN" not in key_text or "PRIVATE KEY-----" not in key_text:
        return f"{KEY}={key}: not a PEM private key (no '-----BEGIN ... PRIVATE KEY-----' line)"
    return ""


def pair_problem(cert: str, key: str) -> str:
    """Why KEY is not CERT's unencrypted private key ("" when it is)."""
    asked: List[bool] = []

    def password() -> bytes:
        asked.append(True)
        return b""

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(cert, key, password=password)
    except ssl.SSLError as error:
        if asked:
            return f"{KEY}={key}: the key is encrypted (it has a passphrase), and Jupyter cannot ask for one; " \
                   "decrypt it (openssl pkey -in KEY -out KEY.plain) and keep that one secret"
        if "KEY_VALUES_MISMATCH" in str(error):
            return f"{KEY}={key} is not the private key of {CERT}={cert}: give the key the certificate was made for"
        return f"{CERT}={cert} and {KEY}={key} cannot be loaded: {error.reason or error}"
    except OSError as error:
        return f"{CERT}={cert} and {KEY}={key} cannot be read: {error.strerror or error}"
    return ""


def expiry_problem(cert: str) -> str:
    """Why CERT is no longer valid ("" when it is still): past its notAfter."""
    try:
        done = subprocess.run(["openssl", "x509", "-in", cert, "-noout", "-enddate", "-checkend", "0"],
                              capture_output=True, check=False)
    except FileNotFoundError:
        return f"{CERT}={cert}: openssl is not installed, so the certificate's dates cannot be checked"
    said = done.stdout.decode("utf-8", "replace")
    end = next((line.split("=", 1)[1] for line in said.splitlines() if line.startswith("notAfter=")), "")
    if done.returncode == 1 and end:
        return f"{CERT}={cert}: the certificate expired on {end}; renew it"
    if done.returncode != 0:
        return f"{CERT}={cert}: openssl cannot read the certificate: " + \
               done.stderr.decode("utf-8", "replace").strip().replace("\n", " ")[:200]
    return ""


def problem(cert: str, key: str) -> str:
    """The first thing wrong with the pair, as its one line, or ""."""
    return pair_problem(cert, key) or expiry_problem(cert)
