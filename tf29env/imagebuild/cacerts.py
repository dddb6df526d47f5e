"""CA certificates for the build (--ca-cert) and for the image to keep trusting (--trust-ca-cert).

Build-only CAs, for a TLS-intercepting proxy or a mirror with its own CA, reach the RUN steps in
Docker's predefined FTP_PROXY build arg (CA_BUILD_ARG). With the classic builder, which build.py
drives and which has no secret mounts, every other way into a RUN step is recorded in the image: a
COPY is a layer (deleting the file later leaves it in that layer), a declared ARG is written into
`docker history` with its value. The predefined proxy args are the one exception: both builders
hand them to RUN steps but keep them out of the history and the cache key (documented for the
proxy settings they are meant for). Nothing in the build uses FTP, and the Dockerfile takes the
value only when it holds a PEM certificate, so a real ftp proxy setting is left alone. The kept CAs
travel in the context's ca-certs/ (tf29env.imagebuild.context.write).
"""

import base64
import binascii
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from tf29env.core.errors import UserError
from tf29env.core.paths import REPO

PEM_MARKER = b"-----BEGIN CERTIFICATE-----"
CERT_RE = re.compile(rb"-----BEGIN CERTIFICATE-----([A-Za-z0-9+/=\s]*?)-----END CERTIFICATE-----")
# A key file given by mistake (or a combined key+certificate file) must not travel anywhere.
PRIVATE_KEY_RE = re.compile(rb"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----")

# The build-only CAs' build arg (see the module docstring) and the Dockerfile's switch that keeps
# the certificates in ca-certs/ in the image's trust store.
CA_BUILD_ARG = "FTP_PROXY"
TRUST_BUILD_ARG = "TRUST_CA_CERTS"
# Linux refuses to start a process with one environment string over 128 KiB (MAX_ARG_STRLEN): a
# RUN step would fail with "argument list too long". Room is left for the name.
CA_BUILD_ARG_LIMIT = 120 * 1024
# ca-certs/ holds its README in the checkout; build.py fills the rest from --trust-ca-cert.
CA_DIR = "ca-certs"
CA_DIR_README = "README.md"


@dataclass(frozen=True)
class CaCert:
    """One certificate from a --ca-cert / --trust-ca-cert file."""

    source: Path
    der: bytes

    @property
    def fingerprint(self) -> str:
        """SHA-256 of the DER form, as `openssl x509 -noout -fingerprint -sha256` shows it (lowercase, no colons)."""
        return "sha256:" + hashlib.sha256(self.der).hexdigest()

    @property
    def pem(self) -> str:
        body = base64.b64encode(self.der).decode()
        lines = [body[i:i + 64] for i in range(0, len(body), 64)]
        return "\n".join(["-----BEGIN CERTIFICATE-----", *lines, "-----END CERTIFICATE-----"]) + "\n"


def ca_files(paths: list[Path], flag: str = "--ca-cert") -> list[Path]:
    """The certificate files named by a CA flag: files as given, directories' *.crt and *.pem."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            certs = sorted([*path.glob("*.crt"), *path.glob("*.pem")])
            if not certs:
                raise UserError(f"{flag} {path}: the directory holds no *.crt or *.pem file")
            found.extend(certs)
        elif path.is_file():
            found.append(path)
        else:
            raise UserError(f"{flag} {path}: no such file or directory")
    for cert in found:
        read_certs(cert, flag)
    return found


def read_certs(path: Path, flag: str) -> list[CaCert]:
    """The certificates in one PEM file; anything else in it (comments, text) is dropped."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UserError(f"{flag} {path}: cannot read it ({exc.strerror})") from None
    if PRIVATE_KEY_RE.search(data):
        raise UserError(f"{flag} {path}: holds a private key; pass only the CA's certificate")
    bodies = CERT_RE.findall(data)
    if not bodies:
        raise UserError(f"{flag} {path}: not a PEM certificate (no '{PEM_MARKER.decode()}' block)")
    certs = []
    for body in bodies:
        try:
            der = base64.b64decode(b"".join(body.split()), validate=True)
        except (binascii.Error, ValueError):
            raise UserError(f"{flag} {path}: a certificate block is not valid base64") from None
        certs.append(CaCert(path, der))
    return certs


def load_certs(files: list[Path], flag: str) -> list[CaCert]:
    """Every certificate in these files, each once, in order."""
    seen: dict[str, CaCert] = {}
    for path in files:
        for cert in read_certs(path, flag):
            seen.setdefault(cert.fingerprint, cert)
    return list(seen.values())


def ca_buildargs(build_only: list[CaCert], trusted: list[CaCert]) -> dict[str, str]:
    """The build args for the CAs: all of them for the RUN steps (CA_BUILD_ARG), and the switch that
    keeps the trusted ones, which travel in the context's ca-certs/ (see write)."""
    args: dict[str, str] = {}
    certs = {cert.fingerprint: cert for cert in [*build_only, *trusted]}
    if certs:
        bundle = "".join(cert.pem for cert in certs.values())
        if len(bundle) > CA_BUILD_ARG_LIMIT:
            raise UserError(f"--ca-cert / --trust-ca-cert: {len(certs)} certificates ({len(bundle) // 1024} KiB) are "
                            f"more than the build can take ({CA_BUILD_ARG_LIMIT // 1024} KiB); pass only the CAs "
                            "it needs (the proxy's, the mirror's), not a whole trust store")
        args[CA_BUILD_ARG] = bundle
    if trusted:
        args[TRUST_BUILD_ARG] = "1"
    return args


def check_ca_dir(directory: Path = REPO / CA_DIR) -> None:
    """The checkout's ca-certs/ must hold only its README: build.py takes CAs from its flags alone,
    so that what the image trusts is what the build recorded (a file dropped there for a plain
    `docker build` would otherwise be kept, or silently left out)."""
    stray = sorted(p.name for p in directory.iterdir() if p.name != CA_DIR_README)
    if stray:
        raise UserError(f"{CA_DIR}/{stray[0]}: build.py does not read {CA_DIR}/ (plain `docker build` does); "
                        "pass it as --ca-cert (for the build only) or --trust-ca-cert (kept in the image), "
                        f"and move it out of {CA_DIR}/")
