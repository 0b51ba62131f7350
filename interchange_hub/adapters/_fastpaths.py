"""Direct edges between two libraries where one call beats the protocol route.

numpy <-> torch through ``torch.from_numpy`` / ``Tensor.numpy`` share memory just as
DLPack does, at a third of the cost per call. pandas <-> numpy through
``DataFrame.to_numpy`` / ``pd.DataFrame(array, copy=False)`` share numeric blocks
without the detour through Arrow (which copies 2-D data twice). polars -> numpy through
``DataFrame.to_numpy`` / ``Series.to_numpy`` gives a view where polars does (a Series,
or a frame whose columns lie side by side) and polars' own column-major copy otherwise. They take only plain
numeric CPU data; everything else takes the protocol routes.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from interchange_hub._bridge import pandas_native, polars_native, tensors
from interchange_hub._bridge.cow import share_on_write
from interchange_hub._c.ndarray import ndarray_address
from interchange_hub._core.deps import installed, require
from interchange_hub._core.dtypes import (
    TENSOR_DTYPES,
    common_dtype,
    is_numeric,
    itemsize,
    value_width,
)
from interchange_hub._core.info import (
    NO_FLAGS,
    Column,
    Copy,
    DataInfo,
    Estimate,
    Flag,
    Kind,
    Loss,
    RouteChanged,
    Unroutable,
    nan_scans,
    report_losses,
)
from interchange_hub._core.marks import hookimpl
from interchange_hub.adapter import Context, Edge, with_context

if TYPE_CHECKING:
    from collections.abc import Callable

FASTPATH = "fastpath"
_NEEDS = ("numpy", "torch")
# The CPU tensor libraries a table's numpy view may lead on to: their results carry no
# names or index, so the detour through numpy loses nothing the Arrow route would keep
# (jax is a plugin's; a name here only lets the route through numpy be considered).
_TENSOR_TARGETS = frozenset({"numpy", "torch", "jax"})


def _plain(ctx: Context) -> None:
    """Refuse what the one-call route cannot share as it is."""
    info = ctx.info
    if info.kind != Kind.TENSOR or not info.device.is_cpu:
        raise Unroutable("CPU tensors only")
    if ctx.copy:
        raise Unroutable("copy=True takes the general route")
    (col,) = info.columns
    if info.layout in ("negative", tensors.ODD_STRIDES) or col.nulls > 0 or col.flags:
        raise Unroutable("negative or odd strides, masks and lazy views take DLPack")
    if not (is_numeric(col.dtype) or col.dtype == "bool" or col.dtype.startswith("complex")):
        raise Unroutable(f"{col.dtype} takes the general route")


def _from_numpy_estimate(ctx: Context) -> Estimate:
    dtype = ctx.info.columns[0].dtype if ctx.info.columns else ""
    if dtype.startswith(("timestamp[", "duration[")) and "," not in dtype:
        return _epoch_estimate(ctx, dtype)
    _plain(ctx)
    why = "torch.from_numpy shares the array's memory"
    return Estimate(ctx.info, why=why, shared_readonly=ctx.info.readonly)


def _epoch_estimate(ctx: Context, dtype: str) -> Estimate:
    """numpy datetime64/timedelta64 -> torch: its int64 ticks, shared (torch has no time
    type); NaT is numpy's int64 minimum, and stays that value."""
    info = ctx.info
    if (
        info.kind != Kind.TENSOR
        or not info.device.is_cpu
        or ctx.copy
        or info.layout in ("negative", tensors.ODD_STRIDES)
    ):
        raise Unroutable("CPU datetime64 arrays, without copy=True, of plain strides")
    unit = dtype[dtype.index("[") + 1 : -1]
    col = info.columns[0]
    what = "since the epoch" if dtype.startswith("timestamp") else "of duration"
    loss = Loss(col.name, dtype, "int64", f"stored as int64 {unit} {what}; NaT, if any, is -2**63")
    out = info.but(columns=(replace(col, dtype="int64"),))
    why = "torch.from_numpy shares the int64 ticks of the array"
    return Estimate(out, (), (loss,), why, shared_readonly=info.readonly)


def _from_numpy(value: Any, ctx: Context) -> Any:
    torch = require("torch")
    if value.dtype.kind in "mM":  # datetime64/timedelta64: the int64 ticks
        value = value.view("int64")
    # (a length-1 dimension's negative stride, which numpy ignores and torch refuses)
    value = tensors.plain_strides(value)
    return tensors.torch_from_numpy(torch, value)


def _from_numpy_bind(ctx: Context) -> Callable[[Any], Any]:
    """The run for ``ctx``: for arrays that are not datetimes (the route key holds the
    dtype), torch.from_numpy behind the read-only check alone (2.7 -> 2.0 us a
    conversion on 2 cores; from_numpy itself 1.9)."""
    dtype = ctx.info.columns[0].dtype if ctx.info.columns else ""
    if dtype.startswith(("timestamp[", "duration[")):
        return with_context(_from_numpy, ctx)
    torch = require("torch")
    from_numpy = torch.from_numpy

    def run(value: Any) -> Any:
        try:
            if tensors.torch_warned or value.flags.writeable:
                return from_numpy(value)
            return tensors.torch_from_numpy(torch, value)
        except ValueError:  # (checked only on failure: the hot path pays nothing)
            # a length-1 dimension's negative stride: numpy calls the array contiguous
            # (the plan shares it), torch.from_numpy refuses it
            fixed = tensors.plain_strides(value)
            if fixed is value:
                raise
            return run(fixed)

    return run


