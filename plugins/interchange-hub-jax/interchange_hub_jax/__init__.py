"""interchange_hub plugin for JAX: ``jax.Array`` as a source and a target, on the CPU.

jax -> anything: a ``jax.Array`` is a DLPack producer, so torch, numpy and the Arrow
bridge view its buffer without a copy. jax Arrays are immutable, so the hub treats that
memory as read-only (numpy views of it are read-only; torch ignores the flag, and the hub
warns with ``WriteThroughWarning``).

anything -> jax (``to="jax"``, ``to=jax.Array``): tensors arrive through DLPack
(``jax.dlpack.from_dlpack``), 1-D Arrow columns straight from their Arrow buffer
(a writable numpy view of the values buffer, which numpy exports as the DLPack capsule
jax asks for, taken with ``copy=False``). What JAX 0.10 does, measured:

* it **shares memory only when the buffer starts at a multiple of 64 bytes** and copies
  silently otherwise (``copy=False`` makes it raise). torch's and Arrow's allocators align
  to 64 bytes, numpy's own allocations to 16. The hub's descriptions say how a buffer is
  aligned (``DataInfo.alignment``, added by ``hub-alignment.patch``); where nothing says
  so (a hub without that field, a source whose description does not measure it) the plan
  counts a copy and the conversion makes one, so a plan never claims a view that JAX
  would not make. A cached route checks each array's address and has the hub plan afresh
  where it differs;
* it asks the producer for the **unversioned DLPack capsule**, which cannot carry DLPack
  1.0's read-only flag, and refuses versioned capsules; numpy therefore refuses to export
  a read-only array to it (``BufferError``), which is what the hub's views of Arrow
  memory are. Read-only memory is exported as a writable alias of the same memory (a
  numpy array over its address, holding the source): jax views it under ``copy=False``
  or says why not, and nothing writes to it, since jax Arrays are immutable;
* it imports only compact strides (C order, F order or another transposition);
  other strided views are gathered into new memory first;
* ``from_dlpack(copy=True)`` still shares a CPU buffer (jax 0.10.2), so the plugin makes
  its copies itself: under 512 KiB written by numpy into new memory at 64 bytes, which
  jax views (:func:`_owned`), larger ones by jax (``device_put``, ``jnp.array``);
* ``from_dlpack`` costs about 52 us a call, nearly all of it Python around jaxlib's
  import of the capsule, which the plugin calls itself for CPU producers (6.6 us) once a
  probe showed it gives what ``from_dlpack`` gives (:func:`_dlpack_in`);
* with ``jax_enable_x64`` off (JAX's default) it **turns 64-bit data into 32-bit**
  (int64 -> int32, uint64 -> uint32, float64 -> float32, complex128 -> complex64), a new
  buffer where integers outside the 32-bit range wrap around. The plan reports it as a
  loss (``LossyConversionWarning``; ``strict=True`` refuses) and a copy. With
  ``jax.config.update("jax_enable_x64", True)`` 64-bit data is shared like any other.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cache
from typing import TYPE_CHECKING, Any

from interchange_hub import arrowkit
from interchange_hub.adapter import (
    ARROW,
    CPU,
    DLPACK,
    Adapter,
    Buffer,
    Column,
    Context,
    Copy,
    DataInfo,
    Device,
    DeviceType,
    Edge,
    Estimate,
    IdentityKeys,
    Kind,
    Loss,
    RouteChanged,
    Unroutable,
    cast_loss,
    mixed_parts,
    report_losses,
    require,
)
from interchange_hub.errors import ConsumedSourceError, ConversionError
from interchange_hub.hookspecs import hookimpl

try:  # the address of a numpy array's data in 0.12 us (interchange_hub 0.1.0 and later)
    from interchange_hub.adapter import ndarray_address
except ImportError:  # pragma: no cover - an older interchange_hub: numpy's own accessor

    def ndarray_address(arr: Any) -> int:
        return int(arr.ctypes.data)


if TYPE_CHECKING:
    from collections.abc import Callable, Hashable, Mapping, Sequence

__all__ = [
    "ALIGNMENT",
    "HUB_REPORTS_ALIGNMENT",
    "JaxAdapter",
    "alignment",
    "register_adapters",
    "x64_enabled",
]

NAME = "jax"
ALIGNMENT = 64  # bytes: XLA's CPU client views external memory only at this alignment

# Where the hub describes a buffer's alignment (DataInfo.alignment: the largest power of
# two up to 64 dividing the data's address, 0 where nobody measured it). An interchange_hub
# without that field reports none, and every import into jax is planned as a copy.
HUB_REPORTS_ALIGNMENT = "alignment" in getattr(DataInfo, "__dataclass_fields__", {})
# Where the hub keeps routes per size class when an estimate says its choice depends on
# the size (Estimate.by_size); an older one keeps one route per signature.
_HUB_KEEPS_BY_SIZE = "by_size" in getattr(Estimate, "__dataclass_fields__", {})
SHARDED = "jax:sharded"  # a jax Array spread over several devices

_NEEDS = ("jax", "numpy")
_ARROW_NEEDS = ("jax", "numpy", "pyarrow")

#: The hub's dtype names JAX holds (jax.dlpack's supported dtypes).
SUPPORTED = frozenset(
    (
        "bool",
        *(f"{s}int{b}" for s in ("", "u") for b in (8, 16, 32, 64)),
        "float16",
        "bfloat16",
        "float32",
        "float64",
        "complex64",
        "complex128",
    )
)
#: Arrow column types whose values buffer JAX can view (bool is bit-packed in Arrow).
_ARROW_FIXED = frozenset(
    (*(f"{s}int{b}" for s in ("", "u") for b in (8, 16, 32, 64)), "float16", "float32", "float64")
)
#: What a 64-bit dtype becomes with jax_enable_x64 off.
NARROWED = {"int64": "int32", "uint64": "uint32", "float64": "float32", "complex128": "complex64"}

# -- the reasons plans give -----------------------------------------------------------------
_MISALIGNED = (
    "jax views memory only at a 64-byte boundary, and this buffer is {align}-byte aligned "
    "(numpy allocates at 16-byte boundaries; torch and Arrow at 64): jax copies it"
)
_NOT_REPORTED = (
    "jax views memory only at a 64-byte boundary, and the buffer's alignment is not known "
    + (
        "(its source's description does not measure it)"
        if HUB_REPORTS_ALIGNMENT
        else "(this interchange_hub does not report alignment)"
    )
    + ": copied, so that the plan is right whatever the address"
)
_FRESH = (
    "jax views memory only at a 64-byte boundary, and the alignment of the buffer the "
    "previous step made is not known: counted as a copy"
)
# Where the import goes through jax.dlpack.from_dlpack (no direct import: _dlpack_in),
# memory a step has just made is copied below this many elements (256 KiB of float64)
# even where jax could view it: from_dlpack costs 23-52 us whatever the size, jnp.array's
# copy 28-33 us up to 125 KiB (174 us at 500 KiB; jax 0.10, 4 float64 columns, measured
# here). Through the direct import (6.6 us) a view costs less at every size, and aligned
# new memory is viewed whatever its size. Elements, not bytes: counted alike when planned
# (the tensor's shape) and when run (the array's size), whatever dtype a step ends up
# giving.
SHARE_FRESH_FROM = 1 << 15
_SMALL_FRESH = (
    "the buffer the previous step made is small (under 32,768 elements): jax's own copy "
    "costs less than its DLPack import (about 30 us)"
)
_STRIDED = (
    "jax imports only compact strides (row-major, column-major or another transposition): "
    "the strided view is gathered into new memory"
)
_COPY_TRUE = "copy=True: jax copies the data into new memory"
_X64_LOST = (
    "jax_enable_x64 is off: jax keeps 64-bit data in 32 bits (integers outside the 32-bit "
    "range wrap around, floats lose precision); call jax.config.update('jax_enable_x64', "
    "True) before converting to keep 64 bits"
)
_SHARED = "jax.dlpack.from_dlpack shares the producer's memory (64-byte aligned)"
_SHARED_READONLY = (
    "jax.dlpack.from_dlpack shares the producer's read-only memory (64-byte aligned), "
    "exported as a writable alias (jax asks for the unversioned capsule, which cannot "
    "say read-only; jax Arrays are immutable)"
)
_SHARED_ARROW = (
    "jax shares the Arrow values buffer (64-byte aligned; jax.dlpack.from_dlpack of "
    "nanoarrow's buffer view or of a writable numpy view: jax Arrays are immutable)"
)
_SOURCE_WRITES = "; writes to the source show in the jax Array"


def _jax() -> Any:
    return require("jax", "to make jax Arrays")


def _np() -> Any:
    return require("numpy", "to hand data to jax")


@cache
def _array_types() -> tuple[type, type]:
    jax = _jax()
    return jax.Array, jax.core.Tracer


def x64_enabled() -> bool:
    """Whether jax keeps 64-bit dtypes now (``jax_enable_x64``, or ``jax.enable_x64()``)."""
    return bool(_jax().config.jax_enable_x64)


def _dtype_name(dtype: Any) -> str:
    name = str(dtype.name)
    return "bool" if name == "bool_" else name


def _device(arr: Any) -> Device:
    code, index = arr.__dlpack_device__()
    if int(code) == DeviceType.CPU:
        return CPU
    return Device.from_dlpack((int(code), int(index)))


def _layout(arr: Any) -> str:
    """The hub's layout of a jax Array's buffer: "C", "F" (column-major, 2-D and up) or
    "strided" (another order of the dimensions; still compact)."""
    ndim = arr.ndim
    if ndim < 2:
        return "C"
    try:
        order = tuple(arr.format.layout.major_to_minor)
    except (AttributeError, TypeError, ValueError, RuntimeError):
        return "C"  # no concrete layout to read: jax's default, row-major
    if order == tuple(range(ndim)):
        return "C"
    if order == tuple(reversed(range(ndim))):
        return "F"
    return "strided"


def alignment(info: DataInfo) -> int:
    """What ``info`` says of its buffer's alignment: 64 (or more) aligned, 1 to 32
    measured and not aligned, 0 not reported (an older hub, a table, new memory)."""
    return int(getattr(info, "alignment", 0) or 0)


def _route_key(obj: Any) -> Hashable | None:
    if not obj.size or len(obj.devices()) != 1:
        return None  # empty, or sharded: always planned
    return (obj.dtype, obj.shape[1:], obj.ndim, _layout(obj), str(_device(obj)))


class JaxAdapter(Adapter):
    name = NAME
    module = "jax"
    requirement = "jax"
    types = ("jax.Array",)
    devices = ("cpu",)
    # Its losses (64-bit data narrowed with jax_enable_x64 off) depend on the dtype, which
    # route keys fix, and on jax_enable_x64, which every bound run checks (RouteChanged
    # where it changed since planning): a lossy route is kept, and warns on every call.
    keyed_losses = True
    readonly_note = (
        "the result views the source's read-only memory; jax Arrays are immutable "
        "(.at[].set() returns a new array), so nothing writes through it. Pass copy=True "
        "for independent memory"
    )

    def owns(self, obj: object) -> bool:
        return isinstance(obj, _array_types()[0])

    def type_kinds(self) -> Mapping[type, Kind | None]:
        return {_jax().Array: Kind.TENSOR}

    def describe(self, obj: Any) -> DataInfo:
        if isinstance(obj, _array_types()[1]):
            raise ConversionError(
                "this jax value is a tracer (inside jax.jit, grad or vmap): it has no data "
                "to convert; convert the result outside the traced function, or use "
                "jax.pure_callback"
            )
        if obj.is_deleted():
            raise ConsumedSourceError(
                "this jax Array was deleted (donated to a jit-compiled function, or "
                ".delete() was called): its memory is gone; convert the array before "
                "donating it"
            )
        flags: frozenset[str] = frozenset()
        if len(obj.devices()) != 1:  # sharded: one buffer per device
            flags = frozenset({SHARDED})
            on_cpu = all(d.platform == "cpu" for d in obj.devices())
            device = CPU if on_cpu else Device(DeviceType.EXT_DEV)
        else:
            device = _device(obj)
        col = Column("", _dtype_name(obj.dtype), int(obj.nbytes), 0, flags=flags)
        return DataInfo(
            Kind.TENSOR,
            (col,),
            rows=obj.shape[0] if obj.ndim else 1,
            shape=tuple(obj.shape),
            layout=_layout(obj),
            device=device,
            readonly=True,  # jax Arrays are immutable
        )

    def __init__(self) -> None:
        # A jax Array is immutable: its dtype, shape, layout and device never change, so
        # its key is read once per object (5 us through .format and __dlpack_device__,
        # 0.4 us after). Only deletion (donation, .delete()) happens later: checked on
        # every call.
        self._keys = IdentityKeys(_route_key)

    def route_key(self, obj: Any) -> Hashable | None:
        if isinstance(obj, _array_types()[1]) or obj.is_deleted():
            return None
        return self._keys(obj)

    def route_key_of(self, cls: type) -> Callable[[Any], Hashable | None]:
        """For a concrete Array type (not a tracer's): the deletion check and the identity
        table's plain lookup, the type tested once here (0.78 -> 0.45 us a call)."""
        if type(self).route_key is not JaxAdapter.route_key or issubclass(cls, _array_types()[1]):
            return self.route_key
        lookup = self._keys.lookup()

        def array_key(obj: Any) -> Hashable | None:
            return None if obj.is_deleted() else lookup(obj)

        return array_key

    def buffers(self, obj: Any) -> list[Buffer]:
        if isinstance(obj, _array_types()[1]) or obj.is_deleted() or not obj.size:
            return []
        if len(obj.devices()) != 1:
            return []  # one buffer per device: no single range to show
        return [Buffer(_pointer(obj), int(obj.nbytes), str(_device(obj)))]

    def concat(self, parts: Sequence[Any]) -> Any:
        """``jnp.concatenate(parts, axis=0)``: a copy."""
        if not all(isinstance(p, _array_types()[0]) for p in parts):
            raise mixed_parts(parts)
        if any(p.ndim == 0 for p in parts):
            raise ConversionError(
                f"cannot join {len(parts)} partitions of 0-d jax Arrays: a 0-d result has no "
                "first axis to join along; take them one by one with .partitions()"
            )
        return _jax().numpy.concatenate(parts, axis=0)

    def edges(self) -> Sequence[Edge]:
        return (
            Edge(
                NAME,
                DLPACK,
                self.name,
                "__dlpack__",
                _export_estimate,
                _export,
                ("jax",),
                bind=_export_bind,
            ),
            Edge(
                DLPACK,
                NAME,
                self.name,
                "jax.dlpack.from_dlpack",
                _import_estimate,
                _import,
                _NEEDS,
                bind=_import_bind,
            ),
            Edge(
                ARROW,
                NAME,
                self.name,
                "Array.to_numpy+jax.dlpack.from_dlpack",
                _arrow_estimate,
                _arrow_import,
                _ARROW_NEEDS,
                bind=_arrow_bind,
            ),
            Edge(
                NAME,
                NAME,
                self.name,
                "Array.astype",
                _cast_estimate,
                _cast,
                ("jax",),
                bind=_cast_bind,
            ),
        )


# -- jax -> dlpack ---------------------------------------------------------------------------
def _export_estimate(ctx: Context) -> Estimate:
    info = ctx.info
    (col,) = info.columns
    if SHARDED in col.flags:
        raise Unroutable(
            "a jax Array sharded over several devices has no single buffer to export; "
            "gather it first (jax.device_get, or jax.device_put onto one device)"
        )
    if col.dtype not in SUPPORTED:
        raise Unroutable(f"DLPack cannot carry {col.dtype}")
    return Estimate(
        info, why="jax.Array is a DLPack producer (its own buffer; jax treats it as immutable)"
    )


def _export_bind(ctx: Context) -> Callable[[Any], Any] | None:
    """The export of a row-major CPU Array of numpy's own dtypes: ``np.asarray(x)``, a
    read-only numpy view of the same buffer and a DLPack producer (0.7 us, against 2.5-6
    us for jax's own ``__dlpack__``, which is Python). jax tells whether it copied: a
    copy is kept in ``_npy_value``, a view is not. Where it did (or jax no longer has that
    attribute), the Array itself goes on, as DLPack; None (nothing to do) for everything
    else."""
    info = ctx.info
    if not info.device.is_cpu or info.columns[0].dtype not in _NUMPY_DLPACK:
        return None
    if info.layout == "F":
        return _column_major_export()
    if info.layout != "C":
        return None
    asarray = require("numpy").asarray

    def run(value: Any) -> Any:
        if getattr(value, "_npy_value", 0) is None:
            arr = asarray(value)
            if value._npy_value is None:  # not copied: a view of the Array's own buffer
                return arr
        return value

    return run


def _column_major_export() -> Callable[[Any], Any]:
    """The export of a column-major CPU Array (a layout jax keeps for an array it took
    from column-major memory): numpy's DLPack import of it, a read-only view of the same
    buffer (``np.asarray`` would copy it into ``_npy_value``), which the consumers take
    as an ndarray (torch.from_numpy: 1,000 x 4 float64 into torch 6.5 us, against 9.8 for
    ``torch.from_dlpack`` of the Array). Where numpy refuses it, the Array itself goes
    on, as DLPack."""
    from_dlpack = require("numpy").from_dlpack

    def run(value: Any) -> Any:
        try:
            return from_dlpack(value)
        except (BufferError, TypeError, ValueError, RuntimeError):
            return value

    return run


def _export(value: Any, ctx: Context) -> Any:
    run = _export_bind(ctx)
    return value if run is None else run(value)


# The dtypes numpy holds and exports through DLPack itself (not ml_dtypes' bfloat16/fp8).
_NUMPY_DLPACK = frozenset(
    {"bool", "float16", "float32", "float64", "complex64", "complex128"}
    | {f"{s}int{b}" for s in ("", "u") for b in (8, 16, 32, 64)}
)


# -- dlpack / arrow -> jax -------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class _Decision:
    """What one import does, decided once per route (from the data and jax's settings)."""

    share: bool  # the result views the input's buffer
    reasons: tuple[str, ...]  # why it copies (empty when it shares)
    cast: str | None  # the 32-bit dtype jax makes of a 64-bit one (jax_enable_x64 off)
    lossy: bool  # the cast is a loss (dtype= did not ask for it)
    x64: bool  # jax_enable_x64 when planned
    recheck: bool  # copied only for a measured misalignment: an aligned object replans
    empty: bool  # no bytes: nothing to share (jax allocates, even under copy=False)
    # New memory copied for its small size: a large one replans (the hub makes a table's
    # tensor at 64 bytes from 64 KiB, which jax then views), once: planned large, it is
    # not rechecked.
    grow: bool = False
    # The choice read the size or the stated alignment of new memory (Estimate.by_size):
    # the router keeps its routes per size class, so a large table is not sent the way
    # a small one took.
    by_size: bool = False


def _decide(ctx: Context, col: Column, readonly: bool, empty: bool) -> _Decision:
    dtype, layout, align = col.dtype, ctx.info.layout, alignment(ctx.info)
    x64 = x64_enabled()
    cast = None if x64 else NARROWED.get(dtype)
    reasons: list[str] = []
    if cast is not None:
        asked = f" (dtype={ctx.dtype!r})" if ctx.dtype == cast else ""
        reasons.append(f"jax_enable_x64 is off: {dtype} is cast to {cast}{asked}, new memory")
    if ctx.copy and not ctx.fresh:
        reasons.append(_COPY_TRUE)
    if layout in ("strided", "negative"):
        reasons.append(_STRIDED)
    recheck = grow = by_size = False
    if not reasons and not empty:  # a view is possible: it needs 64-byte alignment
        # Memory a step has just made: aligned where that step says so (the hub's tables
        # made into tensors of 64 KiB or more are allocated at 64 bytes), else not known;
        # shared from SHARE_FRESH_FROM elements. A route planned for a small one rechecks
        # the size when run (grow): only then, so that memory another allocator aligns
        # every time (torch's), planned large and copied, does not replan without end.
        small = ctx.fresh and 0 <= math.prod(ctx.info.shape) < SHARE_FRESH_FROM
        by_size = ctx.fresh
        if 0 < align < ALIGNMENT:
            reasons.append(_MISALIGNED.format(align=align))
            recheck = not ctx.fresh
        elif align == 0:
            reasons.append(_FRESH if ctx.fresh else _NOT_REPORTED)
            grow = small
        elif small and _direct_import() is None:
            reasons.append(_SMALL_FRESH)
            grow = True
    lossy = cast is not None and ctx.dtype != cast
    return _Decision(not reasons, tuple(reasons), cast, lossy, x64, recheck, empty, grow, by_size)


def _estimate(
    info: DataInfo, col: Column, decision: _Decision, out: DataInfo, why: str
) -> Estimate:
    nbytes = col.nbytes
    if decision.cast is not None and nbytes > 0:
        nbytes //= 2
    dtype = decision.cast or col.dtype
    out = out.but(columns=(Column("", dtype, nbytes, 0),), readonly=True)
    losses: tuple[Loss, ...] = ()
    if decision.lossy and decision.cast is not None:
        losses = (Loss(col.name, col.dtype, decision.cast, _X64_LOST),)
    if decision.share:
        est = Estimate(out, (), losses, why=why, shared_readonly=info.readonly)
    else:
        reason = "; ".join(decision.reasons)
        copies = (Copy(col.name, col.nbytes, reason),)
        est = Estimate(out.but(layout="C"), copies, losses, why=reason, copies_all=True)
    return replace(est, by_size=True) if decision.by_size and _HUB_KEEPS_BY_SIZE else est


def _import_decision(ctx: Context) -> _Decision:
    info = ctx.info
    if info.kind != Kind.TENSOR:
        raise Unroutable("only tensors travel through DLPack")
    (col,) = info.columns
    if col.dtype not in SUPPORTED:
        raise Unroutable(f"jax cannot hold {col.dtype}; cast it first")
    empty = info.nbytes == 0 or 0 in info.shape
    return _decide(ctx, col, info.readonly, empty)


def _import_estimate(ctx: Context) -> Estimate:
    decision = _import_decision(ctx)
    info = ctx.info
    why = _SHARED_READONLY if info.readonly else _SHARED + _SOURCE_WRITES
    return _estimate(info, info.columns[0], decision, info, why)


def _import_bind(ctx: Context) -> Callable[[Any], Any]:
    decision = _import_decision(ctx)
    new = not ctx.fresh  # the input is the source's memory: a copy must not share it
    config, ndarray = _jax().config, _np().ndarray
    x64, recheck = decision.x64, decision.recheck
    # The commonest copy, a small numpy array or CPU tensor of the source's memory (under
    # _PUT_FROM), is made here as _copy makes it (:func:`_owned`), without its dispatch on
    # the value's type.
    plain = new and not (decision.empty or decision.share or decision.grow or decision.cast)

    def run(value: Any) -> Any:
        if bool(config.jax_enable_x64) != x64:
            raise RouteChanged("jax_enable_x64 changed since the route was planned")
        if plain and type(value) is not ndarray and _numpy_viewed(value):
            try:  # the numpy array over a CPU tensor's memory, as _copy reads it
                value = value.numpy()
            except (TypeError, RuntimeError):  # a dtype or bit numpy does not hold
                pass
        if plain and type(value) is ndarray:
            if recheck and value.size and not ndarray_address(value) % ALIGNMENT:
                raise RouteChanged("the buffer is 64-byte aligned, unlike the one planned for")
            if value.nbytes < _PUT_FROM:  # (row-major or not, as _copy copies it)
                return _owned(value)
            return _copy(value, new)
        if decision.empty:
            return _copy(value, new=False)  # no bytes to share or to copy
        if decision.share:
            return _share(value)
        if recheck and _aligned_now(value):
            raise RouteChanged("the buffer is 64-byte aligned, unlike the one planned for")
        if decision.grow and _elements(value) >= SHARE_FRESH_FROM:
            # (planned anew for this size: another route may make it aligned, one copy)
            raise RouteChanged("new memory of a large tensor: planned for a small one")
        return _copy(value, new, decision.cast)

    return run


def _import(value: Any, ctx: Context) -> Any:
    return _import_bind(ctx)(value)


def _elements(value: Any) -> int:
    """The number of elements of a numpy array or torch tensor, else -1 (unknown)."""
    if isinstance(value, _np().ndarray):
        return int(value.size)
    if _is_torch(value):
        return int(value.numel())
    return -1


def _check_settings(decision: _Decision) -> None:
    if x64_enabled() != decision.x64:
        raise RouteChanged("jax_enable_x64 changed since the route was planned")


def _address(value: Any) -> int | None:
    """The address of a numpy array's or torch tensor's data, else None (unknown)."""
    np = _np()
    if isinstance(value, np.ndarray):
        return ndarray_address(value) if value.size else None
    data_ptr = getattr(value, "data_ptr", None)
    if callable(data_ptr) and hasattr(value, "numel"):
        return int(data_ptr()) if value.numel() else None
    return None


def _aligned_now(value: Any) -> bool:
    address = _address(value)
    return address is not None and address % ALIGNMENT == 0


def _share(value: Any) -> Any:
    """``value`` as a jax Array over the same memory; RouteChanged where jax would copy.

    A DLPack producer is taken with ``jax.dlpack.from_dlpack(copy=False)``, which views
    the buffer or raises (jax's "not aligned to 64 bytes", a ValueError): nothing to check
    after it (reading the result's address waits for jax to finish making it, 3-7 us).
    Read-only memory, which numpy will not export in the unversioned capsule jax asks
    for, is exported as a writable alias (:func:`_writable_alias`)."""
    jax, np = _jax(), _np()
    if isinstance(value, jax.Array):
        return value
    if isinstance(value, np.ndarray) and not value.flags.writeable:
        value = _writable_alias(value)
    try:
        try:
            return _dlpack_in(value)
        except BufferError:
            # A read-only producer refuses jax's unversioned capsule: read it as numpy
            # (versioned, read-only) and export that as a writable alias.
            return _dlpack_in(_writable_alias(np.from_dlpack(value)))
    except ValueError as exc:  # jax's "is not aligned to 64 bytes" under copy=False
        raise RouteChanged(str(exc)) from None


# -- jax's DLPack import of a CPU capsule, without the Python around it -----------------------
# jax.dlpack.from_dlpack spends most of its 52 us a call (jax 0.10.2, any size) in Python
# around the one call that imports the capsule: backend and device lookups, a stream
# query that fails on the CPU, and jnp.asarray(arr, dtype=<its canonical dtype>), a
# primitive's dispatch that hands back the same buffer. That call (jaxlib's
# dlpack_managed_tensor_to_buffer), made directly for a CPU producer under copy=False,
# costs 6.6 us. _LOWER holds it once found and probed (None: not there, or not as
# probed: from_dlpack for everything).
_LOWER: list[Callable[[Any], Any] | None] = []
# dtype -> whether jax keeps it as is, per state of jax_enable_x64 ((dtype, x64) -> bool)
_CANONICAL: dict[tuple[Any, bool], bool] = {}


def _dlpack_in(producer: Any) -> Any:
    """``jax.dlpack.from_dlpack(producer, copy=False)`` for a CPU DLPack producer: the same
    jax Array over the same memory (a test compares the two over dtypes, shapes, producers
    and jax_enable_x64), by jaxlib's own import of the capsule where it is there and its
    probe passed (:func:`_find_lower`). Anything that call does not take as from_dlpack
    would (another device; a dtype jax keeps in another width, with jax_enable_x64 off; an
    unaligned buffer, a producer's refusal, an error of any kind) goes to from_dlpack
    itself, which gives jax's own answer or error (a ValueError for unaligned memory)."""
    lower = _direct_import()
    if lower is not None:
        try:
            code, index = producer.__dlpack_device__()
            if code == 1 and index == 0:  # kDLCPU (jax asks the CPU for no stream)
                out = lower(producer.__dlpack__(stream=None))
                if _kept_as_is(out.dtype):
                    return out
        except Exception:  # noqa: BLE001, S110 - from_dlpack says what went wrong
            pass
    return _jax().dlpack.from_dlpack(producer, copy=False)


def _direct_import() -> Callable[[Any], Any] | None:
    """jaxlib's import of a CPU capsule where it is there and probed (:func:`_find_lower`,
    once), else None."""
    return _LOWER[0] if _LOWER else _find_lower()


def _kept_as_is(dtype: Any) -> bool:
    """Whether jax keeps ``dtype`` as it is now (its canonical dtype, which depends on
    jax_enable_x64): from_dlpack casts the others."""
    x64 = bool(_jax().config.jax_enable_x64)
    kept = _CANONICAL.get((dtype, x64))
    if kept is None:
        kept = _CANONICAL[(dtype, x64)] = _jax().dtypes.canonicalize_dtype(dtype) == dtype
    return kept


def _find_lower() -> Callable[[Any], Any] | None:
    """jaxlib's import of a CPU DLPack capsule under copy=False, as from_dlpack calls it
    (jax 0.10: ``_jax.dlpack_managed_tensor_to_buffer(capsule, device, stream, copy,
    dl_device_type)``, the last argument from jaxlib extension 467), once it gave what
    from_dlpack gives for a probe (an aligned float32 array: a jax Array of its dtype,
    shape, values, address, sharding and commitment); None where it is not there or did
    not (from_dlpack is used), remembered."""
    lower: Callable[[Any], Any] | None = None
    try:
        from jax._src import lib  # (jax's private module)

        extension = getattr(lib, "_jax")  # noqa: B009 - not exported: mypy would refuse it
        jaxlib_extension_version = lib.jaxlib_extension_version

        to_buffer = extension.dlpack_managed_tensor_to_buffer
        device = _jax().devices("cpu")[0]
        args = (
            (device, None, False, 1) if jaxlib_extension_version >= 467 else (device, None, False)
        )

        def candidate(capsule: Any) -> Any:
            return to_buffer(capsule, *args)

        if _probe(candidate):
            lower = candidate
    except Exception:  # noqa: BLE001, S110 - another jax: from_dlpack
        pass
    _LOWER[:] = [lower]
    return lower


def _probe(candidate: Callable[[Any], Any]) -> bool:
    """Whether ``candidate`` imports an aligned float32 array as from_dlpack does."""
    np, jax = _np(), _jax()
    raw = np.empty(16 + ALIGNMENT, np.uint8)
    start = -ndarray_address(raw) % ALIGNMENT
    probe = raw[start : start + 16].view(np.float32)
    probe[:] = (1.5, -2.0, 3.25, 4.0)
    out, public = (
        candidate(probe.__dlpack__(stream=None)),
        jax.dlpack.from_dlpack(probe, copy=False),
    )
    return bool(
        isinstance(out, jax.Array)
        and type(out) is type(public)
        and out.dtype == probe.dtype
        and out.shape == probe.shape
        and out.unsafe_buffer_pointer() == ndarray_address(probe)
        and out.sharding == public.sharding
        and out.committed == public.committed
        and np.asarray(out).tolist() == probe.tolist()
    )


def _owned(arr: Any) -> Any:
    """A copy of a numpy array (a dtype numpy exports through DLPack, that jax keeps as it
    is) as a jax Array: written by numpy into new row-major memory at a 64-byte boundary,
    which jax then views (:func:`_dlpack_in`): nothing else holds that memory, and jax
    Arrays are immutable. 1,000 float64: 15.0 us, against 39.0 for jnp.array(copy=True);
    60,000 (480 KiB, under :data:`_PUT_FROM`, below which the callers use it): 33.6
    against 76.8."""
    np = _np()
    dtype, size = arr.dtype, arr.size
    exported = _EXPORTED.get(dtype)
    if exported is None:
        exported = _EXPORTED[dtype] = _dtype_name(dtype) in _NUMPY_DLPACK
    if not (exported and size and _copies_viewed()):  # (jax makes no view of no bytes)
        return _jax().numpy.array(arr, copy=True)
    itemsize = dtype.itemsize  # (1 to 16 bytes: numpy's allocation, 16-byte aligned, is
    # a multiple of it past a 64-byte boundary)
    base = np.empty(size + ALIGNMENT // itemsize, dtype)
    start = (-ndarray_address(base) % ALIGNMENT) // itemsize
    out = base[start : start + size].reshape(arr.shape)
    np.copyto(out, arr)
    return _dlpack_in(out)


# dtype -> whether numpy exports it through DLPack (:data:`_NUMPY_DLPACK`)
_EXPORTED: dict[Any, bool] = {}
_VIEWED_COPIES: list[bool] = []  # (:func:`_copies_viewed`, once)


def _copies_viewed() -> bool:
    """Whether :func:`_owned` makes its copies itself: where the direct import is used
    (through from_dlpack, 52 us, jnp.array's copy costs less) and jax's one device is the
    CPU, where jnp.array's copy would land too. With another device (a GPU, several
    host devices) jnp.array puts a copy on the default device, uncommitted, and still
    does. The copies made here are committed to the CPU, as from_dlpack's arrays are
    (what the shared routes always gave), which on one device changes nothing but the
    flag."""
    if not _VIEWED_COPIES:
        try:
            devices = _jax().devices()
            viewed = len(devices) == 1 and devices[0].platform == "cpu"
        except Exception:  # noqa: BLE001 - no backend to ask: jax's own copies
            viewed = False
        _VIEWED_COPIES[:] = [viewed and _direct_import() is not None]
    return _VIEWED_COPIES[0]


class _Alias:
    """An ``__array_interface__`` over memory another object owns (``base``, kept alive by
    the numpy array made of it)."""

    __slots__ = ("__array_interface__", "base")

    def __init__(self, face: dict[str, Any], base: object) -> None:
        self.__array_interface__ = face
        self.base = base


def _writable_alias(arr: Any) -> Any:
    """A writable numpy array over the memory of ``arr`` (read-only numpy), which holds
    ``arr``: jax's DLPack import asks for the unversioned capsule, which cannot carry
    DLPack 1.0's read-only flag, so numpy refuses to export a read-only array to it
    (BufferError). Nothing writes to the alias: jax views it as an immutable Array, as
    ``jax.device_put`` would view the read-only array itself (an alias taken through
    DLPack under ``copy=False``: 27 us for 1e6 float64, against 28 for ``device_put``
    and 36 for ``device_put`` with the address check it needs, since it promises
    nothing)."""
    face = arr.__array_interface__  # (a new dict each time)
    face["data"] = (face["data"][0], False)
    return _np().asarray(_Alias(face, arr))


def _device_put(arr: Any) -> Any:
    """A jax Array over ``arr`` (a row-major numpy array, read-only or not): device_put
    shares 64-byte-aligned memory, as jax.dlpack.from_dlpack does."""
    jax = _jax()
    return jax.device_put(arr)


# From this many bytes a numpy array is copied into jax by jax itself (device_put for a
# strided one, the DLPack import for a row-major one), below by numpy into memory jax
# views (:func:`_owned`; it was jnp.array(copy=True), and these figures compare that):
# column-major float64 on 2 cores, device_put against jnp.array: 937 KiB 269 us against
# 314, 3.1 MiB 822-862 against 1,453-1,862; 312 KiB 186 against 168, 31 KiB 160 against
# 109 (row-major, unaligned: from_dlpack 368 against 397 at 937 KiB, 245 against 202 at
# 312 KiB).
_PUT_FROM = 512 * 1024


def _copy(value: Any, new: bool, cast: str | None = None) -> Any:
    """``value`` as a jax Array; in new memory when ``new`` (else jax may keep the buffer
    an earlier step made). jax casts 64-bit data to 32-bit when jax_enable_x64 is off
    (``cast``: the dtype the plan expects it to make, new memory in any case)."""
    jax, np = _jax(), _np()
    jnp = jax.numpy
    if new and cast is None and type(value) is np.ndarray and value.nbytes < _PUT_FROM:
        return _owned(value)  # (what the branches below give it, first)
    if isinstance(value, jax.Array):
        return jnp.array(value, copy=True)
    small_cast = cast is not None and _nbytes(value) < _PUT_FROM
    if _is_torch(value) and _read_as_numpy(value):
        # A CPU tensor is copied as the numpy array over its memory (Tensor.numpy, 0.5
        # us); large transpositions and other strides stay tensors (jax's DLPack import
        # takes transpositions as they are: 1,868 us for 1e6 x 4 float64 with x64 off,
        # against 6,502 through numpy); small ones are copied through numpy too (1,000 x
        # 4 float64 transposed: 155 us against 40 to be cast with x64 off; 48.8 against
        # 25.9 with x64 on, jnp.asarray(x.numpy()) 25.0). A float64 tensor of 1,000
        # values, x64 off: 240 us through DLPack, 34 so.
        # Where numpy holds no such tensor (bfloat16, conjugate or negative bits): DLPack.
        try:
            value = value.numpy()
        except (TypeError, RuntimeError):
            pass
    if cast and isinstance(value, np.ndarray) and (small_cast or value.flags.c_contiguous):
        # jax makes new memory of the narrower dtype whatever the route: jnp.asarray
        # casts as it copies (1e5 float64: 54 us, against 208 for the DLPack import,
        # which casts after sharing, and the address check that waits for it)
        return jnp.asarray(value)
    if isinstance(value, np.ndarray):
        if value.nbytes < _PUT_FROM:
            # (cast is None here.) A copy jax views (1,000 x 4 float64: 17 us, against 80
            # for device_put and 43 for jnp.array(copy=True)), strided, row-major or
            # memory an earlier step made alike, as the plan counts it: a copy.
            return _owned(value)
        if not value.flags.c_contiguous:
            # jax holds row-major buffers only: device_put writes a new one
            return _device_put(value)
        if not new:
            return _device_put(value)  # memory an earlier step made: jax may keep it
        if not value.flags.writeable:
            return jnp.array(value, copy=True)
        # A large row-major array: jax's DLPack import copies it where unaligned (3.1 MiB:
        # 870 us against jnp.array's 1,402), and what it shares is copied below.
    if _is_torch(value) and not value.is_contiguous() and not _transposed(value):
        return jax.dlpack.from_dlpack(value.contiguous())  # torch made new memory
    address = _address(value)
    try:
        # Not copy=True: jax 0.10's from_dlpack(copy=True) still shares a CPU buffer.
        out = jax.dlpack.from_dlpack(value)
    except (BufferError, RuntimeError, ValueError, TypeError):
        # A read-only producer, or strides jax does not import: numpy reads it.
        return jnp.array(np.from_dlpack(value), copy=True)
    if new and (address is None or _pointer(out) == address):
        return jnp.array(out, copy=True)  # jax kept the source's buffer: copy it now
    return out


def _numpy_viewed(value: Any) -> bool:
    """Whether ``value`` is a ``torch.Tensor`` (not a subclass; asked without importing
    torch) that :func:`_copy` copies as the numpy array over its memory."""
    return type(value).__module__ == "torch" and _read_as_numpy(value)


def _read_as_numpy(tensor: Any) -> bool:
    """Whether a torch tensor is copied into jax as the numpy array over its memory: a
    CPU tensor, contiguous or small (see :func:`_copy`)."""
    return bool(
        tensor.is_cpu  # (0.05 us; .device.type 0.29, and 2 us more before jax's copy)
        and (tensor.is_contiguous() or _nbytes(tensor) < _PUT_FROM)
    )


def _nbytes(value: Any) -> int:
    """The bytes of a numpy array's or torch tensor's elements."""
    if _is_torch(value):
        return int(value.numel() * value.element_size())
    return int(getattr(value, "nbytes", 0))


def _is_torch(value: Any) -> bool:
    return hasattr(value, "contiguous") and hasattr(value, "is_contiguous")


def _transposed(tensor: Any) -> bool:
    """Whether a torch tensor is a compact transposition (jax imports those)."""
    return bool(tensor.dim() == 2 and tensor.t().is_contiguous())


# -- arrow -> jax: a 1-D column straight from its Arrow values buffer -------------------------
# Arrow types the Arrow -> DLPack bridge hands jax (as numbers, times as int64 ticks), and
# tensor columns (an N-D array); jax holds nothing else.
_BRIDGED = ("bool", "timestamp[", "duration[", "date32[", "extension<arrow.fixed_shape_tensor[")


def _refusal(col: Column, in_table: bool) -> str:
    """Why no route brings ``col`` into jax, said before the other steps' reasons (which
    name the bridge's internals), or "" where the bridge may carry it."""
    dtype, name = col.dtype, col.name
    if dtype.startswith(("dictionary<", "run_end_encoded<")):
        return (
            f"column {name!r} ({dtype}) is encoded, and jax holds plain numbers only; decode "
            "it first (cast it to its value type)"
        )
    if dtype not in _ARROW_FIXED and not dtype.startswith(_BRIDGED):
        return (
            f"jax holds numbers only (bool, integers, floats; times as int64 ticks): column "
            f"{name!r} ({dtype}) cannot become a jax Array; cast it to a number type first, "
            "or convert the data to a table library"
        )
    if dtype == "bool" and col.nulls > 0:
        return (
            f"bool column {name!r} has {col.nulls} nulls, which a jax Array cannot hold; fill "
            "them first (e.g. fill_null(False))"
        )
    if dtype.startswith(_BRIDGED[-1]) and in_table:
        return (
            f"a table of tensor columns cannot become one jax Array; convert the tensor "
            f"column {name!r} on its own (an N-D array, one row per cell)"
        )
    if dtype.startswith(_BRIDGED[-1]) and col.nulls > 0:
        return (
            f"tensor column {name!r} has {col.nulls} null rows, which an N-D jax Array cannot "
            "hold; drop or fill them first"
        )
    return ""


def _arrow_decision(ctx: Context) -> tuple[_Decision, Column]:
    info = ctx.info
    if info.kind in (Kind.COLUMN, Kind.TABLE):
        for col in info.columns:
            why = _refusal(col, info.kind == Kind.TABLE)
            if why:
                raise Unroutable(why)
    if info.kind != Kind.COLUMN or len(info.columns) != 1:
        raise Unroutable(
            "jax takes Arrow columns directly; a table goes through the Arrow -> DLPack "
            "bridge as one 2-D tensor"
        )
    (col,) = info.columns
    if col.dtype not in _ARROW_FIXED:
        raise Unroutable(f"{col.dtype} columns go through the Arrow -> DLPack bridge")
    if col.nulls != 0:
        raise Unroutable(
            "a column with nulls (or whose nulls are unknown) goes through the Arrow -> "
            "DLPack bridge, which fills them"
        )
    empty = info.rows == 0 or col.nbytes == 0
    decision = _decide(ctx, col, True, empty)
    if col.chunks > 1:
        reason = f"{col.chunks} chunks are concatenated into one array"
        reasons = (reason, *(r for r in decision.reasons if r != _NOT_REPORTED))
        decision = replace(decision, share=False, reasons=reasons, recheck=False)
    return decision, col


def _arrow_estimate(ctx: Context) -> Estimate:
    decision, col = _arrow_decision(ctx)
    info = ctx.info
    rows = max(info.rows, 0)
    out = DataInfo(Kind.TENSOR, rows=rows, shape=(rows,), layout="C", readonly=True)
    return _estimate(info.but(readonly=True), col, decision, out, _SHARED_ARROW)


def _arrow_bind(ctx: Context) -> Callable[[Any], Any]:
    decision, col = _arrow_decision(ctx)
    new = not ctx.fresh
    frombuffer, dtype = _np().frombuffer, _np().dtype(col.dtype)  # (a numpy name: _ARROW_FIXED)

    def run(value: Any) -> Any:
        _check_settings(decision)
        own = "" if decision.empty else _own_view(type(value))
        if own == "nanoarrow":
            values = _nanoarrow_values(value)
            out = None if values is None else _from_nanoarrow(values, dtype, decision, new)
            if out is not None:
                return out
        elif own == "polars":
            # polars' own read-only view of a Series' one chunk: no pyarrow import (which
            # also leaves jax's next call slower: polars -> jax 1,000 float64, 31.6 us
            # through pa.chunked_array against 21 so)
            view = _polars_view(value)
            if view is not None and view.dtype == dtype:
                return _taken(view, decision, new)
        data = arrowkit.read_column(value)
        pa = arrowkit.pa_module()
        fresh = False
        if isinstance(data, pa.ChunkedArray):
            if data.num_chunks == 1:
                data = data.chunk(0)
            else:
                data, fresh = data.combine_chunks(), True  # new memory
        if decision.share and not decision.empty and not fresh:
            values = data.buffers()[1]
            if values is not None:
                # A numpy view of the values buffer, writable (pyarrow's own allocations,
                # and memory it shares with numpy or polars, say they are mutable) or made
                # a writable alias (an immutable one, imported from another library),
                # which numpy exports as the unversioned DLPack capsule jax asks for: jax
                # views it under copy=False or says why not (25 us; device_put of the
                # read-only view and the address check it would need: 35). Nothing writes
                # to it: jax Arrays are immutable. (pyarrow's own export of that capsule
                # warns that it is deprecated, pyarrow 26.)
                arr = frombuffer(values, dtype, len(data), data.offset * dtype.itemsize)
                if not values.is_mutable:
                    arr = _writable_alias(arr)
                try:
                    return _dlpack_in(arr)
                except ValueError as exc:  # not 64-byte aligned
                    raise RouteChanged(str(exc)) from None
        view = data.to_numpy(zero_copy_only=True)  # read-only, over the values buffer
        if decision.empty:
            return _copy(view, new=False)
        return _taken(view, decision, new and not fresh)

    return run


def _taken(view: Any, decision: _Decision, new: bool) -> Any:
    """A numpy view of a column's values as a jax Array, as ``decision`` says: shared, or
    copied (into new memory when ``new``) once the alignment the route was planned for
    is checked where the plan asks."""
    if decision.share:
        return _share(view)
    if decision.recheck and _aligned_now(view):
        raise RouteChanged("the buffer is 64-byte aligned, unlike the one planned for")
    return _copy(view, new, decision.cast)


# The sources whose own view of a column's values the Arrow edge takes, by type: decided
# once per type, so that a kept route pays one lookup, not a test of each module.
_OWN_VIEWS: dict[type, str] = {}
_OWN_VIEW_MODULES = {"nanoarrow.array": "nanoarrow", "polars.series.series": "polars"}


def _own_view(cls: type) -> str:
    """ "nanoarrow" or "polars" for their Array and Series types, else ""."""
    own = _OWN_VIEWS.get(cls)
    if own is None:
        own = _OWN_VIEWS[cls] = _OWN_VIEW_MODULES.get(cls.__module__, "")
    return own


def _polars_view(value: Any) -> Any:
    """polars' read-only numpy view of a Series (``value``) of one chunk with no nulls (numbers
    only; its nulls would show as whatever their slots hold), else None."""
    try:
        native = value._s
        return None if native.null_count() else native.to_numpy_view()
    except AttributeError:  # polars changed its private handle: read as pyarrow
        return None


def _from_nanoarrow(values: Any, dtype: Any, decision: _Decision, new: bool) -> Any:
    """A jax Array of nanoarrow's buffer view ``values`` (a DLPack producer of the
    unversioned capsule jax asks for), as ``decision`` says: shared by
    ``jax.dlpack.from_dlpack(copy=False)`` (23 us for 1e6 float64, against 36 through
    pa.array and a numpy alias), or read by numpy and copied (1,000 rows: 29.7 us against
    48.6 through pyarrow); no pyarrow import either way. None where the view's dtype is
    not the planned one, or nanoarrow or numpy refuse it: the pyarrow route reads it."""
    try:
        if decision.share:
            try:
                out = _dlpack_in(values)
            except ValueError as exc:  # not 64-byte aligned
                raise RouteChanged(str(exc)) from None
            return out if out.dtype == dtype else None
        # (numpy's array over it is writable, as the capsule cannot say read-only: it is
        # only copied)
        view = _np().from_dlpack(values)
    except (BufferError, TypeError):
        return None
    return _taken(view, decision, new) if view.dtype == dtype else None


def _nanoarrow_values(value: Any) -> Any:
    """The values buffer of a nanoarrow Array of one chunk without a validity bitmap (no
    nulls: nanoarrow says no null count) that starts at its buffer's start and ends at
    its end, as nanoarrow's buffer view (``CBufferView``, a DLPack producer); None for
    anything else (``value``: a nanoarrow Array)."""
    try:
        if value.n_chunks != 1 or value.offset or value.n_buffers != 2:
            return None
        if len(value.buffer(0)):  # a validity bitmap: nulls may hide under it
            return None
        values = value.buffer(1)
        return values if values.n_elements == len(value) else None
    except (AttributeError, TypeError, ValueError):  # another nanoarrow: read as pyarrow
        return None


def _arrow_import(value: Any, ctx: Context) -> Any:
    return _arrow_bind(ctx)(value)


# -- dtype=: jax -> jax ----------------------------------------------------------------------
def _cast_estimate(ctx: Context) -> Estimate:
    info, want = ctx.info, ctx.dtype
    if want is None or info.kind != Kind.TENSOR or not info.device.is_cpu:
        raise Unroutable("casts jax Arrays, for dtype= only")
    (col,) = info.columns
    if col.dtype == want:
        raise Unroutable(f"already {want}")
    if want not in SUPPORTED or col.dtype not in SUPPORTED:
        raise Unroutable(f"jax cannot cast {col.dtype} to {want}")
    if want in NARROWED and not x64_enabled():
        raise Unroutable(
            f"jax holds no {want} with jax_enable_x64 off; call "
            "jax.config.update('jax_enable_x64', True) first"
        )
    count = 1
    for d in info.shape:
        count *= d
    itemsize = _np().dtype(want if want != "bfloat16" else "float16").itemsize
    out = info.but(
        columns=(Column("", want, count * itemsize, 0),),
        layout="C",
        readonly=True,
    )
    reason = (
        f"cast {col.dtype} -> {want} (dtype={want!r}; values it cannot hold are warned): "
        "Array.astype makes a new array"
    )
    return Estimate(out, (Copy("", info.nbytes, reason),), why=reason, copies_all=True)


def _cast_bind(ctx: Context) -> Callable[[Any], Any]:
    """:func:`_cast`, checking jax_enable_x64 first: a cast planned to a 64-bit dtype with
    x64 on would give 32 bits with it off (which plans refuse), so a kept route is planned
    anew where the setting changed (found in review)."""
    x64 = x64_enabled()
    want, strict = ctx.dtype, ctx.strict

    def run(value: Any) -> Any:
        if x64_enabled() != x64:
            raise RouteChanged("jax_enable_x64 changed since the route was planned")
        value = _jax().numpy.asarray(value)
        out = value.astype(want)
        # what the cast changed, read on the CPU arrays (the plan casts CPU Arrays only):
        # jax wraps an integer's sign and cuts a fraction as numpy does, silently
        np = _np()
        lost = cast_loss(np.asarray(value), np.asarray(out))
        if lost:
            report_losses([Loss("", str(value.dtype), str(out.dtype), lost)], "a tensor", strict)
        return out

    return run


def _cast(value: Any, ctx: Context) -> Any:
    return _cast_bind(ctx)(value)


def _pointer(arr: Any) -> int:
    """``arr.unsafe_buffer_pointer()`` once ``arr`` is computed: on an array still being
    computed it waits holding the GIL, and a pending copy out of a numpy array needs the
    GIL to finish (a deadlock, seen with gdb)."""
    return int(arr.block_until_ready().unsafe_buffer_pointer())


@hookimpl
def register_adapters(register: Callable[[Adapter], None]) -> None:
    register(JaxAdapter())
