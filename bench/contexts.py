"""Build contexts for the warm-rebuild cases: the context build.py sends (tf29env.imagebuild.context.write),
with one file changed in the copy only. The working tree is never touched, since others edit it."""

import io
import tarfile
from collections.abc import Callable

from tf29env.imagebuild import context

# The warm cases: which context file each one touches. A comment appended at the end changes the
# file's checksum (so the classic builder's cache misses from that COPY on) and nothing else.
TOUCHES = {
    "entrypoint": "image/entrypoint.sh",
    "selfcheck": "image/python/tf29image/selfcheck/__init__.py",
    "requirements": "requirements.txt",
}


def standard() -> bytes:
    """The context tar exactly as build.py builds it. Build-only CAs are not in it: they travel in
    a build arg (builds.ca_args), which keeps them out of the layers and the cache keys."""
    buffer = io.BytesIO()
    context.write(buffer, [])
    return buffer.getvalue()


def replace_member(original: bytes, name: str, change: Callable[[bytes], bytes]) -> bytes:
    """A copy of the tar `original` whose member `name` holds change(old content); metadata kept."""
    out = io.BytesIO()
    found = False
    with tarfile.open(fileobj=io.BytesIO(original), mode="r") as source, tarfile.open(fileobj=out, mode="w") as tar:
        for info in source.getmembers():
            handle = source.extractfile(info) if info.isfile() else None
            data = handle.read() if handle is not None else b""
            if info.name == name and info.isfile():
                found = True
                data = change(data)
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if info.isfile() else None)
    if not found:
        raise KeyError(f"{name} is not a file of the build context")
    return out.getvalue()


def append_comment(marker: str) -> Callable[[bytes], bytes]:
    """A change that appends one comment line (valid in shell, Python and requirements files)."""

    def change(data: bytes) -> bytes:
        newline = b"" if not data or data.endswith(b"\n") else b"\n"
        return data + newline + f"# bench: {marker}\n".encode()

    return change


def touched(original: bytes, case: str, marker: str) -> bytes:
    """The context of warm case `case`, with a unique marker so that no earlier run's cache hits."""
    return replace_member(original, TOUCHES[case], append_comment(marker))