def _to_numpy_estimate(ctx: Context) -> Estimate:
    _plain(ctx)
    if ctx.info.columns[0].dtype == "bfloat16":
        raise Unroutable("numpy has no bfloat16")
    return Estimate(
        ctx.info, why="Tensor.numpy shares the tensor's memory (detached if it needs grad)"
    )


def _to_numpy(value: Any, ctx: Context) -> Any:
    return _tensor_numpy(value)


def _to_numpy_bind(ctx: Context) -> Callable[[Any], Any]:
    return _tensor_numpy  # (no context to read: one call less)


def _tensor_numpy(value: Any) -> Any:
    return value.detach().numpy() if value.requires_grad else value.numpy()


def _numeric(dtype: str) -> bool:
    """What numpy and pandas hold alike in one array: numbers, booleans, complex numbers
    (which Arrow has no type for: pandas <-> numpy is their only way)."""
    return is_numeric(dtype) or dtype == "bool" or dtype.startswith("complex")


def _pandas_to_numpy_estimate(ctx: Context) -> Estimate:
    info = ctx.info
    if ctx.target not in _TENSOR_TARGETS:
        raise Unroutable("only for tensor results: a detour would drop names and index")
    if (
        info.kind not in (Kind.TABLE, Kind.COLUMN)
        or ctx.copy
        or ctx.kind not in (None, Kind.TENSOR)
    ):
        raise Unroutable("plain pandas data to a tensor, without copy=True")
    cols = info.data_columns
    dtypes = {c.dtype for c in cols}
    if len(dtypes) > 1:
        return _interleaved_estimate(ctx)
    if not cols or not _numeric(cols[0].dtype):
        raise Unroutable("to_numpy shares only columns of one numeric dtype")
    if any(
        # pandas' own NaN stay NaN; Arrow nulls (or unknown ones) take the Arrow route,
        # which reports them; so do Arrow-backed columns of several chunks or of bits,
        # which to_numpy copies (Flag.BIT_PACKED)
        c.flags - {Flag.NAN_IS_NULL, Flag.ONE_BLOCK}
        or c.nulls < 0
        or (c.nulls > 0 and Flag.NAN_IS_NULL not in c.flags)
        or c.chunks != 1
        for c in cols
    ):
        raise Unroutable("masked, chunked or bit-packed columns take the Arrow route")
    rows = max(info.rows, 0)
    nbytes = sum(c.nbytes for c in cols)
    column = Column("", cols[0].dtype, nbytes, 0)  # NaN are values in a tensor, not nulls
    if info.kind == Kind.COLUMN:
        out = DataInfo(Kind.TENSOR, (column,), rows, (rows,), "C", readonly=True)
        return Estimate(out, why="Series.to_numpy returns a view", shared_readonly=True)
    shape = (rows, len(cols))
    if all(Flag.ONE_BLOCK in c.flags for c in cols):
        # (a block that runs backwards: a view of negative strides, see _pandas._backwards)
        layout = "negative" if info.layout == "negative" else "F" if len(cols) > 1 else "C"
        out = DataInfo(Kind.TENSOR, (column,), rows, shape, layout, readonly=True)
        why = "one block: DataFrame.to_numpy returns a column-major view" + _index_note(info)
        return Estimate(out, why=why, shared_readonly=True)
    # pandas fills a (columns, rows) array block by block and returns its transpose.
    out = DataInfo(Kind.TENSOR, (column,), rows, shape, "F" if len(cols) > 1 else "C")
    reason = "pandas interleaves columns from several blocks into one array"
    copies = tuple(Copy(c.name, c.nbytes, reason) for c in cols)
    return Estimate(out, copies, why=reason + _index_note(info), copies_all=True)


def _index_note(info: DataInfo) -> str:
    """What a plan says of a frame's index that a tensor leaves out, as the Arrow route's
    plan says it."""
    return "; its index is left out" if len(info.data_columns) != len(info.columns) else ""


def _interleaved_estimate(ctx: Context) -> Estimate:
    """Columns of several numeric dtypes (``pd.DataFrame({"x": floats, "n": ints})``):
    ``DataFrame.to_numpy`` interleaves them into one array of numpy's common dtype, the
    dtype the Arrow route casts to too (:func:`common_dtype`), in one copy instead of a
    cast per column and a gather. 64-bit integers into float64 are checked when run
    (:func:`_pandas_to_numpy_bind`), as the Arrow route's cast checks them. Booleans
    among numbers (pandas makes objects of them) and ``dtype=`` take the Arrow route."""
    info = ctx.info
    cols = info.data_columns
    if not ctx.at_source:  # a detour through pandas would not save a copy
        raise Unroutable("the user's pandas frame only")
    if ctx.dtype is not None or not all(is_numeric(c.dtype) for c in cols):
        raise Unroutable("to_numpy interleaves numbers of several dtypes, without dtype=")
    to = common_dtype({c.dtype for c in cols})
    if to is None:
        raise Unroutable("no common dtype")
    if any(
        c.flags - {Flag.NAN_IS_NULL}
        or c.nulls < 0
        or (c.nulls > 0 and Flag.NAN_IS_NULL not in c.flags)  # nulls: the Arrow route warns
        for c in cols
    ):
        raise Unroutable("masked, nullable or unknown columns take the Arrow route")
    rows = max(info.rows, 0)
    nbytes = rows * len(cols) * itemsize(to)
    out = DataInfo(Kind.TENSOR, (Column("", to, nbytes, 0),), rows, (rows, len(cols)), "F")
    why = f"pandas interleaves the columns into one {to} array (numpy's common dtype)"
    why += _index_note(info)
    copies = tuple(
        Copy(
            c.name,
            c.nbytes,
            why
            if c.dtype == to
            else f"{why}: cast {c.dtype} -> {to} (values it cannot hold are warned when run)",
        )
        for c in cols
    )
    return Estimate(out, copies, why=why, copies_all=True)


