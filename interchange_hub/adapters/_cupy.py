"""cupy adapter: ndarray in CUDA device memory.

With torch (or any DLPack producer on the same GPU) a cupy array is exchanged through
DLPack without a copy; ``cupy.from_dlpack`` passes cupy's current stream to the
producer, which makes the data safe on it as the DLPack spec requires. Memory reaches
the CPU libraries only through an explicit device copy step (``ndarray.get``), and CPU
memory reaches cupy through ``cupy.asarray``: both show in the plan with their bytes.
"""

from __future__ import annotations

from contextlib import nullcontext
from functools import cache
from typing import TYPE_CHECKING, Any

from interchange_hub._bridge import tensors
from interchange_hub._core.deps import require
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
from interchange_hub._core.marks import hookimpl
from interchange_hub.adapter import (
    ARROW_DEVICE,
    DLPACK,
    Adapter,
    Buffer,
    Context,
    Edge,
    check_tensor_parts,
    with_context,
)
from interchange_hub.errors import DeviceError

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable, Mapping, Sequence
    from contextlib import AbstractContextManager

_CUDA = ("cuda",)
_CPU = ("cpu",)
_NEEDS = ("cupy",)
NEGATIVE = "negative strides: made contiguous on the device first (torch aborts on them)"


def _cupy() -> Any:
    return require("cupy", "to hold data in GPU memory")


@cache
def _ndarray() -> Any:
    return _cupy().ndarray


def _device(arr: Any) -> Device:
    return Device(DeviceType.CUDA, int(arr.device.id))


class CupyAdapter(Adapter):
    name = "cupy"
    keyed_losses = True  # no count or size in its estimates' losses
    aliases = ("cp",)
    module = "cupy"
    waypoint = True
    extra = "cupy"
    types = ("cupy.ndarray",)
    devices = _CUDA

    def owns(self, obj: object) -> bool:
        return isinstance(obj, _ndarray())

    def type_kinds(self) -> Mapping[type, Kind | None]:
        return {_ndarray(): Kind.TENSOR}

    def describe(self, obj: Any) -> DataInfo:
        col = Column("", np_dtype_name(obj.dtype), int(obj.nbytes), 0)
        return DataInfo(
            Kind.TENSOR,
            (col,),
            rows=obj.shape[0] if obj.ndim else 1,
            shape=tuple(obj.shape),
            layout=tensors.layout_of(obj),  # cupy's flags and strides read like numpy's
            device=_device(obj),
        )

    def route_key(self, obj: Any) -> Hashable | None:
        if type(obj) is not _ndarray() or not obj.size:
            return None
        try:  # cupy's own fields: ndarray.flags and .device make an object each
            c_order, f_order = obj._c_contiguous, obj._f_contiguous
            device = obj.data.device_id
        except AttributeError:  # a cupy without them: the public names
            flags = obj.flags
            c_order, f_order, device = flags.c_contiguous, flags.f_contiguous, obj.device.id
        if not (c_order or f_order):
            return None
        return (obj.dtype, obj.shape[1:], obj.ndim, device, bool(c_order))

    def concat(self, parts: Sequence[Any]) -> Any:
        """``cupy.concatenate(parts, axis=0)`` on the first part's GPU: a copy."""
        cupy = _cupy()
        check_tensor_parts(parts, _ndarray(), "cupy arrays")
        with cupy.cuda.Device(parts[0].device.id):
            return cupy.concatenate(parts, axis=0)

    def buffers(self, obj: Any) -> list[Buffer]:
        if not obj.size:
            return []
        itemsize = obj.itemsize
        low = sum((n - 1) * s for n, s in zip(obj.shape, obj.strides, strict=True) if s < 0)
        high = sum((n - 1) * s for n, s in zip(obj.shape, obj.strides, strict=True) if s > 0)
        start = obj.data.ptr + low
        return [Buffer(start, high - low + itemsize, str(_device(obj)))]

    def default_device(self) -> Device:
        cupy = _cupy()
        try:
            cupy.cuda.runtime.getDeviceCount()
        except Exception as exc:  # noqa: BLE001 - cupy's CUDARuntimeError, or no driver
            raise DeviceError(
                f"cupy cannot reach a GPU ({type(exc).__name__}: {exc}); converting to cupy "
                "needs a CUDA device and driver"
            ) from None
        return Device(DeviceType.CUDA, int(cupy.cuda.Device().id))

    def record_event(self, obj: Any) -> tuple[int, object]:
        cupy = _cupy()
        with cupy.cuda.Device(obj.device.id):
            event = cupy.cuda.Event(disable_timing=True)
            event.record(cupy.cuda.get_current_stream())
        return int(event.ptr), event

    def on_device(self, device: Device) -> AbstractContextManager[object]:
        if device.type != DeviceType.CUDA:
            return nullcontext()
        return _cupy().cuda.Device(device.index)  # type: ignore[no-any-return]

    def edges(self) -> Sequence[Edge]:
        name = self.name
        return (
            Edge(
                "cupy",
                DLPACK,
                name,
                "__dlpack__",
                _export_estimate,
                _export,
                _NEEDS,
                _CUDA,
                bind=_export_bind,
            ),
            Edge(
                DLPACK,
                "cupy",
                name,
                "cupy.from_dlpack",
                _import_estimate,
                _import,
                _NEEDS,
                _CUDA,
                bind=_import_bind,
            ),
            Edge("cupy", DLPACK, name, "ndarray.get", _to_host_estimate, _to_host, _NEEDS, _CUDA),
            Edge(DLPACK, "cupy", name, "cupy.asarray", _to_gpu_estimate, _to_gpu, _NEEDS, _CPU),
            Edge("cupy", "cupy", name, "ndarray.copy", _peer_estimate, _peer, _NEEDS, _CUDA),
            Edge(
                ARROW_DEVICE,
                "cupy",
                name,
                "ArrowDeviceArray",
                _device_array_estimate,
                _device_array,
                _NEEDS,
                _CUDA,
            ),
        )


