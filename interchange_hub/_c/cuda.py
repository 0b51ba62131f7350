"""The one CUDA call the hub makes itself, through the driver API and ctypes.

``libcuda.so.1`` (the driver) is mapped into every process that uses CUDA, whatever
runtime the libraries link (cupy links the runtime statically, torch loads its own
copy), and its handles are the runtime's: a ``cudaStream_t`` is a ``CUstream``, a
``cudaEvent_t`` a ``CUevent``. Nothing is loaded at import time.
"""

from __future__ import annotations

import ctypes
from functools import cache

from interchange_hub.errors import DeviceError

_DRIVER = "libcuda.so.1"


@cache
def driver() -> ctypes.CDLL:
    """The CUDA driver library, or :class:`DeviceError` when it cannot be loaded."""
    try:
        lib = ctypes.CDLL(_DRIVER)
    except OSError as exc:
        raise DeviceError(
            f"the CUDA driver ({_DRIVER}) cannot be loaded ({exc}); the data is on a GPU, "
            "so this process needs the NVIDIA driver"
        ) from None
    lib.cuStreamWaitEvent.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint]
    lib.cuStreamWaitEvent.restype = ctypes.c_int
    lib.cuGetErrorString.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    lib.cuGetErrorString.restype = ctypes.c_int
    return lib


def stream_wait_event(stream: int, event: int) -> None:
    """``cuStreamWaitEvent(stream, event, 0)``: work queued later on ``stream`` waits for
    ``event``. Stream 0 is the NULL stream of the calling thread's current device, so
    call it with the stream's device current."""
    lib = driver()
    status = lib.cuStreamWaitEvent(stream or None, event, 0)
    if status:
        text = ctypes.c_char_p()
        lib.cuGetErrorString(status, ctypes.byref(text))
        reason = text.value.decode() if text.value else f"CUresult {status}"
        raise DeviceError(f"cuStreamWaitEvent failed: {reason}")