def _pandas_to_numpy(value: Any, ctx: Context) -> Any:
    return _pandas_to_numpy_bind(ctx)(value)


def _pandas_to_numpy_bind(ctx: Context) -> Callable[[Any], Any]:
    """``DataFrame.to_numpy``; where 64-bit integers are interleaved into float64, their
    range is read first (a scan of those columns) and values beyond 2**53, which float64
    cannot hold, are reported as the Arrow route's checked cast reports them."""
    cols = ctx.info.data_columns
    to = common_dtype({c.dtype for c in cols}) if len({c.dtype for c in cols}) > 1 else None
    wide = [
        (i, c) for i, c in enumerate(cols) if to == "float64" and c.dtype in ("int64", "uint64")
    ]
    if to is None:
        if ctx.info.kind == Kind.TABLE and not all(Flag.ONE_BLOCK in c.flags for c in cols):
            # one dtype in several blocks: asked of pandas, as for several dtypes below
            # (Arrow-backed columns, int64[pyarrow], interleave into objects otherwise)
            one = tensors.np_module().dtype(cols[0].dtype)  # (parsed once, not per call)
            return lambda value: value.to_numpy(dtype=one)
        return _to_numpy_call
    strict, target = ctx.strict, ctx.target or "numpy"
    if not wide:
        # The dtype asked of pandas: Arrow-backed columns (int64[pyarrow]) interleave into
        # objects otherwise; numpy-backed ones give it anyway.
        return lambda value: value.to_numpy(dtype=to)

    np = tensors.np_module()

    def checked(value: Any) -> Any:
        # a view of the block's row (iloc builds a Series: 20x slower)
        column = getattr(value, "_get_column_array", None)
        ranges = []
        for i, col in wide:
            values = column(i) if column is not None else value.iloc[:, i].to_numpy()
            if not isinstance(values, np.ndarray):
                # an extension array (int64[pyarrow]), which has no min() before pandas 3.1
                values = values.to_numpy()
            if len(values):
                ranges.append((col, int(values.min()), int(values.max())))
        report_losses(_beyond_float64(ranges), target, strict)
        return value.to_numpy(dtype=to)

    return checked


def _to_numpy_call(value: Any) -> Any:
    return value.to_numpy()


def _polars_to_numpy_estimate(ctx: Context) -> Estimate:
    info = ctx.info
    if ctx.target not in _TENSOR_TARGETS:
        raise Unroutable("only for tensor results: a detour would drop the names")
    if info.kind not in (Kind.TABLE, Kind.COLUMN) or ctx.kind not in (None, Kind.TENSOR):
        raise Unroutable("a polars DataFrame or Series to a tensor")
    cols = info.columns
    if not info.known or not cols or not is_numeric(cols[0].dtype):
        raise Unroutable("to_numpy shares only numeric data")
    if cols[0].dtype not in TENSOR_DTYPES:  # (polars' Int128: numpy has no 128-bit integer)
        raise Unroutable(f"numpy holds no {cols[0].dtype}")
    if any(c.nulls > 0 for c in cols):
        return _polars_nulls_estimate(ctx)
    if any(
        c.dtype != cols[0].dtype or c.nulls != 0 or c.chunks != 1 or c.flags - {Flag.ADJACENT}
        for c in cols
    ):
        raise Unroutable("one numeric dtype without nulls, one chunk per column")
    rows = max(info.rows, 0)
    nbytes = sum(c.nbytes for c in cols)
    column = Column("", cols[0].dtype, nbytes, 0)
    if info.kind == Kind.COLUMN:
        shape: tuple[int, ...] = (rows,)
        view = True
        why = "Series.to_numpy returns a view of the column"
    else:
        shape = (rows, len(cols))
        view = len(cols) == 1 or all(Flag.ADJACENT in c.flags for c in cols)
        why = (
            "the columns lie side by side: DataFrame.to_numpy returns one column-major view"
            if view
            else "polars copies the columns into one column-major array"
        )
    if view and not ctx.copy:
        out = DataInfo(
            Kind.TENSOR, (column,), rows, shape, "F" if len(shape) > 1 else "C", readonly=True
        )
        return Estimate(out, why=why, shared_readonly=True)
    reason = why if not view else "copy=True: to_numpy(writable=True) copies the view"
    out = DataInfo(Kind.TENSOR, (column,), rows, shape, "F" if len(shape) > 1 else "C")
    copies = tuple(Copy(c.name, c.nbytes, reason) for c in cols)
    return Estimate(out, copies, why=reason, copies_all=True)


# Integer dtypes whose values polars' to_numpy and the Arrow route both turn into
# float64 beside a float64 column (polars makes float32 of small integers with nulls alone)
_INTS_TO_FLOAT64 = frozenset(
    {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}
)


_POLARS_NULLS_WHY = (
    "the columns are copied into one float64 array, the nulls as NaN (polars' to_numpy; a "
    "large frame's Arrow export, written in place a column per thread)"
)


