"""arrow -> xarray (a Dataset from a table, a DataArray from a column), dlpack -> xarray (a
DataArray from a tensor) and xarray -> xarray (between DataArray and Dataset, copy=True).

Arrow columns become numpy arrays with ``Array.to_numpy``: zero-copy for fixed-width
numbers and times without nulls. What numpy holds otherwise than Arrow is a planned copy:
strings and bytes become object arrays of ``str``/``bytes``, booleans one byte each,
dates datetime64, decimals, lists and structs Python objects; where the layout changes
the type, the variable's encoding keeps the Arrow type (``ARROW_TYPE``) and the way back
restores it. Where a value cannot be kept, the hub warns: nulls of numbers become NaN
(integers float64), a time zone is dropped, nanoseconds of times are cut. Each rule is
decided once, by :func:`conversion`, for the plan and for the run alike.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any, NamedTuple

from interchange_hub import arrowkit
from interchange_hub.adapter import (
    Column,
    Context,
    Copy,
    DataInfo,
    Estimate,
    Flag,
    Kind,
    Loss,
    Unroutable,
    is_float,
    is_integer,
    is_string,
    report_losses,
    tz_of,
    unit_of,
)
from interchange_hub.errors import NoRouteError

from interchange_hub_xarray import _describe as d

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

_COPY_TRUE = "copy=True: new memory"
_ONLY_HERE = "leads to xarray, and this conversion ends elsewhere"


class Conversion(NamedTuple):
    """How one Arrow column becomes a numpy array."""

    mode: str  # "zero", "nan_nulls" (drop the bitmap: NaN lies under it), "fill",
    #            "objects" (Python values, one per row), "none" (all null)
    dtype: str  # the numpy array's dtype, in the hub's names
    copy: str  # why it is copied ("" when shared)
    lost: str  # what is lost ("" when nothing)
    keep: bool = False  # the Arrow type goes into the variable's encoding (ARROW_TYPE)


def _inner(dtype: str) -> tuple[str, str]:
    """(the type a dictionary or run-end encoded column decodes to, why decoding copies)."""
    if dtype.startswith("dictionary<values="):
        value = dtype.removeprefix("dictionary<values=").rsplit(", indices=", 1)[0]
        return arrowkit.dtype_name(value), "dictionary-encoded: decoded"
    if dtype.startswith("run_end_encoded<"):
        value = dtype.rsplit("values: ", 1)[-1].removesuffix(">")
        return arrowkit.dtype_name(value), "run-end encoded: decoded"
    return dtype, ""


def conversion(dtype: str, nulls: int, flags: frozenset[str]) -> Conversion:
    """The conversion of an Arrow column of ``dtype`` with ``nulls`` (-1: unknown)."""
    # (It depends on whether nulls are unknown, none or some, not on their count: kept
    # per (dtype, that, flags), 0.2 us a column where working it out takes 1-2 us, on
    # every conversion of every column.)
    return _conversion(dtype, (nulls > 0) - (nulls < 0), flags)


@lru_cache(maxsize=1024)
def _conversion(dtype: str, nulls: int, flags: frozenset[str]) -> Conversion:
    inner, decoded = _inner(dtype)
    conv = _plain(inner, nulls, flags)
    if decoded:
        copy = f"{decoded}; {conv.copy}" if conv.copy else decoded
        mode = "fill" if conv.mode in ("zero", "nan_nulls") else conv.mode
        return conv._replace(mode=mode, copy=copy)
    return conv


def _plain(dtype: str, nulls: int, flags: frozenset[str]) -> Conversion:
    unknown = "nulls are unknown until the stream is read" if nulls < 0 else ""
    if is_integer(dtype) or is_float(dtype):
        if nulls == 0:
            return Conversion("zero", dtype, "", "")
        if nulls > 0 and is_float(dtype) and Flag.NAN_IS_NULL in flags:
            return Conversion("nan_nulls", dtype, "", "")
        if nulls < 0:
            return Conversion("fill", dtype, unknown, "")
        lost = "nulls become NaN"
        if is_integer(dtype):
            lost += "; integers above 2**53 lose precision"
            return Conversion("fill", "float64", "nulls become NaN in float64", lost)
        return Conversion("fill", dtype, "nulls are filled with NaN", lost)
    if dtype == "bool":
        packed = "Arrow booleans are bit-packed; numpy uses a byte each"
        if nulls > 0:
            why = "a bool array cannot hold nulls: an object array of True/False/None"
            return Conversion("objects", "object", f"{why}{_KEPT}", "", keep=True)
        return Conversion("fill", "bool", packed, "")
    if dtype.startswith(("timestamp[", "duration[")):
        unit = unit_of(dtype)
        out = f"{'timestamp' if dtype.startswith('timestamp') else 'duration'}[{unit}]"
        zone = tz_of(dtype)
        lost = f"time zone {zone} is dropped (values stay UTC instants)" if zone else ""
        if nulls == 0:
            # xarray copies datetime64/timedelta64 values when it builds a Variable (its
            # time handling casts them, even to their own precision): measured, no view
            why = "xarray copies datetime64/timedelta64 values when it builds a variable"
            return Conversion("fill", out, why, lost)
        return Conversion("fill", out, unknown or "nulls become NaT", lost)
    if dtype in ("date32[day]", "date64[ms]"):
        unit = "s" if dtype.startswith("date32") else "ms"
        why = f"{dtype} becomes datetime64[{unit}] (xarray holds dates as datetimes){_KEPT}"
        return Conversion("fill", f"timestamp[{unit}]", why, "", keep=True)
    if is_string(dtype):
        why = f"strings become Python str objects (an object array); nulls become None{_KEPT}"
        return Conversion("fill", "object", why, "", keep=True)
    if "binary" in dtype and "<" not in dtype:
        why = f"bytes become Python bytes objects (an object array); nulls become None{_KEPT}"
        return Conversion("fill", "object", why, "", keep=True)
    if dtype == "null":
        return Conversion("none", "object", "an all-null column: an object array of None", "")
    lost = ""
    if "time64[ns]" in dtype:
        lost = "Python's datetime.time holds microseconds: nanoseconds are cut"
    why = f"{dtype} values become Python objects (an object array){_KEPT}"
    return Conversion("objects", "object", why, lost, keep=True)


# The encoding key that keeps a column's Arrow type where xarray holds it otherwise (dates
# as datetime64, decimals, lists, structs, ... as objects): the way back restores it.
ARROW_TYPE = d.ARROW_TYPE
_KEPT = "; its Arrow type is kept in the variable's encoding"


def _objects(arr: Any) -> Any:
    """An object array of the Python values of ``arr`` (assigned one by one, so that
    lists of equal length stay objects instead of becoming a second dimension)."""
    out = d.np_module().empty(len(arr), dtype=object)
    for i, value in enumerate(arr.to_pylist()):
        out[i] = value
    return out


def _to_numpy(data: Any, col: Column, copy: bool) -> tuple[Any, list[Loss], Any]:
    """A pyarrow Array or ChunkedArray as a numpy array, converted as :func:`conversion`
    says; the losses of a stream's column, known only now; the Arrow type to keep (or
    None)."""
    pa = arrowkit.pa_module()
    np = d.np_module()
    chunks = data.chunks if isinstance(data, pa.ChunkedArray) else [data]
    fresh = len(chunks) > 1 or pa.types.is_dictionary(data.type)
    fresh = fresh or pa.types.is_run_end_encoded(data.type)
    if len(chunks) == 1:
        arr = chunks[0]
    elif chunks:
        arr = pa.concat_arrays(chunks)
    else:
        arr = pa.nulls(0, data.type)  # (pa.array([], type) refuses some dictionaries)
    if pa.types.is_dictionary(arr.type):
        arr = arrowkit.decode_dictionary(arr)  # (views too, also nested in the values)
    elif pa.types.is_run_end_encoded(arr.type):
        arr = arrowkit.decode_runs(arr)  # (pyarrow 26 decodes no string views)
    conv = conversion(arrowkit.dtype_name(arr.type), arr.null_count, col.flags)
    late = []
    if conv.lost and conv.lost != conversion(col.dtype, col.nulls, col.flags).lost:
        # What the plan could not see, reported now: a stream's nulls show only as it is
        # read, and a described type may be a guess (pandas' categoricals).
        source = arrowkit.dtype_name(arr.type)
        if arr.null_count and conv.lost.startswith("nulls"):
            source += f" with {arr.null_count} nulls"
        late.append(Loss(col.name, source, conv.dtype, conv.lost))
    if conv.mode == "zero":
        out = arr.to_numpy(zero_copy_only=True)
    elif conv.mode == "nan_nulls":  # the values under the nulls are NaN already
        bare = pa.Array.from_buffers(
            arr.type, len(arr), [None, arr.buffers()[1]], null_count=0, offset=arr.offset
        )
        out = bare.to_numpy(zero_copy_only=True)
    elif conv.mode == "none":
        out = np.full(len(arr), None, dtype=object)
    elif conv.mode == "objects":
        out = _objects(arr)
    else:
        out = arr.to_numpy(zero_copy_only=False)
        if conv.dtype == "object" and out.dtype != object:
            out = out.astype(object)
    if copy and not fresh and out.dtype != object and _may_share(conv, arr):
        out = np.array(out, copy=True)
    elif copy and not out.flags.writeable:
        # new memory (chunks joined, a dictionary decoded), but Arrow's, which numpy views
        # read-only: copy=True promises a result that can be written
        out = np.array(out, copy=True)
    return out, late, _kept(pa, arr.type) if conv.keep else None


# From this many values in all, the numeric columns whose nulls become NaN (each a copy
# in C, outside the GIL) are converted side by side, as pyarrow's own to_pandas does:
# two float64/int64 columns with nulls, 1e6 rows: 2.36 ms one after the other, 1.52
# side by side on 2 cores; 1e7: 23.4 against 14.3. Below it the threads' start costs
# more than they save (3e5 rows: 0.70 against 0.75 ms).
PARALLEL_FROM = 1 << 20


def _converted(
    pairs: Sequence[tuple[Any, Column]], copy: bool
) -> Iterator[tuple[Any, list[Loss], Any]]:
    """:func:`_to_numpy` of each (column, description), in order: the numeric columns
    whose nulls become NaN (a new array each) side by side in threads (at most
    ``pa.cpu_count()``, pyarrow's own setting, and none where it is 1) when they hold
    ``PARALLEL_FROM`` values or more, before the rest; the rest one at a time, as the
    caller takes them (each intermediate array freed before the next is made)."""
    pa = arrowkit.pa_module()
    if not pairs or len(pairs[0][0]) * len(pairs) < PARALLEL_FROM:  # (a table's columns
        # are all as long: a small one pays no selection of the columns to thread)
        yield from (_to_numpy(data, col, copy) for data, col in pairs)
        return
    heavy = [
        i
        for i, (data, col) in enumerate(pairs)
        if data.null_count
        and (pa.types.is_integer(data.type) or pa.types.is_floating(data.type))
        and conversion(arrowkit.dtype_name(data.type), data.null_count, col.flags).mode == "fill"
    ]
    workers = min(len(heavy), pa.cpu_count())
    done: dict[int, tuple[Any, list[Loss], Any]] = {}
    if workers >= 2 and sum(len(pairs[i][0]) for i in heavy) >= PARALLEL_FROM:
        from concurrent.futures import ThreadPoolExecutor

        # A pool for the call: none is left behind to break in a forked worker (Dask, Ray).
        with ThreadPoolExecutor(workers, thread_name_prefix="interchange_hub_xarray") as pool:
            done = dict(
                zip(heavy, pool.map(lambda i: _to_numpy(*pairs[i], copy), heavy), strict=True)
            )
    for i, (data, col) in enumerate(pairs):
        yield done.pop(i) if i in done else _to_numpy(data, col, copy)


def _kept(pa: Any, typ: Any) -> Any:
    """The Arrow type the way back restores: ``typ`` itself (views, extension types, fixed
    widths and all; :func:`buildable` is the fallback where pyarrow cannot build it from
    the Python values), None where it holds a union (left to inference). A nested type
    holding list views or runs is restored as :func:`buildable` makes it, lists and
    values: pyarrow builds no runs from values, so one run field would otherwise decide
    whether the list views beside it came back (the type mapping's rule)."""
    plain = buildable(pa, typ)
    if plain is None:
        return None
    nested = pa.types.is_struct(typ) or pa.types.is_list(typ) or pa.types.is_large_list(typ)
    return plain if nested and not arrowkit.has_plain_layout(typ) else typ


def buildable(pa: Any, typ: Any) -> Any:
    """``typ`` as pyarrow can build it from Python values again (the fallback the way back
    restores): dictionaries as their values, views and run-end encoding as plain types,
    extension types as their storage; None where it holds a union (left to inference)."""
    t = pa.types
    if t.is_dictionary(typ):
        return buildable(pa, typ.value_type)
    if t.is_run_end_encoded(typ):
        return buildable(pa, typ.value_type)
    if isinstance(typ, pa.BaseExtensionType):
        return buildable(pa, typ.storage_type)
    if typ == pa.string_view():
        return pa.string()
    if typ == pa.binary_view():
        return pa.binary()
    if t.is_union(typ):
        return None
    if t.is_struct(typ):
        fields = [_field(pa, f) for f in typ]
        return None if any(f is None for f in fields) else pa.struct(fields)
    if t.is_map(typ):
        key, item = _field(pa, typ.key_field), _field(pa, typ.item_field)
        return None if key is None or item is None else pa.map_(key, item, typ.keys_sorted)
    if t.is_list(typ) or t.is_list_view(typ) or t.is_fixed_size_list(typ):
        value = _field(pa, typ.value_field)
        size = typ.list_size if t.is_fixed_size_list(typ) else -1
        return None if value is None else pa.list_(value, size)
    if t.is_large_list(typ) or t.is_large_list_view(typ):
        value = _field(pa, typ.value_field)
        return None if value is None else pa.large_list(value)
    return typ


def _field(pa: Any, field: Any) -> Any:
    typ = buildable(pa, field.type)
    return None if typ is None else field.with_type(typ)


def _may_share(conv: Conversion, arr: Any) -> bool:
    """Whether ``Array.to_numpy`` may have handed out the Arrow buffer itself."""
    if conv.mode in ("zero", "nan_nulls"):
        return True
    return conv.mode == "fill" and arr.null_count == 0 and conv.dtype != "bool"


# -- what a conversion into xarray makes ----------------------------------------------------
def _target(ctx: Context, info: DataInfo) -> str:
    """``DataArray`` or ``Dataset``: what ``to=`` asks for, else what the data is."""
    cls = ctx.target_type
    if cls is not None:
        return cls.__name__
    if ctx.kind == Kind.TENSOR:
        return "DataArray"
    if ctx.kind in (Kind.TABLE, Kind.STREAM):
        return "Dataset"
    return "DataArray" if info.kind in (Kind.COLUMN, Kind.TENSOR) else "Dataset"


def _dimension(info: DataInfo) -> tuple[str, str]:
    """(the dimension of a Dataset made from ``info``, the index column that becomes its
    coordinate, or "")."""
    index = [c.name for c in info.columns if Flag.INDEX in c.flags]
    taken = {c.name for c in info.columns}
    if len(index) == 1 and not index[0].startswith("__index_level_"):
        return index[0], index[0]
    dim = d.DEFAULT_DIM
    n = 0
    while dim in taken:
        dim = f"{d.DEFAULT_DIM}_{n}"
        n += 1
    return dim, index[0] if len(index) == 1 else ""


def arrow_estimate(ctx: Context) -> Estimate:
    info = ctx.info
    if ctx.target != d.NAME:
        raise Unroutable(_ONLY_HERE)
    if info.kind == Kind.TENSOR:
        raise Unroutable("xarray takes tensors through DLPack")
    names = [c.name for c in info.columns]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise Unroutable(
            f"the table repeats column names ({', '.join(map(repr, repeated))}), which a "
            "Dataset cannot hold; rename them first"
        )
    if info.kind == Kind.TABLE and info.known and not info.columns and info.rows > 0:
        raise Unroutable(
            f"a Dataset holds a dimension's length only in its variables, and this table "
            f"has {info.rows:,} rows and no column; add a column first"
        )
    want = _target(ctx, info)
    if want == "DataArray" and info.kind != Kind.COLUMN and len(info.data_columns) != 1:
        raise Unroutable(
            f"a table of {len(info.data_columns)} columns is an xr.Dataset (to='xarray' or "
            "to=xr.Dataset), not one DataArray; select one column first"
        )
    copy = bool(ctx.copy and not ctx.fresh)
    dim, coord = _dimension(info) if info.kind != Kind.COLUMN else (d.DEFAULT_DIM, "")
    copies: list[Copy] = []
    losses: list[Loss] = []
    columns: list[Column] = []
    shared = False
    full = 0
    for col in info.columns:
        if "union<" in col.dtype:
            raise Unroutable(
                f"column {col.name!r} ({col.dtype}): xarray holds no union type (its values "
                "would be Python objects of several types, which no Arrow type takes back); "
                "split the column into one column per member type first"
            )
        conv = conversion(col.dtype, col.nulls, col.flags)
        reasons = []
        if col.chunks > 1:
            reasons.append(f"{col.chunks} chunks are concatenated into one array")
        elif col.chunks < 0:
            reasons.append("read from a stream: its batches are concatenated into one array")
        if conv.copy:
            reasons.append(conv.copy)
        if coord and col.name == coord:
            reasons.append(f"dimension coordinate {dim!r}: xarray builds a pandas Index of it")
        if conv.lost:
            nulls = col.nulls > 0 and conv.lost.startswith("nulls")
            # (no count: the route keys fix which columns hold nulls, not how many, and
            # the route is kept with its warnings: Edge.keyed_losses)
            source = f"{col.dtype} with nulls" if nulls else col.dtype
            losses.append(Loss(col.name, source, conv.dtype, conv.lost))
        if reasons:
            copies.append(Copy(col.name, col.nbytes, "; ".join(reasons)))
        elif copy:
            copies.append(Copy(col.name, col.nbytes, _COPY_TRUE))
        # A stream of one batch is not copied by reading it: not certainly new memory.
        new = copy or (bool(reasons) and (col.chunks >= 0 or conv.dtype in ("object", "bool")))
        full += new
        shared = shared or not new
        flags = {Flag.INDEX} if Flag.INDEX in col.flags else set()
        columns.append(Column(col.name, conv.dtype, col.nbytes, 0, 1, frozenset(flags)))
    if want == "DataArray":
        data = [c for c in columns if Flag.INDEX not in c.flags]
        first = data[0]
        columns = [Column(*_fields(first), flags=first.flags | {d.DATAARRAY})] + [
            c for c in columns if c is not first
        ]
    kind = Kind.COLUMN if len(columns) == 1 and want == "DataArray" else Kind.TABLE
    out = DataInfo(kind, tuple(columns), rows=info.rows, shape=(max(info.rows, 0),))
    if want == "DataArray":
        why = f"a 1-D DataArray along {dim!r}, over the column's memory where it can"
    else:
        why = f"a Dataset: one variable per column along dimension {dim!r}"
    if info.kind == Kind.STREAM:
        why += "; the stream is read once"
    every = bool(columns) and full == len(columns)
    return Estimate(
        out, tuple(copies), tuple(losses), why=why, copies_all=every, shared_readonly=shared
    )


def _fields(c: Column) -> tuple[str, str, int, int, int]:
    return (c.name, c.dtype, c.nbytes, c.nulls, c.chunks)


def from_arrow(value: Any, ctx: Context) -> Any:
    xr = d.xr_module()
    info = ctx.info
    want = _target(ctx, info)
    copy = bool(ctx.copy and not ctx.fresh)
    if info.kind == Kind.COLUMN:
        col = info.columns[0]
        values = _polars_view(value, col)
        kept: Any = None
        if values is not None:  # (what the Arrow read below gives such a column)
            if copy:
                values = d.np_module().array(values, copy=True)
        else:
            data = arrowkit.read(value, Kind.COLUMN, info)
            _report(arrowkit.nat_collisions([(col.name, data)]), ctx)  # before anything
            values, lost, kept = _to_numpy(data, col, copy)
            _report(lost, ctx)
        var = variable_of(xr, (d.DEFAULT_DIM,), values, kept)
        if want == "Dataset":
            return dataset_of(xr, {col.name or d.VALUES: var})
        da = data_array_of(xr, var, col.name or None)
        da.encoding = _encoding(kept)  # DataArray(variable) keeps its data, not its encoding
        return da
    table = arrowkit.read(value, Kind.TABLE, info)
    # INT64_MIN in a timestamp or duration is NaT in datetime64: it would become missing.
    _report(arrowkit.nat_collisions(zip(table.column_names, table.columns, strict=True)), ctx)
    known = {c.name: c for c in info.columns}
    dim, coord = _dimension(info)
    data_vars: dict[str, Any] = {}
    coords: dict[str, Any] = {}
    late: list[Loss] = []
    pairs = [
        (chunked, known.get(name) or Column(name, arrowkit.dtype_name(chunked.type), -1, -1, -1))
        for name, chunked in zip(table.column_names, table.columns, strict=True)
    ]
    converted = _converted(pairs, copy)
    for name, (values, lost, kept), (_, col) in zip(
        table.column_names, converted, pairs, strict=True
    ):
        late += lost
        var = variable_of(xr, (dim,), values, kept)
        if coord and name == coord:  # (a column named "" is no coordinate)
            coords[dim] = var
        elif Flag.INDEX in col.flags:
            coords[name] = var
        else:
            data_vars[name] = var
    _report(late, ctx)
    if want == "DataArray":
        ((name, var),) = data_vars.items()
        da = xr.DataArray(var, coords=coords, name=name)
        da.encoding = dict(var.encoding)
        return da
    if not data_vars and not coords and table.num_rows:  # (a stream's: seen once read)
        raise NoRouteError(
            f"a Dataset holds a dimension's length only in its variables, and this table "
            f"has {table.num_rows:,} rows and no column; add a column first"
        )
    return xr.Dataset(data_vars, coords=coords) if coords else dataset_of(xr, data_vars)


# The dtypes of the Arrow columns whose values numpy views as they are (no nulls): the
# same numbers, read straight from a polars Series (:func:`_polars_view`).
_VIEWED = frozenset(f"{s}int{b}" for s in ("", "u") for b in (8, 16, 32, 64)) | {
    "float32",
    "float64",
}


def _polars_view(value: Any, col: Column) -> Any:
    """polars' own read-only numpy view of a Series (``value``) of one chunk without
    nulls, of integers or floats: the very array the Arrow read of its export gives
    (``to_numpy(zero_copy_only=True)`` of the same buffer, no Arrow type kept, nothing
    lost), without reading the Series as pyarrow (polars -> xarray, 1,000 float64: the
    kept run 14.6 us against 34.6; the conversion 17.7 against 35.1 for
    ``xr.DataArray(s.to_numpy())``). None for anything else (another type, a dtype not
    planned, nulls, several chunks, polars without that handle): the Arrow read."""
    if col.dtype not in _VIEWED or type(value).__module__ != "polars.series.series":
        return None
    try:
        native = value._s
        if native.null_count():
            return None
        view = native.to_numpy_view()
    except Exception:  # noqa: BLE001 - polars says no (chunks, dtype) or changed its handle
        return None
    if view is None or view.dtype != d.np_module().dtype(col.dtype):
        return None
    return view


def variable_of(xr: Any, dims: tuple[str, ...], values: Any, kept: Any) -> Any:
    """``xr.Variable(dims, values)`` of a column made by :func:`_to_numpy`, the Arrow type
    ``kept`` in its encoding. An object array (strings, bytes, Python values, None for
    nulls) is taken as it is, through the constructor's ``fastpath``: xarray reads any
    other object array through pandas, ``pd.Series`` and back, to find datetimes in it
    (none here: times become datetime64 before). With pandas 3 that makes a str column
    Arrow strings and Python objects again, every value twice (pyarrow -> xarray, two
    string columns of 1e6 rows: 298.9 ms against 106.1 ms taken as they are, peak extra
    memory about twice), and its nulls NaN, not the None the plan says."""
    if values.dtype == object:
        return xr.Variable(dims, values, encoding=_encoding(kept), fastpath=True)
    return xr.Variable(dims, values, encoding=_encoding(kept))


def dataset_of(xr: Any, variables: dict[str, Any]) -> Any:
    """``xr.Dataset(variables)`` for variables made for it that hold no coordinate (no
    variable is named as a dimension): built by ``Dataset._construct_direct``, the
    constructor xarray's own operations use, which skips the merge and alignment that
    leave such variables as they are (1.2 µs against 68-75 µs for four columns, where the
    direct call ``xr.Dataset({name: (dim, values)})`` pays them). The result is
    ``identical`` to the constructor's (a test checks it). Anything else, or an xarray
    without that constructor, goes through ``xr.Dataset``."""
    construct = getattr(xr.Dataset, "_construct_direct", None)
    if construct is None or not variables:
        return xr.Dataset(variables)
    dims: dict[str, int] = {}
    for var in variables.values():
        if not variables.keys().isdisjoint(var.dims):
            return xr.Dataset(variables)  # a dimension coordinate: it needs an index
        for dim, size in zip(var.dims, var.shape, strict=True):
            if dims.setdefault(dim, size) != size:
                return xr.Dataset(variables)  # (which says what does not fit)
    return construct(variables, set(), dims, attrs={})


def data_array_of(xr: Any, var: Any, name: str | None) -> Any:
    """``xr.DataArray(var, name=name)`` for a variable without coordinates, through the
    constructor's ``fastpath`` (1.3 µs against 11 µs): the same array, coordinates and
    indexes (none) as the public path gives it."""
    return xr.DataArray(var, {}, name=name, indexes={}, fastpath=True)


def _encoding(kept: Any) -> dict[str, Any]:
    return {ARROW_TYPE: kept} if kept is not None else {}


def _report(losses: Sequence[Loss], ctx: Context) -> None:
    report_losses(losses, d.NAME, ctx.strict)


# -- dlpack -> xarray ------------------------------------------------------------------------
def dims_of(ndim: int) -> tuple[str, ...]:
    return tuple(f"dim_{i}" for i in range(ndim))


def dlpack_estimate(ctx: Context) -> Estimate:
    info = ctx.info
    if ctx.target != d.NAME:
        raise Unroutable(_ONLY_HERE)
    if info.kind != Kind.TENSOR:
        raise Unroutable("only tensors travel through DLPack")
    (col,) = info.columns
    if col.dtype in ("bfloat16",) or col.dtype.startswith("unknown"):
        raise Unroutable(f"numpy cannot hold this tensor ({col.dtype}); cast it first")
    copy = bool(ctx.copy and not ctx.fresh)
    want = _target(ctx, info)
    ndim = len(info.shape)
    rows = 1
    for n in info.shape:
        rows *= n
    flags = frozenset({d.DATAARRAY}) if want == "DataArray" else frozenset()
    name = "" if want == "DataArray" else d.VALUES
    values = Column(name, col.dtype, col.nbytes, 0, 1, flags)
    labels = (
        tuple(
            Column(dim, "int64", rows * 8, 0, 1, frozenset({Flag.INDEX, d.POSITIONS}))
            for dim in dims_of(ndim)
        )
        if ndim >= 2
        else ()
    )
    kind = Kind.COLUMN if want == "DataArray" and not labels else Kind.TABLE
    out = DataInfo(
        kind,
        (values, *labels),
        rows=rows,
        shape=info.shape,
        layout=info.layout,
        readonly=info.readonly and not copy,
    )
    what = "a DataArray" if want == "DataArray" else "a Dataset of one variable"
    dims = ", ".join(dims_of(ndim)) or "no dims"
    if copy:
        reason = _COPY_TRUE
        return Estimate(
            out.but(layout="C"), (Copy("", col.nbytes, reason),), why=reason, copies_all=True
        )
    why = f"{what} ({dims}) over the tensor's memory (np.from_dlpack)"
    return Estimate(out, why=why, shared_readonly=info.readonly)


def from_dlpack(value: Any, ctx: Context) -> Any:
    xr, np = d.xr_module(), d.np_module()
    # np.asarray: a masked array's mask is dropped (numpy's DLPack export warns of it).
    arr = np.asarray(value) if isinstance(value, np.ndarray) else np.from_dlpack(value)
    if ctx.copy and not ctx.fresh:
        arr = np.array(arr, copy=True)
    dims = dims_of(arr.ndim)
    if _target(ctx, ctx.info) == "Dataset":
        return dataset_of(xr, {d.VALUES: xr.Variable(dims, arr)})
    return data_array_of(xr, xr.Variable(dims, arr), None)


# -- xarray -> xarray ------------------------------------------------------------------------
def loop_estimate(ctx: Context) -> Estimate:
    info = ctx.info
    if ctx.target != d.NAME:
        raise Unroutable("converts between xarray objects only")
    source = "DataArray" if d.is_dataarray(info) else "Dataset"
    want = ctx.target_type.__name__ if ctx.target_type is not None else source
    copy = bool(ctx.copy and not ctx.fresh)
    if want == source and not copy:
        raise Unroutable(f"already a {source}")
    steps = []
    out = info
    if want == "DataArray" and source == "Dataset":
        data = info.data_columns
        if len(data) != 1:
            from interchange_hub_xarray._export import many_variables

            raise Unroutable(many_variables(data, "DataArray"))
        steps.append(f"ds[{data[0].name!r}]")
        first = data[0]
        cols = [Column(*_fields(first), flags=first.flags | {d.DATAARRAY})]
        out = info.but(columns=(*cols, *(c for c in info.columns if c is not first)))
    elif want == "Dataset" and source == "DataArray":
        steps.append("DataArray.to_dataset()")
        out = info.but(
            kind=Kind.TABLE,
            columns=tuple(Column(*_fields(c), flags=c.flags - {d.DATAARRAY}) for c in info.columns),
        )
    copies: tuple[Copy, ...] = ()
    if copy:
        steps.append("copy(deep=True)")
        copies = tuple(Copy(c.name, c.nbytes, _COPY_TRUE) for c in info.data_columns)
        out = out.but(readonly=False)
    why = " then ".join(steps) + ("" if copy else " (zero-copy: the same variables)")
    return Estimate(out, copies, why=why, copies_all=copy)


def loop(value: Any, ctx: Context) -> Any:
    xr = d.xr_module()
    want = ctx.target_type
    if want is xr.DataArray and isinstance(value, xr.Dataset):
        (name,) = list(value.data_vars)
        value = value[name]
    elif want is xr.Dataset and isinstance(value, xr.DataArray):
        value = value.to_dataset(name=d.value_name(value))
    if ctx.copy and not ctx.fresh:
        value = value.copy(deep=True)
    return value


# -- pandas -> xarray ------------------------------------------------------------------------
# pandas columns that numpy holds as numbers or booleans, with a default index: the Arrow
# route would turn pandas' NaN into nulls (a scan of every value) only for xarray to make
# NaN of them again, so these go straight from the frame's numpy arrays into variables.
# (NAT_IS_NULL: the dtype check then sends times to the Arrow route, saying so)
_PANDAS_FLAGS = frozenset(
    {Flag.NAN_IS_NULL, Flag.NAT_IS_NULL, Flag.ONE_BLOCK, Flag.SLICED, Flag.STRIDED}
)


def pandas_estimate(ctx: Context) -> Estimate:
    """pandas -> xarray in one step, ``xr.Dataset({name: (dim, column.to_numpy())})`` (a
    Series: a DataArray), for frames whose columns are numpy numbers and booleans. It
    shares each column's memory as the direct call does, read-only (pandas' copy-on-write
    views are), and keeps NaN as NaN, the missing value of both libraries: no scan.
    Everything else (strings, times, masked or Arrow-backed columns, an index that
    travels along) takes the Arrow route."""
    info = ctx.info
    if ctx.target != d.NAME:
        raise Unroutable(_ONLY_HERE)
    if not ctx.at_source:
        # A frame made on the way (Arrow -> pandas -> here) would hide the Arrow route's
        # warning that nulls become NaN: only frames the conversion starts from.
        raise Unroutable("only for pandas data the conversion starts from")
    if info.kind not in (Kind.TABLE, Kind.COLUMN) or not info.columns:
        raise Unroutable("pandas DataFrames and Series with columns only")
    names = [c.name for c in info.columns]
    if len(set(names)) != len(names):
        raise Unroutable("repeated column names take the Arrow route (which refuses them)")
    for col in info.columns:
        if col.flags - _PANDAS_FLAGS:
            raise Unroutable("plain numpy columns and a default index only")
        if not (is_integer(col.dtype) or is_float(col.dtype) or col.dtype == "bool"):
            raise Unroutable(f"{col.dtype} takes the Arrow route")
        if col.nulls and not (is_float(col.dtype) and Flag.NAN_IS_NULL in col.flags):
            # Arrow-backed (pd.ArrowDtype) or masked nulls: to_numpy() makes NaN (float64
            # of integers) or objects of them, a copy and a change the Arrow route reports.
            raise Unroutable(f"{col.dtype} with nulls takes the Arrow route")
        if col.dtype == "bool" and col.nbytes != info.rows:
            raise Unroutable("bit-packed (Arrow-backed) booleans take the Arrow route")
    want = _target(ctx, info)
    if want == "DataArray" and len(info.columns) != 1:
        raise Unroutable("a table of several columns is an xr.Dataset")
    copy = bool(ctx.copy)
    dim = _dimension(info)[0] if info.kind == Kind.TABLE else d.DEFAULT_DIM
    flags = frozenset({d.DATAARRAY}) if want == "DataArray" else frozenset()
    columns = tuple(
        Column(c.name if want == "Dataset" or c.name else "", c.dtype, c.nbytes, 0, 1, flags)
        for c in info.columns
    )
    if want == "Dataset" and info.kind == Kind.COLUMN and not columns[0].name:
        columns = (Column(d.VALUES, *_fields(columns[0])[1:]),)
    kind = Kind.COLUMN if want == "DataArray" else Kind.TABLE
    out = DataInfo(kind, columns, rows=info.rows, shape=(max(info.rows, 0),))
    what = "a DataArray" if want == "DataArray" else f"a Dataset along {dim!r}"
    if copy:
        copies = tuple(Copy(c.name, c.nbytes, _COPY_TRUE) for c in info.columns)
        return Estimate(out, copies, why=f"{what} of copies of the columns", copies_all=True)
    over = "the column's numpy array" if kind == Kind.COLUMN else "the columns' numpy arrays"
    why = f"{what} over {over} (NaN stays NaN: no scan)"
    return Estimate(out, why=why, shared_readonly=True)


def pandas_bind(ctx: Context) -> Any:
    xr, np = d.xr_module(), d.np_module()
    info = ctx.info
    want = _target(ctx, info)
    copy = bool(ctx.copy)
    variable = xr.Variable

    def values(series: Any) -> Any:
        arr = series.to_numpy()
        if copy:
            return np.array(arr, copy=True)
        if arr.flags.writeable:  # a view: read-only, as pandas' copy-on-write makes it
            arr = arr.view()
            arr.flags.writeable = False
        return arr

    if info.kind == Kind.COLUMN:
        name = info.columns[0].name
        dims = (d.DEFAULT_DIM,)
        if want == "Dataset":
            key = name or d.VALUES
            return lambda value: dataset_of(xr, {key: variable(dims, values(value))})
        label = name or None
        return lambda value: data_array_of(xr, variable(dims, values(value)), label)
    names = [c.name for c in info.columns]
    dims = (_dimension(info)[0],)

    def run(value: Any) -> Any:
        data = {
            name: variable(dims, values(series))
            for name, (_, series) in zip(names, value.items(), strict=True)
        }
        if want == "DataArray":
            ((name, var),) = data.items()
            return data_array_of(xr, var, name)
        return dataset_of(xr, data)

    return run


def from_pandas(value: Any, ctx: Context) -> Any:
    return pandas_bind(ctx)(value)
