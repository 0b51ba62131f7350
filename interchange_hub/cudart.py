"""The few CUDA runtime calls the hub makes itself, through ctypes.

Libraries that hand out CUDA memory (torch, cupy) have already loaded ``libcudart``
into the process; the hub finds that copy rather than loading another one, and loads
nothing at import time.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from functools import cache

from interchange_hub.errors import DeviceError

_SONAMES = ("libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0")


def _loaded_paths() -> list[str]:
    """Paths of libcudart copies already mapped into this process (Linux)."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            found = [line.split()[-1] for line in maps if "libcudart" in line]
    except OSError:
        return []
    return list(dict.fromkeys(p for p in found if p.startswith("/")))


@cache
def runtime() -> ctypes.CDLL:
    """The CUDA runtime library, or :class:`DeviceError` when none can be found."""
    candidates = [*_loaded_paths(), *_SONAMES]
    found = ctypes.util.find_library("cudart")
    if found:
        candidates.append(found)
    for name in candidates:
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        lib.cudaStreamWaitEvent.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint]
        lib.cudaStreamWaitEvent.restype = ctypes.c_int
        lib.cudaGetErrorString.argtypes = [ctypes.c_int]
        lib.cudaGetErrorString.restype = ctypes.c_char_p
        return lib
    raise DeviceError(
        "the CUDA runtime (libcudart) is not loaded and cannot be found; import the GPU "
        "library that made the data (torch or cupy) with CUDA support"
    )


def stream_wait_event(stream: int, event: int) -> None:
    """``cudaStreamWaitEvent(stream, event, 0)``: work queued later on ``stream`` waits."""
    lib = runtime()
    status = lib.cudaStreamWaitEvent(stream or None, event, 0)
    if status:
        message = lib.cudaGetErrorString(status)
        text = message.decode() if message else f"error {status}"
        raise DeviceError(f"cudaStreamWaitEvent failed: {text}")
