"""Wheels the tests build themselves, so that installing packages needs no index: real wheel files
(a zip with the .dist-info folder, WHEEL, METADATA and RECORD with sha256 hashes, as PEP 427 has
them) that pip installs from a folder with `--no-index --find-links FOLDER`."""

import base64
import hashlib
import zipfile
from pathlib import Path


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def build_wheel(folder: Path, name: str, version: str, files: dict[str, bytes | str], *,
                requires: tuple[str, ...] = (), tag: str = "py3-none-any") -> Path:
    """Write NAME-VERSION-TAG.whl into FOLDER with FILES (path in the wheel -> content) and
    Requires-Dist lines REQUIRES; a pure wheel unless TAG names a platform."""
    stem = name.replace("-", "_")
    info = f"{stem}-{version}.dist-info"
    metadata = "".join([f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
                        "Summary: a package the tf29-env tests build\n",
                        *(f"Requires-Dist: {requirement}\n" for requirement in requires)])
    pure = "true" if tag.endswith("-any") else "false"
    contents: dict[str, bytes] = {path: data.encode() if isinstance(data, str) else data
                                  for path, data in files.items()}
    contents[f"{info}/METADATA"] = metadata.encode()
    wheel_file = f"Wheel-Version: 1.0\nGenerator: tf29-env tests\nRoot-Is-Purelib: {pure}\nTag: {tag}\n"
    contents[f"{info}/WHEEL"] = wheel_file.encode()
    record = "".join(f"{path},{_record_hash(data)},{len(data)}\n" for path, data in contents.items())
    record += f"{info}/RECORD,,\n"
    wheel = folder / f"{stem}-{version}-{tag}.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, data in contents.items():
            archive.writestr(path, data)
        archive.writestr(f"{info}/RECORD", record)
    return wheel


def module_files(module: str, version: str, extra: str = "") -> dict[str, bytes | str]:
    """A package MODULE whose __init__ says where it was imported from and its version."""
    return {f"{module}/__init__.py": f"__version__ = {version!r}\n{extra}"}
