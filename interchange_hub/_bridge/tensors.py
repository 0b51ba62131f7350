"""numpy-based helpers: describe tensors, and move data between Arrow columns and tensors.

The estimate functions here and the conversion functions beside them must agree: each
``estimate_*`` predicts what the matching conversion copies and loses.
"""

from __future__ import annotations

import math
from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from interchange_hub import arrowkit
from interchange_hub._bridge.arrow_native import array_of, embedded_nul, wraps_buffer
from interchange_hub._c.ndarray import ndarray_address
from interchange_hub._core.deps import require
from interchange_hub._core.device import CPU, Device
from interchange_hub._core.dtypes import (
    FIXED_SHAPE_TENSOR,
    TENSOR_DTYPES,
    common_dtype,
    fixed_shape_name,
    fixed_shape_of,
    hub_name,
    is_integer,
    is_numeric,
    is_string,
    itemsize,
    np_dtype_name,
    tz_of,
    unit_of,
)
from interchange_hub._core.info import (
    ALIGNMENT,
    FLOAT_OVERFLOW,
    FLOAT_UNDERFLOW,
    Column,
    Copy,
    DataInfo,
    Estimate,
    Flag,
    Kind,
    Loss,
    Unroutable,
    alignment_of,
    label,
    report_losses,
)
from interchange_hub.adapter import Buffer, Context, bytes_inside
from interchange_hub.errors import ConversionError, NoRouteError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

TENSOR_NAME = ""  # the column name of a 1-D tensor
UNKNOWN_NULLS = "nulls are unknown until the stream is read"
COPY_TRUE = "copy=True: a new writable array"
UNREADABLE = "unknown (numpy cannot read this DLPack tensor)"


def np_module() -> Any:
    return require("numpy", "to handle tensors")


def layout_of(arr: Any) -> str:
    """ "C", "F" (column-major, 2-D and up), "odd" (a stride that is no multiple of the
    item size: a field of a record array, which DLPack, counting strides in items, and
    torch.from_numpy cannot describe), "negative" (some stride < 0) or "strided"."""
    if arr.flags.c_contiguous:
        return "C"
    if arr.flags.f_contiguous:
        return "F"
    strides, size = arr.strides, arr.itemsize
    if any(s % size for s in strides):
        return ODD_STRIDES
    if any(s < 0 for s in strides):
        return "negative"
    return "strided"


ODD_STRIDES = "odd"


def describe_ndarray(arr: Any, device: Device = CPU) -> DataInfo:
    mask = getattr(arr, "mask", None)  # numpy.ma.MaskedArray
    nulls = int(np_module().count_nonzero(mask)) if mask is not None else 0
    col = Column(TENSOR_NAME, np_dtype_name(arr.dtype), int(arr.nbytes), nulls)
    return DataInfo(
        Kind.TENSOR,
        (col,),
        rows=arr.shape[0] if arr.ndim else 1,
        shape=tuple(arr.shape),
        layout=layout_of(arr),
        device=device,
        readonly=not arr.flags.writeable,
        alignment=alignment_of(ndarray_address(arr)) if arr.size and device.is_cpu else 0,
    )


def ndarray_buffers(arr: Any) -> list[Buffer]:
    np = np_module()
    if arr.size == 0:
        return []
    lo, hi = np.lib.array_utils.byte_bounds(arr)
    return [Buffer(lo, hi - lo)]


def dlpack_dtype(dtype: str) -> bool:
    """Whether DLPack can carry the dtype."""
    return is_numeric(dtype) or dtype in ("bool", "bfloat16") or dtype.startswith("complex")


#: The dtypes of a DLPack tensor that numpy can import (``np.from_dlpack``).
_NUMPY_DLPACK_DTYPES = frozenset((*TENSOR_DTYPES, "complex64", "complex128"))


def numpy_holds(dtype: str) -> bool:
    """Whether ``np.from_dlpack`` can import a tensor of ``dtype`` (not bfloat16, nor the
    dtypes only torch has: float8, complex32, uint4, ...; see the torch adapter)."""
    return dtype in _NUMPY_DLPACK_DTYPES


# -- Arrow -> tensor -------------------------------------------------------------------------
def _column_plan(col: Column, dlpack_only: bool) -> tuple[str, list[Copy], list[Loss]]:
    """What converting one Arrow column to a 1-D ndarray gives: dtype, copies, losses."""
    copies: list[Copy] = []
    losses: list[Loss] = []
    dtype, name, n = col.dtype, col.name, col.nbytes
    if col.chunks > 1:
        copies.append(Copy(name, n, f"{col.chunks} chunks are concatenated into one tensor"))
    if col.nulls < 0 and (is_numeric(dtype) or dtype == "bool"):
        copies.append(Copy(name, n, UNKNOWN_NULLS))
    if is_numeric(dtype):
        if col.nulls > 0 and Flag.NAN_IS_NULL in col.flags:
            return dtype, copies, losses  # the values under the nulls are NaN already
        if col.nulls > 0:
            out = "float64" if is_integer(dtype) else dtype
            copies.append(Copy(name, n, "nulls are filled with NaN"))
            lost = "nulls become NaN"
            if is_integer(dtype):
                lost += "; integers above 2**53 lose precision"
            losses.append(Loss(name, f"{dtype} with nulls", out, lost))  # (no count:
            # the route key fixes whether there are nulls, not how many)
            return out, copies, losses
        return dtype, copies, losses
    if dtype == "bool":
        if col.nulls > 0:
            raise Unroutable(
                f"bool column {name!r} has {col.nulls} nulls, which a tensor cannot hold; "
                "fill them first (e.g. fill_null(False))"
            )
        copies.append(Copy(name, n, "Arrow booleans are bit-packed; tensors use a byte each"))
        return "bool", copies, losses
    if dtype.startswith(("timestamp", "duration")):
        unit = unit_of(dtype)
        if dlpack_only:
            losses.append(Loss(name, dtype, "int64", f"stored as int64 {unit} since the epoch"))
            if col.nulls > 0:
                raise Unroutable(f"column {name!r} ({dtype}) has nulls, which DLPack cannot carry")
            return "int64", copies, losses
        zone = tz_of(dtype)
        if zone:
            losses.append(
                Loss(
                    name,
                    dtype,
                    f"datetime64[{unit}]",
                    f"time zone {zone} is dropped (values stay UTC instants)",
                )
            )
        if col.nulls > 0:
            copies.append(Copy(name, n, "nulls become NaT"))
        kind = "timestamp" if dtype.startswith("timestamp") else "duration"
        return f"{kind}[{unit}]", copies, losses
    if dtype.startswith(FIXED_SHAPE_TENSOR):
        if col.nulls > 0:
            raise Unroutable(
                f"tensor column {name!r} has {col.nulls} null rows, which an n-D tensor "
                "cannot hold; drop or fill them first"
            )
        return dtype, copies, losses
    if dlpack_only:
        raise Unroutable(f"column {name!r} ({dtype}) cannot be stored in a tensor")
    if dtype.startswith("date32"):
        copies.append(Copy(name, n, "date32 days are widened to datetime64[D]"))
        return "timestamp[D]", copies, losses
    copies.append(Copy(name, n, f"{dtype} values become Python objects"))
    lost = _objects_lost(dtype)
    if lost:
        losses.append(Loss(name, dtype, "object", lost))
    return "object", copies, losses


def _objects_lost(dtype: str) -> str:
    """What numpy's Python objects cannot keep of a column of ``dtype`` ("" for nothing):
    the objects of a union, or of a map inside another type, cannot be read back."""
    if "union<" in dtype:
        return (
            "the union's values become Python objects of their members' types: the union "
            "type is dropped (pyarrow reads no union back from Python objects)"
        )
    if "map<" in dtype[1:]:
        return (
            "the map inside becomes lists of (key, value) tuples, which pyarrow cannot read "
            "back as a map inside another type"
        )
    return ""


