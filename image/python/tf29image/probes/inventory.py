"""Runs INSIDE the image (Python 3.8 or 3.9, stdlib and tf29image.common), never imported on the host: prints one
JSON object listing what the image holds, for the SBOM, the manifest and the size gate, read from
the image itself rather than from the lock files, so that none of them can claim a package the image
does not hold or miss one it does.

- the Python distributions this interpreter sees (the venv's), with their license metadata
  (License-Expression, License, the trove classifiers), their requirements and the bytes of their
  files (code, bytecode and C++ headers apart: bench's floor), from importlib.metadata; `pip freeze --all`;
- every installed Debian/Ubuntu package (dpkg-query), with its architecture, source package,
  installed size and dependencies, and the OS release for the package URLs;
- the NVIDIA libraries named on the command line (sonames), found through the loader's cache as
  TensorFlow finds them, with their SHA-256 and, where dpkg installed them, the owning package.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import subprocess
import sys
from collections.abc import Iterable
from importlib import metadata
from typing import Any

from tf29image.common import canonical

# What dpkg-query prints per package; its source fields are empty when the source is the binary.
DPKG_FORMAT = ("${Package}\t${Version}\t${Architecture}\t${source:Package}\t${source:Version}\t${db:Status-Abbrev}"
               "\t${Installed-Size}\t${Pre-Depends}, ${Depends}\n")
LDCONFIG_RE = re.compile(r"^\s*(\S+) \(([^)]*)\) => (\S+)$")
# One License field may hold a whole license text; a name is one short line.
SHORT_LICENSE = 100
# The part of a package that ships C/C++ headers for building against it (TensorFlow's custom ops):
# counted apart, since running the package does not need it.
HEADER_PREFIXES = ("tensorflow/include/",)


def os_release_fields() -> dict[str, str]:
    """/etc/os-release as a dict (ID, VERSION_ID, PRETTY_NAME, ...); the facts probe reads it too."""
    fields: dict[str, str] = {}
    with open("/etc/os-release", encoding="utf-8") as handle:
        for line in handle:
            key, sep, value = line.strip().partition("=")
            if sep:
                fields[key] = value.strip('"')
    return fields


def os_release() -> dict[str, str]:
    fields = os_release_fields()
    return {"id": fields.get("ID", ""), "version_id": fields.get("VERSION_ID", ""),
            "codename": fields.get("VERSION_CODENAME", "")}


def first(meta: Any, field: str) -> str:
    """A metadata field's first value, stripped; '' when the distribution has none."""
    values = meta.get_all(field) or [""]
    return str(values[0]).strip()


def file_bytes(entries: Iterable[tuple[str, str]], seen: set[tuple[int, int]]) -> dict[str, int]:
    """Bytes of code, bytecode and headers among ENTRIES (each its RECORD name and its path), each file
    counted once: a file reached again (through a linked folder, or a hard link) is in SEEN, by its
    device and inode, and counts for whoever reached it first."""
    sizes = {"bytes": 0, "pyc_bytes": 0, "header_bytes": 0}
    for name, path in entries:
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISREG(info.st_mode) or (info.st_dev, info.st_ino) in seen:
            continue
        seen.add((info.st_dev, info.st_ino))
        if name.endswith(".pyc"):
            sizes["pyc_bytes"] += info.st_size
        elif name.startswith(HEADER_PREFIXES):
            sizes["header_bytes"] += info.st_size
        else:
            sizes["bytes"] += info.st_size
    return sizes


def pip_freeze() -> list[str]:
    out = subprocess.run([sys.executable, "-m", "pip", "freeze", "--all"], check=True, stdout=subprocess.PIPE,
                         text=True).stdout
    return sorted(out.split(), key=str.lower)


def distributions() -> list[dict[str, Any]]:
    """The distributions on this interpreter's path (the venv's), one per name, as Python finds them."""
    found: dict[str, dict[str, Any]] = {}
    seen: set[tuple[int, int]] = set()
    for dist in metadata.distributions():
        meta = dist.metadata
        name = meta["Name"] or ""
        key = canonical(name)
        if not name or key in found:
            continue
        license_field = first(meta, "License")
        entries = [(str(entry), str(dist.locate_file(entry))) for entry in dist.files or []]
        found[key] = {
            "name": name,
            "version": dist.version,
            "license_expression": first(meta, "License-Expression"),
            # A long field is a license text, not a name: only its first line would be misleading.
            "license": license_field if len(license_field) <= SHORT_LICENSE and "\n" not in license_field else "",
            "license_text_in_metadata": len(license_field) > SHORT_LICENSE or "\n" in license_field,
            "classifiers": sorted(c for c in meta.get_all("Classifier") or [] if c.startswith("License ::")),
            "requires": list(dist.requires or []),
            **file_bytes(entries, seen),
        }
    return [found[key] for key in sorted(found)]


def dependencies(field: str) -> list[str]:
    """The package names in a Depends field: alternatives all kept, versions and architectures dropped."""
    names = (alternative.strip().split(" ")[0].split(":")[0] for alternative in re.split(r"[,|]", field))
    return [name for name in names if name]


def dpkg_packages() -> list[dict[str, Any]]:
    out = subprocess.run(["dpkg-query", "-W", "-f", DPKG_FORMAT], check=True, stdout=subprocess.PIPE,
                         text=True).stdout
    packages: list[dict[str, Any]] = []
    for line in out.splitlines():
        name, version, arch, source, source_version, status, kib, depends = [*line.split("\t"), *[""] * 8][:8]
        if not status.startswith("ii"):  # removed but not purged ("rc"): no files in the image
            continue
        packages.append({"name": name, "version": version, "arch": arch, "source": source or name,
                         "source_version": source_version or version, "bytes": int(kib or 0) * 1024,
                         "depends": dependencies(depends)})
    return sorted(packages, key=lambda p: (p["name"], p["arch"]))


def loader_cache() -> dict[str, str]:
    """soname -> path for the 64-bit libraries in ld.so's cache."""
    out = subprocess.run(["ldconfig", "-p"], check=True, stdout=subprocess.PIPE, text=True).stdout
    found: dict[str, str] = {}
    for line in out.splitlines():
        match = LDCONFIG_RE.match(line)
        if match and "x86-64" in match.group(2):
            found.setdefault(match.group(1), match.group(3))
    return found


def dpkg_owner(path: str) -> str:
    """The package that installed path (package:arch or package), or ''."""
    for candidate in (path, os.path.realpath(path)):
        proc = subprocess.run(["dpkg-query", "-S", candidate], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              text=True, check=False)
        if proc.returncode == 0 and proc.stdout:
            # "libcudnn8:amd64: /usr/lib/..." (the first line; several packages are comma-separated)
            return proc.stdout.splitlines()[0].split(": ", 1)[0].split(",")[0].split(":")[0].strip()
    return ""


def sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def libraries(sonames: list[str]) -> list[dict[str, str]]:
    cache = loader_cache()
    found = []
    for soname in sonames:
        path = cache.get(soname)
        if not path:
            continue
        real = os.path.realpath(path)
        found.append({"soname": soname, "path": path, "real_path": real, "sha256": sha256(real),
                      "dpkg_owner": dpkg_owner(path)})
    return found


def main() -> None:
    print(json.dumps({
        "os": os_release(),
        "python_version": "{}.{}".format(*sys.version_info[:2]),
        "python_full_version": sys.version.split()[0],
        "python": distributions(),
        "pip_freeze": pip_freeze(),
        "dpkg": dpkg_packages(),
        "libraries": libraries(sys.argv[1:]),
    }, sort_keys=True))


if __name__ == "__main__":
    main()
