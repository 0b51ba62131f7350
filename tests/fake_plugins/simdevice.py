"""A simulated accelerator and its plugin, so that device logic is tested without a GPU.

``SimArray`` memory reports the DLPack device ``ext_dev`` (12). The host may not read
it: it has no buffer protocol, no ``__array__``, and numpy's DLPack import refuses its
device. The only way out is its own copy function, ``to_host()``, and the only way in
``SimArray.from_host()``; both are counted, as are the sync events the plugin records
and waits on, so tests can see what the hub did.
"""

from __future__ import annotations

import ctypes
import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

import interchange_hub as ih
from interchange_hub._bridge import devices
from interchange_hub._c import dlpack
from interchange_hub._core.device import Device, DeviceType
from interchange_hub._core.dtypes import np_dtype_name
from interchange_hub._core.info import (
    Column,
    Copy,
    DataInfo,
    Estimate,
    Kind,
    Unroutable,
    move_estimate,
)
from interchange_hub.adapter import ARROW_DEVICE, DLPACK, Buffer, Context, Edge, passthrough

SIM = Device(DeviceType.EXT_DEV, 0)
_SIM = ("ext_dev",)
_HANDLES = itertools.count(0x5EED0001)


@dataclass
class Log:
    """What crossed the simulated device's boundary."""

    to_host: int = 0
    from_host: int = 0
    events: list[int] = field(default_factory=list)
    waits: list[int] = field(default_factory=list)


LOG = Log()


class SimArray:
    """An array in simulated device memory (contiguous, any numeric dtype)."""

    __slots__ = ("__weakref__", "_mem", "_owner", "device")

    def __init__(self, mem: np.ndarray, device: Device = SIM, owner: object = None) -> None:
        self._mem = mem
        self._owner = owner  # whatever keeps foreign memory alive
        self.device = device

    @classmethod
    def from_host(cls, arr: Any, device: Device = SIM) -> SimArray:
        LOG.from_host += 1
        return cls(np.array(arr, copy=True, order="C"), device)

    def to_host(self) -> np.ndarray:
        LOG.to_host += 1
        return self._mem.copy()

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self._mem.shape)

    @property
    def dtype(self) -> str:
        return np_dtype_name(self._mem.dtype)

    @property
    def nbytes(self) -> int:
        return int(self._mem.nbytes)

    @property
    def address(self) -> int:
        return int(self._mem.ctypes.data)

    def copy(self) -> SimArray:
        """A copy in device memory (no host access)."""
        return SimArray(self._mem.copy(), self.device)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device.dlpack

    def __dlpack__(
        self,
        *,
        stream: object = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> object:
        if copy or dl_device not in (None, self.device.dlpack):
            raise BufferError("the simulated device exports its own memory only; use to_host()")
        mem = self._mem
        strides = [s // mem.itemsize for s in mem.strides]
        versioned = max_version is not None and tuple(max_version) >= (1, 0)
        return dlpack.make_dlpack(
            self.address, mem.shape, strides, self.dtype, self.device, self, versioned=versioned
        )


def view(
    address: int, shape: tuple[int, ...], dtype: str, owner: object, device: Device
) -> SimArray:
    """A SimArray over foreign device memory at ``address`` (no copy)."""
    np_dtype = np.dtype(dtype)
    count = int(np.prod(shape)) * np_dtype.itemsize
    raw = (ctypes.c_byte * count).from_address(address)
    mem = np.frombuffer(memoryview(raw), dtype=np_dtype).reshape(shape)
    return SimArray(mem, device, owner)


class SimAdapter(ih.Adapter):
    name = "simdev"
    waypoint = True  # its move edges carry device data to the host for other libraries
    module = __name__
    types = ("tests.fake_plugins.simdevice.SimArray",)
    devices = _SIM

    def owns(self, obj: object) -> bool:
        return isinstance(obj, SimArray)

    def type_kinds(self) -> dict[type, Kind | None]:
        return {SimArray: Kind.TENSOR}

    def describe(self, obj: Any) -> DataInfo:
        shape = obj.shape
        col = Column("", obj.dtype, obj.nbytes, 0)
        rows = shape[0] if shape else 1
        return DataInfo(Kind.TENSOR, (col,), rows=rows, shape=shape, layout="C", device=obj.device)

    def buffers(self, obj: Any) -> list[Buffer]:
        return [Buffer(obj.address, obj.nbytes, str(obj.device))] if obj.nbytes else []

    def default_device(self) -> Device:
        return SIM

    def record_event(self, obj: Any) -> tuple[int, object]:
        handle = next(_HANDLES)
        LOG.events.append(handle)
        return handle, None

    def edges(self) -> list[Edge]:
        return [
            Edge("simdev", DLPACK, self.name, "__dlpack__", _same, passthrough, devices=_SIM),
            Edge(
                DLPACK, "simdev", self.name, "sim.from_dlpack", _import_est, _import, devices=_SIM
            ),
            Edge("simdev", DLPACK, self.name, "SimArray.to_host", _out_est, _out, devices=_SIM),
            Edge(DLPACK, "simdev", self.name, "SimArray.from_host", _in_est, _in, devices=("cpu",)),
            Edge(
                ARROW_DEVICE, "simdev", self.name, "ArrowDeviceArray", _arr_est, _arr, devices=_SIM
            ),
        ]


def _same(ctx: Context) -> Estimate:
    return Estimate(ctx.info, why="SimArray is a DLPack producer on its device")


def _import_est(ctx: Context) -> Estimate:
    info = ctx.info
    if info.kind != Kind.TENSOR or info.layout != "C":
        raise Unroutable("the simulated device holds contiguous tensors only")
    if ctx.copy and not ctx.fresh:
        reason = "copy=True: copied on the device"
        return Estimate(info, (Copy("", info.nbytes, reason),), why=reason, copies_all=True)
    return Estimate(info, why="views the producer's device memory")


def _import(value: Any, ctx: Context) -> Any:
    if isinstance(value, SimArray):
        arr = value
    else:
        got = dlpack.read_dlpack(value.__dlpack__(max_version=(1, 0)))
        arr = view(got.data, tuple(got.shape), got.dtype, got, got.device)
    return arr.copy() if ctx.copy and not ctx.fresh else arr


def _out_est(ctx: Context) -> Estimate:
    if ctx.device is None or not ctx.device.is_cpu:
        raise Unroutable("the data need not leave the device")
    return move_estimate(ctx.info, ctx.device, "SimArray.to_host()")


def _out(value: Any, ctx: Context) -> Any:
    return value.to_host()


def _in_est(ctx: Context) -> Estimate:
    place = ctx.device
    if place is None or place.kind != "ext_dev" or ctx.info.kind != Kind.TENSOR:
        raise Unroutable("the data need not go to the simulated device")
    return move_estimate(ctx.info, place, "SimArray.from_host()")


def _in(value: Any, ctx: Context) -> Any:
    assert ctx.device is not None
    return SimArray.from_host(np.from_dlpack(value), ctx.device)


def _arr_est(ctx: Context) -> Estimate:
    return devices.estimate_column_import(ctx.info, bool(ctx.copy and not ctx.fresh))


def _arr(value: Any, ctx: Context) -> Any:
    imported, address, _ = devices.import_column(value)
    col = imported.columns[0]
    if imported.event_handle:
        LOG.waits.append(imported.event_handle)
    arr = view(address, (col.length,), col.dtype, imported, imported.device)
    return arr.copy() if ctx.copy and not ctx.fresh else arr


@ih.hookimpl
def register_adapters(register: Any) -> None:
    register(SimAdapter())