def estimate_to_tensor(info: DataInfo, dlpack_only: bool, want: str | None = None) -> Estimate:
    """Arrow table or column -> ndarray (1-D for a column, 2-D for a table).

    Columns of different numeric dtypes are cast to the dtype numpy's promotion gives
    (as ``DataFrame.to_numpy()`` does), or to ``want`` (``dtype=``); a cast is a copy of
    the column, and values it cannot keep are found when it runs (:func:`cast_checked`).
    """
    if info.kind == Kind.TENSOR:
        raise Unroutable("already a tensor")
    if len(info.data_columns) != len(info.columns):
        # Like DataFrame.to_numpy(), leave an index column out of the tensor.
        est = estimate_to_tensor(info.but(columns=info.data_columns), dlpack_only, want)
        return replace(est, why=est.why + "; its index is left out")
    if not info.columns:
        raise Unroutable("a table without columns cannot become a tensor")
    planned = _cast_plan(info, [_column_plan(c, dlpack_only) for c in info.columns], want)
    copies = [c for _, cs, _ in planned for c in cs]
    losses = [x for _, _, ls in planned for x in ls]
    rows = info.rows
    if info.kind == Kind.COLUMN and len(info.columns) == 1:
        dtype = planned[0][0]
        if dtype.startswith(FIXED_SHAPE_TENSOR):
            value, cell = fixed_shape_of(dtype)
            if not is_numeric(value):  # (found by the fuzzer: it failed mid-run)
                raise Unroutable(
                    f"pyarrow makes n-D tensors of numbers only, and this fixed-shape "
                    f"tensor column holds {value}"
                )
            out = DataInfo(
                Kind.TENSOR,
                (Column(TENSOR_NAME, value, info.nbytes, 0),),
                rows=rows,
                shape=(rows, *cell),
                layout="C",
                readonly=True,
            )
            why = "fixed-shape tensor column -> n-D tensor"
            return Estimate(out, tuple(copies), why=why, shared_readonly=not copies)
        out = DataInfo(
            Kind.TENSOR,
            (Column(TENSOR_NAME, dtype, info.nbytes, 0),),
            rows=rows,
            shape=(rows,),
            layout="C",
            readonly=not copies,
        )
        why = "single chunk, no nulls: buffers shared" if not copies else "column -> 1-D tensor"
        return Estimate(
            out,
            tuple(copies),
            tuple(losses),
            why,
            copies_all=_certain(copies),
            shared_readonly=not copies,
        )
    dtypes = {d for d, _, _ in planned}
    if len(dtypes) > 1 and _all_ints_with_some_nulls(info, dtypes):
        # Integer columns with nulls became float64: the others follow, so they share a dtype.
        for col, (dtype, _, _) in zip(info.columns, planned, strict=True):
            if dtype != "float64":
                lost = "promoted to share a dtype with columns that have nulls; "
                losses.append(
                    Loss(
                        col.name, col.dtype, "float64", lost + "integers above 2**53 lose precision"
                    )
                )
        dtypes = {"float64"}
    if len(dtypes) != 1 or "object" in dtypes:
        listing = ", ".join(f"{c.name}: {c.dtype}" for c in info.columns)
        raise Unroutable(
            f"a table goes to a tensor only when all columns share one numeric dtype "
            f"(found {listing}); cast the columns to one dtype first"
        )
    if info.columns[0].dtype.startswith(FIXED_SHAPE_TENSOR):
        raise Unroutable("a table of tensor columns cannot become one tensor")
    if len(info.columns) > 1:
        copied = {c.column for c in copies}
        interleave = "each column is copied into one column-major 2-D tensor"
        copies += [Copy(c.name, c.nbytes, interleave) for c in info.columns if c.name not in copied]
    # A one-column table's tensor keeps the column's name: a later step's loss (numpy ->
    # torch stores datetime64 as int64 ticks) names the column, not "the data".
    name = info.columns[0].name if len(info.columns) == 1 else TENSOR_NAME
    dtype = dtypes.pop()
    out = DataInfo(
        Kind.TENSOR,
        (Column(name, dtype, info.nbytes, 0),),
        rows=rows,
        shape=(max(rows, 0), len(info.columns)),
        layout="F" if len(info.columns) > 1 else "C",
        readonly=not copies,
        alignment=_made_alignment(rows, len(info.columns), dtype),
    )
    why = "table -> 2-D tensor" if copies else "one-column table -> a (rows, 1) view"
    fresh = len(info.columns) > 1 or _certain(copies)
    return Estimate(
        out, tuple(copies), tuple(losses), why, copies_all=fresh, shared_readonly=not copies
    )


_Planned = tuple[str, list[Copy], list[Loss]]


def cast_target(info: DataInfo, dtypes: Sequence[str], want: str | None) -> str | None:
    """The dtype the columns (planned as ``dtypes``) are cast to, or None for no cast."""
    if want is not None:
        return want if any(d != want for d in dtypes) else None
    if info.kind == Kind.COLUMN or len(set(dtypes)) < 2:
        return None
    if _all_ints_with_some_nulls(info, set(dtypes)):
        return None  # they become float64 together (see estimate_to_tensor)
    if not all(_castable(c.dtype) for c in info.columns if Flag.INDEX not in c.flags):
        return None  # temporal and other columns are not promoted: the table is refused
    return common_dtype(set(dtypes))


def _castable(dtype: str) -> bool:
    return is_numeric(dtype) or dtype == "bool"


def _cast_plan(info: DataInfo, planned: list[_Planned], want: str | None) -> list[_Planned]:
    """``planned``, with a cast step (a copy) for each column whose dtype is not the one
    all columns are cast to; a column that cannot be cast is refused."""
    to = cast_target(info, [d for d, _, _ in planned], want)
    if to is None:
        return planned
    out = []
    for col, (dtype, copies, losses) in zip(info.columns, planned, strict=True):
        if dtype != to:
            if not _castable(col.dtype):
                raise Unroutable(f"column {col.name!r} ({col.dtype}) cannot be cast to {to}")
            if want and col.nulls > 0 and not to.startswith("float"):
                raise Unroutable(_nulls_refused(col.name, to))
            why = f"dtype={want!r}" if want else "the columns share one dtype, as to_numpy() does"
            reason = f"cast {dtype} -> {to} ({why}; values it cannot hold are warned when run)"
            copies = [*copies, Copy(col.name, col.nbytes, reason)]
            if col.nulls > 0 and is_integer(col.dtype) and dtype == "float64":
                # The nulls' NaN is what the cast's dtype holds, not the float64 the column
                # passes through: name that, and leave its values to the cast's check
                # (cast_checked: float32 keeps integers to 2**24, not 2**53).
                losses = [
                    replace(x, target=to, lost="nulls become NaN") if x.target == dtype else x
                    for x in losses
                ]
            dtype = to
        out.append((dtype, copies, losses))
    return out


def _nulls_refused(name: str, to: str) -> str:
    return (
        f"{label(name)} holds nulls, which a tensor of dtype={to!r} cannot hold; fill them "
        "first (pyarrow.compute.fill_null, polars' fill_null, pandas' fillna), or ask for a "
        "float dtype, in which they become NaN"
    )


def _not_0_or_1(col: Any) -> bool:
    """Whether a numeric Arrow column holds a value other than 0 and 1 (NaN included)."""
    pc = require("pyarrow.compute")
    odd = pc.and_(pc.not_equal(col, 0), pc.not_equal(col, 1))
    return bool(pc.any(odd).as_py())