def _polars_nulls_estimate(ctx: Context) -> Estimate:
    """Numeric columns with nulls, into float64 with the nulls as NaN, as the Arrow route
    makes them, by polars' own ``to_numpy`` (one copy, no export): the same losses, one
    per column with nulls, and 64-bit integers without nulls checked when run (beyond
    2**53, as the Arrow route's checked cast). Only where both give float64: a float64
    column beside integers, or int64 alone (polars makes float32 of small integers with
    nulls, and keeps float32)."""
    info = ctx.info
    if not ctx.at_source:  # Arrow data with nulls would detour through polars to save
        # nothing (its bitmaps' bytes made the detour look cheaper to the router)
        raise Unroutable("the user's polars data only")
    cols = info.columns
    dtypes = {c.dtype for c in cols}
    if ctx.dtype is not None or not (
        ("float64" in dtypes and dtypes <= _INTS_TO_FLOAT64 | {"float64"}) or dtypes == {"int64"}
    ):
        raise Unroutable("nulls into float64 only, without dtype=")
    if any(c.flags - {Flag.ADJACENT, Flag.BITMAP_REBUILT_ON_EXPORT, Flag.SLICED} for c in cols):
        raise Unroutable("plain numeric columns only")
    losses = []
    for c in cols:
        if c.nulls > 0:
            lost = "nulls become NaN"
            if c.dtype != "float64":
                lost += "; integers above 2**53 lose precision"
            losses.append(Loss(c.name, f"{c.dtype} with nulls", "float64", lost))
    if dtypes == {"int64"}:  # the others follow the columns with nulls, as the Arrow route says
        lost = "promoted to share a dtype with columns that have nulls; "
        losses += [
            Loss(c.name, c.dtype, "float64", lost + "integers above 2**53 lose precision")
            for c in cols
            if c.nulls == 0
        ]
    rows = max(info.rows, 0)
    shape: tuple[int, ...] = (rows,) if info.kind == Kind.COLUMN else (rows, len(cols))
    column = Column("", "float64", rows * len(cols) * 8, 0)
    out = DataInfo(Kind.TENSOR, (column,), rows, shape, "F" if len(shape) > 1 else "C")
    why = _POLARS_NULLS_WHY
    copies = tuple(
        Copy(
            c.name,
            c.nbytes,
            why
            if c.nulls > 0 or c.dtype == "float64"
            else f"{why}: cast {c.dtype} -> float64 (values it cannot hold are warned when run)",
        )
        for c in cols
    )
    return Estimate(out, copies, tuple(losses), why=why, copies_all=True)


def _polars_to_numpy(value: Any, ctx: Context) -> Any:
    return _polars_to_numpy_bind(ctx)(value)


def _polars_to_numpy_bind(ctx: Context) -> Callable[[Any], Any]:
    """The call the plan made: a view (refused, and planned again, should this frame's
    columns not lie side by side), a copy (planned again should polars give a view), or
    ``writable=True`` for copy=True. Columns with nulls: ``to_numpy``, 64-bit integers
    without nulls range-checked first."""
    if any(c.nulls > 0 for c in ctx.info.columns):
        return _polars_nulls_bind(ctx)
    if ctx.copy:
        return lambda value: value.to_numpy(writable=True)
    if ctx.info.kind == Kind.COLUMN:
        return _series_to_numpy
    if all(Flag.ADJACENT in c.flags for c in ctx.info.columns) or len(ctx.info.columns) == 1:

        def view(value: Any) -> Any:
            try:
                try:  # polars' native frame: its call without the Python wrappers around
                    # it (a decorator of removed parameters, the structured and masked
                    # tests), 0.34 us against 0.94
                    return value._df.to_numpy("fortran", writable=False, allow_copy=False)
                except (AttributeError, TypeError):  # polars changed its private handle
                    return value.to_numpy(allow_copy=False)
            except Exception as exc:
                raise RouteChanged("the columns are no longer side by side") from exc

        return view

    empty, address = require("numpy").empty, ndarray_address
    cols = ctx.info.columns
    try:
        gather_rows = _GATHER_BYTES // (itemsize(cols[0].dtype) * len(cols))
    except ValueError:  # (a numeric dtype DLPack has no size for: polars' own call)
        gather_rows = -1

    def copy(value: Any) -> Any:
        if value.height <= gather_rows:
            # A small frame is gathered here, column by column, into the column-major
            # array polars would make: 7 us for 1,000 x 4 doubles, polars' own 14-25 us.
            # Above that polars' threads win (1e5 x 4: 63 us against 80).
            views = _column_arrays(value)  # (one chunk, no nulls)
            first = views[0]
            base, step = address(first), first.nbytes
            if address(views[1]) == base + step and all(
                address(v) == base + j * step for j, v in enumerate(views)
            ):
                raise RouteChanged("the columns lie side by side: to_numpy gives a view")
            out = empty((len(first), len(views)), dtype=first.dtype, order="F")
            for j, column in enumerate(views):
                out[:, j] = column
            return out
        out = value.to_numpy()
        if not out.flags.writeable:  # a view after all: the plan said copy
            raise RouteChanged("the columns lie side by side: to_numpy gave a view")
        return out

    return copy


def _column_arrays(frame: Any) -> list[Any]:
    """A polars frame's columns as numpy arrays, through its native frame and Series
    (1,000 x 4 doubles: 2.9 us against 9.4 through ``get_columns`` and ``to_numpy``); the
    public calls where polars changed its private handles."""
    try:
        return [s.to_numpy(writable=False, allow_copy=True) for s in frame._df.get_columns()]
    except (AttributeError, TypeError):
        return [c.to_numpy() for c in frame.get_columns()]


def _series_to_numpy(value: Any) -> Any:
    """``Series.to_numpy()`` through polars' native Series (what the method calls, without
    its wrappers: 0.3 us less), the public call where polars changed its private handle."""
    try:
        return value._s.to_numpy(writable=False, allow_copy=True)
    except (AttributeError, TypeError):
        return value.to_numpy()


