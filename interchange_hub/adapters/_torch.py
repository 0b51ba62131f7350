"""torch adapter: Tensor, on the CPU or a CUDA device.

Tensors travel through DLPack only; between CPU and GPU (or two GPUs) a tensor moves
with ``Tensor.to``, a step the plan shows as a device copy. Before ``torch.from_dlpack``
the hub makes arrays with negative strides contiguous, because torch's DLPack import
aborts the process on them (pytorch#188023).
"""

from __future__ import annotations

import sys
from contextlib import nullcontext
from dataclasses import replace
from functools import cache
from typing import TYPE_CHECKING, Any

from interchange_hub._bridge import tensors
from interchange_hub._c import cuda
from interchange_hub._core import dtypes
from interchange_hub._core.deps import require
from interchange_hub._core.device import Device, DeviceType
from interchange_hub._core.dtypes import TENSOR_DTYPES
from interchange_hub._core.info import (
    NO_FLAGS,
    Column,
    Copy,
    DataInfo,
    Estimate,
    Flag,
    Kind,
    Unroutable,
    alignment_of,
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
from interchange_hub.errors import DeviceError, NoRouteError

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable, Mapping, Sequence
    from contextlib import AbstractContextManager


def _torch() -> Any:
    return require("torch", "to make torch tensors")


#: torch's dtypes that the hub names (by torch's own names): DLPack's numbers and bool.
_HUB_DTYPES = frozenset(
    (
        *TENSOR_DTYPES,
        "bfloat16",
        "complex64",
        "complex128",
    )
)


@cache
def _dtype_name(dtype: Any) -> str:
    """The hub's name for a torch dtype: torch's own for those the hub knows, and
    ``torch_<name>`` for the others (float8_e4m3fn, complex32, uint4, qint8, bits8, ...),
    which no other library holds: no route mistakes them for numbers it can take (a
    uint4 for an integer, a complex32 for a complex numpy dtype)."""
    name = str(dtype).removeprefix("torch.")
    return name if name in _HUB_DTYPES else f"torch_{name}"


#: torch dtypes whose tensors torch's DLPack export refuses (BufferError).
_NO_DLPACK = ("torch_qint", "torch_quint", "torch_bits")


def _device(t: Any) -> Device:
    if t.device.type == "cpu":
        return Device(DeviceType.CPU)
    if t.device.type == "cuda":
        return Device(DeviceType.CUDA, t.device.index or 0)
    return Device(DeviceType.EXT_DEV, t.device.index or 0)


@cache
def _tensor_types() -> tuple[Any, Any]:
    torch = _torch()
    return torch.Tensor, torch.strided


_DEVICES = ("cpu", "cuda")


@cache
def _has_cuda() -> bool:
    return bool(_torch().cuda.is_available())


class TorchAdapter(Adapter):
    name = "torch"
    keyed_losses = True  # no count or size in its estimates' losses
    aliases = ("pt",)
    readonly_note = (
        "the result shares read-only memory with the source; writing to it (torch "
        "ignores the read-only flag) changes the source. Pass copy=True to avoid it"
    )
    writes_through = True
    module = "torch"
    waypoint = True
    extra = "torch"
    types = ("torch.Tensor",)
    devices = _DEVICES

    def owns(self, obj: object) -> bool:
        return isinstance(obj, _torch().Tensor)

    def type_kinds(self) -> Mapping[type, Kind | None]:
        return {_torch().Tensor: Kind.TENSOR}

    def describe(self, obj: Any) -> DataInfo:
        torch = _torch()
        if obj.device.type == "meta":
            raise NoRouteError(
                "this torch tensor is on the 'meta' device, which holds shapes and dtypes "
                "but no data; make one with data first (torch.empty_like(t, device='cpu'), "
                "or load the module's weights)"
            )
        if obj.is_nested:
            raise NoRouteError(
                "this torch tensor is a nested tensor (tensors of different shapes), which "
                "has no one buffer to share; convert its parts (t.unbind()), or pad it into "
                "one tensor first (t.to_padded_tensor(0.0))"
            )
        flags: frozenset[Flag] = NO_FLAGS
        layout = "C"
        if obj.layout != torch.strided:  # (sparse CSR/CSC/BSR have no is_contiguous: raises)
            flags = frozenset({Flag.SPARSE})
        else:
            if not obj.is_contiguous():
                layout = "F" if obj.dim() == 2 and obj.t().is_contiguous() else "strided"
            if obj.is_conj() or obj.is_neg():
                flags = frozenset({Flag.LAZY_BIT})
        col = Column("", _dtype_name(obj.dtype), obj.numel() * obj.element_size(), 0, flags=flags)
        dense = obj.layout == torch.strided and obj.numel()
        return DataInfo(
            Kind.TENSOR,
            (col,),
            rows=obj.shape[0] if obj.dim() else 1,
            shape=tuple(obj.shape),
            layout=layout,
            device=_device(obj),
            alignment=alignment_of(obj.data_ptr()) if dense else 0,
        )

    def route_key(self, obj: Any) -> Hashable | None:
        return _tensor_key(obj) if type(obj) is _tensor_types()[0] else None

    def route_key_of(self, cls: type) -> Callable[[Any], Hashable | None]:
        if type(self).route_key is not TorchAdapter.route_key:  # (a subclass keys its own way)
            return self.route_key
        return _tensor_key if cls is _tensor_types()[0] else self.route_key

    def concat(self, parts: Sequence[Any]) -> Any:
        """``torch.cat(parts, dim=0)``: a copy, on the parts' device."""
        torch = _torch()
        check_tensor_parts(parts, torch.Tensor, "tensors")
        return torch.cat(list(parts), dim=0)

    def buffers(self, obj: Any) -> list[Buffer]:
        if obj.numel() == 0 or obj.layout != _torch().strided:
            return []
        # The bytes this view spans (torch strides are never negative).
        span = sum((n - 1) * st for n, st in zip(obj.shape, obj.stride(), strict=True)) + 1
        return [Buffer(obj.data_ptr(), span * obj.element_size(), str(_device(obj)))]

    def record_event(self, obj: Any) -> tuple[int, object]:
        if obj.device.type != "cuda":
            return 0, None
        torch = _torch()
        event = torch.cuda.Event()
        event.record(torch.cuda.current_stream(obj.device))
        return int(event._as_parameter_.value or 0), event

    def on_device(self, device: Device) -> AbstractContextManager[object]:
        if device.type != DeviceType.CUDA:
            return nullcontext()
        return _torch().cuda.device(device.index)  # type: ignore[no-any-return]

    def edges(self) -> Sequence[Edge]:
        need = ("torch",)
        return (
            Edge(
                "torch",
                DLPACK,
                self.name,
                "__dlpack__",
                _export_estimate,
                _export,
                need,
                _DEVICES,
                bind=_export_bind,
            ),
            Edge(
                DLPACK,
                "torch",
                self.name,
                "torch.from_dlpack",
                _import_estimate,
                _import,
                need,
                _DEVICES,
                bind=_import_bind,
            ),
            Edge("torch", "torch", self.name, "Tensor.to", _move_estimate, _move, need, _DEVICES),
            Edge(
                ARROW_DEVICE,
                "torch",
                self.name,
                "__cuda_array_interface__",
                _device_array_estimate,
                _device_array,
                need,
                ("cuda",),  # CPU device arrays go through pyarrow
            ),
        )


def _tensor_key(obj: Any) -> Hashable | None:
    """The route key of a ``torch.Tensor`` (of that very type): dtype, trailing shape,
    dimensions, device and whether it is row- or column-major; None where it is planned
    each call (sparse, empty, lazily conjugated or negated, strided)."""
    if obj.layout is not (_STRIDED or _strided()):  # (read once: 0.06 us a call)
        return None
    dtype = obj.dtype
    if (dtype.is_complex and obj.is_conj()) or obj.is_neg():
        return None  # lazily conjugated/negated tensors: planned
    dims = obj.dim()
    # A CPU tensor's device as True (is_cpu: 0.06 us, hashed at once) against 0.08 us
    # for the torch.device and 0.1 us to hash it; the trailing shape of a 2-D tensor as
    # its int (a torch.Size sliced and hashed: 0.5 us). The conjugate bit is only ever
    # set on complex tensors (torch.conj of a real tensor is the tensor itself).
    device = True if obj.is_cpu else obj.device
    if dims == 2:
        # Its shape and strides, read once, say what numel(), is_contiguous() and
        # t().is_contiguous() would (0.3 us less than those calls, and no transposed
        # view: 1-2 us); a size-1 dimension's stride does not count, as for torch.
        rows, cols = obj.shape
        if not rows or not cols:
            return None  # empty: planned
        first, second = obj.stride()
        if (cols == 1 or second == 1) and (rows == 1 or first == cols):
            return (dtype, cols, dims, device, "C")
        if (rows == 1 or first == 1) and (cols == 1 or second == rows):
            return (dtype, cols, dims, device, "F")  # column-major, as describe says
        return None  # strided: planned
    if not obj.numel():
        return None  # empty: planned
    if obj.is_contiguous():
        if dims < 2:
            return (dtype, (), dims, device, "C")
        return (dtype, obj.shape[1:], dims, device, "C")
    return None  # strided: planned


_STRIDED: Any = None  # torch.strided, once torch is imported


def _strided() -> Any:
    global _STRIDED
    _STRIDED = _tensor_types()[1]
    return _STRIDED


def _wait(handle: int, device: Device) -> None:
    """Make torch's current stream on ``device`` wait for a producer's event."""
    if handle and device.type == DeviceType.CUDA:
        torch = _torch()
        with torch.cuda.device(device.index):  # stream 0 means the current device's
            cuda.stream_wait_event(torch.cuda.current_stream().cuda_stream, handle)


_NO_GPU = (
    "this torch cannot reach a GPU (torch.cuda.is_available() is False): install a CUDA "
    "build of torch"
)


def _no_cuda(info: DataInfo) -> None:
    """Refuse GPU data entering a torch that cannot reach a GPU (a CPU build)."""
    if not info.device.is_cpu and not _has_cuda():
        raise Unroutable(_NO_GPU + ", or pass device='cpu' to move the data to the CPU")


def _device_array_estimate(ctx: Context) -> Estimate:
    _no_cuda(ctx.info)
    from interchange_hub._bridge import devices  # on first use: 2 ms of ctypes

    return devices.estimate_column_import(ctx.info, bool(ctx.copy and not ctx.fresh))


class _CudaColumn:
    """A CUDA device column seen through ``__cuda_array_interface__`` (v3). torch keeps
    this object, and with it the imported array that owns the memory, as long as the
    tensor lives; its release is Python's, never a ctypes callback."""

    __slots__ = ("__cuda_array_interface__", "_owner")

    def __init__(self, address: int, length: int, dtype: str, owner: object) -> None:
        kind = "f" if dtype.startswith("float") else "u" if dtype.startswith("uint") else "i"
        typestr = f"<{kind}{dtypes.itemsize(dtype)}"
        self._owner = owner
        self.__cuda_array_interface__ = {
            "shape": (length,),
            "typestr": typestr,
            "data": (address, False),
            "strides": None,
            "version": 3,
            "stream": None,  # the hub has made torch's stream wait on the sync_event
        }


def _device_array(value: Any, ctx: Context) -> Any:
    from interchange_hub._bridge import devices

    imported, address, _ = devices.import_column(value)
    _wait(imported.event_handle, imported.device)  # before torch queues work on the memory
    column = _CudaColumn(address, imported.length, imported.columns[0].dtype, imported)
    tensor = _torch().as_tensor(column, device=f"cuda:{imported.device.index}")
    return tensor.clone() if ctx.copy and not ctx.fresh else tensor


def _move_estimate(ctx: Context) -> Estimate:
    info, place = ctx.info, ctx.device
    if place is None or place == info.device or place.kind not in _DEVICES:
        raise Unroutable("the tensor is where it must be")
    _no_cuda(info)
    return move_estimate(info, place, f"Tensor.to('{place}')")


def _move(value: Any, ctx: Context) -> Any:
    place = ctx.device
    assert place is not None  # the estimate refused a move without a place
    if not place.is_cpu and not _has_cuda():
        raise DeviceError(_NO_GPU + ", or leave device=None to keep the data on the CPU")
    target = "cpu" if place.is_cpu else f"cuda:{place.index}"
    return value.detach().to(target)


def _export_estimate(ctx: Context) -> Estimate:
    info = ctx.info
    (col,) = info.columns
    if Flag.SPARSE in col.flags:
        raise Unroutable(
            "sparse tensors (COO, CSR, CSC, BSR, BSC) and other tensors not of the strided "
            "layout (mkldnn) have no DLPack export; call .to_dense() first"
        )
    if col.dtype.startswith(_NO_DLPACK):
        raise Unroutable(
            f"torch has no DLPack export for {col.dtype.removeprefix('torch_')} tensors "
            "(quantized or bit types); dequantize or cast the tensor first (e.g. "
            "tensor.dequantize(), tensor.view(torch.uint8))"
        )
    if Flag.LAZY_BIT in col.flags:
        reason = "torch materialises a conjugate/negative view (resolve_conj/resolve_neg)"
        out = info.but(columns=(replace(col, flags=NO_FLAGS),), layout="C")
        return Estimate(out, (Copy("", col.nbytes, reason),), why=reason, copies_all=True)
    return Estimate(info, why="Tensor is a DLPack producer (detached if it needs grad)")


def _export(value: Any, ctx: Context) -> Any:
    if value.requires_grad:
        value = value.detach()
    if value.is_conj():
        value = value.resolve_conj()
    if value.is_neg():
        value = value.resolve_neg()
    return value


def _detached(value: Any) -> Any:
    return value.detach() if value.requires_grad else value


def _export_bind(ctx: Context) -> Callable[[Any], Any]:
    """The run for ``ctx``: where the plan saw no lazy conjugate/negative bit, only the
    detach (the route key plans such tensors every call, so no kept run meets one)."""
    if Flag.LAZY_BIT in ctx.info.columns[0].flags:
        return with_context(_export, ctx)
    return _detached


def _import_estimate(ctx: Context) -> Estimate:
    info = ctx.info
    if info.kind != Kind.TENSOR:
        raise Unroutable("only tensors travel through DLPack")
    _no_cuda(info)
    if info.layout == "negative" and not info.device.is_cpu:
        raise Unroutable("torch cannot import negative strides (it aborts)")
    if info.layout == "negative":
        reason = "torch cannot import negative strides (it aborts); made contiguous"
        copies: tuple[Copy, ...] = (Copy("", info.nbytes, reason),)
    elif ctx.copy and not ctx.fresh:
        copies = (Copy("", info.nbytes, "copy=True: the tensor is cloned"),)
    else:
        return Estimate(
            info,
            why="torch.from_dlpack shares the producer's memory",
            shared_readonly=info.readonly,
        )
    return Estimate(
        info.but(layout="C", readonly=False), copies, why=copies[0].reason, copies_all=True
    )


def _import(value: Any, ctx: Context) -> Any:
    torch = _torch()
    if ctx.info.layout == "negative":
        # Through numpy, which can read negative strides, to a fresh contiguous array.
        value = require("numpy").from_dlpack(value).copy()
    tensor = value if isinstance(value, torch.Tensor) else torch.from_dlpack(value)
    if ctx.copy and not ctx.fresh and ctx.info.layout != "negative":
        return tensor.clone()
    return tensor


def _import_bind(ctx: Context) -> Callable[[Any], Any]:
    """The run for ``ctx``: ``torch.from_dlpack`` itself where nothing is copied (a
    cupy array into torch on the GPU: 11.8 us against the direct call's 7.4, before),
    and for a numpy array (what a jax Array's export gives) ``torch.from_numpy``, the same
    sharing at a third of the cost (0.5 us against 1.4), where it takes the array."""
    if ctx.info.layout == "negative" or (ctx.copy and not ctx.fresh):
        return with_context(_import, ctx)
    torch = _torch()
    tensor, from_dlpack, from_numpy = torch.Tensor, torch.from_dlpack, torch.from_numpy
    numpy = sys.modules.get("numpy")  # (an ndarray's producer imported numpy before)
    ndarray = numpy.ndarray if numpy is not None else None

    def run(value: Any) -> Any:
        # (the ndarray first: isinstance of torch.Tensor goes through its metaclass's
        # __instancecheck__, 0.15 us of a 1.3 us from_numpy)
        if type(value) is ndarray:
            try:
                if tensors.torch_warned or value.flags.writeable:
                    return from_numpy(value)
                return tensors.torch_from_numpy(torch, value)
            except (TypeError, ValueError):  # a dtype or strides from_numpy refuses:
                pass  # DLPack's import decides, as without this
        elif isinstance(value, tensor):
            return value
        return from_dlpack(value)

    return run


@hookimpl
def register_adapters(register: Any) -> None:
    register(TorchAdapter())
