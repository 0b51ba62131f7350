"""Protocol detection: which interchange dunders an object's type defines.

Nothing here imports a data library. Dunders are looked up with
:func:`inspect.getattr_static` on the type, so probing never runs a ``__getattr__``.
"""

from __future__ import annotations

import inspect
from functools import lru_cache
from typing import Any

from interchange_hub._core.device import CPU, Device


def has_dunder(obj: object, name: str) -> bool:
    """Whether ``type(obj)`` defines ``name``, without running any ``__getattr__``."""
    cls: Any = type(obj)
    return _type_has(cls, name)


@lru_cache(maxsize=1024)
def _type_has(cls: Any, name: str) -> bool:
    try:
        inspect.getattr_static(cls, name)
    except AttributeError:
        return False
    return True


def is_arrow_stream(obj: object) -> bool:
    return has_dunder(obj, "__arrow_c_stream__")


def is_arrow_array(obj: object) -> bool:
    return has_dunder(obj, "__arrow_c_array__")


def is_arrow(obj: object) -> bool:
    """Whether ``obj`` exports Arrow data on the CPU through the PyCapsule interface."""
    return is_arrow_stream(obj) or is_arrow_array(obj)


def is_arrow_device(obj: object) -> bool:
    """Whether ``obj`` exports Arrow data through the C Device interface."""
    return has_dunder(obj, "__arrow_c_device_array__") or has_dunder(
        obj, "__arrow_c_device_stream__"
    )


def is_dlpack(obj: object) -> bool:
    return has_dunder(obj, "__dlpack__")


def dlpack_device(obj: Any) -> Device:
    """The device of a DLPack producer (CPU when it has no ``__dlpack_device__``)."""
    if not has_dunder(obj, "__dlpack_device__"):
        return CPU
    return Device.from_dlpack(obj.__dlpack_device__())