def _polars_nulls_bind(ctx: Context) -> Callable[[Any], Any]:
    info = ctx.info
    floats = any(c.dtype == "float64" for c in info.columns)  # else the plan said promoted
    wide = [
        (i, c)
        for i, c in enumerate(info.columns)
        if floats and c.nulls == 0 and c.dtype in ("int64", "uint64")
    ]
    convert = _frame_with_nulls if info.kind == Kind.TABLE else _to_numpy_call
    if not wide:
        return convert
    strict, table = ctx.strict, info.kind == Kind.TABLE
    target = ctx.target or "numpy"

    def checked(value: Any) -> Any:
        ranges = []
        for i, col in wide:
            series = value.to_series(i) if table else value
            low, high = series.min(), series.max()
            if high is not None:
                ranges.append((col, low, high))
        report_losses(_beyond_float64(ranges), target, strict)
        return convert(value)

    return checked


def _frame_with_nulls(value: Any) -> Any:
    """A polars frame of numbers with nulls as one column-major float64 array, the nulls
    NaN: polars' own ``to_numpy`` below ``tensors.FILL_FROM_ROWS`` rows; above, the
    columns of its Arrow export (no copy) written into place, a column per thread
    (``tensors.filled_columns``), the same array. An int64 and a float64 column, a tenth
    null: 1,000,000 rows 3.2 ms against polars' 6.9 ms; 10,000,000 rows 37 against 50.
    Without pyarrow, or with a column of several chunks, polars' own call."""
    if value.height < tensors.FILL_FROM_ROWS or not installed("pyarrow"):
        return value.to_numpy()
    table = require("pyarrow").table(value)
    if any(c.num_chunks != 1 for c in table.columns):
        return value.to_numpy()
    return tensors.filled_columns([c.chunk(0) for c in table.columns], table.num_rows)


def _beyond_float64(ranges: list[tuple[Column, int, int]]) -> list[Loss]:
    """The losses of 64-bit integer columns cast to float64, from each one's (low, high):
    values beyond +-2**53 lose precision (the Arrow route's checked cast reports them)."""
    why = "the cast changes values: integers beyond +-2**53 lose precision"
    return [
        Loss(col.name, col.dtype, "float64", why)
        for col, low, high in ranges
        if high > _FLOAT64_EXACT or low < -_FLOAT64_EXACT
    ]


_FLOAT64_EXACT = 1 << 53  # float64 holds every integer up to this


#: Up to this many bytes a polars frame is gathered into its tensor by the hub, above by
#: polars (measured on 2 cores, 4 doubles a row: 3,000 rows 9 us against 15, 10,000 rows
#: 14 against 16, from 15,000 rows polars' threads win or tie; on a slower machine, with
#: the columns read from polars' native frame, 1,000 rows 7.5 us against 13.6, 4,000
#: rows 10.0 against 16.8, 100,000 rows 115 against 123).
_GATHER_BYTES = 128 * 1024


def _numpy_to_pandas_estimate(ctx: Context) -> Estimate:
    info = ctx.info
    if ctx.target != "pandas":
        raise Unroutable("only for pandas results: pandas would keep strided views")
    if info.kind != Kind.TENSOR or not info.device.is_cpu:
        raise Unroutable("plain CPU tensors")
    (col,) = info.columns
    # datetime64/timedelta64 of pandas' units, 1-D: pd.Series keeps NaT as NaT and shares
    # the array, where the Arrow route makes nulls of NaT, which to_pandas fills (a copy)
    temporal = len(info.shape) == 1 and col.dtype in _PANDAS_TIMES
    if (
        not (_numeric(col.dtype) or temporal)
        or col.nulls > 0
        or col.flags
        or len(info.shape) not in (1, 2)
    ):
        raise Unroutable("numeric 1-D or 2-D arrays without masks")
    if info.layout not in ("C", "F"):
        raise Unroutable("only contiguous arrays: pandas would keep a strided view")
    want = ctx.kind or (Kind.COLUMN if len(info.shape) == 1 else Kind.TABLE)
    if (want == Kind.COLUMN) != (len(info.shape) == 1):
        raise Unroutable("a 1-D array is a Series, a 2-D array a DataFrame")
    rows = info.shape[0]
    if want == Kind.COLUMN:
        out = DataInfo(Kind.COLUMN, (Column("", col.dtype, col.nbytes, 0),), rows)
    else:
        width = info.shape[1]
        per = col.nbytes // width if width else 0
        # pandas keeps the array; unless it is column-major, each column is a strided view.
        flags = NO_FLAGS if info.layout == "F" or width == 1 else frozenset({Flag.STRIDED})
        cols = tuple(Column(f"column_{i}", col.dtype, per, 0, flags=flags) for i in range(width))
        out = DataInfo(Kind.TABLE, cols, rows)
    if ctx.copy and not ctx.fresh:
        why = "copy=True: pandas wraps a copy of the array"
        copies = tuple(Copy(c.name, c.nbytes, tensors.COPY_TRUE) for c in out.columns)
        return Estimate(out, copies, why=why, copies_all=True)
    why = "pandas wraps the array without copying (copy=False)"
    return Estimate(out, why=why, shared_readonly=info.readonly)


_PANDAS_TIMES = frozenset(
    f"{kind}[{unit}]" for kind in ("timestamp", "duration") for unit in ("s", "ms", "us", "ns")
)


