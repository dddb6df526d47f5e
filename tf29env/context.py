"""The image's build context: exactly the files the Dockerfile copies, plus extra CA certificates.

Sending only these (rather than the whole checkout) keeps the context small and the cache keys
stable: a change to tests or build.py never rebuilds a layer. .dockerignore says the same for
plain `docker build .`."""

import io
import tarfile
from pathlib import Path

from tf29env.errors import UserError
from tf29env.paths import REPO

# What the Dockerfile COPYs; .dockerignore lets the same through for plain `docker build .`
# (tests/unit/test_build_context.py holds the two together).
CONTEXT_PATHS = ("Dockerfile", "requirements.txt", "ca-certs", "image")
PEM_MARKER = b"-----BEGIN CERTIFICATE-----"


def ca_files(paths: list[Path]) -> list[Path]:
    """The certificate files named by --ca-cert: files as given, directories' *.crt and *.pem."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            certs = sorted([*path.glob("*.crt"), *path.glob("*.pem")])
            if not certs:
                raise UserError(f"--ca-cert {path}: the directory holds no *.crt or *.pem file")
            found.extend(certs)
        elif path.is_file():
            found.append(path)
        else:
            raise UserError(f"--ca-cert {path}: no such file or directory")
    for cert in found:
        try:
            data = cert.read_bytes()
        except OSError as exc:
            raise UserError(f"--ca-cert {cert}: cannot read it ({exc.strerror})") from None
        if PEM_MARKER not in data:
            raise UserError(f"--ca-cert {cert}: not a PEM certificate (no '{PEM_MARKER.decode()}' line)")
    return found


def add_file(tar: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    """Add one in-memory file to a tar, with fixed metadata so that cache keys depend on content."""
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = mode
    tar.addfile(info, io.BytesIO(data))


def _reset(info: tarfile.TarInfo) -> tarfile.TarInfo:
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    info.mtime = 0
    return info


def write(fileobj: io.BufferedIOBase | io.BytesIO, ca_certs: list[Path]) -> None:
    """Write the context tar to fileobj."""
    with tarfile.open(fileobj=fileobj, mode="w") as tar:
        for name in CONTEXT_PATHS:
            tar.add(REPO / name, arcname=name, filter=_exclude_bytecode)
        for index, cert in enumerate(ca_certs):
            # update-ca-certificates reads only *.crt; the index keeps equal file names apart.
            add_file(tar, f"ca-certs/{index:02d}-{cert.stem}.crt", cert.read_bytes())


# Local tool output that must neither ship in the image nor change its cache keys.
EXCLUDED_DIRS = ("__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache")


def _exclude_bytecode(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    if any(part in EXCLUDED_DIRS for part in info.name.split("/")) or info.name.endswith(".pyc"):
        return None
    return _reset(info)
