"""DLPack capsules in pure ctypes: made over existing memory, and read.

``make_dlpack`` and :class:`DLPackProducer` hand out ``dltensor_versioned`` (or legacy
``dltensor``) capsules whose deleter keeps the memory's owner alive until the consumer
is done; :func:`read_dlpack` consumes a capsule into a :class:`DLPackView`, which calls
the producer's deleter on ``close()`` or when collected. See ``_c.capsule`` for the limits of
ctypes callbacks.
"""

from __future__ import annotations

import ctypes
from ctypes import (
    POINTER,
    Structure,
    c_int32,
    c_int64,
    c_uint8,
    c_uint16,
    c_uint32,
    c_uint64,
    c_void_p,
)
from typing import TYPE_CHECKING, Any, Final, Self

from interchange_hub._c.capsule import (
    DESTRUCTOR as _DESTRUCTOR,
    DLTENSOR,
    DLTENSOR_VERSIONED,
    LIVE as _LIVE,
    RELEASE as _RELEASE,
    allocate as _allocate,
    capsule_set_name as _capsule_set_name,
    free as _free,
    hold as _hold,
    immortal as _immortal,
    name_of as _name_of,
    new_capsule as _capsule,
    pointer_of as _address,
    raw_capsule_is_valid as _raw_capsule_is_valid,
    raw_capsule_pointer as _raw_capsule_pointer,
)
from interchange_hub._core.device import Device, DeviceType
from interchange_hub._core.dtypes import (
    DLPACK_DTYPES as _DLPACK_DTYPES,
    DLPACK_NAMES as _DLPACK_NAMES,
)
from interchange_hub.errors import ProtocolError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

# The highest DLPack version the hub asks producers for.
DLPACK_MAX_VERSION = (1, 3)

# --- structs ---------------------------------------------------------------------------


class DLDevice(Structure):
    """DLPack's ``DLDevice``."""

    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class DLDataType(Structure):
    """DLPack's ``DLDataType``."""

    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class DLTensor(Structure):
    """DLPack's ``DLTensor``."""

    _fields_ = [
        ("data", c_void_p),
        ("device", DLDevice),
        ("ndim", c_int32),
        ("dtype", DLDataType),
        ("shape", POINTER(c_int64)),
        ("strides", POINTER(c_int64)),
        ("byte_offset", c_uint64),
    ]


class DLManagedTensor(Structure):
    """DLPack's legacy ``DLManagedTensor`` (capsule ``"dltensor"``)."""

    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", c_void_p), ("deleter", _RELEASE)]


class DLPackVersion(Structure):
    """DLPack's ``DLPackVersion``."""

    _fields_ = [("major", c_uint32), ("minor", c_uint32)]


class DLManagedTensorVersioned(Structure):
    """DLPack's ``DLManagedTensorVersioned`` (capsule ``"dltensor_versioned"``, DLPack >= 1.0)."""

    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", c_void_p),
        ("deleter", _RELEASE),
        ("flags", c_uint64),
        ("dl_tensor", DLTensor),
    ]


# Capsule names must outlive their capsules: module-level constants.
_DLTENSOR_NAME: Final = DLTENSOR.encode()
_DLTENSOR_VERSIONED_NAME: Final = DLTENSOR_VERSIONED.encode()
_USED_NAMES: Final = {
    DLTENSOR: b"used_" + _DLTENSOR_NAME,
    DLTENSOR_VERSIONED: b"used_" + _DLTENSOR_VERSIONED_NAME,
}


_READ_ONLY: Final = 1  # DLPACK_FLAG_BITMASK_READ_ONLY


def _contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def _deleter(struct: type[Structure]) -> Any:
    def delete(address: int, live: dict[int, object] = _LIVE, free: Any = _free) -> None:
        live.pop(struct.from_address(address).manager_ctx or 0, None)
        free(address)

    return _immortal(_RELEASE(delete))