def _numpy_to_pandas_bind(ctx: Context) -> Callable[[Any], Any]:
    """:func:`_numpy_to_pandas` with the column names built once, as a pandas Index
    (pandas takes an Index as it is; a list of names costs it about 30 us per call)."""
    pd = require("pandas")
    ndarray = require("numpy").ndarray
    if len(ctx.info.shape) == 1:
        make = pandas_native.numpy_series(ctx.info.columns[0].dtype)  # pd.Series' own end
    else:
        names = pd.Index([f"column_{i}" for i in range(ctx.info.shape[1])])
        make = pandas_native.numpy_frame(ctx.info.columns[0].dtype, names)  # its own end
    if ctx.fresh:  # memory this conversion made: the caller holds no other view of it
        return lambda value: share_on_write(make(value))
    if ctx.copy:  # memory of its own: writable, nothing to pin
        return lambda value: make(value.copy(order="K"))
    return lambda value: share_on_write(make(_read_only(value, ndarray)))


def _read_only(array: Any, ndarray: Any) -> Any:
    """A read-only view of the caller's ``array``, for pandas to wrap: pandas' own writes
    copy first (copy-on-write, :func:`share_on_write`), and a write through
    ``Series.array`` or ``DataFrame.values``, which copy-on-write does not see, raises
    instead of changing the caller's array (pandas 3's ``pd.Series(array)`` copies it)."""
    view = array.view() if type(array) is ndarray else _data_of(array)
    view.setflags(write=False)  # (0.32 us with the view; flags.writeable = False: 0.51)
    return view


def _data_of(array: Any) -> Any:
    """A view of an ndarray subclass's data: a masked array's (planned only where nothing
    is masked: pandas copies a MaskedArray, which the plan called shared), a matrix's."""
    return require("numpy").asarray(array).view()


def _numpy_to_pandas(value: Any, ctx: Context) -> Any:
    return _numpy_to_pandas_bind(ctx)(value)


def _pandas_to_polars_estimate(ctx: Context) -> Estimate:
    """pandas -> polars in one call, ``pl.from_pandas``, for frames and Series of numeric
    and bool numpy columns and pyarrow-backed strings, with a default index. It shares
    what the Arrow route shares (the numeric numpy buffers; NaN becomes null there too,
    with a new validity bitmap) and copies what it copies (booleans are bit-packed,
    strings rebuilt as views), without building Arrow tables. Datetimes and durations
    are left to the Arrow route: ``pl.from_pandas`` copies numpy-made ones (polars 2.1,
    checked by address) where ``pl.from_arrow(pa.Table.from_pandas(df))`` shares them."""
    info = ctx.info
    if ctx.target != "polars" or ctx.copy:
        raise Unroutable("pandas data to polars, without copy=True")
    if info.kind not in (Kind.TABLE, Kind.COLUMN) or not info.columns:
        raise Unroutable("pandas DataFrames and Series only")
    if ctx.kind not in (None, info.kind):
        raise Unroutable("a DataFrame becomes a DataFrame, a Series a Series")
    names = [c.name for c in info.columns]
    if len(set(names)) < len(names):  # (1 and "1" in pandas: both "1")
        repeated = sorted({n for n in names if names.count(n) > 1})
        raise Unroutable(
            f"polars needs unique column names, and {', '.join(map(repr, repeated))} repeat "
            "(as strings); rename the columns first"
        )
    copies = []
    # (strings only, from _VIEWS_FROM rows: pyarrow casts them to views, _pandas_to_polars_bind)
    views = info.rows >= _VIEWS_FROM and all(c.dtype == "large_string" for c in info.columns)
    for col in info.columns:
        sliced_nulls = Flag.SLICED in col.flags and col.nulls > 0  # (Arrow-backed: a bitmap)
        if col.flags - _FROM_PANDAS_FLAGS or col.chunks != 1 or sliced_nulls:
            # (an Arrow-backed column of several chunks: pl.from_pandas joins them, a copy,
            # where the Arrow route keeps them; Arrow's booleans: Flag.BIT_PACKED)
            raise Unroutable("plain numpy columns, Arrow strings and a default index only")
        dtype = col.dtype
        if dtype == "bool":
            copies.append(Copy(col.name, col.nbytes, "numpy booleans are bit-packed"))
        elif dtype == "large_string" and views:
            reason = (
                "polars stores strings as string_view; pyarrow builds the views (16 bytes a "
                "row) over the same characters, which stay shared (read-only Arrow memory)"
            )
            copies.append(Copy(col.name, 16 * info.rows, reason))
        elif dtype == "large_string":
            reason = "polars stores strings as string_view; large_string is rebuilt"
            copies.append(Copy(col.name, col.nbytes, reason))
        elif not is_numeric(dtype):
            raise Unroutable(f"{dtype} is left to the Arrow route")
        elif 0 < info.alignment < value_width(dtype):  # (a Series over numpy's odd memory)
            reason = "polars copies values that are not aligned to their width"
            copies.append(Copy(col.name, col.nbytes, reason))
    why = "pl.from_pandas shares the numeric numpy columns"
    if info.kind == Kind.TABLE and 0 <= info.rows < _OWN_COLUMNS_BELOW:
        why += f" (under {_OWN_COLUMNS_BELOW:,} rows: each column through pa.array, the same)"
    return Estimate(info, tuple(copies), why=why, scans=nan_scans(info, "pl.from_pandas"))


# (NAT_IS_NULL: the dtype check then sends times to the Arrow route, saying so)
_FROM_PANDAS_FLAGS = frozenset({Flag.NAN_IS_NULL, Flag.NAT_IS_NULL, Flag.ONE_BLOCK, Flag.SLICED})

