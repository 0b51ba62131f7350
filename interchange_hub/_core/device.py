"""Where memory lives: the device codes of DLPack and the Arrow C Device interface.

Plain values only: nothing here imports a data library or touches memory.
"""

from __future__ import annotations

import enum
import re
from typing import TYPE_CHECKING

from interchange_hub._core.records import record
from interchange_hub.errors import DeviceError

if TYPE_CHECKING:
    from collections.abc import Iterable


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
_DEVICE_CODES = {name: code for code, name in _DEVICE_NAMES.items()}
_DEVICE_RE = r"^(?P<kind>[a-z_]+)(?::(?P<index>\d+))?$"  # compiled on first use (re's cache)

# Names people give devices that DLPack calls otherwise: name -> DLPack's name.
DEVICE_ALIASES = {
    "gpu": "cuda",
    "nvidia": "cuda",
    "amd": "rocm",
    "hip": "rocm",
    "xpu": "oneapi",
    "mps": "metal",
    "host": "cpu",
}


@record
class Device:
    """A place where memory lives: a device type and, except for the CPU, an index."""

    type: DeviceType
    index: int = 0

    def __post_init__(self) -> None:
        if self.type == DeviceType.CPU and self.index != 0:
            # The CPU has no intrinsic device id: every id names the same place.
            object.__setattr__(self, "index", 0)

    @classmethod
    def parse(cls, spec: str | Device, kinds: Iterable[str] = ()) -> Device:
        """Parse ``"cpu"``, ``"cuda"`` or ``"cuda:N"`` (or another DLPack device type).

        ``kinds``: the device kinds the hub's adapters hold, named when ``spec`` is
        unknown (besides ``cpu`` and ``cuda``)."""
        if isinstance(spec, Device):
            return spec
        match = re.match(_DEVICE_RE, str(spec).strip().lower())
        if match is None or match["kind"] not in _DEVICE_CODES:
            raise DeviceError(unknown_device(spec, kinds))
        return cls(_DEVICE_CODES[match["kind"]], int(match["index"] or 0))

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


def unknown_device(spec: object, kinds: Iterable[str] = ()) -> str:
    """Why ``spec`` names no device, and the nearest device that it may mean: ``"gpu"``
    is ``"cuda"``, ``"gpu:1"`` is ``"cuda:1"``, ``0`` is ``"cuda:0"``."""
    import difflib

    text = str(spec).strip().lower()
    head = re.match(r"[a-z_]*", text)
    word = head.group() if head else ""
    index = text[len(word) :].removeprefix(":")
    near = DEVICE_ALIASES.get(word) or next(
        iter(difflib.get_close_matches(word, list(_DEVICE_CODES), n=1, cutoff=0.75)), ""
    )
    if isinstance(spec, int) and not isinstance(spec, bool):
        near, index = "cuda", str(spec)
    if near and index.isdigit():
        hint = f" Did you mean '{near}:{index}'?"
    elif near == "cuda":
        hint = " Did you mean 'cuda' (the current GPU) or 'cuda:0'?"
    elif near:
        hint = f" Did you mean {near!r}?"
    else:
        hint = ""
    others = [k for k in dict.fromkeys(kinds) if k not in ("cpu", "cuda")]
    more = f", or a kind the adapters hold: {', '.join(others)}" if others else ""
    return f"unknown device {spec!r}.{hint} Use 'cpu', 'cuda' or 'cuda:N' (N the GPU index){more}"