def _dlpack_destructor(name: bytes, struct: type[Structure]) -> Any:
    """Calls the deleter of a DLPack capsule nobody consumed (its name is unchanged)."""

    def destroy(
        capsule: int, valid: Any = _raw_capsule_is_valid, pointer: Any = _raw_capsule_pointer
    ) -> None:
        if valid(capsule, name):
            address = pointer(capsule, name)
            deleter = struct.from_address(address).deleter
            if deleter:
                deleter(address)

    return _immortal(_DESTRUCTOR(destroy))


_DELETE_LEGACY: Final = _deleter(DLManagedTensor)
_DELETE_VERSIONED: Final = _deleter(DLManagedTensorVersioned)
_FREE_LEGACY: Final = _dlpack_destructor(_DLTENSOR_NAME, DLManagedTensor)
_FREE_VERSIONED: Final = _dlpack_destructor(_DLTENSOR_VERSIONED_NAME, DLManagedTensorVersioned)


def make_dlpack(
    data: int,
    shape: Sequence[int],
    strides: Sequence[int] | None,
    dtype: str,
    device: Device,
    keep: object,
    *,
    versioned: bool = True,
    readonly: bool = False,
) -> object:
    """A DLPack capsule over existing memory (``"dltensor_versioned"``, DLPack 1.0, or legacy).

    ``strides`` are in elements (None: C-contiguous). ``keep`` stays referenced until the
    consumer calls the deleter, or the capsule is destroyed unconsumed. A legacy capsule
    cannot say the memory is read-only, so ``readonly=True`` with ``versioned=False`` raises
    :class:`BufferError`.
    """
    if dtype not in _DLPACK_DTYPES:
        raise BufferError(f"dtype {dtype!r} cannot be exported through DLPack")
    if readonly and not versioned:
        raise BufferError(
            "cannot export read-only memory as a legacy DLPack capsule, which has no read-only "
            "flag; ask for max_version=(1, 0) or higher"
        )
    ndim = len(shape)
    steps = _contiguous_strides(shape) if strides is None else tuple(strides)
    if len(steps) != ndim:
        raise ValueError(f"strides {steps} do not match shape {tuple(shape)}")
    shape_array, strides_array = (c_int64 * ndim)(*shape), (c_int64 * ndim)(*steps)
    struct: type[Structure] = DLManagedTensorVersioned if versioned else DLManagedTensor
    address = _allocate(struct)
    managed = struct.from_address(address)
    tensor = managed.dl_tensor
    tensor.data = data or None
    tensor.device = DLDevice(*device.dlpack)
    tensor.ndim = ndim
    tensor.dtype = DLDataType(*_DLPACK_DTYPES[dtype], 1)
    if ndim:
        tensor.shape = ctypes.cast(shape_array, POINTER(c_int64))
        tensor.strides = ctypes.cast(strides_array, POINTER(c_int64))
    managed.manager_ctx = _hold(keep, shape_array, strides_array)
    if versioned:
        managed.version = DLPackVersion(1, 0)
        managed.flags = _READ_ONLY if readonly else 0
        managed.deleter = _DELETE_VERSIONED
        return _capsule(address, _DLTENSOR_VERSIONED_NAME, _FREE_VERSIONED)
    managed.deleter = _DELETE_LEGACY
    return _capsule(address, _DLTENSOR_NAME, _FREE_LEGACY)