# Below this many rows a frame's columns go to polars as pyarrow arrays, each as
# pa.array(..., from_pandas=True) makes it (NaN as null, numbers shared, booleans packed,
# strings as they are), in one pl.DataFrame: the frame pl.from_pandas makes (the same
# schema, values, nulls and shared buffers, checked per dtype in the tests), without its
# per-frame cost. Measured on 2 cores, one process (us, pl.from_pandas against this):
# 4 float64 columns 1,000 rows 156 / 48, 3,000 902 / 65, 10,000 998 / 121, 100,000
# 1,159 / 966, 300,000 1,401 / 2,500; 2 float64 columns with NaN 10,000 93 / 70,
# 30,000 106 / 155; 2 string columns 10,000 378 / 261, 30,000 408 / 541.
_OWN_COLUMNS_BELOW = 10_000


# From this many rows a frame (or Series) of pyarrow-backed strings only goes to polars
# as string_view arrays pyarrow casts (over the same characters), which polars takes as
# they are, where pl.from_pandas has polars rebuild them with the characters copied (the
# polars adapter's VIEWS_FROM, measured there). 2 string columns, us, pl.from_pandas
# against this: 20,000 rows 318 / 106, 1e6 7,270 / 3,316, 1e7 69,660 / 29,315.
_VIEWS_FROM = 16_384


def _pandas_to_polars_bind(ctx: Context) -> Callable[[Any], Any]:
    """``pl.from_pandas``; for a DataFrame of under :data:`_OWN_COLUMNS_BELOW` rows,
    where pyarrow is installed, its columns through ``pa.array`` into one
    ``pl.DataFrame`` (the same frame, 2-8x faster); for pyarrow-backed strings only, from
    :data:`_VIEWS_FROM` rows, their Arrow arrays cast to views (2-3x faster)."""
    pl = require("polars")
    from_pandas = pl.from_pandas
    if not installed("pyarrow"):
        return from_pandas  # type: ignore[no-any-return]
    pa = require("pyarrow")
    array, from_arrays = pa.array, pa.Table.from_arrays
    frame = polars_native.arrow_makers()[0]  # pl.DataFrame's own end for such a table
    cols = ctx.info.columns
    names = [c.name for c in cols]  # (str(name), as polars names them)
    width = len(names)
    view = pa.string_view()
    strings = bool(cols) and all(c.dtype == "large_string" for c in cols)
    if ctx.info.kind != Kind.TABLE:
        if not strings:
            return from_pandas  # type: ignore[no-any-return]
        series = polars_native.arrow_makers()[1]  # pl.Series' own end for one array

        def column(value: Any) -> Any:
            if len(value) < _VIEWS_FROM:
                return from_pandas(value)
            name = value.name
            return series("" if name is None else str(name), array(value.array).cast(view))

        return column

    def run(value: Any) -> Any:
        get = getattr(value, "_get_column_array", None)
        if get is None:
            return from_pandas(value)
        rows = len(value)
        if strings and rows >= _VIEWS_FROM:
            return frame(from_arrays([array(get(i)).cast(view) for i in range(width)], names))
        if rows >= _OWN_COLUMNS_BELOW:
            return from_pandas(value)
        return frame(from_arrays([array(get(i), from_pandas=True) for i in range(width)], names))

    return run


def _pandas_to_polars(value: Any, ctx: Context) -> Any:
    return _pandas_to_polars_bind(ctx)(value)


def _numpy_to_polars_estimate(ctx: Context) -> Estimate:
    """numpy -> polars in one call: a 1-D array is ``pl.Series(array)``, a 2-D one
    ``pl.from_numpy(array, orient="row")`` (columns ``column_0``, ``column_1``, ..., as
    the Arrow route names them). polars shares contiguous numeric arrays (a 2-D one
    column-major); it gathers the columns of a row-major matrix (a copy), as the Arrow
    route does. NaN stays a value, as through ``pa.array``."""
    info = ctx.info
    if ctx.target != "polars" or ctx.copy:
        raise Unroutable("numpy arrays to polars, without copy=True")
    if ctx.fresh:  # a tensor made on the way from a table: a detour that drops its names
        raise Unroutable("only for arrays the conversion starts from (or shares)")
    if info.kind != Kind.TENSOR or not info.device.is_cpu or len(info.shape) not in (1, 2):
        raise Unroutable("1-D and 2-D CPU arrays only")
    (col,) = info.columns
    if col.dtype not in _POLARS_NUMBERS or col.nulls > 0 or col.flags:
        raise Unroutable("plain integer and float arrays only")
    if info.layout not in ("C", "F"):
        raise Unroutable("contiguous arrays only")
    one_d = len(info.shape) == 1
    want = Kind.COLUMN if one_d else Kind.TABLE
    if ctx.kind not in (None, want):
        raise Unroutable("a 1-D array is a Series, a 2-D array a DataFrame")
    rows = info.shape[0]
    if 0 < info.alignment < value_width(col.dtype):  # (the route key holds numpy's ALIGNED flag)
        raise Unroutable("polars copies values not aligned to their width: the Arrow route")
    if one_d:
        out = DataInfo(Kind.COLUMN, (Column("", col.dtype, col.nbytes, 0),), rows)
        return Estimate(out, why="pl.Series shares the array's memory")
    width = info.shape[1]
    if not width:  # (pl.from_numpy gives a frame of no rows: the Arrow route keeps them)
        raise Unroutable("an array of no columns takes the Arrow route")
    per = col.nbytes // width
    cols = tuple(Column(f"column_{i}", col.dtype, per, 0) for i in range(width))
    out = DataInfo(Kind.TABLE, cols, rows)
    if info.layout == "F" or width == 1:
        return Estimate(out, why="pl.from_numpy shares the columns of a column-major array")
    reason = (
        "a C-ordered 2-D tensor stores rows together; it is copied column-major, whose "
        "columns polars shares (a Fortran-ordered array is zero-copy)"
    )
    copies = tuple(Copy(c.name, c.nbytes, reason) for c in cols)
    why = "copied column-major (np.array(order='F')), then pl.from_numpy shares the columns"
    return Estimate(out, copies, why=why, copies_all=True)


