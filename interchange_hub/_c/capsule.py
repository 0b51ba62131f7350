"""ctypes plumbing shared by ``_c.arrow_device`` (Arrow C Device) and ``_c.dlpack`` (DLPack).

PyCapsule calls with the hub's own prototypes, C memory from ``PyMem_RawCalloc``, the
registry that keeps exported memory's owners alive until a consumer's release or
deleter runs (keyed by ``private_data`` / ``manager_ctx``), and the capsule names of the
Arrow PyCapsule interface and DLPack. Nothing here imports a data library.

Capsule destructors and release callbacks are Python functions behind ctypes. CPython
cannot run such a callback while C code has an exception pending: a C consumer that fails
and then drops a capsule made here sees its exception replaced by a ``SystemError``
(Python frames unwinding are fine). The hub's exports therefore let pyarrow build the
structs when it is installed (``devices.export_columns``).
"""

from __future__ import annotations

import ctypes
import itertools
from ctypes import Structure, c_char_p, c_int, c_void_p
from typing import TYPE_CHECKING, Any, TypeVar

from interchange_hub.errors import ConsumedSourceError, ProtocolError

if TYPE_CHECKING:
    from collections.abc import Iterator

# Every callback takes its struct as a void*: the same ABI as the typed pointer.
RELEASE = ctypes.CFUNCTYPE(None, c_void_p)
DESTRUCTOR = ctypes.CFUNCTYPE(None, c_void_p)

# --- capsule names ---------------------------------------------------------------------

# From the Arrow PyCapsule interface and the DLPack Python specification.
ARROW_SCHEMA = "arrow_schema"
ARROW_ARRAY = "arrow_array"
ARROW_ARRAY_STREAM = "arrow_array_stream"
ARROW_DEVICE_ARRAY = "arrow_device_array"
ARROW_DEVICE_ARRAY_STREAM = "arrow_device_array_stream"
DLTENSOR = "dltensor"
DLTENSOR_VERSIONED = "dltensor_versioned"


# --- CPython capsule API ---------------------------------------------------------------

_api = ctypes.pythonapi
# Own prototypes: the cached ``ctypes.pythonapi.X`` objects are shared with other code.
capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, c_void_p, c_char_p, DESTRUCTOR)(
    ("PyCapsule_New", _api)
)
capsule_pointer = ctypes.PYFUNCTYPE(c_void_p, ctypes.py_object, c_char_p)(
    ("PyCapsule_GetPointer", _api)
)
capsule_name = ctypes.PYFUNCTYPE(c_char_p, ctypes.py_object)(("PyCapsule_GetName", _api))
capsule_set_name = ctypes.PYFUNCTYPE(c_int, ctypes.py_object, c_char_p)(("PyCapsule_SetName", _api))
# Destructors get the dying capsule as a raw pointer: no reference counting on it.
raw_capsule_pointer = ctypes.PYFUNCTYPE(c_void_p, c_void_p, c_char_p)(
    ("PyCapsule_GetPointer", _api)
)
raw_capsule_is_valid = ctypes.PYFUNCTYPE(c_int, c_void_p, c_char_p)(("PyCapsule_IsValid", _api))
_incref = ctypes.PYFUNCTYPE(None, ctypes.py_object)(("Py_IncRef", _api))
calloc = ctypes.PYFUNCTYPE(c_void_p, ctypes.c_size_t, ctypes.c_size_t)(("PyMem_RawCalloc", _api))
free = ctypes.PYFUNCTYPE(None, c_void_p)(("PyMem_RawFree", _api))


def name_of(capsule: object) -> str | None:
    """The name of a PyCapsule, or None when ``capsule`` is not one."""
    if type(capsule).__name__ != "PyCapsule":
        return None
    raw = capsule_name(capsule)
    return raw.decode() if raw is not None else None


def pointer_of(capsule: object, name: str) -> int:
    """The pointer held by a capsule that must be named ``name``."""
    found = name_of(capsule)
    if found == f"used_{name}":
        raise ConsumedSourceError(
            f"this {name!r} capsule was already consumed; ask the producer for a new one"
        )
    if found != name:
        what = type(capsule).__name__ if found is None else f"a capsule named {found!r}"
        raise ProtocolError(
            f"expected a capsule named {name!r} but got {what}; the producer broke the "
            "protocol, report it to its authors"
        )
    address = capsule_pointer(capsule, name.encode())
    if not address:
        raise ProtocolError(f"the {name!r} capsule holds a NULL pointer; report it to its authors")
    return int(address)


def check_capsule(capsule: object, expected: str, producer: object) -> None:
    """Raise :class:`ProtocolError` if ``capsule`` is not a capsule named ``expected``."""
    name = name_of(capsule)
    if name != expected:
        found = f"a capsule named {name!r}" if name is not None else type(capsule).__name__
        raise ProtocolError(
            f"{type(producer).__name__} returned {found} where the protocol requires a "
            f"capsule named {expected!r}; the producer is broken, report it to its authors"
        )


def allocate(struct: type[Structure]) -> int:
    address = calloc(1, ctypes.sizeof(struct))
    if not address:
        raise MemoryError(f"cannot allocate a {struct.__name__}")
    return int(address)


def new_capsule(address: int, name: bytes, destructor: Any) -> object:
    try:
        return capsule_new(address, name, destructor)
    except BaseException:
        free(address)
        raise


T = TypeVar("T")


def immortal(thunk: T) -> T:
    """Keep a ctypes callback for the life of the process and return it.

    C code may call it while the interpreter shuts down (a consumer freeing an array it
    imported), after module globals are gone: a thunk freed by then is a jump into freed
    memory. Callbacks bind the globals they use as default arguments for the same reason.
    """
    _incref(thunk)
    return thunk


# --- keep-alive registry -----------------------------------------------------------------

# private_data / manager_ctx key -> what an exported struct points at.
LIVE: dict[int, object] = {}
_KEYS: Iterator[int] = itertools.count(1)


def hold(*objects: object) -> int:
    """Keep ``objects`` alive under a new key (for ``private_data``); ``LIVE.pop`` frees."""
    key = next(_KEYS)
    LIVE[key] = objects
    return key
