"""Certificates for the HTTPS tests, made by the openssl command line as an admin would make them:
a CA, a server certificate it signs for an address, and (through cryptography, as openssl 3.0
cannot date one in the past) an expired one."""

import datetime
import ssl
import subprocess
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

EC = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")


@dataclass(frozen=True)
class Pair:
    cert: Path
    key: Path


def openssl(*args: str) -> str:
    done = subprocess.run(["openssl", *args], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, f"openssl {' '.join(args)}: {done.stderr}"
    return done.stdout


def make_ca(folder: Path, name: str) -> Pair:
    folder.mkdir(parents=True, exist_ok=True)
    pair = Pair(folder / f"{name}-ca.pem", folder / f"{name}-ca-key.pem")
    openssl("req", "-x509", *EC, "-days", "2", "-subj", f"/CN={name} test CA", "-keyout", str(pair.key),
            "-out", str(pair.cert))
    return pair


def make_server(folder: Path, ca: Pair, name: str, address: str = "127.0.0.1") -> Pair:
    """A certificate for ADDRESS signed by CA, and its key."""
    pair = Pair(folder / f"{name}.pem", folder / f"{name}-key.pem")
    request = folder / f"{name}.csr"
    openssl("req", "-new", *EC, "-subj", f"/CN={address}", "-keyout", str(pair.key), "-out", str(request))
    extensions = folder / f"{name}.ext"
    extensions.write_text(f"subjectAltName=IP:{address}\n")
    openssl("x509", "-req", "-in", str(request), "-CA", str(ca.cert), "-CAkey", str(ca.key), "-CAcreateserial",
            "-days", "2", "-extfile", str(extensions), "-out", str(pair.cert))
    return pair


def make_expired(folder: Path, name: str) -> Pair:
    """A self-signed certificate whose validity ended yesterday, and its key."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=3))
            .not_valid_after(now - datetime.timedelta(days=1)).sign(key, hashes.SHA256()))
    pair = Pair(folder / f"{name}.pem", folder / f"{name}-key.pem")
    pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pair.key.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return pair


def fingerprint(cert: Path) -> str:
    """`openssl x509 -fingerprint -sha256` of CERT: colon-separated upper-case hex."""
    return openssl("x509", "-in", str(cert), "-noout", "-fingerprint", "-sha256").strip().partition("=")[2]


def served_fingerprint(host: str, port: int) -> str:
    """The SHA-256 fingerprint of the certificate HOST:PORT serves (read unverified), in openssl's format."""
    pem = ssl.get_server_certificate((host, port))
    done = subprocess.run(["openssl", "x509", "-noout", "-fingerprint", "-sha256"], input=pem, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().partition("=")[2]