# -- same device: DLPack ----------------------------------------------------------------------
def _export_estimate(ctx: Context) -> Estimate:
    info = ctx.info
    if info.layout == "negative":
        out = info.but(layout="C")
        copies = (Copy("", info.nbytes, NEGATIVE),)
        return Estimate(out, copies, why=NEGATIVE, copies_all=True)
    return Estimate(info, why="ndarray is a DLPack producer (it records an event on its stream)")


def _export(value: Any, ctx: Context) -> Any:
    if ctx.info.layout == "negative":
        return _cupy().ascontiguousarray(value)
    return value


def _export_bind(ctx: Context) -> Callable[[Any], Any] | None:
    """Nothing to run where the strides are not negative: the array is the producer."""
    return with_context(_export, ctx) if ctx.info.layout == "negative" else None


def _import_estimate(ctx: Context) -> Estimate:
    info = ctx.info
    if info.kind != Kind.TENSOR:
        raise Unroutable("only tensors travel through DLPack")
    (col,) = info.columns
    if col.dtype == "bfloat16":
        raise Unroutable("cupy has no bfloat16")
    if ctx.copy and not ctx.fresh:
        reason = "copy=True: the array is copied on the device"
        out = info.but(layout="C", readonly=False)
        return Estimate(out, (Copy("", info.nbytes, reason),), why=reason, copies_all=True)
    return Estimate(info, why="cupy.from_dlpack shares the producer's memory, on its stream")


def _import(value: Any, ctx: Context) -> Any:
    cupy = _cupy()
    arr = value if isinstance(value, cupy.ndarray) else cupy.from_dlpack(value)
    if ctx.copy and not ctx.fresh:
        return arr.copy()
    return arr


