"""ctypes access to the CUDA driver and libraries: load a library the way TensorFlow's dlopen
does (by soname, through the loader path), say where it came from, and call its version getter.
Nothing here needs TensorFlow or a GPU (except the driver API, which needs the driver)."""

from __future__ import annotations

import ctypes
import os


def load(soname: str) -> tuple[ctypes.CDLL | None, str]:
    """(library, its file) or (None, the loader's error)."""
    try:
        lib = ctypes.CDLL(soname)
    except OSError as exc:
        return None, str(exc)
    return lib, loaded_path(soname) or soname


def loaded_path(soname: str) -> str | None:
    """The file a loaded soname maps to, from /proc/self/maps (the soname may be a symlink)."""
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.rstrip("\n").split(None, 5)[-1]
                if os.path.basename(path) == soname or os.path.basename(path).startswith(soname + "."):
                    return path
    except OSError:
        return None
    return None


def int_out(lib: ctypes.CDLL, func: str, *args: int) -> tuple[int, int]:
    """Call `status func(args..., int *out)`; (status, out)."""
    value = ctypes.c_int(0)
    status = getattr(lib, func)(*[ctypes.c_int(a) for a in args], ctypes.byref(value))
    return int(status), int(value.value)


def size_t_call(lib: ctypes.CDLL, func: str) -> int:
    """Call `size_t func(void)` (cudnnGetVersion, cublasLtGetVersion)."""
    fn = getattr(lib, func)
    fn.restype = ctypes.c_size_t
    fn.argtypes = []
    return int(fn())


def driver_error_name(lib: ctypes.CDLL, status: int) -> str:
    """CUresult -> 'CUDA_ERROR_NO_DEVICE' via cuGetErrorName."""
    name = ctypes.c_char_p()
    if lib.cuGetErrorName(ctypes.c_int(status), ctypes.byref(name)) == 0 and name.value:
        return name.value.decode()
    return f"CUresult {status}"


def version_text(value: int, digits: tuple[int, ...]) -> str:
    """Split an encoded version: 8906 with (1000, 100, 1) -> '8.9.6'; 11080 with (1000, 10) -> '11.8'."""
    parts = []
    for divisor, modulo in zip(digits, (None, *digits[:-1])):
        part = value // divisor if modulo is None else (value % modulo) // divisor
        parts.append(str(part))
    return ".".join(parts)
