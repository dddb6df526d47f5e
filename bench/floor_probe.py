"""Run inside an image by its own Python (stdlib only, Python 3.8+): every installed distribution
with the bytes of its files on disk, and dpkg's installed packages. Prints one JSON document.

Also imported on the host, for `parse_dpkg_status` (a base image without Python is read with
`cat /var/lib/dpkg/status`). Sizes are on-disk file sizes of the files each RECORD lists, so a
file changed after install (stripped, say) counts as it is, and once however many paths reach it
(JupyterLab's core-mode folder is a link to its app); bytecode is counted apart, because Python can
run without it (slower) while it cannot run without the rest."""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from collections.abc import Iterable
from importlib import metadata

DPKG_STATUS = "/var/lib/dpkg/status"
# The part of a package that ships C/C++ headers for building against it (TensorFlow's custom ops):
# counted apart, since running the package does not need it.
HEADER_PREFIXES = ("tensorflow/include/",)


def parse_dpkg_status(text: str) -> dict[str, dict[str, object]]:
    """Installed packages: name -> {"kib": Installed-Size, "depends": [names]} (alternatives: all
    of them, versions and architectures dropped; `Pre-Depends` included)."""
    packages: dict[str, dict[str, object]] = {}
    for stanza in text.split("\n\n"):
        fields: dict[str, str] = {}
        key = ""
        for line in stanza.splitlines():
            if line[:1] in (" ", "\t") and key:
                fields[key] += " " + line.strip()
            elif ":" in line:
                key, _, value = line.partition(":")
                fields[key] = value.strip()
        if "Package" not in fields or not fields.get("Status", "").endswith(" installed"):
            continue
        depends: list[str] = []
        for field in ("Pre-Depends", "Depends"):
            for alternative in re.split(r"[,|]", fields.get(field, "")):
                name = alternative.strip().split(" ")[0].split(":")[0]
                if name:
                    depends.append(name)
        packages[fields["Package"]] = {"kib": int(fields.get("Installed-Size", "0") or 0), "depends": depends}
    return packages


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


def distributions() -> list[dict[str, object]]:
    found: list[dict[str, object]] = []
    seen: set[tuple[int, int]] = set()
    for dist in metadata.distributions():
        entries = [(str(entry), str(entry.locate())) for entry in dist.files or []]
        found.append({"name": dist.metadata["Name"], "version": dist.version, "requires": list(dist.requires or []),
                      **file_bytes(entries, seen)})
    return found


def main() -> None:
    try:
        with open(DPKG_STATUS, encoding="utf-8") as handle:
            dpkg = parse_dpkg_status(handle.read())
    except OSError:
        dpkg = {}
    version = "{}.{}".format(*sys.version_info[:2])
    print(json.dumps({"python_version": version, "python_full_version": sys.version.split()[0],
                      "dists": distributions(), "dpkg": dpkg}))


if __name__ == "__main__":
    main()