def _import_bind(ctx: Context) -> Callable[[Any], Any]:
    """The run for ``ctx``: ``cupy.from_dlpack`` itself where nothing is copied."""
    if ctx.copy and not ctx.fresh:
        return with_context(_import, ctx)
    cupy = _cupy()
    ndarray, from_dlpack = cupy.ndarray, cupy.from_dlpack

    def run(value: Any) -> Any:
        return value if isinstance(value, ndarray) else from_dlpack(value)

    return run


# -- across devices: explicit copies -------------------------------------------------------------
def _to_host_estimate(ctx: Context) -> Estimate:
    place = ctx.device
    if place is None or not place.is_cpu:
        raise Unroutable("the data need not leave the GPU")
    how = "ndarray.get()"
    if ctx.info.layout not in ("C", "F"):
        how += " (gathered on the GPU first: the array is not contiguous)"
    return move_estimate(ctx.info, place, how)


def _to_host(value: Any, ctx: Context) -> Any:
    # order="A" keeps a Fortran-ordered array Fortran-ordered, as the estimate says.
    return value.get(order="A")  # synchronises cupy's current stream before reading


def _to_gpu_estimate(ctx: Context) -> Estimate:
    place = ctx.device
    if place is None or place.type != DeviceType.CUDA:
        raise Unroutable("the data need not go to a GPU")
    if ctx.info.kind != Kind.TENSOR:
        raise Unroutable("only tensors travel through DLPack")
    dtype = ctx.info.columns[0].dtype
    if dtype == "bfloat16" or not tensors.dlpack_dtype(dtype):
        raise Unroutable(f"cupy has no {dtype}")
    return move_estimate(ctx.info, place, "cupy.asarray")


def _to_gpu(value: Any, ctx: Context) -> Any:
    cupy, np = _cupy(), tensors.np_module()
    place = ctx.device
    assert place is not None  # the estimate refused a move without a place
    host = value if isinstance(value, np.ndarray) else np.from_dlpack(value)
    with cupy.cuda.Device(place.index):
        return cupy.asarray(host)


def _peer_estimate(ctx: Context) -> Estimate:
    place = ctx.device
    if place is None or place.type != DeviceType.CUDA or place == ctx.info.device:
        raise Unroutable("the array is on the GPU asked for")
    return move_estimate(ctx.info, place, "ndarray.copy()")


def _peer(value: Any, ctx: Context) -> Any:
    cupy = _cupy()
    place = ctx.device
    assert place is not None
    with cupy.cuda.Device(value.device.id):  # work pending on the source GPU...
        pending = cupy.cuda.Event(disable_timing=True)
        pending.record(cupy.cuda.get_current_stream())
    with cupy.cuda.Device(place.index):
        cupy.cuda.get_current_stream().wait_event(pending)  # ...finishes before the copy
        return value.copy()  # cupy copies to the current device


# -- Arrow device arrays ---------------------------------------------------------------------------
def _device_array_estimate(ctx: Context) -> Estimate:
    from interchange_hub._bridge import devices  # on first use: 2 ms of ctypes

    return devices.estimate_column_import(ctx.info, bool(ctx.copy and not ctx.fresh))


def _device_array(value: Any, ctx: Context) -> Any:
    cupy = _cupy()
    from interchange_hub._bridge import devices  # on first use: 2 ms of ctypes

    imported, address, nbytes = devices.import_column(value)
    column = imported.columns[0]
    with cupy.cuda.Device(imported.device.index):
        if imported.event_handle:
            stream = cupy.cuda.get_current_stream().ptr
            cupy.cuda.runtime.streamWaitEvent(stream, imported.event_handle)
        # The imported array owns the producer's struct: cupy keeps it alive, and its
        # release runs when the last view of the memory is gone.
        memory = cupy.cuda.UnownedMemory(address, nbytes, imported, imported.device.index)
        pointer = cupy.cuda.MemoryPointer(memory, 0)
        arr = cupy.ndarray((column.length,), dtype=column.dtype, memptr=pointer)
        return arr.copy() if ctx.copy and not ctx.fresh else arr


@hookimpl
def register_adapters(register: Any) -> None:
    register(CupyAdapter())
