"""Protocol helpers: capsule names, device codes and dunder detection.

Nothing here imports a data library. Dunders are looked up with
:func:`inspect.getattr_static` on the type, so probing never runs a ``__getattr__``.
"""

from __future__ import annotations

import enum
import inspect
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from interchange_hub.errors import DeviceError, ProtocolError

# Capsule names from the Arrow PyCapsule interface and the DLPack Python specification.
ARROW_SCHEMA = "arrow_schema"
ARROW_ARRAY = "arrow_array"
ARROW_ARRAY_STREAM = "arrow_array_stream"
ARROW_DEVICE_ARRAY = "arrow_device_array"
ARROW_DEVICE_ARRAY_STREAM = "arrow_device_array_stream"
DLTENSOR = "dltensor"
DLTENSOR_VERSIONED = "dltensor_versioned"

# The highest DLPack version the hub asks producers for.
DLPACK_MAX_VERSION = (1, 3)


class DeviceType(enum.IntEnum):
    """Device codes shared by the Arrow C Device interface and DLPack (``kDL*``)."""

    CPU = 1
    CUDA = 2
    CUDA_HOST = 3
    OPENCL = 4
    VULKAN = 7
    METAL = 8
    VPI = 9
    ROCM = 10
    ROCM_HOST = 11
    EXT_DEV = 12
    CUDA_MANAGED = 13
    ONEAPI = 14
    WEBGPU = 15
    HEXAGON = 16
    MAIA = 17
    TRN = 18


# Arrow recommends -1 as the device id of the CPU; DLPack uses 0.
ARROW_CPU_DEVICE_ID = -1
DLPACK_CPU_DEVICE_ID = 0

_DEVICE_NAMES = {t: t.name.lower() for t in DeviceType}
_DEVICE_RE = re.compile(r"^(?P<kind>[a-z_]+)(?::(?P<index>\d+))?$")


@dataclass(frozen=True, slots=True)
class Device:
    """A place where memory lives: a device type and, except for the CPU, an index."""

    type: DeviceType
    index: int = 0

    def __post_init__(self) -> None:
        if self.type == DeviceType.CPU and self.index != 0:
            # The CPU has no intrinsic device id: every id names the same place.
            object.__setattr__(self, "index", 0)

    @classmethod
    def parse(cls, spec: str | Device) -> Device:
        """Parse ``"cpu"``, ``"cuda"`` or ``"cuda:N"``."""
        if isinstance(spec, Device):
            return spec
        match = _DEVICE_RE.match(str(spec).strip().lower())
        names = {name: code for code, name in _DEVICE_NAMES.items()}
        if match is None or match["kind"] not in names:
            raise DeviceError(
                f"unknown device {spec!r}: use 'cpu', 'cuda' or 'cuda:N' (N the GPU index), "
                f"or another DLPack device type: {', '.join(names)}"
            )
        return cls(names[match["kind"]], int(match["index"] or 0))

    @classmethod
    def from_arrow(cls, device_type: int, device_id: int) -> Device:
        """Build from an ``ArrowDeviceArray``'s fields; any CPU id (-1, 0, ...) is the CPU."""
        return cls(DeviceType(device_type), max(device_id, 0))

    @classmethod
    def from_dlpack(cls, device: tuple[int, int]) -> Device:
        """Build from a ``__dlpack_device__()`` tuple."""
        return cls(DeviceType(int(device[0])), int(device[1]))

    @property
    def arrow_id(self) -> int:
        """The device id to write into an ``ArrowDeviceArray`` (-1 for the CPU)."""
        return ARROW_CPU_DEVICE_ID if self.type == DeviceType.CPU else self.index

    @property
    def dlpack(self) -> tuple[int, int]:
        """The ``(device_type, device_id)`` pair DLPack uses (0 for the CPU)."""
        index = DLPACK_CPU_DEVICE_ID if self.type == DeviceType.CPU else self.index
        return (int(self.type), index)

    @property
    def is_cpu(self) -> bool:
        return self.type == DeviceType.CPU

    @property
    def kind(self) -> str:
        """The device type's name ("cpu", "cuda", ...), as ``Adapter.devices`` lists them."""
        return _DEVICE_NAMES[self.type]

    def __str__(self) -> str:
        return self.kind if self.type == DeviceType.CPU else f"{self.kind}:{self.index}"


CPU = Device(DeviceType.CPU)


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


def capsule_name(capsule: object) -> str | None:
    """The name of a PyCapsule, or None when ``capsule`` is not one."""
    import ctypes

    if type(capsule).__name__ != "PyCapsule":
        return None
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype = ctypes.c_char_p
    get_name.argtypes = [ctypes.py_object]
    raw = get_name(capsule)
    return raw.decode() if raw is not None else None


def check_capsule(capsule: object, expected: str, producer: object) -> None:
    """Raise :class:`ProtocolError` if ``capsule`` is not a capsule named ``expected``."""
    name = capsule_name(capsule)
    if name != expected:
        found = f"a capsule named {name!r}" if name is not None else type(capsule).__name__
        raise ProtocolError(
            f"{type(producer).__name__} returned {found} where the protocol requires a "
            f"capsule named {expected!r}; the producer is broken, report it to its authors"
        )


def dlpack_device(obj: Any) -> Device:
    """The device of a DLPack producer (CPU when it has no ``__dlpack_device__``)."""
    if not has_dunder(obj, "__dlpack_device__"):
        return CPU
    return Device.from_dlpack(obj.__dlpack_device__())


class ArrowStreamProducer:
    """Exposes only ``__arrow_c_stream__`` of another object.

    Consumers then take the protocol path instead of a type-specific shortcut (polars,
    for one, converts a pandas DataFrame its own way). ``requested_schema`` is passed on,
    and dropped when the producer rejects it (nanoarrow raises NotImplementedError).
    """

    __slots__ = ("_producer",)

    def __init__(self, producer: Any) -> None:
        self._producer = producer

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        producer = self._producer
        if requested_schema is not None:
            try:
                capsule = producer.__arrow_c_stream__(requested_schema)
            except (NotImplementedError, TypeError):
                capsule = producer.__arrow_c_stream__()
        else:
            capsule = producer.__arrow_c_stream__()
        check_capsule(capsule, ARROW_ARRAY_STREAM, producer)
        return capsule