class DLPackProducer:
    """A DLPack producer over existing memory (for consumers like torch.from_dlpack / np.from_dlpack / cupy.from_dlpack).

    ``on_stream(stream)`` is called for non-CPU devices before a capsule is handed out,
    so the caller can make the data safe to use on the consumer's stream.
    """

    __slots__ = (
        "_data",
        "_device",
        "_dtype",
        "_keep",
        "_on_stream",
        "_readonly",
        "_shape",
        "_strides",
    )

    def __init__(
        self,
        data: int,
        shape: Sequence[int],
        strides: Sequence[int] | None,
        dtype: str,
        device: Device,
        keep: object,
        *,
        readonly: bool = False,
        on_stream: Callable[[int | None], None] | None = None,
    ) -> None:
        self._data, self._shape, self._strides = data, tuple(shape), strides
        self._dtype, self._device, self._keep = dtype, device, keep
        self._readonly, self._on_stream = readonly, on_stream

    def __dlpack__(
        self,
        *,
        stream: int | None = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> object:
        """A fresh capsule: versioned when ``max_version >= (1, 0)``, else legacy."""
        if copy:
            raise BufferError(
                "copy=True was asked for, but this producer only shares existing memory; "
                "pass copy=None or copy=False, or copy the result"
            )
        if dl_device is not None and Device.from_dlpack(dl_device) != self._device:
            raise BufferError(
                f"the data is on {self._device} and cannot be exported to device {dl_device}; "
                "move it first"
            )
        if self._device.is_cpu:
            if stream is not None:
                raise BufferError(f"stream={stream!r} was passed for CPU data; only None is valid")
        elif self._on_stream is not None:
            self._on_stream(stream)
        versioned = max_version is not None and tuple(max_version) >= (1, 0)
        return make_dlpack(
            self._data,
            self._shape,
            self._strides,
            self._dtype,
            self._device,
            self._keep,
            versioned=versioned,
            readonly=self._readonly,
        )

    def __dlpack_device__(self) -> tuple[int, int]:
        """``(device_type, device_id)``, DLPack style (0 for the CPU)."""
        return self._device.type, self._device.dlpack[1]


class DLPackView:
    """A consumed DLPack capsule: where the tensor is and how to read it.

    ``data`` already includes ``byte_offset``; ``strides`` are in elements. ``dtype`` is
    ``""`` for a type the hub does not name (complex, vector lanes). ``close()`` (or
    garbage collection) calls the producer's deleter once.
    """

    __slots__ = (
        "_address",
        "_managed",
        "data",
        "device",
        "dtype",
        "readonly",
        "shape",
        "strides",
        "versioned",
    )

    def __init__(self, address: int, versioned: bool) -> None:
        struct = DLManagedTensorVersioned if versioned else DLManagedTensor
        self._address = address
        self._managed: Any = struct.from_address(address)
        self.versioned = versioned
        tensor = self._managed.dl_tensor
        self.data: int = (tensor.data or 0) + tensor.byte_offset
        self.shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
        self.strides = (
            tuple(tensor.strides[i] for i in range(tensor.ndim))
            if tensor.strides
            else _contiguous_strides(self.shape)
        )
        kind = (tensor.dtype.code, tensor.dtype.bits)
        self.dtype = _DLPACK_NAMES.get(kind, "") if tensor.dtype.lanes == 1 else ""
        self.device = Device.from_dlpack((tensor.device.device_type, tensor.device.device_id))
        self.readonly = versioned and bool(self._managed.flags & _READ_ONLY)

    def close(self) -> None:
        """Tell the producer the memory is no longer used (once)."""
        address, self._address = self._address, 0
        if address and self._managed.deleter:
            self._managed.deleter(address)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        self.close()


def read_dlpack(capsule: object) -> DLPackView:
    """Consume a ``"dltensor_versioned"`` or legacy ``"dltensor"`` capsule."""
    name = _name_of(capsule)
    if name is not None and name.removeprefix("used_") in _USED_NAMES:
        name = name.removeprefix("used_")  # "used_*" is refused by _address
    else:
        name = DLTENSOR_VERSIONED  # for the error message
    address = _address(capsule, name)
    versioned = name == DLTENSOR_VERSIONED
    if versioned:
        version = DLManagedTensorVersioned.from_address(address).version
        if version.major != 1:
            raise ProtocolError(
                f"the DLPack capsule has version {version.major}.{version.minor}; only 1.x "
                "can be read. Ask the producer for max_version=(1, 0)"
            )
    device_type = (
        (DLManagedTensorVersioned if versioned else DLManagedTensor)
        .from_address(address)
        .dl_tensor.device.device_type
    )
    if device_type not in DeviceType._value2member_map_:
        raise ProtocolError(f"the DLPack tensor is on unknown device type {device_type}")
    _capsule_set_name(capsule, _USED_NAMES[name])
    return DLPackView(address, versioned)