_POLARS_NUMBERS = frozenset(
    ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64")
)


def _numpy_to_polars_bind(ctx: Context) -> Callable[[Any], Any]:
    """``pl.Series`` of a 1-D array; ``pl.from_numpy`` of a 2-D one, which shares the
    columns of a column-major array and gathers those of a row-major one a column at a
    time (a strided pass over the whole array for each): the row-major array is copied
    column-major first, in one pass (``np.array(order="F")``), whose columns polars then
    shares. 4 float64 columns of 1,000,000 rows, interleaved runs: 8.3 ms against 8.9;
    of 10,000 rows 296 us against 400. Each through polars' own constructors
    (:mod:`~interchange_hub._bridge.polars_native`): 27 -> 7.5 us for 4 x 1,000."""
    info = ctx.info
    dtype = info.columns[0].dtype
    if len(info.shape) == 1:
        series = polars_native.numpy_series(dtype)  # pl.Series' own end: 0.6 us, not 4
        return lambda value: series("", value)
    frame = polars_native.numpy_frame(dtype, info.shape[1])  # pl.from_numpy's own end
    if info.layout == "F" or info.shape[1] == 1:
        return frame
    array = require("numpy").array
    return lambda value: frame(array(value, order="F"))


def _numpy_to_polars(value: Any, ctx: Context) -> Any:
    return _numpy_to_polars_bind(ctx)(value)


@hookimpl
def register_edges(register: Any) -> None:
    _register_edges(lambda edge: register(replace(edge, keyed_losses=True)))


def _register_edges(register: Any) -> None:
    """The edges, whose losses depend on dtypes and which columns hold nulls alone."""
    register(
        Edge(
            "numpy",
            "polars",
            FASTPATH,
            "pl.Series/pl.from_numpy",
            _numpy_to_polars_estimate,
            _numpy_to_polars,
            ("numpy", "polars"),
            bind=_numpy_to_polars_bind,
        )
    )
    register(
        Edge(
            "pandas",
            "polars",
            FASTPATH,
            "pl.from_pandas",
            _pandas_to_polars_estimate,
            _pandas_to_polars,
            ("pandas", "polars"),
            bind=_pandas_to_polars_bind,
        )
    )
    register(
        Edge(
            "numpy",
            "torch",
            FASTPATH,
            "torch.from_numpy",
            _from_numpy_estimate,
            _from_numpy,
            _NEEDS,
            bind=_from_numpy_bind,
        )
    )
    register(
        Edge(
            "torch",
            "numpy",
            FASTPATH,
            "Tensor.numpy",
            _to_numpy_estimate,
            _to_numpy,
            _NEEDS,
            bind=_to_numpy_bind,
        )
    )
    # Not pandas: its deep copy keeps sharing the Arrow buffers of Arrow-backed columns.
    for library, run in (("numpy", _numpy_copy), ("torch", _torch_copy)):
        register(
            Edge(
                library,
                library,
                FASTPATH,
                "deep copy",
                _same_library_copy_estimate,
                run,
                (library,),
            )
        )
    pandas_numpy = ("pandas", "numpy")
    register(
        Edge(
            "pandas",
            "numpy",
            FASTPATH,
            "DataFrame.to_numpy",
            _pandas_to_numpy_estimate,
            _pandas_to_numpy,
            pandas_numpy,
            bind=_pandas_to_numpy_bind,
        )
    )
    register(
        Edge(
            "polars",
            "numpy",
            FASTPATH,
            "DataFrame.to_numpy",
            _polars_to_numpy_estimate,
            _polars_to_numpy,
            ("polars", "numpy"),
            bind=_polars_to_numpy_bind,
        )
    )
    register(
        Edge(
            "numpy",
            "pandas",
            FASTPATH,
            "pd.DataFrame(copy=False)",
            _numpy_to_pandas_estimate,
            _numpy_to_pandas,
            pandas_numpy,
            bind=_numpy_to_pandas_bind,
        )
    )


def _same_library_copy_estimate(ctx: Context) -> Estimate:
    if not ctx.copy:
        raise Unroutable("a same-library copy serves copy=True only")
    info = ctx.info
    if info.kind == Kind.STREAM or not info.known or not info.device.is_cpu:
        raise Unroutable("in-memory CPU data only")
    if ctx.target_type is not None or ctx.kind not in (None, info.kind):
        raise Unroutable("the same type only")
    copies = tuple(
        Copy(c.name, c.nbytes, "copy=True: a deep copy in the library itself") for c in info.columns
    )
    out = info.but(readonly=False)
    return Estimate(out, copies, why="copy=True: the library's own deep copy", copies_all=True)


def _numpy_copy(value: Any, ctx: Context) -> Any:
    # keeps every dtype (str, object, ...), and a masked array's mask (np.array of one
    # gives the values under the mask, unmasked)
    return require("numpy").array(value, copy=True, subok=True)


def _torch_copy(value: Any, ctx: Context) -> Any:
    value = value.detach()
    try:
        return value.clone()
    except NotImplementedError:
        # torch has no copy kernel for its sub-byte dtypes (uint1-7, int1-7: a byte each,
        # "copy_kernel not implemented for 'UInt4'"): the bytes are copied as uint8
        if value.element_size() != 1 or value.is_quantized:
            raise
        torch = require("torch")
        return value.view(torch.uint8).clone().view(value.dtype)
