"""The image's build context: exactly the files the Dockerfile copies, plus the CA certificates the
image is to keep trusting (--trust-ca-cert); build-only CAs (tf29env.imagebuild.cacerts) never enter it.

Sending only these (rather than the whole checkout) keeps the context small and the cache keys
stable: a change to tests or build.py never rebuilds a layer. .dockerignore says the same for
plain `docker build .`.
"""

import io
import tarfile
from pathlib import Path

from tf29env.core.paths import REPO
from tf29env.imagebuild.cacerts import CA_DIR, CA_DIR_README, load_certs

# What the Dockerfile COPYs; .dockerignore lets the same through for plain `docker build .`
# (tests/unit/tf29env/imagebuild/test_context.py holds the two together).
CONTEXT_PATHS = ("Dockerfile", "build-ca.sh", "requirements.txt", "ca-certs", "image", "notebooks")


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


def write(fileobj: io.BufferedIOBase | io.BytesIO, trusted: list[Path]) -> None:
    """Write the context tar to fileobj; trusted: the --trust-ca-cert files (build-only CAs never
    enter the context: see ca_buildargs)."""
    with tarfile.open(fileobj=fileobj, mode="w") as tar:
        for name in CONTEXT_PATHS:
            if name == CA_DIR:
                tar.add(REPO / CA_DIR / CA_DIR_README, arcname=f"{CA_DIR}/{CA_DIR_README}", filter=_reset)
                continue
            tar.add(REPO / name, arcname=name, filter=_exclude_bytecode)
        for index, cert in enumerate(load_certs(trusted, "--trust-ca-cert")):
            # One certificate per file, named *.crt: update-ca-certificates reads only *.crt, and
            # links one certificate per file; the index keeps equal file names apart.
            add_file(tar, f"{CA_DIR}/{index:02d}-{cert.source.stem}.crt", cert.pem.encode())


# Local tool output that must neither ship in the image nor change its cache keys.
EXCLUDED_DIRS = ("__pycache__", ".mypy_cache", ".ruff_cache", ".pytest_cache")


def _exclude_bytecode(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    if any(part in EXCLUDED_DIRS for part in info.name.split("/")) or info.name.endswith(".pyc"):
        return None
    return _reset(info)