def cast_checked(data: Any, to: str, strict: bool, asked: bool = False) -> Any:
    """pyarrow ``data`` (Table or column) with its columns cast to ``to``; a column whose
    values the cast cannot keep (an integer above 2**53 into float64, a fraction or an
    overflow into an integer) is reported as lossy (strict=True: refused before any
    result exists). ``asked``: ``to`` is the user's dtype=, which a column with nulls is
    refused where it holds no NaN (the planned common dtype lets them become float64)."""
    pa = arrowkit.pa_module()
    target = pa.from_numpy_dtype(np_module().dtype(to))
    float64 = pa.float64()
    lossy: list[Loss] = []

    def cast(name: str, col: Any) -> Any:
        if col.type == target:
            return col
        if asked and col.null_count and not pa.types.is_floating(target):  # (unplanned nulls)
            raise NoRouteError(_nulls_refused(name, to))
        if target == float64 and col.null_count and pa.types.is_integer(col.type):
            # Integers with nulls become float64 anyway (column_to_ndarray), and the plan
            # warned of them already: "integers above 2**53 lose precision".
            return col
        if pa.types.is_boolean(col.type) and pa.types.is_float16(target):
            col = col.cast(pa.float32())  # (pyarrow casts no bool to float16; 0 and 1 exact)
        try:
            out = col.cast(target, safe=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            lossy.append(Loss(name, hub_name(str(col.type)), to, f"the cast changes values: {exc}"))
            return col.cast(target, safe=False)
        if pa.types.is_boolean(target) and not pa.types.is_boolean(col.type) and _not_0_or_1(col):
            # (pyarrow's safe cast makes any number but 0 True)
            why = "the cast changes values: values other than 0 and 1 become True"
            lossy.append(Loss(name, hub_name(str(col.type)), to, why))
        if pa.types.is_float16(target) and pa.types.is_integer(col.type) and _beyond(col, 2048):
            # pyarrow checks no integer cast to float16 (int64 2**40 became inf silently);
            # as it checks float32 (by the range held exactly: +-2**24), by +-2**11
            why = (
                "the cast changes values: integers beyond +-2048 are rounded, "
                "beyond +-65504 they become inf"
            )
            lossy.append(Loss(name, hub_name(str(col.type)), to, why))
        elif pa.types.is_floating(col.type) and pa.types.is_floating(target):
            # narrower floats round, as asked; pyarrow lets a finite value overflow to inf,
            # or a nonzero one underflow to 0, silently
            why = _float_narrowing_loss(col, out)
            if why:
                lossy.append(Loss(name, hub_name(str(col.type)), to, why))
        return out

    if isinstance(data, pa.Table):
        cols = [cast(n, c) for n, c in zip(data.column_names, data.columns, strict=True)]
        out = pa.table(cols, names=data.column_names)
    else:
        out = cast("", data)
    report_losses(lossy, "a tensor", strict)
    return out


def _beyond(col: Any, bound: int) -> bool:
    """Whether the integer column ``col`` holds a value outside ``-bound..bound``."""
    pc = require("pyarrow.compute")
    found = pc.min_max(col)
    low, high = found["min"].as_py(), found["max"].as_py()
    return low is not None and (low < -bound or high > bound)


def _float_narrowing_loss(before: Any, after: Any) -> str:
    """What the cast of the float column ``before`` into the narrower ``after`` changed
    beyond rounding ("" for nothing): finite values become inf, or nonzero ones 0."""
    if not len(after):
        return ""
    pc = require("pyarrow.compute")

    def count(col: Any, test: Any) -> int:
        return int(pc.sum(test(col)).as_py() or 0)

    def zero(col: Any) -> Any:
        if col.type.bit_width == 16:  # (pyarrow compares no float16: float32 holds it exactly)
            col = col.cast(arrowkit.pa_module().float32())
        return pc.equal(col, 0)

    found = [FLOAT_OVERFLOW] if count(after, pc.is_inf) > count(before, pc.is_inf) else []
    if count(after, zero) > count(before, zero):
        found.append(FLOAT_UNDERFLOW)
    return "; ".join(found)


def _certain(copies: list[Copy]) -> bool:
    """Whether the copies certainly give new memory (not just possibly, as for a stream)."""
    return bool(copies) and all(c.reason != UNKNOWN_NULLS for c in copies)


def _all_ints_with_some_nulls(info: DataInfo, planned: set[str]) -> bool:
    source = {c.dtype for c in info.columns}
    return len(source) == 1 and is_integer(next(iter(source))) and planned <= {"float64", *source}


def estimate_arrow_to_tensor(ctx: Context, dlpack_only: bool) -> Estimate:
    """Arrow data (a stream too, read whole) -> ndarray; see :func:`estimate_to_tensor`.

    With ``copy=True`` the array is always new, writable memory.
    """
    info = ctx.info
    if info.kind == Kind.STREAM:
        est = estimate_to_tensor(info.but(kind=Kind.TABLE), dlpack_only, ctx.dtype)
        est = replace(est, why="the stream is read into one tensor")
    else:
        est = estimate_to_tensor(info, dlpack_only, ctx.dtype)
    if ctx.copy and not est.copies_all:
        extra = () if ctx.fresh else (Copy(TENSOR_NAME, info.nbytes, COPY_TRUE),)
        est = replace(
            est,
            copies=est.copies + extra,
            copies_all=True,
            shared_readonly=False,
            out=est.out.but(readonly=False),
        )
    return est


def planned_cast(ctx: Context, dlpack_only: bool) -> str | None:
    """The dtype :func:`arrow_to_tensor` casts the columns of ``ctx.info`` to, if any."""
    info = ctx.info
    tensor_columns = [c for c in info.columns if Flag.INDEX not in c.flags] or info.columns
    dtypes = [_column_plan(c, dlpack_only)[0] for c in tensor_columns]
    return cast_target(info, dtypes, ctx.dtype)


_UNSET: Any = object()


def arrow_to_tensor(value: Any, ctx: Context, dlpack_only: bool, cast_to: Any = _UNSET) -> Any:
    """Run the conversion :func:`estimate_arrow_to_tensor` planned.

    When the plan could not see the nulls (a stream), the losses are found and reported
    here, on the data as read.
    """
    info = ctx.info
    if info.kind == Kind.COLUMN:
        data = arrowkit.read_column(value)
    else:
        data = arrowkit.read_table(value)
        index = [c.name for c in info.columns if Flag.INDEX in c.flags]
        if index:
            data = data.drop_columns([n for n in index if n in data.column_names])
    to = planned_cast(ctx, dlpack_only) if cast_to is _UNSET else cast_to
    unknown = any(c.nulls < 0 for c in info.columns)
    if unknown:
        if info.kind == Kind.COLUMN:
            actual = arrowkit.describe_column(data, info.columns[0].name if info.columns else "")
        else:
            actual = arrowkit.describe_table(data)
        if ctx.dtype and to is not None and not to.startswith("float"):  # (before warnings)
            for c in actual.columns:
                if c.nulls > 0:
                    raise NoRouteError(_nulls_refused(c.name, to))
        try:
            losses = estimate_to_tensor(actual, dlpack_only).losses
        except Unroutable as exc:
            raise NoRouteError(
                f"the data read from the stream cannot become a tensor: {exc}"
            ) from None
        report_losses(losses, "a tensor", ctx.strict)
    nan_nulls = {c.name for c in info.columns if Flag.NAN_IS_NULL in c.flags}
    if nan_nulls:
        data = _drop_validity(data, nan_nulls)
    if to is not None:
        data = cast_checked(data, to, ctx.strict, asked=ctx.dtype is not None)
    elif any("time64[ns]" in c.dtype for c in info.columns):
        data = _nanoseconds_cut(data, info, ctx.strict)
    if (
        to is None
        and ctx.target == "numpy"
        and any(c.dtype.startswith(("timestamp", "duration")) for c in info.columns)
    ):
        # numpy keeps datetime64/timedelta64, where INT64_MIN is NaT (missing), not a value;
        # a tensor library that gets int64 ticks keeps it as a value
        named = (
            [(info.columns[0].name if info.columns else "", data)]
            if info.kind == Kind.COLUMN
            else list(zip(data.column_names, data.columns, strict=True))
        )
        report_losses(arrowkit.nat_collisions(named), "a datetime64 tensor", ctx.strict)
    if info.kind == Kind.COLUMN:
        arr = column_to_ndarray(data, dlpack_only)
    else:
        arr = table_to_ndarray(data, dlpack_only)
        if data.num_columns > 1:
            return arr  # new memory (_stacked), at a 64-byte boundary as planned
    if ctx.copy:
        return writable_copy(arr)
    if unknown and arr.size and bytes_inside(ndarray_buffers(arr), arrowkit.buffers(data)):
        # The plan said the data is read into new memory (it could not see a stream's
        # nulls, nor that it holds one batch of one column): so it is, also for a tensor
        # library that ignores read-only flags (torch: it would write into the batch).
        return np_module().array(arr, copy=True)
    return arr


def _nanoseconds_cut(data: Any, info: DataInfo, strict: bool) -> Any:
    """time64[ns] columns as time64[us]: numpy holds times as Python ``datetime.time``
    objects, which keep microseconds (pyarrow refuses a value with nanoseconds). A column
    whose values have nanoseconds is reported lossy (refused under strict=True); so is a
    nested column whose time64[ns] values have them (they become ``datetime.time`` objects
    too: pyarrow's ``to_pylist`` cuts the nanoseconds)."""
    pa = arrowkit.pa_module()
    pc = require("pyarrow.compute")
    named = (
        [(info.columns[0].name if info.columns else "", data)]
        if info.kind == Kind.COLUMN
        else list(zip(data.column_names, data.columns, strict=True))
    )
    losses = []
    out = []
    for name, col in named:
        if col.type == pa.time64("ns"):
            ticks = col.cast(pa.int64())
            whole = pc.multiply(pc.divide(ticks, 1000), 1000)  # integer division
            if len(col) and pc.any(pc.not_equal(ticks, whole)).as_py():
                why = "Python's datetime.time holds microseconds: the nanoseconds are cut"
                losses.append(Loss(name, "time64[ns]", "time64[us]", why))
            col = col.cast(pa.time64("us"), safe=False)
        elif len(col) and any(_sub_microseconds(pc, leaf) for leaf in _times_ns(pa, col)):
            why = "Python's datetime.time holds microseconds: the nanoseconds are cut"
            losses.append(Loss(name, arrowkit.dtype_name(col.type), "object", why))
        out.append(col)
    report_losses(losses, "numpy", strict)
    if info.kind == Kind.COLUMN:
        return out[0]
    return pa.table(out, names=data.column_names)


def _sub_microseconds(pc: Any, times: Any) -> bool:
    """Whether a time64[ns] array holds a value that is not a whole microsecond."""
    ticks = times.cast(arrowkit.pa_module().int64())
    whole = pc.multiply(pc.divide(ticks, 1000), 1000)  # integer division
    return bool(pc.any(pc.not_equal(ticks, whole)).as_py())


def _times_ns(pa: Any, arr: Any) -> Iterator[Any]:
    """The time64[ns] arrays inside a pyarrow Array or ChunkedArray of a nested type (the
    values of lists, the fields of structs, a map's keys and items, ...)."""
    if isinstance(arr, pa.ChunkedArray):
        for chunk in arr.chunks:
            yield from _times_ns(pa, chunk)
        return
    t, typ = pa.types, arr.type
    if typ == pa.time64("ns"):
        yield arr
    elif isinstance(typ, pa.BaseExtensionType):
        yield from _times_ns(pa, arr.storage)
    elif t.is_struct(typ) or t.is_union(typ):
        for i in range(typ.num_fields):
            yield from _times_ns(pa, arr.field(i))
    elif t.is_map(typ):
        yield from _times_ns(pa, arr.keys)
        yield from _times_ns(pa, arr.items)
    elif t.is_dictionary(typ):
        yield from _times_ns(pa, arr.dictionary)
    elif t.is_run_end_encoded(typ) or t.is_list_view(typ) or t.is_large_list_view(typ):
        yield from _times_ns(pa, arr.values)
    elif t.is_list(typ) or t.is_large_list(typ) or t.is_fixed_size_list(typ):
        yield from _times_ns(pa, arr.flatten())


_TENSOR_DTYPES = frozenset(
    ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64")
)


def bind_arrow_to_tensor(ctx: Context, dlpack_only: bool) -> Callable[[Any], Any]:
    """:func:`arrow_to_tensor` for ``ctx``: for a plain table (two or more null-free,
    single-chunk columns of one integer or float type, no index) pyarrow's own
    ``RecordBatch.to_tensor(row_major=False)``, the same column-major copy made in C++
    in one call; for a plain column its chunk's ``to_numpy()``; for a table of integer and
    float columns otherwise (with nulls, say) each column's ``to_numpy()``, stacked, or from
    :data:`FILL_FROM_ROWS` rows written into place (:func:`filled_columns`); for
    everything else :func:`arrow_to_tensor` itself, with the cast decided once."""
    info = ctx.info
    cols = info.columns
    plain = (
        info.kind == Kind.TABLE
        and not ctx.copy
        and ctx.dtype in (None, cols[0].dtype if cols else None)
        and len(cols) > 1
        and len({c.dtype for c in cols}) == 1
        and cols[0].dtype in _TENSOR_DTYPES
        and all(c.nulls == 0 and c.chunks == 1 and not c.flags - _PLAIN_FLAGS for c in cols)
    )
    if not plain:
        if _plain_column(ctx):
            return _bind_column(ctx, dlpack_only)
        cast_to = planned_cast(ctx, dlpack_only)  # decided once, with the route
        if cast_to is None and _numeric_table(ctx):
            return _bind_numeric_table(ctx, dlpack_only)
        return lambda value: arrow_to_tensor(value, ctx, dlpack_only, cast_to)
    table, asarray = arrowkit.pa_module().Table, np_module().asarray
    read = _one_batch_reader()

    def to_tensor(value: Any) -> Any:
        data = read(value)
        if type(data) is table:
            batches = data.to_batches()
            if len(batches) != 1:  # pragma: no cover - the plan saw one chunk per column
                return arrow_to_tensor(value, ctx, dlpack_only)
            data = batches[0]
        return asarray(data.to_tensor(row_major=False))

    return to_tensor


def _one_batch_reader() -> Callable[[Any], Any]:
    """For a route that planned one batch: ``read(value)``, a pyarrow Table or RecordBatch
    as it is; a producer with ``__arrow_c_array__`` (a nanoarrow Array) through
    ``pa.record_batch`` (4.4 us against 6 through its stream, 1,000 rows with nulls)
    until it refuses one (a struct at an offset: then its stream, and for the rest of the
    route); anything else through ``arrowkit.read_table``."""
    pa = arrowkit.pa_module()
    table, batch, read_table, record_batch = (
        pa.Table,
        pa.RecordBatch,
        arrowkit.read_table,
        arrowkit.batch_from,
    )
    refused = (TypeError, ValueError, pa.ArrowException)
    through_array = [True]  # until pa.record_batch refuses one (then: the stream)

    def read(value: Any) -> Any:
        cls = type(value)
        if cls is table or cls is batch:
            return value
        if through_array[0] and hasattr(cls, "__arrow_c_array__"):  # one batch
            try:
                return record_batch(value)
            except refused:
                through_array[0] = False  # not tried again for this route
        return read_table(value)

    return read


_PLAIN_FLAGS = frozenset({Flag.SLICED, Flag.ONE_BLOCK, Flag.ADJACENT})


def _plain_column(ctx: Context) -> bool:
    """A null-free, single-chunk column of an integer or float type, no cast, no copy."""
    info = ctx.info
    if info.kind != Kind.COLUMN or ctx.copy or len(info.columns) != 1:
        return False
    (col,) = info.columns
    return (
        col.dtype in _TENSOR_DTYPES
        and ctx.dtype in (None, col.dtype)
        and col.nulls == 0
        and col.chunks == 1
        and not col.flags - _PLAIN_FLAGS
    )


def _bind_column(ctx: Context, dlpack_only: bool) -> Callable[[Any], Any]:
    """A plain column (:func:`_plain_column`) is its one chunk's ``to_numpy()``, a view:
    what :func:`arrow_to_tensor` does for it, without its checks for what the plan ruled
    out. A value of several chunks (the plan saw one) goes the general way."""
    pa = arrowkit.pa_module()
    array, chunked, read_one_chunk = pa.Array, pa.ChunkedArray, arrowkit.read_one_chunk

    def column(value: Any) -> Any:
        data = value if isinstance(value, array) else read_one_chunk(value)
        if type(data) is chunked:
            if data.num_chunks != 1:
                return arrow_to_tensor(data, ctx, dlpack_only)
            data = data.chunk(0)
        return data.to_numpy(zero_copy_only=False)

    return column


def _numeric_table(ctx: Context) -> bool:
    """A table of single-chunk integer and float columns, their nulls counted (not a
    stream's unknown), no index, no NaN read as missing, and nothing to cast: what
    :func:`arrow_to_tensor` takes through its checks to each column's ``to_numpy()``."""
    info = ctx.info
    cols = info.columns
    return (
        info.kind == Kind.TABLE
        and bool(cols)
        and all(
            c.dtype in _TENSOR_DTYPES
            and c.nulls >= 0
            and c.chunks == 1
            and not c.flags - _PLAIN_FLAGS
            for c in cols
        )
    )


def _bind_numeric_table(ctx: Context, dlpack_only: bool) -> Callable[[Any], Any]:
    """A numeric table (:func:`_numeric_table`; with nulls, which the plain table's
    ``to_tensor`` refuses) as :func:`arrow_to_tensor` makes it, without its per-call
    reading of the plan: each column's ``to_numpy()`` (nulls NaN, an integer column with
    nulls float64, as the plan says and warns), stacked column-major; from
    :data:`FILL_FROM_ROWS` rows the same array written column by column into place
    (:func:`filled_columns`). 22.9-32.6 us a
    conversion for 1,000 rows of an int64 and a float64 column with nulls, against
    42.7-47.9 us the general way (``np.column_stack([c.to_numpy() for c in
    table.columns])``: 14.8-27.6 us). A column of several chunks (the plan saw one) goes
    the general way."""
    pa = arrowkit.pa_module()
    batch, from_batches = pa.RecordBatch, pa.Table.from_batches
    read = _one_batch_reader()
    copy = ctx.copy

    def columns(value: Any) -> Any:
        data = read(value)
        if type(data) is batch:
            data = from_batches([data])
        cols = data.columns  # (a Table's: ChunkedArrays)
        for col in cols:
            if col.num_chunks != 1:
                return arrow_to_tensor(data, ctx, dlpack_only, None)
        rows = data.num_rows
        if rows >= FILL_FROM_ROWS and len(cols) > 1:
            return filled_columns([c.chunk(0) for c in cols], rows)
        # A column of one chunk's to_numpy() is its chunk's, the same array (a view where
        # that is one), without the chunk's wrapper (0.5 us a column)
        arr = _stacked([c.to_numpy() for c in cols], rows)
        return writable_copy(arr) if copy and len(cols) == 1 else arr  # (else new memory)

    return columns


# From this many rows a numeric table is written straight into its 2-D array, a column
# per thread from PARALLEL_FILL_BYTES of result (:func:`filled_columns`); below, each column's
# to_numpy() and a copy into place cost less than the masks (1,000 rows of an int64 and
# a float64 column with nulls: 38 us that way, 47 us written in place).
FILL_FROM_ROWS = 1 << 14
PARALLEL_FILL_BYTES = 4 << 20


def filled_columns(chunks: list[Any], rows: int) -> Any:
    """Single-chunk integer and float Arrow arrays as one column-major 2-D ndarray, each
    written into its column of the result once: its values cast in place (an integer
    column with nulls becomes float64, as ``to_numpy()`` makes it), then NaN where its
    validity bitmap says null. The same array as stacking the columns' ``to_numpy()``
    (a test compares them), without a temporary array per column (peak memory: the
    result, and a mask of a byte a row of :data:`MASK_ROWS` rows for each column with
    nulls being written), and
    the columns written side by side on threads (numpy releases the GIL
    while it copies) from :data:`PARALLEL_FILL_BYTES`, a column with nulls as its values
    and then NaN over them, :data:`MASK_ROWS` rows at a time (:func:`_write_filled`).
    An int64 and a float64 column, a tenth null, 10,000,000 rows: 57 ms stacked; 64 ms
    written in place one column after the other, 38 ms side by side (most of it the first
    touch of the result's fresh pages), 19 ms once the result came from Arrow's pool
    (:func:`new_matrix`), 14-15 ms in blocks; ``to_pandas().to_numpy()`` 15 ms. Later, on
    the same kind of machine: 18.1-18.4 ms with ``np.copyto(where=)`` writing the NaN,
    15.8-15.9 ms with ``np.putmask``; ``to_pandas().to_numpy()`` 18.3-18.4 ms. Later
    still, on a machine where copies a block at a time stayed in the cache less: 24.4 ms
    with the values copied whole and then the NaN a block at a time, 26.4 ms both a block
    at a time; ``to_pandas().to_numpy()`` 22.3 ms."""
    np = np_module()
    own = [np.dtype(c.type.to_pandas_dtype()) for c in chunks]
    # (what to_numpy() gives: an integer column with nulls as float64, its nulls NaN)
    f64 = np.dtype(np.float64)
    made = [f64 if c.null_count and t.kind in "iu" else t for c, t in zip(chunks, own, strict=True)]
    out = new_matrix(rows, len(chunks), np.result_type(*made))

    def fill(i: int) -> None:
        _write_filled(chunks[i], own[i], out[:, i])

    if out.nbytes >= PARALLEL_FILL_BYTES:
        from interchange_hub._core.threads import side_by_side

        side_by_side(fill, range(len(chunks)))
    else:
        for i in range(len(chunks)):
            fill(i)
    return out


def _write_filled(chunk: Any, dtype: Any, out: Any, count_nan: bool = False) -> int:
    """Write an integer or float Arrow array (one chunk) of numpy ``dtype`` into the 1-D
    ``out`` (a column of :func:`filled_columns`' matrix, :func:`nan_filled`'s array), cast
    to ``out``'s dtype, NaN where it is null: the values in one copy, then the NaN
    :data:`MASK_ROWS` rows at a time (a mask of a byte a row for the whole column was 17%
    more memory than the result, two columns of 1,000,000 rows); with ``count_nan``, the
    NaN in ``out`` counted a block at a time while it is in the cache (0 without). One
    copy of the whole column, not one a block: a copy that large writes past the cache
    (an int64 and a float64 column, a tenth null, medians: 1,000,000 rows 4.75 ms against
    5.13-5.43 written a block at a time, each block's NaN while it was in the cache;
    10,000,000 rows 24.4 ms against 26.4; 100,000 rows 0.262 ms against 0.307)."""
    np = np_module()
    rows = len(out)
    validity, data = chunk.buffers()[:2]
    values = np.frombuffer(data, dtype, count=rows, offset=chunk.offset * dtype.itemsize)
    np.copyto(out, values, casting="unsafe")
    isnan, count = np.isnan, np.count_nonzero
    if validity is None or not chunk.null_count:
        return nan_count(out) if count_nan else 0
    nan = 0
    for start in range(0, rows, MASK_ROWS):
        stop = min(rows, start + MASK_ROWS)
        block = out[start:stop]
        # (putmask, not copyto(where=): 1.1 ms against 1.6 for two 1,000,000-row columns
        # one after the other)
        np.putmask(block, null_mask(chunk, start, stop), np.nan)
        if count_nan:
            nan += int(count(isnan(block)))
    return nan


def nan_filled(chunk: Any) -> tuple[Any, bool]:
    """A float32 or float64 Arrow array (one chunk, with nulls) as a new 1-D ndarray, its
    nulls NaN (what its ``to_numpy()`` makes), and whether one of its valid values is NaN
    (which pandas, for one, cannot then tell from a null): its values copied whole, then
    a block at a time its nulls set to NaN and the block's NaN counted while it is in the
    cache (:func:`_write_filled`; more NaN than nulls: a NaN value). ``to_numpy()`` tests
    each row's validity bit, which costs more where the nulls lie at random and the
    values hold NaN under them (a column from pandas). 10,000,000 float64 values, a tenth
    null at random with NaN under them, against ``to_numpy()`` and then the minimum of
    the values and a count of the result's NaN: 30.9 ms against 39.2 (1,000,000: 2.95
    against 3.47); a tenth null at random without NaN: 30.0 against 30.2 (3.43 against
    3.18); every tenth value null: 23.3 against 22.0 (2.84 against 2.97)."""
    np = np_module()
    dtype = np.dtype(chunk.type.to_pandas_dtype())
    out = new_matrix(len(chunk), 1, dtype)[:, 0]
    return out, _write_filled(chunk, dtype, out, count_nan=True) > chunk.null_count


def nan_count(values: Any) -> int:
    """The NaN in a 1-D float ndarray, counted :data:`MASK_ROWS` rows at a time (no mask
    of the whole array)."""
    np = np_module()
    isnan, count = np.isnan, np.count_nonzero
    rows = len(values)
    return sum(int(count(isnan(values[i : i + MASK_ROWS]))) for i in range(0, rows, MASK_ROWS))


# The rows whose nulls :func:`filled_columns` and :func:`nan_filled` write as NaN at a
# time: their mask, a byte a row, stays 256 KiB (in the cache) however long the column.
MASK_ROWS = 1 << 18


def null_mask(chunk: Any, start: int = 0, stop: int | None = None) -> Any:
    """Where an Arrow array (one chunk, with a validity bitmap) holds nulls, for its rows
    ``start:stop`` (all by default): a new numpy bool array, a byte a row, unpacked from
    the bitmap at the array's offset and inverted a byte per eight rows before unpacking."""
    np = np_module()
    end = len(chunk) if stop is None else stop
    rows, offset = end - start, chunk.offset + start
    skip = offset % 8
    bits = np.frombuffer(
        chunk.buffers()[0], np.uint8, count=(skip + rows + 7) // 8, offset=offset // 8
    )
    return np.unpackbits(~bits, count=skip + rows, bitorder="little")[skip:].view(np.bool_)


def _drop_validity(data: Any, names: set[str]) -> Any:
    """Float columns without their validity bitmaps (their nulls hold NaN already)."""
    pa = arrowkit.pa_module()

    def strip(col: Any) -> Any:
        if not pa.types.is_floating(col.type):
            return col
        chunks = [
            pa.Array.from_buffers(c.type, len(c), [None, c.buffers()[1]], 0, c.offset)
            for c in col.chunks
        ]
        return pa.chunked_array(chunks, type=col.type)

    if isinstance(data, pa.Table):
        cols = [
            strip(c) if n in names else c
            for n, c in zip(data.column_names, data.columns, strict=True)
        ]
        return pa.table(cols, names=data.column_names)
    return strip(arrowkit.as_chunked(data))


def writable_copy(arr: Any) -> Any:
    """``arr`` if it is writable memory owned by nobody else, else a copy (copy=True)."""
    if arr.flags.writeable and arr.flags.owndata:
        return arr
    return np_module().array(arr, copy=True)


def column_to_ndarray(col: Any, dlpack_only: bool) -> Any:
    """A pyarrow Array/ChunkedArray -> 1-D (or n-D for tensor columns) ndarray."""
    pa = require("pyarrow")
    np = np_module()
    if isinstance(col, pa.ChunkedArray):
        if not col.num_chunks:
            # (combine_chunks of no chunks builds its array from a Python sequence, which
            # fails for tensors, unions and dictionaries of dates: pa.nulls makes them all)
            col = pa.nulls(0, col.type)
        else:
            col = col.chunk(0) if col.num_chunks == 1 else col.combine_chunks()
    typ = col.type
    if isinstance(typ, pa.FixedShapeTensorType):
        return col.to_numpy_ndarray()
    if pa.types.is_timestamp(typ) or pa.types.is_duration(typ):
        if dlpack_only:  # int64 ticks, as planned; a null (numpy's NaT) is its int64 minimum
            ticks = col.view(pa.int64())
            if ticks.null_count:
                ticks = ticks.fill_null(-(2**63))
            return ticks.to_numpy(zero_copy_only=False)
        if pa.types.is_timestamp(typ) and typ.tz is not None:
            col = col.cast(pa.timestamp(typ.unit))
    if pa.types.is_integer(typ) and col.null_count:
        # float64, the nulls NaN: pyarrow's own conversion (2.5 us for 1,000 values, a
        # cast and then to_numpy 15 us)
        return col.to_numpy(zero_copy_only=False)
    if pa.types.is_date32(typ):
        return col.to_numpy(zero_copy_only=False).astype("datetime64[D]")
    if (
        pa.types.is_nested(typ)
        or pa.types.is_run_end_encoded(typ)  # nested from pyarrow 26 on, not before
        or pa.types.is_dictionary(typ)
        or isinstance(typ, pa.BaseExtensionType)
    ):
        # Python values: numpy's own nesting would turn integer lists with nulls into floats;
        # an extension type's are its own (uuid.UUID; an opaque type's storage's values).
        out = np.empty(len(col), dtype=object)
        for i, value in enumerate(col.to_pylist()):
            out[i] = value
        return out
    if is_string(str(typ)) or not (pa.types.is_primitive(typ) or pa.types.is_temporal(typ)):
        return np.asarray(col.to_numpy(zero_copy_only=False), dtype=object)
    return col.to_numpy(zero_copy_only=False)


def table_to_ndarray(table: Any, dlpack_only: bool) -> Any:
    arrays = [column_to_ndarray(c, dlpack_only) for c in table.columns]
    if not arrays:
        raise ValueError("a table without columns cannot become a tensor")
    return _stacked(arrays, table.num_rows)


def _stacked(arrays: list[Any], rows: int) -> Any:
    """The columns' ndarrays as one 2-D ndarray (one column: a view of it)."""
    if len(arrays) == 1:
        return arrays[0].reshape(-1, 1)
    # Column-major: one contiguous copy per column (row-major would interleave them).
    np = np_module()
    dtype = np.result_type(*arrays)
    if rows * len(arrays) * dtype.itemsize < ALIGN_FROM_BYTES:  # (new_matrix's, 0.5 us less)
        out = np.empty((rows, len(arrays)), dtype, order="F")
    else:
        out = new_matrix(rows, len(arrays), dtype)
    for i, arr in enumerate(arrays):
        out[:, i] = arr
    return out


# From this many bytes the 2-D tensors the hub makes of tables start at a 64-byte boundary
# (:func:`new_matrix`), as XLA (jax's CPU client) needs to view them in place; below, jax
# copies faster than it imports (see the jax plugin), and numpy's own allocation costs
# 0.3 us against 2.9.
ALIGN_FROM_BYTES = 1 << 16


def _made_alignment(rows: int, columns: int, dtype: str) -> int:
    """What :func:`estimate_to_tensor` says of the alignment of the tensor it plans of a
    table: 64 from :data:`ALIGN_FROM_BYTES` for two or more columns (:func:`new_matrix`,
    or Arrow's pool through ``RecordBatch.to_tensor``), else not known (0)."""
    if columns < 2 or rows < 0 or dtype not in TENSOR_DTYPES:
        return 0
    return ALIGNMENT if rows * columns * itemsize(dtype) >= ALIGN_FROM_BYTES else 0


# torch warns once per process about a read-only array ("The given NumPy array is not
# writable..."); the plan's WriteThroughWarning says it instead. The first read-only
# array is converted with that warning silenced (:func:`torch_from_numpy`); torch then
# never gives it again, and from_numpy (0.4 us) serves the rest, not from_dlpack (1.1 us).
# Read by the hot paths before they call torch.from_numpy themselves.
torch_warned = False


def torch_from_numpy(torch: Any, value: Any) -> Any:
    """``torch.from_numpy(value)``, without torch's warning of a read-only array."""
    global torch_warned
    if torch_warned or value.flags.writeable:
        return torch.from_numpy(value)
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        tensor = torch.from_numpy(value)
    torch_warned = True
    return tensor


def new_matrix(rows: int, columns: int, dtype: Any) -> Any:
    """A new column-major (rows, columns) ndarray: at a 64-byte boundary from
    :data:`ALIGN_FROM_BYTES`, in Arrow's memory pool (:func:`pool_empty`; every caller
    reads Arrow data, so pyarrow is there), numpy's own below."""
    np = np_module()
    dtype = np.dtype(dtype)
    if rows * columns * dtype.itemsize >= ALIGN_FROM_BYTES and not dtype.hasobject:
        return pool_empty((rows, columns), dtype)
    return np.empty((rows, columns), dtype, order="F")


def pool_empty(shape: tuple[int, int], dtype: Any) -> Any:
    """A new column-major 2-D ndarray over a buffer of Arrow's default memory pool, which
    starts at a 64-byte boundary (as :func:`aligned_empty`'s) and whose pages the pool
    keeps for the next result: numpy's allocator maps fresh pages for every array over
    32 MiB, and writing a page the first time costs as much as copying into it
    (2 x 10,000,000 float64, allocated and written: 6.2 ms from the pool, 17.9 ms from
    numpy; 2 x 1,000,000: 0.57 ms both), which is why ``to_pandas()`` out-ran the hub's
    copies of large tables. The array owns no memory (``flags.owndata`` is False): its
    base, a writable ``pyarrow.Buffer``, does; the pool takes the memory back when the
    array is gone. :func:`aligned_empty` where the pool's buffer is not so aligned."""
    np = np_module()
    dtype = np.dtype(dtype)
    count = shape[0] * shape[1]
    buffer = arrowkit.pa_module().allocate_buffer(count * dtype.itemsize)
    flat = np.frombuffer(buffer, dtype, count=count)
    if ndarray_address(flat) % ALIGNMENT or not flat.flags.writeable:  # (not seen: a pool's
        return aligned_empty(shape, dtype)  # allocations are 64-byte aligned, writable)
    return flat.reshape(shape, order="F")


def aligned_empty(shape: tuple[int, int], dtype: Any) -> Any:
    """A new column-major 2-D ndarray starting at a 64-byte boundary (numpy aligns its own
    allocations to 16 bytes only; XLA's CPU client, jax's, views memory in place only at
    64: the tables the hub makes into tensors are promised so, ``DataInfo.alignment``).
    It owns no memory itself (``flags.owndata`` is False): its base, 64 bytes longer, does."""
    np = np_module()
    dtype = np.dtype(dtype)
    nbytes = shape[0] * shape[1] * dtype.itemsize
    base = np.empty(nbytes + ALIGNMENT, np.uint8)
    start = -base.__array_interface__["data"][0] % ALIGNMENT
    flat = base[start : start + nbytes].view(dtype)
    return flat.reshape(shape, order="F")


# -- tensor -> Arrow -------------------------------------------------------------------------
def _vector_copy(
    dtype: str, contiguous: bool, name: str, nbytes: int, ctx: Context | None = None
) -> list[Copy]:
    if dtype == "bool":
        return [Copy(name, nbytes, "numpy booleans (a byte each) are bit-packed for Arrow")]
    if (
        ctx is not None
        and dtype in _TEXT
        and (made := _arrow_dtype(dtype, ctx)) != _arrow_dtype(dtype)
    ):
        why = f"{dtype} values are encoded as Arrow {made}, the type {ctx.target} asks for"
        return [Copy(name, nbytes, why)]
    if dtype in ("numpy_str", "numpy_bytes", "object"):
        return [Copy(name, nbytes, f"{dtype} values are encoded as Arrow strings/values")]
    if dtype == "numpy_datetime64[D]":
        return [Copy(name, nbytes, "datetime64[D] days are narrowed to Arrow date32")]
    if dtype.startswith("numpy_datetime64"):
        raise Unroutable(
            f"Arrow has no type for {dtype[6:]}; cast to datetime64[D] or a unit of s/ms/us/ns"
        )
    if dtype.startswith("numpy_timedelta64"):  # (Arrow's durations: s, ms, us, ns only)
        raise Unroutable(
            f"Arrow has no type for {dtype[6:]}; cast it to a unit of s/ms/us/ns first "
            "(arr.astype('timedelta64[s]'))"
        )
    if dtype.startswith("numpy_non-native"):
        raise Unroutable(
            f"the array is in non-native byte order ({dtype.split()[-1]}); convert it with "
            "arr.astype(arr.dtype.newbyteorder('=')) first"
        )
    if dtype.startswith("numpy_"):
        raise Unroutable(f"Arrow has no type for numpy {dtype[6:]}; cast the array first")
    if dtype.startswith("complex"):
        raise Unroutable("Arrow has no complex type")
    if not contiguous:
        return [Copy(name, nbytes, "Arrow arrays must be contiguous; the strided data is gathered")]
    return []


def estimate_from_tensor(info: DataInfo, ctx: Context | None = None) -> Estimate:
    """ndarray -> Arrow: 1-D -> column, 2-D -> table, more -> fixed-shape tensor column;
    numpy's fixed-width text as the type the conversion's target keeps where ``ctx``
    asks (:func:`arrowkit.text_type`), else string / binary."""
    if not info.device.is_cpu:
        raise Unroutable(f"the data is on {info.device}; Arrow data must be on the CPU")
    (col,) = info.columns
    shape, dtype = info.shape, col.dtype
    if dtype in ("bfloat16", UNREADABLE) or dtype.startswith("torch_"):
        raise Unroutable(f"Arrow and numpy cannot hold this tensor ({dtype}); cast it first")
    if len(shape) == 0:
        raise Unroutable("a 0-d tensor (a scalar) is neither a column nor a table")
    if len(shape) == 1:
        data_copies = _vector_copy(dtype, info.layout == "C", TENSOR_NAME, col.nbytes, ctx)
        copies = list(data_copies)
        if col.nulls > 0:  # a numpy.ma.MaskedArray
            reason = "the numpy mask becomes an Arrow validity bitmap"
            copies.append(Copy(TENSOR_NAME, shape[0], reason))
        column = Column(TENSOR_NAME, _arrow_dtype(dtype, ctx), col.nbytes, max(col.nulls, 0))
        # (a wrapped buffer keeps its address: a consumer that needs values aligned to their
        # width, polars, sees it)
        alignment = 0 if data_copies else info.alignment
        out = DataInfo(Kind.COLUMN, (column,), rows=shape[0], alignment=alignment)
        why = "1-D tensor -> column" if copies else "contiguous buffer wrapped as an Arrow array"
        return Estimate(out, tuple(copies), why=why, copies_all=bool(data_copies))
    if len(shape) == 2:
        per_col = col.nbytes // max(shape[1], 1)
        names = [f"column_{i}" for i in range(shape[1])]
        # Each column is contiguous when the array is F-ordered (or has one column).
        contiguous = info.layout == "F" or (info.layout == "C" and shape[1] == 1)
        copies = [c for n in names for c in _vector_copy(dtype, contiguous, n, per_col, ctx)]
        if not contiguous and copies and info.layout == "C" and dtype not in _ENCODED:
            copies = [
                Copy(
                    c.column,
                    c.nbytes,
                    "a C-ordered 2-D tensor stores rows together; "
                    "each column is gathered (a Fortran-ordered array is zero-copy)",
                )
                for c in copies
            ]
        # A 2-D numpy.ma.MaskedArray: its masked values are nulls of the columns they lie
        # in, which its description (one count for the whole tensor) does not tell apart:
        # counted when read (nulls -1), and each column's mask becomes a validity bitmap.
        nulls = -1 if col.nulls > 0 else 0
        every_value_copied = len(copies) == len(names)
        if nulls:
            reason = "the numpy mask becomes an Arrow validity bitmap"
            copies += [Copy(n, -(-shape[0] // 8), reason) for n in names]
        cols = tuple(Column(n, _arrow_dtype(dtype, ctx), per_col, nulls) for n in names)
        out = DataInfo(Kind.TABLE, cols, rows=shape[0])
        return Estimate(
            out,
            tuple(copies),
            why="2-D tensor -> table, one column per tensor column",
            copies_all=every_value_copied,
        )
    copies = _vector_copy(dtype, info.layout == "C", TENSOR_NAME, col.nbytes)
    if dtype in ("bool", "numpy_str", "numpy_bytes", "object"):
        raise Unroutable(f"a fixed-shape tensor column cannot hold {dtype} values")
    if 0 in shape[1:]:  # pyarrow: "list_size needs to be a strict positive integer"
        raise Unroutable(
            f"a fixed-shape tensor column cannot hold cells of shape {tuple(shape[1:])}, "
            "which have no values; reshape the tensor first"
        )
    ext = fixed_shape_name(dtype, tuple(shape[1:]))
    out = DataInfo(Kind.COLUMN, (Column(TENSOR_NAME, ext, col.nbytes, 0),), rows=shape[0])
    return Estimate(
        out,
        tuple(copies),
        why=f"{len(shape)}-D tensor -> fixed-shape tensor column",
        copies_all=bool(copies),
    )


_TEXT = ("numpy_str", "numpy_bytes")
# (dtypes whose columns are encoded, whatever the order: a C-ordered array's copy is that)
_ENCODED = ("bool", "numpy_str", "numpy_bytes", "object", "numpy_datetime64[D]")


def _arrow_dtype(dtype: str, ctx: Context | None = None) -> str:
    names = {"numpy_str": "string", "numpy_bytes": "binary", "numpy_datetime64[D]": "date32[day]"}
    name = names.get(dtype, dtype)
    return arrowkit.text_type(ctx, name) if dtype in _TEXT else name


def ndarray_to_arrow(arr: Any, strict: bool = False, ctx: Context | None = None) -> Any:
    """The Arrow object for an ndarray: Array (1-D), Table (2-D) or tensor column (n-D).

    An array of Python objects is read by :func:`objects_to_arrow` (a column of a 2-D one
    too); ``strict``: a value it cannot keep is refused instead of warned.
    ``ctx``: numpy's fixed-width text as the type the conversion's target keeps, as
    :func:`estimate_from_tensor` says."""
    pa = require("pyarrow")
    if type(arr) is not np_module().ndarray and isinstance(arr, np_module().matrix):
        arr = arr.view(np_module().ndarray)  # (a matrix's column is 2-D: pa.array refuses it)
    ndim = arr.ndim
    # numpy's text as the type the target asks for, a 1-D array or a 2-D one with columns
    # (read only with a context: the bound run of other arrays passes none)
    if ctx is not None and arr.dtype.kind in "US" and (ndim == 1 or (ndim == 2 and arr.shape[1])):
        plain = "string" if arr.dtype.kind == "U" else "binary"
        made = arrowkit.text_type(ctx, plain)
        if made != plain:
            typ = getattr(pa, made)()

            def text(values: Any) -> Any:  # (a NUL inside a value: see embedded_nul)
                if embedded_nul(values):
                    return pa.array(values.tolist(), type=typ)
                return pa.array(values, type=typ)

            if ndim == 1:
                return text(arr)
            names = column_names(arr.shape[1])
            return pa.Table.from_arrays([text(arr[:, i]) for i in range(len(names))], names)
    if ndim == 1:
        if arr.dtype.kind == "O":
            return objects_to_arrow(arr.tolist(), TENSOR_NAME, strict)
        return array_of(arr)
    if ndim == 2:
        rows, width = arr.shape
        if not width:  # no columns, but rows: pa.table({}) would have none
            return pa.table({"_": pa.nulls(rows)}).drop_columns(["_"])
        # The estimate shares columns only for F order (or one column); any other column
        # that happens to be contiguous is copied too, so the claim (and copy=True) holds.
        # A column is contiguous where its rows are adjacent (or it has at most one row),
        # as numpy's flag says; read once for all (a column's flags: 0.1 us each).
        layout = layout_of(arr)  # exactly as the estimate decides
        shared = layout == "F" or (layout == "C" and width == 1)
        copied = not shared and (rows <= 1 or arr.strides[0] == arr.itemsize)
        names = column_names(width)
        if arr.dtype.kind == "O":
            return pa.Table.from_arrays(
                [
                    objects_to_arrow(arr[:, i].tolist(), name, strict)
                    for i, name in enumerate(names)
                ],
                names,
            )
        if copied:
            columns = [array_of(arr[:, i].copy()) for i in range(width)]
        else:
            # A small row-major array is gathered column-major once (numpy's transposing
            # copy: 1,000 x 4 float64 17.0 us against 21.1 gathering each strided column
            # with pa.array), then each contiguous column wrapped as it is: new memory, as
            # the estimate says. Larger ones are gathered by pyarrow, into its pool (1e7
            # rows: 55 ms, against 78 for numpy's copy into new pages).
            small = layout == "C" and rows > 1 and arr.nbytes < ALIGN_FROM_BYTES
            if small and wraps_buffer(arr.dtype) and type(arr) is np_module().ndarray:
                # (not a masked array: np.asfortranarray would drop its mask)
                arr = np_module().asfortranarray(arr)
            columns = [array_of(arr[:, i]) for i in range(width)]
        return pa.Table.from_arrays(columns, names)  # (pa.table of a dict: 2 us more)
    np = np_module()
    if not arr.shape[0]:  # pyarrow refuses an empty ndarray ("Expected a non-empty ndarray")
        cell = arr.shape[1:]  # the type from_numpy_ndarray gives: with its permutation
        typ = pa.fixed_shape_tensor(
            pa.from_numpy_dtype(arr.dtype), cell, permutation=list(range(len(cell)))
        )
        values = pa.array(np.empty(0, arr.dtype))
        return pa.ExtensionArray.from_storage(
            typ, pa.FixedSizeListArray.from_arrays(values, math.prod(cell))
        )
    # (plain strides: pyarrow refuses a length-1 first dimension's odd stride)
    return pa.FixedShapeTensorArray.from_numpy_ndarray(plain_strides(np.ascontiguousarray(arr)))


@lru_cache(maxsize=64)
def column_names(width: int) -> tuple[str, ...]:
    """The names of a 2-D tensor's columns in a table: ``column_0``, ``column_1``, ...
    (kept for the widths seen last: 0.3 us a call for 4 columns)."""
    return tuple(f"column_{i}" for i in range(width))


def plain_strides(arr: Any) -> Any:
    """``arr`` as a view with the plain C (or Fortran) strides where numpy calls it
    contiguous, else ``arr`` itself. The stride of a length-1 dimension reaches no other
    element, so numpy ignores it (negative, or any value a transpose left), where
    torch.from_numpy and pyarrow's tensor import refuse it: the same memory, shared."""
    flags = arr.flags
    if flags.c_contiguous:
        dims = reversed(range(arr.ndim))
    elif flags.f_contiguous:
        dims = iter(range(arr.ndim))
    else:
        return arr
    strides = [0] * arr.ndim
    step = arr.itemsize
    for i in dims:
        strides[i] = step
        step *= arr.shape[i]
    if arr.strides == tuple(strides):
        return arr
    return np_module().lib.stride_tricks.as_strided(arr, strides=strides)  # (read-only kept)


def objects_to_arrow(values: list[Any], name: str = TENSOR_NAME, strict: bool = False) -> Any:
    """A pyarrow Array of Python objects (what numpy holds for a nested or extension
    column: see :func:`column_to_ndarray`), its type inferred by pyarrow, and then:

    * objects of several kinds that no one Arrow type holds without changing some (an int
      and a str, a str and bytes, a date and a datetime) are refused with what to do
      (:class:`ConversionError`), as are objects pyarrow cannot type (its reason kept);
    * ints beyond int64 (what pyarrow infers, and overflows on) are read as uint64 where
      all the ints at their place fit it, exactly; others are refused with what to do;
    * lists of (key, value) tuples, which pyarrow cannot infer, are read as a map;
    * ``pd.Timestamp`` and ``pd.Timedelta`` values (what a timestamp[ns] or duration[ns]
      becomes) keep their nanoseconds: pyarrow infers microseconds, and cuts them. Where
      the values do not fit nanoseconds (beyond the years 1677-2262), a value with
      nanoseconds is reported lossy (``strict``: refused). (A look at the values, only
      where the type pyarrow inferred holds microseconds.)
    * decimals take 38 digits (76 where a value has more than 38): pyarrow infers the
      precision from the values, Python's Decimal has none, so the type would depend on
      the values.
    """
    pa = arrowkit.pa_module()
    _one_kind(values, name)
    try:
        try:
            arr = _inferred(pa, values)
        except OverflowError:  # an int beyond int64, what pyarrow infers for Python ints
            arr = _wide_integers(pa, values, name)
    except (pa.ArrowTypeError, pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise ConversionError(
            f"{_which(name)} holds Python objects that no one Arrow type holds ({exc}); "
            "convert them to one type first (arr.astype(str) for text, or one column per "
            "type)"
        ) from exc
    dtype = str(arr.type)
    if "timestamp[us" in dtype or "duration[us]" in dtype:
        arr = _nanoseconds_kept(pa, values, arr, name, strict)
    if "decimal" in dtype:
        arr = arr.cast(_retyped(pa, arr.type, _widest_decimal))
    return arr


def _which(name: str) -> str:
    return f"column {name!r}" if name else "the array"


def _inferred(pa: Any, values: list[Any]) -> Any:
    """``pa.array(values)``, or the map :func:`_map_of_pairs` reads where pyarrow cannot
    infer a type (its error is raised where that is no map either)."""
    try:
        return pa.array(values)
    except (pa.ArrowTypeError, pa.ArrowInvalid):
        arr = _map_of_pairs(pa, values)
        if arr is None:
            raise
        return arr


#: What kind of value a Python object is, by its class (see :func:`_kind_of`).
_KINDS: dict[type, str] = {type(None): ""}
#: Kinds of values pyarrow holds in one type without changing a value: Python ints are
#: read as doubles beside floats (pyarrow refuses an int a double cannot hold exactly)
#: and as decimals beside Decimals.
_MERGED_KINDS = (frozenset({"int", "float"}), frozenset({"int", "decimal"}))


def _kind_of(cls: type) -> str:
    """The kind of value of a class of Python objects ("" for None and for classes the
    hub leaves to pyarrow: those it cannot mix up)."""
    import datetime as dt
    import decimal
    import numbers

    np = np_module()
    kinds: tuple[tuple[Any, str], ...] = (
        ((bool, np.bool_), "bool"),
        (numbers.Integral, "int"),  # numpy's integers too
        ((float, np.floating), "float"),
        (decimal.Decimal, "decimal"),
        ((str, np.str_), "str"),
        ((bytes, bytearray, memoryview), "bytes"),
        ((dt.datetime, np.datetime64), "datetime"),  # before date: a datetime is a date
        (dt.date, "date"),
        (dt.time, "time"),
        ((dt.timedelta, np.timedelta64), "timedelta"),
        ((list, tuple, np.ndarray), "list"),
        (dict, "dict"),
    )
    return next((kind for classes, kind in kinds if issubclass(cls, classes)), "")


def _one_kind(values: list[Any], name: str) -> None:
    """Refuse Python objects of several kinds (an int and a str) that pyarrow cannot hold
    in one type, or would hold only by changing some of them (a str beside bytes becomes
    its UTF-8 bytes, a datetime after a date loses its time of day). Ints beside floats
    or Decimals are fine: pyarrow keeps their values (see :data:`_MERGED_KINDS`)."""
    kinds = set()
    for cls in set(map(type, values)):
        kind = _KINDS.get(cls)
        if kind is None:
            kind = _KINDS[cls] = _kind_of(cls)
        if kind:
            kinds.add(kind)
    if len(kinds) < 2 or any(kinds <= merged for merged in _MERGED_KINDS):
        return
    listing = " and ".join(sorted(kinds))
    raise ConversionError(
        f"{_which(name)} holds Python objects of several types ({listing}), which no one "
        "Arrow type holds without changing some of them (pyarrow infers no union); convert "
        "them to one type first (e.g. arr.astype(str)), or split them into one column per "
        "type (or build a pyarrow.UnionArray and convert that)"
    )


_INT64_MIN, _INT64_MAX, _UINT64_MAX = -(2**63), 2**63 - 1, 2**64 - 1


def _wide_integers(pa: Any, values: list[Any], name: str) -> Any:
    """``values`` where some Python int is beyond int64 (pyarrow's inference overflows):
    the type pyarrow infers with those ints left out, each int64 in it (a list's items, a
    field, ...) that holds one read as uint64 when all its values fit (0 to 2**64-1);
    other values are refused with what to do. numpy's integer scalars among them are read
    as the Python ints they hold."""
    values = _python_ints(values)
    typ = _inferred(pa, _ints_in_range(values)).type
    wide = _uint64_where_needed(pa, typ, values, name)
    try:
        return pa.array(values, type=wide)
    except OverflowError:  # pragma: no cover - the values were checked against the type
        raise ConversionError(f"{_which(name)} holds ints beyond 64 bits") from None


def _each_leaf(value: Any, leaf: Callable[[Any], Any]) -> Any:
    """``value`` (nested lists, tuples and dicts) with ``leaf`` applied to everything else."""
    if isinstance(value, list):
        return [_each_leaf(v, leaf) for v in value]
    if isinstance(value, tuple):
        return tuple(_each_leaf(v, leaf) for v in value)
    if isinstance(value, dict):
        return {k: _each_leaf(v, leaf) for k, v in value.items()}
    return leaf(value)


def _python_ints(value: Any) -> Any:
    """``value`` (nested lists, tuples and dicts) with each integer that is no Python int
    (a numpy scalar: ``np.uint64(2**63)``) as the Python int it holds."""
    import numbers  # (only here, on the path of ints beyond int64)

    def leaf(v: Any) -> Any:
        return int(v) if type(v) not in (int, bool) and isinstance(v, numbers.Integral) else v

    return _each_leaf(value, leaf)


def _ints_in_range(value: Any) -> Any:
    """``value`` (nested lists, tuples and dicts) with each int beyond int64 as 0: what
    pyarrow can infer a type from."""
    return _each_leaf(value, _in_range)


def _in_range(value: Any) -> Any:
    return 0 if type(value) is int and not _INT64_MIN <= value <= _INT64_MAX else value


def _uint64_where_needed(pa: Any, typ: Any, values: list[Any], name: str) -> Any:
    """``typ`` (inferred by :func:`_ints_in_range`) with uint64 for each int64 in it whose
    ``values`` (the Python objects at that place, None for nulls) go beyond int64 and fit
    uint64; values that fit neither are refused."""
    t = pa.types
    present = [v for v in values if v is not None]
    if t.is_int64(typ):
        ints = [v for v in present if type(v) is int]
        if not ints or _INT64_MIN <= min(ints) and max(ints) <= _INT64_MAX:
            return typ
        low, high = min(ints), max(ints)
        if 0 <= low and high <= _UINT64_MAX:
            return pa.uint64()
        if high > _UINT64_MAX or low < _INT64_MIN:
            why = f"{high if high > _UINT64_MAX else low} is beyond 64 bits"
        else:
            why = (
                f"{low} needs int64 and {high} uint64 (int64 ends at 2**63-1, uint64 holds "
                "no negative numbers)"
            )
        raise ConversionError(
            f"{_which(name)} holds Python ints that no Arrow integer type holds: {why}; "
            "convert them to decimal.Decimal (decimal128 holds 38 digits), float or str first"
        )
    if t.is_list(typ) or t.is_large_list(typ) or t.is_fixed_size_list(typ):
        items = [x for v in present if isinstance(v, (list, tuple)) for x in v]
        field = typ.value_field.with_type(_uint64_where_needed(pa, typ.value_type, items, name))
        if t.is_fixed_size_list(typ):
            return pa.list_(field, typ.list_size)
        return pa.list_(field) if t.is_list(typ) else pa.large_list(field)
    if t.is_struct(typ):
        rows = [v for v in present if isinstance(v, dict)]
        return pa.struct(
            [
                f.with_type(_uint64_where_needed(pa, f.type, [r.get(f.name) for r in rows], name))
                for f in typ
            ]
        )
    if t.is_map(typ):
        pairs = [p for v in present if isinstance(v, list) for p in v if isinstance(p, tuple)]
        key = _uint64_where_needed(pa, typ.key_type, [p[0] for p in pairs], name)
        item = _uint64_where_needed(pa, typ.item_type, [p[1] for p in pairs if len(p) > 1], name)
        return pa.map_(typ.key_field.with_type(key), typ.item_field.with_type(item))
    return typ


def _map_of_pairs(pa: Any, values: list[Any]) -> Any:
    """``values`` as a map array where each is None or a list of (key, value) tuples (what
    ``to_pylist`` gives for a map), with the key and item types pyarrow infers; None
    where they are not."""
    rows = [v for v in values if v is not None]
    pairs = [p for row in rows if isinstance(row, list) for p in row]
    if not pairs or not all(isinstance(row, list) for row in rows):
        return None
    if not all(isinstance(p, tuple) and len(p) == 2 for p in pairs):
        return None
    try:
        keys = pa.array([k for k, _ in pairs])
        items = pa.array([v for _, v in pairs])
        return pa.array(values, type=pa.map_(keys.type, items.type))
    except (pa.ArrowTypeError, pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def _nanoseconds_kept(pa: Any, values: list[Any], arr: Any, name: str, strict: bool) -> Any:
    """``arr`` (inferred from ``values``) with nanosecond timestamps and durations where
    ``values`` hold pandas' Timestamp or Timedelta objects (see :func:`objects_to_arrow`):
    each timestamp or duration of the type (a field, a list's items, ...) on its own."""
    typ = _in_nanoseconds(pa, arr.type, values)
    if typ == arr.type:
        return arr
    try:
        return pa.array(values, type=typ)
    except (pa.ArrowInvalid, OverflowError):
        pass  # beyond what nanoseconds hold: microseconds, as inferred
    if _pandas_times(values, nanoseconds=True):
        lost = "beyond the years 1677-2262 they are read as microseconds: nanoseconds are cut"
        source = "pd.Timestamp/pd.Timedelta objects with nanoseconds"
        report_losses([Loss(name, source, str(arr.type), lost)], "Arrow", strict)
    return arr


def _in_nanoseconds(pa: Any, typ: Any, values: list[Any]) -> Any:
    """``typ`` with nanoseconds for each timestamp or duration in it whose ``values``
    (the Python objects it was inferred from, None for nulls) hold a pandas object."""
    t = pa.types
    present = [v for v in values if v is not None]
    if t.is_timestamp(typ) or t.is_duration(typ):
        if not _pandas_times(present):
            return typ
        return pa.timestamp("ns", typ.tz) if t.is_timestamp(typ) else pa.duration("ns")
    if t.is_list(typ) or t.is_large_list(typ) or t.is_fixed_size_list(typ):
        items = [x for v in present if isinstance(v, (list, tuple)) for x in v]
        field = typ.value_field.with_type(_in_nanoseconds(pa, typ.value_type, items))
        if t.is_fixed_size_list(typ):
            return pa.list_(field, typ.list_size)
        return pa.list_(field) if t.is_list(typ) else pa.large_list(field)
    if t.is_struct(typ):
        rows = [v for v in present if isinstance(v, dict)]
        return pa.struct(
            [f.with_type(_in_nanoseconds(pa, f.type, [r.get(f.name) for r in rows])) for f in typ]
        )
    if t.is_map(typ):
        pairs = [p for v in present if isinstance(v, list) for p in v if isinstance(p, tuple)]
        key = _in_nanoseconds(pa, typ.key_type, [p[0] for p in pairs])
        item = _in_nanoseconds(pa, typ.item_type, [p[1] for p in pairs if len(p) > 1])
        return pa.map_(typ.key_field.with_type(key), typ.item_field.with_type(item))
    return typ


def _pandas_times(values: Any, nanoseconds: bool = False) -> bool:
    """Whether (nested) Python values hold a pandas Timestamp or Timedelta (one with
    nanoseconds, if ``nanoseconds``)."""
    stack = [values]
    while stack:
        value = stack.pop()
        if isinstance(value, (list, tuple)):
            stack.extend(value)
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif _is_pandas_time(value) and (not nanoseconds or value.nanosecond):
            return True
    return False


def _is_pandas_time(value: Any) -> bool:
    cls = type(value)
    return cls.__name__ in ("Timestamp", "Timedelta") and cls.__module__.startswith("pandas")


def _retyped(pa: Any, typ: Any, leaf: Callable[[Any, Any], Any]) -> Any:
    """``typ`` with ``leaf(pa, t)`` in place of each type ``t`` that holds no other (for
    the types pyarrow infers from Python objects: lists, structs, maps)."""
    t = pa.types
    if t.is_list(typ) or t.is_large_list(typ):
        field = typ.value_field.with_type(_retyped(pa, typ.value_type, leaf))
        return pa.list_(field) if t.is_list(typ) else pa.large_list(field)
    if t.is_fixed_size_list(typ):
        field = typ.value_field.with_type(_retyped(pa, typ.value_type, leaf))
        return pa.list_(field, typ.list_size)
    if t.is_struct(typ):
        return pa.struct([f.with_type(_retyped(pa, f.type, leaf)) for f in typ])
    if t.is_map(typ):
        key = typ.key_field.with_type(_retyped(pa, typ.key_type, leaf))
        item = typ.item_field.with_type(_retyped(pa, typ.item_type, leaf))
        return pa.map_(key, item, typ.keys_sorted)
    return leaf(pa, typ)


def _widest_decimal(pa: Any, typ: Any) -> Any:
    if pa.types.is_decimal128(typ):
        return pa.decimal128(38, typ.scale)
    return pa.decimal256(76, typ.scale) if pa.types.is_decimal256(typ) else typ
