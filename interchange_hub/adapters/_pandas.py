"""pandas adapter: DataFrame and Series both ways.

Export uses pandas' own ``__arrow_c_stream__`` (pyarrow's ``Table.from_pandas``): numeric,
datetime, masked and pyarrow-backed string columns are shared. Import uses
``Table.to_pandas(split_blocks=True)``, which shares numeric, timestamp and large_string
buffers; integer and boolean columns with nulls become pandas' nullable dtypes (never
float). A non-default index travels as a column, as pandas exports it. A result that
shares memory with its source is copy-on-write (``_bridge.cow``): writing to it copies the
column written, so it never fails on Arrow's read-only memory nor changes the source.
"""

from __future__ import annotations

import json
import math
import re
import warnings
import weakref
from dataclasses import replace
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any

from interchange_hub import arrowkit
from interchange_hub._bridge import pandas_native
from interchange_hub._bridge.cow import share_on_write
from interchange_hub._bridge.tensors import (
    nan_count,
    nan_filled,
    ndarray_buffers,
    np_module,
    null_mask,
)
from interchange_hub._core.deps import require
from interchange_hub._core.dtypes import (
    is_float,
    is_integer,
    is_numeric,
    is_string,
    np_dtype_name,
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
    Unroutable,
    nan_scans,
    report_losses,
)
from interchange_hub._core.marks import hookimpl
from interchange_hub.adapter import (
    ARROW,
    Adapter,
    Buffer,
    Context,
    Edge,
    IdentityKeys,
    RouteChanged,
    mixed_objects_error,
    mixed_parts,
    with_context,
)
from interchange_hub.errors import NoRouteError

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable, Mapping, Sequence


def _pd() -> Any:
    return require("pandas", "to make pandas objects")


class PandasAdapter(Adapter):
    name = "pandas"
    keyed_losses = True  # no count or size in its estimates' losses
    aliases = ("pd",)
    readonly_note = (
        "the result shares memory with the source, copy-on-write: pandas copies a column "
        "on its first write to it, so the source never changes (copy=True copies now)"
    )
    module = "pandas"
    waypoint = True
    extra = "pandas"
    types = ("pandas.DataFrame", "pandas.Series")
    arrow_backed = True  # dtype="arrow": pd.ArrowDtype columns (_arrow_estimate)
    # its str dtype keeps large_string's buffers (string is cast); binary is kept as it is
    arrow_string_type = "large_string"

    def owns(self, obj: object) -> bool:
        pd = _pd()
        return isinstance(obj, (pd.DataFrame, pd.Series))

    def type_kinds(self) -> Mapping[type, Kind | None]:
        pd = _pd()
        return {pd.DataFrame: Kind.TABLE, pd.Series: Kind.COLUMN}

    def __init__(self) -> None:
        # A pandas Index is immutable: the names of a frame's columns are keyed once, and
        # so is a frame's index (its type, name and values' key).
        self._names = IdentityKeys(_names_key)
        self._index = IdentityKeys(_index_key)
        # (their lookups as plain functions: 0.25 us less a call than the tables' __call__)
        self._names_key = self._names.lookup()
        self._index_key = self._index.lookup()
        self._pd: Any = None  # pandas, and the key functions, made on the first route key
        self._frame_key: Callable[[Any], Hashable | None] = _unkeyed
        self._series_key: Callable[[Any], Hashable | None] = _unkeyed

    def _modules(self) -> Any:
        pd = _pd()
        self._frame_key, self._series_key = _key_functions(
            pd.RangeIndex, np_module().ndarray, self._names_key, self._index_key
        )
        self._pd = pd
        return pd

    def route_key(self, obj: Any) -> Hashable | None:
        """O(1): names, dtypes and block placement of plain numpy-backed numeric data with
        contiguous columns, or of pyarrow-backed strings (with whether they hold nulls:
        Arrow counts them), and a RangeIndex, from pandas' block manager. Whether a float
        column holds NaN is left out (it would take a scan): the export's bound run checks
        the nulls it produced and raises RouteChanged when they differ from the plan's.
        Datetimes and durations without a zone are keyed with whether each column holds
        NaT (:func:`_temporal_key`: a scan at memory bandwidth). An index other than a
        RangeIndex is keyed as :func:`_index_key` says, with its name. Anything else (zoned
        datetimes, objects, categoricals, masked arrays): None."""
        pd = self._pd or self._modules()
        cls = type(obj)
        if cls is pd.DataFrame:
            return self._frame_key(obj)
        return self._series_key(obj) if cls is pd.Series else None

    def route_key_of(self, cls: type) -> Callable[[Any], Hashable | None]:
        if type(self).route_key is not PandasAdapter.route_key:  # (a subclass keys its own way)
            return self.route_key
        pd = self._pd or self._modules()
        if cls is pd.DataFrame:
            return self._frame_key
        return self._series_key if cls is pd.Series else self.route_key

    def describe(self, obj: Any) -> DataInfo:
        pd = _pd()
        if isinstance(obj, pd.Series):
            name = "" if obj.name is None else str(obj.name)
            return DataInfo(Kind.COLUMN, (_column(name, obj),), rows=len(obj))
        if not obj.columns.is_unique:
            repeated = sorted({str(n) for n in obj.columns[obj.columns.duplicated()]})
            raise NoRouteError(
                f"the DataFrame repeats column names ({', '.join(repeated)}), which Arrow "
                "export refuses; rename them first (e.g. df.columns = [...])"
            )
        cols = [_column(str(name), _column_values(obj, i)) for i, name in enumerate(obj.columns)]
        layout = ""
        if cols and _one_block(obj):
            cols = [replace(c, flags=c.flags | _ONE_BLOCK) for c in cols]
            layout = "negative" if _backwards(obj) else ""
        if not isinstance(obj.index, pd.RangeIndex):
            # pyarrow's name for an index level: its own, unless None or a column's name
            # (pyarrow's _index_level_name, against the columns' names as strings).
            taken = {c.name for c in cols}
            names = [
                n if n is not None and n not in taken else f"__index_level_{i}__"
                for i, n in enumerate(obj.index.names)
            ]
            for i, n in enumerate(names):
                col = _column(str(n), obj.index.get_level_values(i).to_series())
                cols.append(replace(col, flags=col.flags | _INDEX))
        return DataInfo(Kind.TABLE, tuple(cols), rows=len(obj), layout=layout)

    def buffers(self, obj: Any) -> list[Buffer]:
        pd = _pd()
        series = (
            [obj] if isinstance(obj, pd.Series) else [obj.iloc[:, i] for i in range(obj.shape[1])]
        )
        found: list[Buffer] = []
        for s in series:
            found += _array_buffers(s.array)
        return found

    def concat(self, parts: Sequence[Any]) -> Any:
        """``pd.concat``, each part keeping its index (as Dask's compute joins them), empty
        parts left out as Dask does, categoricals joined on the union of their categories
        (pandas 3.1+). numpy-backed columns are copied; what stays shared (pyarrow-backed
        columns, a lone non-empty part) is copy-on-write, as the parts are."""
        pd = _pd()
        if not any(all(isinstance(p, cls) for p in parts) for cls in (pd.DataFrame, pd.Series)):
            raise mixed_parts(parts)
        rows = [p for p in parts if len(p)] or [parts[0]]
        return pd.concat(rows, **_concat_options())

    def edges(self) -> Sequence[Edge]:
        return (
            Edge(
                "pandas",
                ARROW,
                self.name,
                "__arrow_c_stream__",
                _export_estimate,
                _export,
                ("pandas", "pyarrow"),
                bind=_export_bind,
            ),
            Edge(
                ARROW,
                "pandas",
                self.name,
                "pa.Table.to_pandas",
                _import_estimate,
                _import,
                ("pandas", "pyarrow"),
                bind=_import_bind,
            ),
        )


_ONE_BLOCK = frozenset({Flag.ONE_BLOCK})


def _unkeyed(obj: Any) -> Hashable | None:
    return None


def _key_functions(
    range_index: type,
    ndarray: type,
    names_key: Callable[[Any], Hashable | None],
    index_key: Callable[[Any], Hashable | None],
) -> tuple[Callable[[Any], Hashable | None], Callable[[Any], Hashable | None]]:
    """The route keys of a DataFrame and of a Series (:meth:`PandasAdapter.route_key`),
    read from the block manager: its axes (what ``obj.index`` and ``obj.columns`` return,
    through a property each), its blocks' values and placements (``_mgr_locs``, which the
    ``mgr_locs`` property returns), a Series' ``_name`` (``name``'s). The classes and the
    identity tables' lookups are bound once: 2.12 -> 1.71-1.75 us for a frame of four
    float columns. Where pandas changed those internals: None (planned each call)."""

    def indexed_key(index: Any) -> Hashable | None:
        # An index of its own (a filtered frame's, a time series'): one column more. Its
        # name is read on each call: ``df.index.name = ...`` renames it in place.
        name = index.name
        indexed = index_key(index)
        if indexed is None or (name is not None and type(name) is not str):
            return None
        return (indexed, name)

    def frame_key(obj: Any) -> Hashable | None:
        try:
            mgr = obj._mgr
            try:
                columns, index = mgr.axes
            except ValueError:  # not two axes: pandas changed its internals, always plan
                return None
            if type(index) is range_index:
                indexed = None
            else:
                indexed = indexed_key(index)
                if indexed is None:
                    return None
                if not all(type(n) is str for n in columns):
                    return None  # pyarrow warns of names of mixed types (the index's is a str)
            names = names_key(columns)
            if names is None:
                return None
            mgr_blocks = mgr.blocks
            if not mgr_blocks and not len(index):
                return None  # no columns and no rows
            blocks = []
            for block in mgr_blocks:
                values = block.values
                # (rows: a block's last axis, 1-D or 2-D; 0.2 us less than the index's len)
                if not values.shape[-1]:
                    return None  # no rows: planned each call
                extra = _values_key(values, ndarray)
                if extra is None:
                    return None
                where = block._mgr_locs.indexer
                place = (
                    (where.start, where.stop, where.step)
                    if type(where) is slice
                    else tuple(where.tolist())
                )
                blocks.append((extra, place))
            return (names, tuple(blocks), indexed)
        except AttributeError:  # pandas changed its internals: always plan
            return None

    def series_key(obj: Any) -> Hashable | None:
        try:
            mgr = obj._mgr
            index = mgr.axes[0]
            if type(index) is range_index:
                indexed = None
            else:
                indexed = indexed_key(index)
                if indexed is None:
                    return None
            extra = _values_key(mgr.blocks[0].values, ndarray)  # (Series._values' array)
            if extra is None:
                return None
            name = obj._name
        except AttributeError:  # pandas changed its internals: always plan
            return None
        if name is not None and type(name) not in _KEYED_NAMES:
            return None
        return (name, extra, indexed)

    return frame_key, series_key


def _values_key(values: Any, ndarray: Any) -> Hashable | None:
    """What the route key holds of one block's (or a Series') values: the numpy dtype of
    plain numpy numbers (``ndarray``: numpy's, which the caller holds; see below); for
    pyarrow-backed strings their missing value and whether nulls are present (O(1): Arrow
    keeps null counts; a StringDtype is not hashed: pandas' ExtensionDtype hash costs
    0.65 us and slows the export after it); None for anything the fast path leaves out.

    Plain numbers: a numpy array of integers, floats or booleans whose columns (its last
    axis: a block holds one column per row) are contiguous, so that describe calls every
    column contiguous whatever the number of rows. Strided data is left to describe, which
    sees a one-row column as contiguous and a longer one as strided: no key could say
    which."""
    if (
        type(values) is ndarray
        and values.dtype.kind in "iufb"
        and (strides := values.strides)[-1] == values.itemsize
        and strides[0] >= 0  # (columns in reverse: planned, see _backwards)
    ):
        numpy_dtype: Hashable = values.dtype
        return numpy_dtype
    arrays = _pd().arrays
    cls = type(values)
    if cls is arrays.ArrowStringArray:
        dtype = values.dtype
        if dtype.storage == "pyarrow":
            missing = "NA" if dtype.na_value is _pd().NA else "NaN"
            return ("str", missing, values._pa_array.null_count > 0)
        return None
    if cls is arrays.TimedeltaArray or (cls is arrays.DatetimeArray and values.tz is None):
        return _temporal_key(values._ndarray)
    return None


def _temporal_key(data: Any) -> Hashable | None:
    """The key of numpy-backed datetimes or durations without a zone (a block holds one
    column per row): the dtype, and per column whether it holds NaT. That takes a scan
    (the minimum is NaT exactly when one is), at memory bandwidth, as describe's own
    count: NaT decides nulls in Arrow and losses into tensors, so it cannot be left out.
    Describing the frame instead costs the same scans and much more besides."""
    if data.dtype.kind not in "mM" or not data.size or data.strides[-1] != data.itemsize:
        return None
    nat = _nat_min(data)
    numpy_dtype: Hashable = data.dtype
    return (numpy_dtype, bool(nat) if nat.ndim == 0 else tuple(nat.tolist()))


def _nat_min(data: Any) -> Any:
    """Whether ``data`` (numpy datetimes or durations) holds NaT, per row of its last
    axis: the minimum of its int64 view is NaT's INT64_MIN exactly when one is (numpy's
    int64 minimum is vectorised: 45 us for 1e5 values, its datetime minimum 412). Data
    in the other byte order takes numpy's datetime minimum."""
    np = np_module()
    if not data.dtype.isnative:
        return np.isnat(data.min(axis=-1))
    return data.view(np.int64).min(axis=-1) == _NAT


_NAT = -(1 << 63)  # NaT's int64 value (INT64_MIN)


# Column names the route key holds as they are: strings, or ints (pd.DataFrame(matrix)
# names its columns 0, 1, ...). Two tuples of them are equal only when their str() are,
# which is what describe and Arrow export name the columns. Floats and bools are left
# out (1 == 1.0 == True, and their str() differ), and so are names of both types, of
# which pyarrow warns on every export (a warning a re-planned call would repeat).
_KEYED_NAMES = frozenset({str, int})


def _names_key(columns: Any) -> Hashable | None:
    """Unique column names, all strings or all ints, as a tuple (None: a frame the fast
    path leaves out: repeated names, or names of other or mixed types)."""
    if not columns.is_unique:
        return None
    names = tuple(columns)
    kinds = {type(n) for n in names}
    return names if len(kinds) < 2 and kinds <= _KEYED_NAMES else None


def _index_key(index: Any) -> Hashable | None:
    """What the route key holds of an index other than a RangeIndex (describe makes a
    column of it), besides its name (read on each call): its type and values' key (:func:`_values_key`: integers,
    pyarrow-backed strings, datetimes and durations without a zone, with whether they
    hold NaT). Float indexes (whose NaN describe counts as nulls), MultiIndexes, zoned
    datetimes and objects: None (planned)."""
    pd = _pd()
    cls = type(index)
    if cls is not pd.Index and cls is not pd.DatetimeIndex and cls is not pd.TimedeltaIndex:
        return None
    values, ndarray = index._values, np_module().ndarray
    if type(values) is ndarray and values.dtype.kind not in "iub":
        return None
    extra = _values_key(values, ndarray)
    return None if extra is None else (cls, extra)


def _one_block(frame: Any) -> bool:
    blocks: Any = getattr(getattr(frame, "_mgr", None), "blocks", ())
    if len(blocks) != 1:
        return False
    return not isinstance(blocks[0].dtype, _pd().api.extensions.ExtensionDtype)


def _backwards(frame: Any) -> bool:
    """Whether the frame's one block runs backwards (``df[["b", "a"]]``,
    ``df.iloc[:, ::-1]``): ``to_numpy`` gives a view of negative strides, which
    torch.from_numpy refuses (the frame's layout says "negative": the route to torch
    takes DLPack, which makes it contiguous, a planned copy)."""
    blocks: Any = getattr(getattr(frame, "_mgr", None), "blocks", ())
    return any(step < 0 for step in getattr(blocks[0].values, "strides", ()))


def _column_values(frame: Any, i: int) -> Any:
    """Column ``i`` of a DataFrame as its array, without building a Series (20x faster)."""
    get = getattr(frame, "_get_column_array", None)
    return get(i) if get is not None else frame.iloc[:, i]


def _column(name: str, values: Any) -> Column:
    """Describe a Series or a column's array (ndarray or pandas ExtensionArray)."""
    pd = _pd()
    dtype = values.dtype
    if isinstance(dtype, pd.SparseDtype):
        label = f"column {name!r}" if name else "the Series"
        raise NoRouteError(
            f"{label} is sparse ({dtype}), which Arrow has no type for (pyarrow refuses "
            "it too); make it dense first: series.sparse.to_dense(), or "
            "frame.sparse.to_dense() for a frame of sparse columns"
        )
    numpy_backed = not isinstance(dtype, pd.api.extensions.ExtensionDtype)
    # numpy floats mark missing values with NaN, pandas' times (numpy-backed, zoned too)
    # with NaT; Arrow export reads every value to make nulls of them.
    if numpy_backed and dtype.kind == "f":
        flags = _NAN_IS_NULL
    elif dtype.kind in "mM" and not isinstance(dtype, pd.ArrowDtype):
        flags = _NAT_IS_NULL
    else:
        flags = NO_FLAGS
    if hasattr(getattr(values, "array", values), "_mask"):
        flags = _MASKED
    nulls = _nulls(values, numpy_backed)
    if numpy_backed and not _contiguous(values):
        flags = flags | _STRIDED
    chunks = 1
    arrow = _arrow_array(values)
    if arrow is not None and hasattr(arrow, "num_chunks"):
        # Arrow-backed: its chunks, and bits for booleans (to_numpy copies either)
        chunks = arrow.num_chunks
        if arrowkit.pa_module().types.is_boolean(arrow.type):
            flags = flags | _BIT_PACKED
        if nulls and any(c.offset for c in arrow.chunks):
            flags = flags | _SLICED  # (a bitmap at an offset: consumers may realign it)
    return Column(name, _dtype_name(values), _nbytes(values), nulls, chunks, flags)


_BIT_PACKED = frozenset({Flag.BIT_PACKED})
_SLICED = frozenset({Flag.SLICED})


def _arrow_array(values: Any) -> Any:
    """The pyarrow ChunkedArray an Arrow-backed Series or array holds (None else)."""
    return getattr(getattr(values, "array", values), "_pa_array", None)


def _nbytes(values: Any) -> int:
    """The bytes of a Series or array. An Arrow-backed one is counted chunk by chunk
    without asking pyarrow for an empty chunk: an empty union chunk (as IPC readers give
    it) has no type-ids buffer, and pyarrow's nbytes then reads a null pointer."""
    arrow = _arrow_array(values)
    if arrow is not None and hasattr(arrow, "chunks"):
        return arrowkit.nbytes(arrow.chunks)
    dtype = values.dtype
    if isinstance(dtype, _pd().CategoricalDtype):
        # (Categorical.nbytes reads categories.values, which warns of zoned times'
        # categories in pandas 3.1: "drops timezone information is deprecated")
        codes = getattr(values, "cat", values).codes
        return int(codes.nbytes + dtype.categories.array.nbytes)
    return int(values.nbytes)


_STRIDED = frozenset({Flag.STRIDED})


def _contiguous(values: Any) -> bool:
    """Whether numpy-backed values (an ndarray, a Series, a datetime array) are contiguous."""
    np = np_module()
    arr = values if isinstance(values, np.ndarray) else np.asarray(values)  # a view
    return bool(arr.flags.c_contiguous)


def _nulls(values: Any, numpy_backed: bool) -> int:
    """Missing values; numpy floats and datetimes are checked without allocating (their
    minimum is NaN/NaT exactly when one is missing), and counted only then."""
    if not len(values):
        return 0
    kind = values.dtype.kind if numpy_backed else ""
    if kind in ("i", "u", "b"):
        return 0  # numpy integers and booleans cannot be missing
    if kind in ("f", "m", "M"):
        np = np_module()
        arr = np.asarray(values)
        if kind == "f":
            return int(np.count_nonzero(np.isnan(arr))) if np.isnan(arr.min()) else 0
        return int(np.count_nonzero(np.isnat(arr))) if _nat_min(arr.reshape(-1)) else 0
    arrow = _arrow_array(values)
    if arrow is not None and hasattr(arrow, "null_count"):
        return int(arrow.null_count)  # pyarrow-backed: Arrow keeps the count (no isna())
    return int(values.isna().sum()) if hasattr(values, "isna") else int(_pd().isna(values).sum())


def _dtype_name(s: Any) -> str:
    """The Arrow type name of a Series or array (``py:<type>`` for Python objects)."""
    pd = _pd()
    dtype = s.dtype
    if isinstance(dtype, pd.ArrowDtype):
        return arrowkit.dtype_name(dtype.pyarrow_dtype)
    if isinstance(dtype, pd.StringDtype):
        return "large_string" if dtype.storage == "pyarrow" else "py:string"
    if isinstance(dtype, (pd.CategoricalDtype, pd.PeriodDtype, pd.IntervalDtype)):
        return _arrow_name_of(s, dtype)
    if isinstance(dtype, pd.DatetimeTZDtype):
        # Arrow's spelling of the zone ("+01:00" for a fixed offset, not "UTC+01:00").
        zone = arrowkit.pa_module().lib.tzinfo_to_string(dtype.tz)
        return f"timestamp[{dtype.unit}, tz={zone}]"
    if isinstance(dtype, pd.api.extensions.ExtensionDtype) and hasattr(dtype, "numpy_dtype"):
        return np_dtype_name(dtype.numpy_dtype)
    if dtype.kind == "O":
        inferred = pd.api.types.infer_dtype(s, skipna=True)
        if inferred == "integer":
            return "py:" + _object_ints(s)
        return "py:" + _INFERRED.get(inferred, "objects")
    return np_dtype_name(dtype)


# The Arrow type name of a Categorical, Period or Interval dtype, by the dtype's id (with
# a weak reference to it: the id is its own while it lives): the dtype is shared by the
# Series made from one another, and such a column is described on every call (no route
# key).
_CATEGORY_TYPES: dict[int, tuple[weakref.ref[Any], str]] = {}


def _arrow_name_of(values: Any, dtype: Any) -> str:
    """The Arrow type pyarrow gives pandas ``values`` of a Categorical (a dictionary of its
    categories' type, indices of its codes' width, its ordered flag), Period or Interval
    dtype (pandas' extension types): ``pa.array`` of none of its values, about 50 us for a
    Categorical, once per dtype."""
    seen = _CATEGORY_TYPES.get(id(dtype))
    if seen is not None and seen[0]() is dtype:
        return seen[1]
    try:
        name = arrowkit.dtype_name(arrowkit.pa_module().array(values[:0]).type)
    except Exception:  # noqa: BLE001 - categories pyarrow cannot type: said by the export
        name = "dictionary<values=null, indices=int8, ordered=0>"
    if len(_CATEGORY_TYPES) >= 256:
        _CATEGORY_TYPES.clear()
    _CATEGORY_TYPES[id(dtype)] = (weakref.ref(dtype), name)
    return name


def _object_ints(values: Any) -> str:
    """The Arrow type of an object column of Python ints: int64, or uint64 where one is
    beyond int64 and all fit uint64 (what :func:`_objects_of_ints` makes of them), read
    by numpy's casts (C loops over the objects, about a third of what pyarrow's reading
    them costs). Where the int64 cast fails (an int beyond it, or None or NaN among
    them), a float64 cast (None as NaN) tells whether any int is that large before the
    present ones are read exactly."""
    np = np_module()
    arr = np.asarray(values, dtype=object)
    try:
        arr.astype(np.int64)
    except (OverflowError, TypeError, ValueError):
        pass
    else:
        return "int64"
    try:
        approx = arr.astype(np.float64)
    except (TypeError, ValueError):  # pd.NA among them, or not all ints after all
        return "int64"
    present = ~np.isnan(approx)
    magnitude = np.abs(approx[present])
    if not magnitude.size or magnitude.max() < 2.0**62:
        return "int64"
    ints = arr[present]
    try:
        ints.astype(np.int64)
    except OverflowError:
        pass
    else:
        return "int64"
    # no 64-bit type holds them (refused when read, saying what to do): a negative int
    # beside one beyond int64 (numpy's uint64 cast wraps its own signed scalars), or one
    # beyond uint64
    if (approx[present] < 0).any():
        return "int64"
    try:
        ints.astype(np.uint64)
    except (OverflowError, TypeError, ValueError):
        return "int64"
    return "uint64"


_MASKED = frozenset({Flag.MASKED})  # pandas' nullable dtypes
_INDEX = frozenset({Flag.INDEX})  # the frame's index, travelling as a column
_NAN_IS_NULL = frozenset({Flag.NAN_IS_NULL})
_NAT_IS_NULL = frozenset({Flag.NAT_IS_NULL})

# What pyarrow makes of an object column, by pandas' inferred type; such columns are
# described as "py:<type>". Mixed integers and strings have no Arrow type; other
# objects (lists, dicts) are left to pyarrow to infer ("py:objects"). Ints beyond int64
# are read as uint64 where they all fit it (see _objects_of_ints).
_INFERRED = {
    "string": "string",
    "bytes": "binary",
    "empty": "null",
    "date": "date32[day]",
    "decimal": "decimal128",
    "time": "time64[us]",
    "boolean": "bool",
    "integer": "int64",
    "floating": "float64",
    "mixed-integer": "mixed",
    "mixed-integer-float": "mixed",
}


def _array_buffers(arr: Any) -> list[Buffer]:
    if hasattr(arr, "_pa_array"):
        return arrowkit.buffers(arr._pa_array)
    found = []
    for attr in ("_ndarray", "_data", "_mask", "_codes"):
        part = getattr(arr, attr, None)
        if attr == "_mask" and part is not None and not part.any():
            continue  # an all-False mask carries nothing: Arrow simply drops it
        if part is not None and hasattr(part, "ctypes"):
            found += ndarray_buffers(part)
    return found


def _export_estimate(ctx: Context) -> Estimate:
    copies = []
    for col in ctx.info.columns:
        if col.dtype == "py:mixed":
            raise Unroutable(
                f"column {col.name!r} holds mixed Python objects, which Arrow cannot type; "
                "convert it to one dtype (e.g. astype(str)) first"
            )
        if col.dtype.startswith("complex"):
            raise Unroutable(
                f"column {col.name!r} is complex ({col.dtype}): Arrow has no complex type"
            )
        if col.dtype == "bool" and Flag.BIT_PACKED not in col.flags:  # (Arrow's: shared)
            copies.append(Copy(col.name, col.nbytes, "numpy booleans are bit-packed for Arrow"))
        elif Flag.MASKED in col.flags and col.nulls > 0:
            reason = "pandas' mask (a byte per value) becomes an Arrow validity bitmap"
            copies.append(Copy(col.name, max(ctx.info.rows, 0), reason))
        elif col.dtype.startswith("py:"):
            copies.append(Copy(col.name, col.nbytes, "Python objects are encoded as Arrow values"))
        elif Flag.STRIDED in col.flags:
            reason = "a strided column (a view into a row-major 2-D array) is gathered"
            copies.append(Copy(col.name, col.nbytes, reason))
    out = ctx.info.but(columns=tuple(_exported(c) for c in ctx.info.columns))
    return Estimate(
        out,
        tuple(copies),
        why="pandas' columns as Arrow arrays (numpy reads NaN and packs booleans, pyarrow the rest)",
        scans=nan_scans(ctx.info, "the export"),
    )


def _exported(col: Column) -> Column:
    if col.dtype.startswith("py:"):
        return Column(col.name, col.dtype[3:], col.nbytes, col.nulls)
    return col


def _export(value: Any, ctx: Context) -> Any:
    if any(c.dtype in ("py:int64", "py:uint64") for c in ctx.info.columns):
        try:
            return _objects_of_ints(value)
        except Exception as exc:
            explained = _objects_explained(value, exc)
            if explained is exc:
                raise
            raise explained from exc
    if any(c.dtype == "py:objects" for c in ctx.info.columns):  # (what pandas calls mixed)
        return _ObjectsExplained(value)
    return arrowkit.ArrowStreamProducer(value)


class _ObjectsExplained(arrowkit.ArrowStreamProducer):
    """pandas' stream of data with object columns, whose Arrow types show only as pyarrow
    reads them: where it cannot (a column of strings and floats), the error names the
    column, the Python types in it and what to do (:func:`_objects_explained`)."""

    __slots__ = ()

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        try:
            return super().__arrow_c_stream__(requested_schema)
        except Exception as exc:
            explained = _objects_explained(self._producer, exc)
            if explained is exc:
                raise
            raise explained from exc


def _objects_explained(value: Any, exc: Exception) -> Exception:
    """A ConversionError for the first object column of pandas data ``value`` that holds
    values of more than one Python type (pandas' ``infer_dtype`` says "mixed..."), where
    pyarrow failed on it (``exc``, an Arrow error); ``exc`` itself for any other failure."""
    pa = arrowkit.pa_module()
    same: Exception = exc
    if not isinstance(exc, (pa.ArrowInvalid, pa.ArrowTypeError)):
        return same
    pd = _pd()
    columns = [value] if isinstance(value, pd.Series) else [s for _, s in value.items()]
    for s in columns:
        if s.dtype != object or not pd.api.types.infer_dtype(s, skipna=True).startswith("mixed"):
            continue
        it = "series" if isinstance(value, pd.Series) else f"frame[{s.name!r}]"
        fix = (
            f"for example {it}.astype(str), or pd.to_numeric({it}, errors='coerce') for "
            "numbers (what does not parse becomes NaN)"
        )
        explained = mixed_objects_error(f"pandas column {s.name!r}", s[s.notna()], exc, fix)
        if explained is not None:
            return explained
    return same


def _objects_of_ints(value: Any) -> Any:
    """What pandas' ``__arrow_c_stream__`` gives for data with object columns of Python
    ints (``pa.Table.from_pandas``, ``pa.array``), except that where an int is beyond
    int64 (pyarrow infers int64, and overflows) each such column is read as the numpy
    adapter reads object arrays: uint64 where all its ints fit, refused with what to do
    where they fit no 64-bit type."""
    pa = arrowkit.pa_module()
    pd = _pd()
    try:
        if isinstance(value, pd.Series):
            out = pa.array(value)
            return out if isinstance(out, pa.ChunkedArray) else pa.chunked_array([out])
        return pa.Table.from_pandas(value)
    except OverflowError:
        pass
    except pa.ArrowInvalid as exc:  # what it raises instead where NaN stands among them
        if "too large" not in str(exc):
            raise
    from interchange_hub._bridge.tensors import objects_to_arrow

    def wide(s: Any) -> Any:
        if s.dtype != object or pd.api.types.infer_dtype(s, skipna=True) != "integer":
            return s
        # pandas' missing values (None, NaN, NA) are nulls, as pyarrow reads them from pandas
        missing = s.isna().tolist()
        ints = [None if gone else v for v, gone in zip(s.tolist(), missing, strict=True)]
        arr = objects_to_arrow(ints, str(s.name) if s.name is not None else "")
        return pd.Series(pd.arrays.ArrowExtensionArray(arr), index=s.index, name=s.name)

    if isinstance(value, pd.Series):
        return arrowkit.ArrowStreamProducer(wide(value))
    frame = value.copy(deep=False)
    for i in range(frame.shape[1]):
        frame.isetitem(i, wide(frame.iloc[:, i]))
    return arrowkit.ArrowStreamProducer(frame)


# Below this many values pyarrow's thread pool costs more than it saves (0.8 ms of
# ThreadPoolExecutor per call for a 1e3 x 4 frame, measured); above, threads win.
_THREADS_FROM = 1_000_000


def _export_bind(ctx: Context) -> Callable[[Any], Any]:
    """For plain numeric numpy-backed data, numpy-backed datetimes and durations and
    pyarrow-backed strings, ``pa.Table.from_pandas`` / ``pa.array`` directly, which is
    what pandas' own ``__arrow_c_stream__`` calls, without its C-stream round trip, its
    optional-import check and, for small frames, pyarrow's thread pool (0.6 ms of a
    1,000-row frame of strings), and of its scans where numpy's are faster (the frame's
    columns one at a time: :func:`_columns_bind`). NaN and NaT become nulls as before;
    the nulls produced are checked against the plan's (RouteChanged when they differ)."""
    info = ctx.info
    cols = info.columns
    if (
        info.kind not in (Kind.TABLE, Kind.COLUMN)
        or not info.known
        or not cols
        or not all(_exported_as_is(c) for c in cols)
    ):
        return with_context(_export, ctx)
    pa = arrowkit.pa_module()
    if info.kind == Kind.COLUMN:
        return _column_bind(ctx)
    planned = tuple(c.nulls > 0 for c in cols)
    from_pandas = pa.Table.from_pandas
    # Threads pay only for columns pyarrow works on (NaN and NaT into nulls, bits packed),
    # not for pyarrow-backed strings, which it takes as they are. The route key fixes the
    # columns, so this is decided once (DataFrame.size costs 2.7 us a call).
    work = sum(c.dtype != "large_string" for c in cols)
    rows_from = _THREADS_FROM // work if work else 1 << 62
    # Only a float column's nulls (its NaN) are not fixed by the route key, which keys
    # pyarrow strings' null counts and datetimes' NaT; numpy ints and bools have none.
    nan = [i for i, c in enumerate(cols) if is_float(c.dtype)]
    nan_planned = tuple(planned[i] for i in nan)
    if any(Flag.INDEX in c.flags for c in cols):  # an index column: from_pandas names it
        convert = from_pandas
    else:
        arrays = _columns_bind(ctx)
        if ctx.target in _METADATA_UNREAD:  # the metadata is dropped: none is made
            convert = _own_columns(arrays, from_pandas)
        else:
            convert = _own_columns_with_metadata(arrays, from_pandas, _pd().RangeIndex)

    def table(value: Any) -> Any:
        out = convert(value, nthreads=None if len(value) >= rows_from else 1)
        if nan and tuple(out.column(i).null_count > 0 for i in nan) != nan_planned:
            raise RouteChanged("the NaN of this frame differ from the planned one's")
        return out

    return table


def _column_bind(ctx: Context) -> Callable[[Any], Any]:
    """The Arrow array (chunked) ``pa.array`` gives a Series of ``ctx``'s column, reading
    less of it, as :func:`_columns_bind` reads a frame's columns."""
    pa, np = arrowkit.pa_module(), np_module()
    (col,) = ctx.info.columns
    array, chunked, many = pa.array, pa.chunked_array, pa.ChunkedArray
    planned = (col.nulls > 0,)
    read = _column_reader(pa, np, col)

    def column(value: Any) -> Any:
        out = read(value._values) if read is not None else None
        if out is None:
            out = array(value)
        if type(out) is not many:  # pyarrow-backed data of several chunks stays so
            out = chunked([out])
        if (out.null_count > 0,) != planned:
            raise RouteChanged("the NaN of this Series differ from the planned one's")
        return out

    return column


def _columns_bind(ctx: Context) -> Callable[..., Any]:
    """``arrays(frame, metadata=None)``: the Table ``Table.from_pandas`` gives a frame of
    ``ctx``'s columns (``metadata``: its schema's), made a column at a time, each read
    as :func:`_column_reader` says (floats, booleans, datetimes without NaT: by numpy),
    the rest by ``pa.array(from_pandas=True)``, as from_pandas reads each column (ints and
    pyarrow-backed strings taken as they are). The columns pyarrow scans for NaT (zoned
    datetimes, or datetimes planned with NaT), where a large frame has more than one, are
    converted side by side on pyarrow's threads (``from_pandas(columns=...)``), as
    ``from_pandas`` would the whole frame. For pandas with ``_get_column_array``."""
    pa, np = arrowkit.pa_module(), np_module()
    cols = ctx.info.columns
    names = [c.name for c in cols]  # (str(name), as pyarrow names them; in the route key)
    readers = [_column_reader(pa, np, c) for c in cols]
    # the columns pyarrow reads for NaT (floats and booleans have readers; ints and strings
    # are taken as they are)
    left = [i for i, c in enumerate(cols) if readers[i] is None and c.dtype.startswith(_TIMES)]
    threads_from = _THREADS_FROM // len(left) if len(left) > 1 else 1 << 62
    array, from_arrays, from_pandas = pa.array, pa.Table.from_arrays, pa.Table.from_pandas
    width = range(len(cols))

    def arrays(value: Any, metadata: Any = None) -> Any:
        get = value._get_column_array
        threaded = len(value) >= threads_from
        columns: list[Any] = []
        for i in width:
            data = get(i)
            read = readers[i]
            out = read(data) if read is not None else None
            if out is None and not (threaded and i in left):
                out = array(data, from_pandas=True)
            columns.append(out)
        if threaded:
            labels = value.columns
            part = from_pandas(value, columns=[labels[i] for i in left], preserve_index=False)
            for j, i in enumerate(left):
                columns[i] = part.column(j)
        return from_arrays(columns, names, metadata=metadata)

    return arrays


_TIMES = ("timestamp[", "duration[")


def _column_reader(pa: Any, np: Any, col: Column) -> Callable[[Any], Any] | None:
    """For a float or boolean column, or a datetime or duration column without a zone
    that the route key says holds no NaT: ``read(values) -> Array | None``, the Arrow
    array ``pa.array(values, from_pandas=True)`` gives, made by numpy, whose passes over
    the data are 4-20 times faster than pyarrow's (None where the values are not a plain
    1-D numpy array, or are few: pyarrow then reads them). None for other columns.

    - A float column planned without NaN (pandas' missing value) is looked at by numpy's
      minimum, which is NaN exactly where a value is: it allocates nothing and runs at
      memory bandwidth (1,000,000 float64: 94 us, where pa.array's scan, which writes a
      bitmap as it goes, takes 1,983 us; 1,000: 1.2 us against 2.2). Without NaN the
      column is its numpy buffer as it is, no bitmap; with, pyarrow reads it (and the
      bound run, finding nulls the plan did not, has it planned anew).
    - A float column planned with NaN gets its validity bitmap from numpy
      (:func:`_nan_as_nulls`: 10,000,000 float64, 5.2 ms against pyarrow's 20.4), beside
      its buffer as it is.
    - A boolean column is bit-packed by ``np.packbits`` (10,000,000: 0.29 ms against
      pyarrow's 5.9), from :data:`_NUMPY_NULLS_FROM` values (as the bitmaps above).
    - A datetime or duration column is keyed with whether it holds NaT (the route key reads
      each one's minimum: :func:`_temporal_key`): without, it is an Arrow array over the
      numpy buffer (pa.array reads it for NaT again: 1,000 values 19 us, 1,000,000 values
      2.2 ms, against 1 us).
    """
    ndarray = np.ndarray
    from_buffers, py_buffer = pa.Array.from_buffers, pa.py_buffer
    if is_float(col.dtype):
        arrow_type = pa.type_for_alias(col.dtype)
        if col.nulls:  # planned with NaN: looking for one first would read it twice

            def with_nan(values: Any) -> Any:
                if len(values) < _NUMPY_NULLS_FROM or not _plain_vector(values, ndarray):
                    return None
                return _nan_as_nulls(pa, np, values, arrow_type)

            return with_nan
        # (np.minimum.reduce: ndarray.min's wrapper 0.2 us less; math.isnan: np.isnan's 0.6)
        array, minimum, isnan = pa.array, np.minimum.reduce, math.isnan

        def floats(values: Any) -> Any:
            if type(values) is not ndarray or values.ndim != 1:
                return None
            if values.size and isnan(minimum(values)):
                return None
            return array(values)

        return floats
    if col.dtype == "bool":
        packbits, bool_type = np.packbits, pa.bool_()

        def bools(values: Any) -> Any:
            if len(values) < _NUMPY_NULLS_FROM or type(values) is not ndarray or values.ndim != 1:
                return None
            bits = packbits(values, bitorder="little")
            return from_buffers(bool_type, len(values), [None, py_buffer(bits)], null_count=0)

        return bools
    if col.dtype.startswith(_TIMES) and "tz=" not in col.dtype and not col.nulls:
        arrow_type = _arrow_time_type(pa, col.dtype)

        def times(values: Any) -> Any:
            data: Any = getattr(values, "_ndarray", None)
            if not _plain_vector(data, ndarray):
                return None
            return from_buffers(arrow_type, len(data), [None, py_buffer(data)])

        return times
    return None


def _plain_vector(values: Any, ndarray: type) -> bool:
    """Whether ``values`` is a 1-D numpy array (not a subclass) of adjacent elements."""
    if type(values) is not ndarray:
        return False
    array: Any = values
    return bool(array.ndim == 1 and array.strides[0] == array.itemsize)


# From this many values numpy makes a float column's validity bitmap and packs booleans
# (below, pyarrow's call costs less, or as much: 1,000 float64 4.0 us against 5.6, 10,000
# 22 against 7.8; 1,000 booleans 2.1 against 2.0, 10,000 7.5 against 2.4).
_NUMPY_NULLS_FROM = 4096
# The values numpy reads for NaN at a time: its scratch mask is this many bytes (whole
# bytes of the bitmap a slice: a multiple of 8).
_NAN_SLICE = 8 * 8192


def _nan_as_nulls(pa: Any, np: Any, values: Any, arrow_type: Any) -> Any:
    """``pa.array(values, from_pandas=True)`` for a 1-D float array: its NaN null, the
    buffer as it is (NaN kept under the nulls, as pyarrow keeps them), the validity
    bitmap made by numpy a slice at a time (the scratch memory: a slice's mask)."""
    rows = len(values)
    bitmap = np.empty((rows + 7) // 8, dtype=np.uint8)
    mask = np.empty(min(_NAN_SLICE, rows), dtype=np.bool_)
    isnan, invert, packbits, count = np.isnan, np.invert, np.packbits, np.count_nonzero
    nulls = 0
    for start in range(0, rows, _NAN_SLICE):  # (a multiple of 8: whole bytes a slice)
        stop = min(start + _NAN_SLICE, rows)
        part = mask[: stop - start]
        isnan(values[start:stop], out=part)
        nulls += int(count(part))
        invert(part, out=part)
        bitmap[start // 8 : (stop + 7) // 8] = packbits(part, bitorder="little")
    buffers = [pa.py_buffer(bitmap) if nulls else None, pa.py_buffer(values)]
    return pa.Array.from_buffers(arrow_type, rows, buffers, null_count=nulls)


# Targets that read no pandas metadata of an Arrow table (the index and dtypes kept for
# Table.to_pandas): a frame's columns may be converted on their own for them.
_METADATA_UNREAD = frozenset({"polars", "numpy", "torch"})


def _own_columns(
    arrays: Callable[[Any], Any], from_pandas: Callable[..., Any]
) -> Callable[..., Any]:
    """``from_pandas(value, nthreads=)``, but ``arrays(value)`` where pandas has
    ``_get_column_array`` (else its own), for a frame whose column names are all strings
    or all integers (:func:`_plainly_named`)."""

    def convert(value: Any, nthreads: int | None) -> Any:
        if hasattr(value, "_get_column_array") and _plainly_named(value):
            return arrays(value)
        return from_pandas(value, nthreads=nthreads)

    return convert


def _arrow_time_type(pa: Any, dtype: str) -> Any:
    """The pyarrow type of a hub dtype name ``timestamp[unit]`` or ``duration[unit]``."""
    unit = dtype[dtype.index("[") + 1 : -1]
    return pa.timestamp(unit) if dtype.startswith("timestamp") else pa.duration(unit)


def _plainly_named(frame: Any) -> bool:
    """Whether ``frame``'s column names are all strings or all integers, which
    ``Table.from_pandas`` names ``str(name)``, as describe does (the columns are then
    named as describe said). Others it names its own way (bytes decoded, a tuple's items
    each made a string) or warns of (names of mixed types): left to it. Index's
    ``inferred_type`` is computed once per Index (0.3 us a call after that)."""
    return frame.columns.inferred_type in ("string", "integer")


def _own_columns_with_metadata(
    arrays: Callable[..., Any], from_pandas: Callable[..., Any], range_index: Any
) -> Callable[..., Any]:
    """:func:`_own_columns`, the result with the pandas metadata ``from_pandas`` gave the
    last frame it converted, where that metadata holds for this frame too. The route key
    fixes the columns' names and dtypes, hence the metadata's columns; what else it holds
    is read on each call: the RangeIndex (start, stop, step, name), the columns' name and
    dtype (names with their types). A frame with attrs (kept in the metadata) or another
    index: ``from_pandas``. (The first frame is always converted by ``from_pandas``, and a
    later one reaches this only through a kept run, whose route key holds names of
    strings or ints alone: :func:`_names_key`.)"""
    kept: list[Any] = [None]  # (what the metadata depends on, the metadata)

    def convert(value: Any, nthreads: int | None) -> Any:
        index = value.index
        if type(index) is not range_index or value.attrs:
            return from_pandas(value, nthreads=nthreads)
        key = _metadata_key(index, value.columns)
        last = kept[0]
        if last is not None and last[0] == key:
            return arrays(value, last[1])
        out = from_pandas(value, nthreads=nthreads)
        kept[0] = (key, out.schema.metadata)
        return out

    return convert


def _metadata_key(index: Any, columns: Any) -> tuple[Any, ...]:
    """What a frame's pandas metadata holds besides its columns' names and dtypes (which
    the route key fixes): its RangeIndex ``index`` and the ``columns`` Index's name and
    dtype. Names go with their types: 1, 1.0 and True are equal, and the metadata writes
    each its own way."""
    name, names = index.name, columns.name
    return (
        index.start, index.stop, index.step, type(name), name, type(names), names,
        columns.dtype,
    )  # fmt: skip


def _exported_as_is(col: Column) -> bool:
    """Whether ``Table.from_pandas`` gives this column the Arrow type describe named,
    with the nulls it counted: numeric and bool numpy data (NaN as null), numpy-backed
    datetimes and durations (NaT as null; ``py:`` and masked columns are left to
    pandas' own export) and pyarrow-backed strings; an index of these too, which
    ``Table.from_pandas`` appends as columns, as describe does."""
    if col.flags - _AS_IS_FLAGS:
        return False
    dtype = col.dtype
    return (
        is_numeric(dtype)
        or dtype in ("bool", "large_string")
        or dtype.startswith(("timestamp[", "duration["))
    )


_AS_IS_FLAGS = frozenset({Flag.NAN_IS_NULL, Flag.NAT_IS_NULL, Flag.ONE_BLOCK, Flag.INDEX})


# Arrow types that pandas keeps as ArrowDtype (shared buffers): see _arrow_backed.
# (Compiled on first use, as the next pattern: a fresh process that converts no pandas data
# pays nothing for them.)
@cache
def _arrow_backed_types() -> re.Pattern[str]:
    return re.compile(
        r"^(decimal|date|time(32|64)|list<|large_list<|fixed_size_list<|struct<|map<"
        r"|binary|large_binary|fixed_size_binary|binary_view|extension<"
        r"|month_day_nano_interval|sparse_union<|dense_union<)"
    )


def _import_copy_reason(col: Column, table: bool, copy: bool | None) -> str:
    """Why importing ``col`` copies it ("" when pandas shares the Arrow buffers).

    Measured on pandas 3 / pyarrow 26: ``Table.to_pandas(split_blocks=True)`` shares
    numeric, datetime, duration and string buffers; ``ChunkedArray.to_pandas`` (a Series)
    copies time-zone-aware timestamps, and strings unless they are large_string taken
    without a ``types_mapper`` (:func:`_shares_large_strings`). pandas' str dtype shares
    large_string only where it is pyarrow's (not with ``mode.string_storage="python"``,
    nor in pandas 2 without ``future.infer_string``: Python objects).
    """
    dtype = col.dtype
    if col.chunks > 1:
        return f"{col.chunks} chunks are concatenated into one pandas array"
    if (is_integer(dtype) or dtype == "bool") and col.nulls < 0:
        return "nulls are unknown until read; with nulls, pandas' masked dtype copies"
    if (is_integer(dtype) or dtype == "bool") and col.nulls > 0:
        return "nulls need pandas' nullable (masked) dtype: data and mask are copied"
    if dtype == "bool":
        return "Arrow booleans are bit-packed; numpy uses a byte each"
    if "list_view<" in dtype or "run_end_encoded<" in dtype:
        return "pandas has no list views or run-end encoding: they are rebuilt as lists, decoded"
    if dtype.startswith(_PANDAS_OWN):
        return "pandas makes its own Period or Interval array of the values"
    if _arrow_backed_types().match(dtype):
        return ""  # pd.ArrowDtype wraps the Arrow array
    numpy_backed = is_numeric(dtype) or dtype.startswith(("timestamp", "duration"))
    if numpy_backed and col.nulls > 0:
        return "nulls are filled with NaN/NaT"
    if numpy_backed and copy:
        return "copy=True: pandas gets its own writable arrays"
    if is_numeric(dtype) or dtype.startswith("duration"):
        return ""
    if dtype.startswith("timestamp"):
        return "" if table or "tz=" not in dtype else "a Series rebuilds zoned timestamps"
    if dtype == "large_string" and _pyarrow_strings():
        return ""  # (a Series: _shares_large_strings)
    if dtype in ("string", "large_string", "string_view"):
        return f"pandas' str dtype builds its own {dtype} storage"
    return f"{dtype} is converted to pandas' representation"


_MASK_ONLY = (
    "nulls need pandas' nullable (masked) dtype: its mask, a byte a row, is made from the "
    "bitmap; the values are shared"
)


def _import_estimate(ctx: Context) -> Estimate:
    info = ctx.info
    if info.kind == Kind.TENSOR:
        raise Unroutable("pandas takes tensors through the Arrow bridge")
    want = ctx.kind or (Kind.TABLE if info.kind == Kind.STREAM else info.kind)
    table = info.kind != Kind.COLUMN or want == Kind.TABLE
    names = [c.name for c in info.columns]
    if len(set(names)) < len(names):
        raise Unroutable(
            "the columns repeat names, which pyarrow's to_pandas mixes up; rename them first"
        )
    if ctx.arrow:
        return _arrow_estimate(ctx, want)
    copies = []
    shared = False
    # Integer columns with nulls whose values the run shares (:func:`_masked_integers`):
    # in a table of numbers (:func:`_numbers_frame`) or a column into a Series.
    # (A column into a DataFrame goes through to_pandas, which copies them.)
    masks_only = (
        not ctx.copy
        and _writes_copy()
        and (
            (want == Kind.TABLE and info.kind != Kind.COLUMN and _numeric_frame(info))
            or (info.kind == Kind.COLUMN and want == Kind.COLUMN)
        )
    )
    for col in info.columns:
        if masks_only and is_integer(col.dtype) and col.nulls > 0 and col.chunks == 1:
            copies.append(Copy(col.name, max(info.rows, 0), _MASK_ONLY))
            shared = True
            continue
        reason = _import_copy_reason(col, table, ctx.copy)
        if reason:
            copies.append(Copy(col.name, col.nbytes, reason))
        elif not _arrow_backed_types().match(col.dtype) and col.nbytes != 0:
            shared = True  # a numpy view of Arrow memory: read-only
    why = "Table.to_pandas(split_blocks=True) shares numeric, timestamp and large_string buffers"
    if info.kind == Kind.STREAM:
        why = "the stream is read into a DataFrame"
    return Estimate(info.but(kind=want), tuple(copies), why=why, shared_readonly=shared)


_ARROW_BACKED = frozenset({Flag.ARROW_BACKED})


def _arrow_estimate(ctx: Context, want: Kind) -> Estimate:
    """``dtype="arrow"``: every column a ``pd.ArrowDtype`` over the Arrow data as it is,
    as ``to_pandas(types_mapper=pd.ArrowDtype)`` and polars'
    ``to_pandas(use_pyarrow_extension_array=True)`` give. Nothing is copied or lost: Arrow
    keeps its nulls beside NaN, every type and unit, integers with nulls as integers.
    ``copy=True`` copies the buffers (pandas never writes Arrow memory: a write to such a
    column makes new Arrow arrays)."""
    info = ctx.info
    if ctx.copy and not ctx.fresh:
        why = "copy=True: pandas gets Arrow buffers of its own"
        copies = tuple(Copy(c.name, c.nbytes, why) for c in info.columns)
    else:
        copies = tuple(
            Copy(c.name, c.nbytes, reason) for c in info.columns if (reason := _unheld(c.dtype))
        )
    cols = tuple(replace(c, flags=c.flags | _ARROW_BACKED) for c in info.columns)
    why = "pd.ArrowDtype columns wrap the Arrow arrays as they are (dtype='arrow')"
    if info.kind == Kind.STREAM:
        why = "the stream is read into a DataFrame of pd.ArrowDtype columns (dtype='arrow')"
    return Estimate(info.but(kind=want, columns=cols), copies, why=why)


def _bind_arrow(ctx: Context) -> Callable[[Any], Any]:
    """:func:`_arrow_import` for a table into a DataFrame or a column into a Series whose
    types pandas holds as they are (:func:`_unheld`), without copy=True: what it does
    without the checks the route key settles (the views' casts, 1.4 us a column)."""
    info = ctx.info
    want = ctx.kind or info.kind
    if ctx.copy or info.kind != want or any(_unheld(c.dtype) for c in info.columns):
        return with_context(_import, ctx)
    if info.kind == Kind.TABLE:
        read_table = arrowkit.read_table
        return lambda value: _arrow_frame(read_table(value))
    if info.kind != Kind.COLUMN:
        return with_context(_import, ctx)
    pd = _pd()
    series_of, wrap, as_chunked = pd.Series, pd.arrays.ArrowExtensionArray, arrowkit.as_chunked
    name = (info.columns[0].name if info.columns else "") or None
    return lambda value: series_of(wrap(as_chunked(value)), name=name, copy=False)


def _unheld(dtype: str) -> str:
    """Why ``pd.ArrowDtype`` cannot hold a column of ``dtype`` as it is ("" where it can):
    pandas 3.1 has no kernels for views (its filters fail) and no ``type`` for list views
    or run-end encoding (its repr fails)."""
    if arrowkit.has_views(dtype):
        return "pd.ArrowDtype cannot filter views: cast to large_string/large_binary"
    if "list_view<" in dtype or "run_end_encoded<" in dtype:
        return "pd.ArrowDtype has no list views or run-end encoding: rebuilt as lists, decoded"
    return ""


def _arrow_import(value: Any, ctx: Context, want: Kind) -> Any:
    """The run of :func:`_arrow_estimate`."""
    pd = _pd()
    info = ctx.info
    if info.kind == Kind.COLUMN:
        col = arrowkit.without_views(arrowkit.as_chunked(value))
        if ctx.copy and not ctx.fresh:
            col = arrowkit.deep_copy(col, Kind.COLUMN)
        name = info.columns[0].name if info.columns else ""
        if want == Kind.TABLE:
            return _arrow_frame(arrowkit.table_from_column(col, name))
        return pd.Series(pd.arrays.ArrowExtensionArray(col), name=name or None, copy=False)
    if any(arrowkit.has_views(c.dtype) for c in info.columns):
        # cast by the producer where it can (polars, on its threads), as its own
        # to_pandas(use_pyarrow_extension_array=True) exports large types
        table = arrowkit.read_table_asking(value, arrowkit.without_views_schema)
    else:
        table = arrowkit.read_table(value)
    table = arrowkit.without_views(table)  # (what the producer left: views, list views)
    if ctx.copy and not ctx.fresh:
        table = arrowkit.deep_copy(table, Kind.TABLE)
    frame = _arrow_frame(table)
    return frame.iloc[:, 0] if want == Kind.COLUMN else frame


def _arrow_frame(table: Any) -> Any:
    """A DataFrame of ``pd.ArrowDtype`` columns sharing ``table``'s buffers, its index and
    column labels rebuilt from pandas metadata where it has some. Extension types and
    unions, which ``to_pandas`` cannot map, are wrapped apart as they are."""
    pa = arrowkit.pa_module()
    pd = _pd()
    meta = table.schema.metadata
    if not (meta and b"pandas" in meta):
        # No index or labels to rebuild: the frame of the columns' extension arrays, what
        # to_pandas(split_blocks=True, types_mapper=pd.ArrowDtype) gives (a test compares
        # them), 70 us where that takes 95 (4 columns of 1,000 rows); with its labels made
        # once (:func:`_frame_of_columns`), 45 us where that takes 201 on a slower machine
        # (an int64 and a string column of 1,000 rows; 144 us through pd.DataFrame).
        wrap = pd.arrays.ArrowExtensionArray
        columns = dict(zip(table.column_names, map(wrap, table.columns), strict=True))
        if columns and len(columns) == table.num_columns:  # (distinct names: labels once)
            return _frame_of_columns(columns, table.num_rows)
        return pd.DataFrame(columns, index=pd.RangeIndex(table.num_rows), copy=False)
    apart = [i for i, f in enumerate(table.schema) if _is_extension(pa, f.type)]
    plain = _unlisted(table.drop_columns([table.column_names[i] for i in apart]))
    frame = _readable_metadata(
        lambda t, _: t.to_pandas(split_blocks=True, types_mapper=pd.ArrowDtype), plain
    )
    places = _places_in_frame(table, _index_fields(table)) if apart else []
    for i in apart:
        column = pd.arrays.ArrowExtensionArray(table.column(i))
        if not frame.shape[1] and len(frame.index) != len(column):
            frame.index = pd.RangeIndex(len(column))
        frame.insert(places[i], table.column_names[i], column)
    return frame


def _nullable_mapper(arrow_type: Any) -> Any:
    """pandas' masked dtypes for integers and booleans with nulls, else as _arrow_backed."""
    pa = arrowkit.pa_module()
    pd = _pd()
    if pa.types.is_boolean(arrow_type):
        return pd.BooleanDtype()
    if pa.types.is_integer(arrow_type):
        return pd.api.types.pandas_dtype(str(arrow_type).capitalize().replace("Uint", "UInt"))
    return _arrow_backed(arrow_type)


def _arrow_backed(arrow_type: Any) -> Any:
    """pandas' ArrowDtype for types numpy cannot hold faithfully (else None); pandas' own
    extension types (Period, Interval) their pandas dtype again (a mapper's None gives a
    column of them its storage's values: ChunkedArray.to_pandas, pyarrow 26)."""
    if _arrow_backed_types().match(arrowkit.dtype_name(arrow_type)):
        if isinstance(arrow_type, arrowkit.pa_module().ExtensionType) and _pandas_own(arrow_type):
            return arrow_type.to_pandas_dtype()
        return _pd().ArrowDtype(arrow_type)
    return None


def _nan_beside_null(data: Any, strict: bool, known: Mapping[int, bool] | None = None) -> None:
    """Report float columns holding both NaN and nulls (pandas' float64 makes both NaN,
    its missing value, so they can no longer be told apart) and temporal columns holding
    INT64_MIN (NaT in pandas: the value would become missing). ``known``: whether a
    column (by position) holds NaN among its valid values, where that was read from its
    converted values (:func:`_filled_holds_nan`): not read again."""
    pa = arrowkit.pa_module()
    named = (
        zip(data.column_names, data.columns, strict=True)
        if hasattr(data, "schema")
        else [("", data)]
    )
    named = list(named)
    losses = arrowkit.nat_collisions(named)
    for i, (name, col) in enumerate(named):
        floats = col.null_count and pa.types.is_floating(col.type)
        if floats and (known[i] if known and i in known else _holds_nan(pa, col)):
            why = "NaN and null both become NaN, pandas' missing value"
            losses.append(Loss(name, f"{col.type} with NaN and nulls", "float64", why))
        if pa.types.is_dictionary(col.type) and pa.types.is_floating(col.type.value_type):
            chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
            if any(_nan_values(pa, c.dictionary) for c in chunks):
                why = "pandas' categories cannot hold NaN: the rows of a NaN value become missing"
                losses.append(Loss(name, f"{col.type} with NaN values", "missing", why))
    report_losses(losses, "pandas", strict)


def _categories_ready(col: Any, repeated: bool = False) -> Any:
    """A dictionary column (Array or ChunkedArray) pandas can make a Categorical of, any
    other column as it is. pandas' categories are unique, non-null and hashable: a
    dictionary of structs, lists or maps (dicts and arrays in pandas) is decoded to its
    values (a type-mapping rule); one whose values hold nulls or NaN (reported by
    :func:`_nan_beside_null`: NaN becomes missing), or, with ``repeated``, repeat (pandas
    finds that, see :func:`_with_categories`), is encoded again over its distinct
    non-null values with 32-bit indices, row by row the same values."""
    pa = arrowkit.pa_module()
    typ = col.type
    if not pa.types.is_dictionary(typ):
        return col
    value_type = typ.value_type
    if _unhashable(pa, value_type):
        return arrowkit.plain_layout(arrowkit.decode_dictionary(col))
    chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    if not repeated and not any(_null_categories(pa, c.dictionary) for c in chunks):
        return col
    pc = require("pyarrow.compute")
    out_type = pa.dictionary(pa.int32(), value_type, typ.ordered)
    fixed = []
    for chunk in chunks:
        values = chunk.dictionary.cast(arrowkit.large_views(pa, value_type))  # (kernels)
        if pa.types.is_floating(value_type):
            values = pc.if_else(pc.is_nan(values), pa.scalar(None, values.type), values)
        distinct = pc.unique(values.drop_null())
        where = pc.index_in(values, value_set=distinct)  # int32
        indices = where.take(chunk.indices)  # a null value's rows become null rows
        distinct = distinct.cast(value_type)
        fixed.append(pa.DictionaryArray.from_arrays(indices, distinct, ordered=typ.ordered))
    if isinstance(col, pa.ChunkedArray):
        return pa.chunked_array(fixed, type=out_type)
    return fixed[0]


def _null_categories(pa: Any, values: Any) -> bool:
    """Whether a dictionary's values hold nulls or NaN (which pandas counts as null)."""
    return bool(values.null_count) or _nan_values(pa, values)


def _nan_values(pa: Any, values: Any) -> bool:
    """Whether float ``values`` (a dictionary's) hold NaN."""
    return bool(pa.types.is_floating(values.type)) and _holds_nan(pa, values)


def _holds_nan(pa: Any, col: Any) -> bool:
    """Whether a float Array or ChunkedArray holds NaN among its valid values. numpy's
    minimum of each chunk's values buffer (NaN propagates) settles it where no slot holds
    NaN, null slots included: 23.5 us for 100,000 float64 values, against 149 us for
    ``pc.any(pc.is_nan(col))``, which then decides (a NaN under a null is no value)."""
    pc = require("pyarrow.compute")
    for chunk in col.chunks if isinstance(col, pa.ChunkedArray) else (col,):
        if _min_is_nan(chunk) is not False and pc.any(pc.is_nan(chunk)).as_py():
            return True
    return False


def _min_is_nan(chunk: Any) -> bool | None:
    """Whether the minimum of a float Arrow array's values buffer, null slots included, is
    NaN (NaN propagates): False says the array holds no NaN. False for no rows; None
    where the buffer cannot be read so (none, or a short one)."""
    if not len(chunk):
        return False
    np = np_module()
    dtype = np.dtype(chunk.type.to_pandas_dtype())
    try:
        values = np.frombuffer(
            chunk.buffers()[1], dtype, count=len(chunk), offset=chunk.offset * dtype.itemsize
        )
    except (TypeError, ValueError):
        return None
    return bool(np.isnan(values.min()))


def _filled_holds_nan(col: Any, filled: Any) -> bool:
    """:func:`_holds_nan` of a float ChunkedArray with nulls, given ``filled``, its values as
    ``to_numpy()`` made them (a NaN for each null): the source's minimum first (a number:
    no NaN), and where that is NaN, which may sit under a null, the NaN in ``filled``
    counted against the nulls (:func:`~interchange_hub._bridge.tensors.nan_count`). A
    column of 10,000,000 float64 values, a tenth null with NaN under them (as a column
    from pandas holds them): 8.5 ms to count against 12.5 for ``pc.any(pc.is_nan(...))``."""
    if all(_min_is_nan(chunk) is False for chunk in col.chunks):
        return False  # (no chunk holds NaN, even under its nulls)
    return bool(nan_count(filled) > col.null_count)


def _unhashable(pa: Any, value_type: Any) -> bool:
    return bool(
        pa.types.is_struct(value_type)
        or pa.types.is_map(value_type)
        or pa.types.is_list(value_type)
        or pa.types.is_large_list(value_type)
        or pa.types.is_fixed_size_list(value_type)
        or pa.types.is_list_view(value_type)
        or pa.types.is_large_list_view(value_type)
    )


def _with_categories(convert: Callable[[Any], Any], data: Any) -> Any:
    """``convert(data)``, a to_pandas call; where pandas refuses a dictionary whose values
    repeat ("Categorical categories must be unique"), once more with its dictionaries
    encoded over their distinct values. (Looking for repeats before would hash every
    dictionary on every conversion: pandas hashes them anyway.)"""
    try:
        return convert(data)
    except ValueError as exc:
        if "categories must be unique" not in str(exc):
            raise
    if isinstance(data, arrowkit.pa_module().Table):
        return convert(_table_categories_ready(data, repeated=True))
    return convert(_categories_ready(data, repeated=True))


def _table_categories_ready(table: Any, repeated: bool = False) -> Any:
    """``table`` with :func:`_categories_ready` applied to its dictionary columns."""
    pa = arrowkit.pa_module()
    for i, field in enumerate(table.schema):
        if pa.types.is_dictionary(field.type):
            col = _categories_ready(table.column(i), repeated)
            if col is not table.column(i):
                table = table.set_column(i, field.with_type(col.type), col)
    return table


def _to_frame(table: Any, copy: bool | None) -> Any:
    return _readable_metadata(lambda t, wrapped: _frame_of(t, copy, wrapped), table)


def _readable_metadata(convert: Callable[[Any, frozenset[str]], Any], table: Any) -> Any:
    """``convert(table, frozenset())``; where pandas cannot read a dtype its metadata
    lists, ``convert`` of the table without those columns' metadata, and their names
    (:func:`_unreadable_dtypes_left_out`)."""
    try:
        return convert(table, frozenset())
    except TypeError as exc:
        if "[pyarrow]' not understood" not in str(exc):
            raise
        table, wrapped = _unreadable_dtypes_left_out(table)
        if not wrapped:
            raise
        return convert(table, wrapped)


def _unreadable_dtypes_left_out(table: Any) -> tuple[Any, frozenset[str]]:
    """``table`` without the pandas metadata of columns whose dtype pandas cannot read
    back (``pd.ArrowDtype`` of a dictionary: "dictionary<values=string, ...>[pyarrow]"
    is written by ``Table.from_pandas`` and refused by ``to_pandas``), and their names:
    they are wrapped in ``pd.ArrowDtype`` again, as they came."""
    meta = table.schema.pandas_metadata or {}
    wrapped = set()
    for col in meta.get("columns", []):
        dtype = col.get("numpy_type", "")
        if isinstance(dtype, str) and dtype.endswith("[pyarrow]"):
            try:
                _pd().api.types.pandas_dtype(dtype)
            except TypeError:
                wrapped.add(col.get("field_name") or col.get("name"))
                col["numpy_type"] = "object"
    if not wrapped:
        return table, frozenset()
    metadata = {**(table.schema.metadata or {}), b"pandas": json.dumps(meta).encode()}
    return table.replace_schema_metadata(metadata), frozenset(wrapped)


def _frame_of(table: Any, copy: bool | None, wrapped: frozenset[str] = frozenset()) -> Any:
    """The DataFrame of ``table`` (see :func:`_to_frame`); the columns named in
    ``wrapped`` are wrapped in ``pd.ArrowDtype`` as they are."""
    pa = arrowkit.pa_module()
    if not all(arrowkit.has_plain_layout(f.type) for f in table.schema):
        # list views and run-end encoding have no pandas block: rebuilt, decoded (a copy)
        table = pa.table(
            [arrowkit.plain_layout(c) for c in table.columns], names=table.column_names
        )
    table = _strings_cast_at_once(_table_categories_ready(table))
    if any(not col.num_chunks for col in table.columns):
        # A column of no chunks (an empty stream from nanoarrow gives them) aborts the
        # process in to_pandas for some types (list_view: "cannot construct ChunkedArray
        # from empty vector", pyarrow 26): each gets one empty chunk of its type.
        table = pa.Table.from_arrays(
            [c if c.num_chunks else pa.chunked_array([pa.nulls(0, c.type)]) for c in table.columns],
            schema=table.schema,
        )
    needs_mask = [
        i
        for i, col in enumerate(table.columns)
        if col.null_count and (pa.types.is_integer(col.type) or pa.types.is_boolean(col.type))
    ]
    # Extension types (opaque, bool8, uuid, ...) and unions are wrapped as they are, by
    # pd.ArrowDtype (to_pandas with a types_mapper fails on them, or turns their storage
    # into floats; it has no pandas block for unions).
    extension = [
        i
        for i, (name, col) in enumerate(zip(table.column_names, table.columns, strict=True))
        if _is_extension(pa, col.type) or name in wrapped
    ]
    mapper = _arrow_backed
    masked_types = {table.column(i).type for i in needs_mask}
    # A table with pandas metadata (which _numbers_frame leaves to this path: its index
    # and dtypes are rebuilt from it) shares its integer columns' values as the table of
    # numbers does (the plan cannot tell the two apart): they go apart, not by the mapper.
    meta = table.schema.metadata
    shares = not copy and _writes_copy() and bool(meta and b"pandas" in meta)
    if (
        masked_types
        and not shares
        and not masked_types
        & {col.type for i, col in enumerate(table.columns) if i not in needs_mask}
    ):
        # Each type of the columns with nulls is theirs alone: to_pandas makes the masked
        # arrays itself, through a mapper by type (a frame.insert each costs 0.1-0.3 ms).
        def mapper(arrow_type: Any) -> Any:
            if arrow_type in masked_types:
                return _nullable_mapper(arrow_type)
            return _arrow_backed(arrow_type)

        needs_mask = []
    apart = sorted({*needs_mask, *extension})
    plain = _unlisted(table.drop_columns([table.column_names[i] for i in apart]))
    # split_blocks shares Arrow's buffers (read-only); copy=True wants writable arrays.
    frame = _with_categories(
        lambda t: t.to_pandas(split_blocks=not copy, types_mapper=mapper), plain
    )
    places = _places_in_frame(table, _index_fields(table)) if apart else []
    for i in apart:
        if i in extension:
            column = _pd().arrays.ArrowExtensionArray(table.column(i))
        elif shares and pa.types.is_integer(table.column(i).type):
            # (as a Series: insert copies an array, and shares a Series' values)
            values = _masked_integers(table.column(i), share=True)
            if not frame.shape[1] and len(frame.index) != len(values):
                # no column yet (all apart): an array inserted first would set the rows
                frame.index = _pd().RangeIndex(len(values))
            column = _pd().Series(values, index=frame.index, copy=False)
        else:
            column = table.column(i).to_pandas(types_mapper=_nullable_mapper).array
        frame.insert(places[i], table.column_names[i], column)
    if copy:
        for i in range(frame.shape[1]):
            if _read_only(frame.iloc[:, i].array):  # e.g. categorical codes viewing Arrow
                frame.isetitem(i, frame.iloc[:, i].copy(deep=True))
    typed = [
        (i, col)
        for i, col in enumerate(table.columns)
        if pa.types.is_dictionary(col.type) and table.column_names[i] not in wrapped
    ]
    if typed:
        # (their places among the frame's columns: the table's less the index levels that
        # pandas' metadata restored, a CategoricalIndex being a dictionary column too)
        index = _index_fields(table)
        places = _places_in_frame(table, index)
        for i, col in typed:
            at = places[i]
            if table.column_names[i] not in index and at < frame.shape[1]:
                frame.isetitem(at, _typed_categories(frame.iloc[:, at], col.type))
    return frame


def _places_in_frame(table: Any, index: frozenset[str]) -> list[int]:
    """Where each of the table's columns goes among the frame's columns: after the
    columns before it, less the index levels (``index``) pandas' metadata makes of them."""
    places, at = [], 0
    for name in table.column_names:
        places.append(at)
        at += name not in index
    return places


def _index_fields(table: Any) -> frozenset[str]:
    """The fields of ``table`` that pandas' metadata names as index levels."""
    try:
        meta = table.schema.pandas_metadata or {}
    except Exception:  # noqa: BLE001 - unreadable metadata: no index levels
        return frozenset()
    return frozenset(n for n in meta.get("index_columns", ()) if isinstance(n, str))


def _strings_cast_at_once(table: Any) -> Any:
    """``table`` with its string and string_view columns cast to large_string on threads,
    in slices of rows (:func:`arrowkit.cast_columns`), where pandas would make them its
    pyarrow-backed ``str`` dtype: ``StringDtype.__from_arrow__`` casts each to
    large_string itself, one after the other inside ``to_pandas`` (a whole column at once:
    its scratch memory is as large as the result's offsets), which then shares the cast
    arrays as they are. The same frame, in more chunks, the casts side by side: a polars
    frame of two string_view columns of 1,000,000 rows, 14.8 ms before, against 8.3 ms
    for polars' own ``to_pandas`` (which exports large_string, cast on polars' threads).

    Only for tables without pandas metadata (whose columns pyarrow may give another
    dtype: ``object``, ``string[python]``), and only where pandas' default string dtype is
    pyarrow-backed; below :data:`arrowkit.PARALLEL_CAST_BYTES`, ``cast_columns`` leaves
    the casts to pandas (a table as it is)."""
    pa = arrowkit.pa_module()
    schema = table.schema
    small = (pa.string(), pa.string_view())
    where = [i for i, t in enumerate(schema.types) if t in small]
    if not where or (schema.metadata and b"pandas" in schema.metadata):
        return table
    columns = table.columns
    if sum(columns[i].nbytes for i in where) < arrowkit.PARALLEL_CAST_BYTES:
        return table
    if _default_string_storage() != "pyarrow":
        return table
    for i in where:
        schema = schema.set(i, schema.field(i).with_type(pa.large_string()))
    return arrowkit.cast_columns(table, schema)


def _large_strings(schema: Any) -> Any:
    """``schema`` with its string_view columns as large_string (the storage of pandas'
    pyarrow-backed ``str`` dtype, which ``StringDtype.__from_arrow__`` casts them to), or
    as it is where pandas' strings are not pyarrow-backed."""
    if _default_string_storage() != "pyarrow":
        return schema
    pa = arrowkit.pa_module()
    view = pa.string_view()
    fields = [f.with_type(pa.large_string()) if f.type == view else f for f in schema]
    return pa.schema(fields, metadata=schema.metadata)


def _default_string_storage() -> str:
    """The storage of pandas' default string dtype (pandas 3: ``StringDtype(na_value=nan)``,
    the ``str`` dtype pyarrow's ``to_pandas`` gives strings), or "" where pandas keeps
    strings as ``object``: :func:`_string_dtype`'s, kept per state of pandas' options
    (0.4 us; ``pandas_dtype("str")`` took 20.5 us a call)."""
    dtype = _string_dtype()
    return str(dtype.storage) if isinstance(dtype, _pd().StringDtype) else ""


def _unlisted(table: Any) -> Any:
    """``table`` whose pandas metadata lists only its own columns: to_pandas parses the
    dtype of every column listed there, and pandas cannot parse a union's
    (``sparse_union<...>[pyarrow]``), which a frame holding one exports."""
    meta = table.schema.metadata or {}
    doc = meta.get(b"pandas")
    if doc is None:
        return table
    kept = _kept_metadata(doc, tuple(table.column_names))
    if kept is None:
        return table
    return table.replace_schema_metadata({**meta, b"pandas": kept})


@lru_cache(maxsize=256)
def _kept_metadata(doc: bytes, names: tuple[str, ...]) -> bytes | None:
    """The pandas metadata ``doc`` listing only the columns ``names`` (and its index), or
    None when it lists no other: parsed once per (metadata, columns), not on every
    conversion of the frames a table of that schema makes."""
    parsed = json.loads(doc)
    index = {c for c in parsed.get("index_columns", []) if isinstance(c, str)}
    known = set(names) | index
    listed = parsed.get("columns", [])
    kept = [c for c in listed if c.get("field_name", c.get("name")) in known]
    if len(kept) == len(listed):
        return None
    return json.dumps({**parsed, "columns": kept}).encode()


def _is_extension(pa: Any, arrow_type: Any) -> bool:
    """Whether a column is wrapped whole in an ArrowExtensionArray (extension types, and
    unions, which have no pandas block)."""
    # A tensor column too: pd.ArrowDtype keeps its type (the shape) and its buffers. Not
    # pandas' own extension types (Period, Interval: pandas registers them with pyarrow),
    # which to_pandas makes pandas' dtypes of again, as pandas' own round trip does.
    if isinstance(arrow_type, pa.ExtensionType):
        return not _pandas_own(arrow_type)
    return bool(pa.types.is_union(arrow_type))


# pandas' own extension types (PeriodDtype as pandas.period, IntervalDtype as
# pandas.interval: pandas registers them with pyarrow), and their names as
# arrowkit.dtype_name spells them (what the import's estimate reads)
_PANDAS_OWN_TYPES = ("pandas.period", "pandas.interval")
_PANDAS_OWN = tuple(f"extension<{name}<" for name in _PANDAS_OWN_TYPES)


def _pandas_own(arrow_type: Any) -> bool:
    """Whether an Arrow extension type is one pandas made of its own dtype: its
    ``to_pandas_dtype()`` is that dtype, which reads Arrow (``__from_arrow__``)."""
    return getattr(arrow_type, "extension_name", None) in _PANDAS_OWN_TYPES


def _typed_categories(series: Any, arrow_type: Any) -> Any:
    """The Categorical of a dictionary column with the categories' type its values had:
    pandas gives an empty dictionary object categories, which export as Arrow nulls, and
    pyarrow's to_pandas drops a zoned timestamp's zone from the categories (their UTC
    instants, naive: pyarrow 26), which are given it back."""
    pd = _pd()
    if not isinstance(series.dtype, pd.CategoricalDtype):
        return series
    categories = series.cat.categories
    tz = getattr(arrow_type.value_type, "tz", None)
    if tz and isinstance(categories, pd.DatetimeIndex) and categories.tz is None:
        return series.cat.rename_categories(categories.tz_localize("UTC").tz_convert(tz))
    if len(categories) or not is_string(arrowkit.dtype_name(arrow_type.value_type)):
        return series
    return series.cat.set_categories(pd.Index([], dtype="str"))


def _read_only(arr: Any) -> bool:
    parts = (getattr(arr, attr, None) for attr in ("_ndarray", "_data", "_codes"))
    return any(p is not None and hasattr(p, "flags") and not p.flags.writeable for p in parts)


def _import(value: Any, ctx: Context) -> Any:
    info = ctx.info
    want = ctx.kind or (Kind.TABLE if info.kind == Kind.STREAM else info.kind)
    if ctx.arrow:
        return _arrow_import(value, ctx, want)
    if info.kind == Kind.COLUMN:
        col = arrowkit.as_chunked(value)
        col = arrowkit.plain_layout(col)  # list views, run-end encoding: see _to_frame
        if not col.num_chunks:  # to_pandas aborts on no chunks of some types (see _to_frame)
            col = arrowkit.pa_module().chunked_array([arrowkit.pa_module().nulls(0, col.type)])
        _nan_beside_null(col, ctx.strict)
        col = _categories_ready(col)  # (after: NaN among its values is reported above)
        name = info.columns[0].name if info.columns else ""
        if want == Kind.TABLE:
            return _to_frame(arrowkit.table_from_column(col, name), ctx.copy)
        if _is_extension(arrowkit.pa_module(), col.type):
            series = _pd().Series(_pd().arrays.ArrowExtensionArray(col), copy=False)
        elif col.null_count and not ctx.copy and arrowkit.pa_module().types.is_integer(col.type):
            series = _pd().Series(_masked_integers(col, share=True), copy=False)
        elif _shares_large_strings(col):
            series = col.to_pandas()  # (shared: to_pandas with a types_mapper copies)
        else:
            mapper = _nullable_mapper if col.null_count else _arrow_backed
            series = _with_categories(lambda c: c.to_pandas(types_mapper=mapper), col)
        if series.dtype == object and is_string(str(col.type)) and col.null_count == len(col):
            # pandas gives an empty string column object dtype, and pyarrow an all-null one
            # given a types_mapper (to_pandas() without one: str)
            text = _string_dtype()
            if text is not None:
                series = series.astype(text)
            elif not len(series):
                series = series.astype("str")
        if arrowkit.pa_module().types.is_dictionary(col.type):
            series = _typed_categories(series, col.type)
        if ctx.copy and _read_only(series.array):
            series = series.copy(deep=True)  # to_pandas may hand out a read-only view
        series = series.rename(name or None)
        return series if ctx.copy else share_on_write(series)
    if any(c.dtype == "string_view" for c in info.columns):
        # pandas' str dtype casts string_view to large_string: asked of the producer first
        table = arrowkit.read_table_asking(value, _large_strings)
    else:
        table = arrowkit.read_table(value)
    if want == Kind.TABLE and not ctx.copy and _numeric_frame(info):
        out = _numbers_frame(ctx)(table)
        if out is not None:
            return out
    _nan_beside_null(table, ctx.strict)
    frame = _to_frame(table, ctx.copy)
    if want == Kind.COLUMN:
        frame = frame.iloc[:, 0]
    return frame if ctx.copy else share_on_write(frame)


def _import_bind(ctx: Context) -> Callable[[Any], Any]:
    """For an Arrow column of numbers or booleans into a Series, :func:`_import` without
    what its type rules out (list views, run-end encoding, extension types, dictionaries,
    NaT collisions), the name set on the new Series instead of ``rename`` (a copy of the
    Series, 7 us) and the mapper chosen by the nulls; NaN beside nulls is still checked
    on every call. Anything else: :func:`_import` as it is."""
    info = ctx.info
    want = ctx.kind or info.kind
    cols = info.columns
    if ctx.arrow:
        return _bind_arrow(ctx)
    if info.kind == Kind.TABLE and want == Kind.TABLE and not ctx.copy:
        if _numeric_frame(info):
            return _bind_numeric_frame(ctx)
        if _plain_frame(info):
            return _bind_frame(ctx)
    if (
        info.kind != Kind.COLUMN
        or want != Kind.COLUMN
        or ctx.copy
        or len(cols) != 1
        or not (is_numeric(cols[0].dtype) or cols[0].dtype == "bool")
    ):
        return with_context(_import, ctx)
    general = with_context(_import, ctx)
    name = cols[0].name or None
    floating = cols[0].dtype.startswith(("float", "halffloat"))
    integral = is_integer(cols[0].dtype)
    series_of = _pd().Series
    strict = ctx.strict
    read_one_chunk = arrowkit.read_one_chunk
    array, chunked = arrowkit.pa_module().Array, arrowkit.pa_module().ChunkedArray
    # An Array of numbers without nulls: its numpy view (what to_pandas wraps) into the
    # Series pd.Series makes of it, by pandas' own calls (13 us by to_pandas, about 6)
    kept = integral or cols[0].dtype in ("float32", "float64")  # (booleans: bit-packed)
    view_series = pandas_native.numpy_series(cols[0].dtype) if kept else None

    def series(value: Any) -> Any:
        if isinstance(value, array):  # as it is, as a ChunkedArray of it (0.7 us less)
            col = value
        else:  # (an Array where the producer has the C array interface: 0.7 us less)
            col = read_one_chunk(value)
            if type(col) is chunked and not col.num_chunks:
                return general(col)
        nulls = col.null_count
        if nulls and floating:
            _nan_beside_null(col, strict)
        if nulls and integral:
            return share_on_write(
                series_of(_masked_integers(col, share=True), name=name, copy=False)
            )
        if not nulls and view_series is not None:
            if type(col) is chunked and col.num_chunks == 1:  # (a polars Series' stream)
                col = col.chunk(0)
            if isinstance(col, array):
                return share_on_write(view_series(col.to_numpy(zero_copy_only=True), name))
        out = col.to_pandas(types_mapper=_nullable_mapper) if nulls else col.to_pandas()
        if out.name != name:  # (the setter costs 0.9 us; to_pandas names from pyarrow's
            out.name = name  # own _name, which Table.column sets): in place, as rename
        return share_on_write(out)

    return series


# Arrow types whose columns to_pandas(split_blocks=True) turns into pandas columns with
# nothing else to do (what _to_frame leaves as they are); integers and booleans only
# without nulls (with nulls they become masked arrays, apart).
@cache
def _plain_frame_type() -> re.Pattern[str]:
    return re.compile(
        r"^(?:u?int(?:8|16|32|64)|float(?:16|32|64)|halffloat|double|bool|large_string"
        r"|string|date32\[day\]|timestamp\[(?:s|ms|us|ns)(?:, tz=[^\]]+)?\]"
        r"|duration\[(?:s|ms|us|ns)\])$"
    )


def _plain_frame(info: DataInfo) -> bool:
    """A table whose every column :func:`_plain_frame_type` names, or is string_view
    (read as large strings: :func:`_bind_frame`), with its nulls known."""
    if not info.known or not info.columns:
        return False
    for col in info.columns:
        if col.nulls < 0 or col.chunks < 1:
            return False
        if col.dtype != "string_view" and not _plain_frame_type().match(col.dtype):
            return False
        if col.nulls and (col.dtype == "bool" or "int" in col.dtype):
            return False
    return True


def _bind_frame(ctx: Context) -> Callable[[Any], Any]:
    """A plain table (:func:`_plain_frame`) into a DataFrame: :func:`_to_frame` without
    what the types rule out (layouts to rebuild, masks, extension types, dictionaries):
    the frame made a column at a time (:func:`_frame_by_columns`) where its types allow,
    else one ``to_pandas(split_blocks=True)`` call; NaN beside nulls and INT64_MIN in
    temporal columns are still checked on every call, where a column can hold them. A
    table holding string_view columns (polars') is read as :func:`_import` reads it
    (large strings asked of its producer), its strings cast on threads where they are
    large (:func:`_strings_cast_at_once`); :func:`_to_frame` where it cannot be made a
    column at a time."""
    info = ctx.info
    check = any(
        (c.nulls and c.dtype.startswith(("float", "halffloat", "double")))
        or c.dtype.startswith(("timestamp", "duration"))
        for c in info.columns
    )
    strict, read_table = ctx.strict, arrowkit.read_table
    read_asking = arrowkit.read_table_asking
    strings = _column_strings(info)
    views = any(c.dtype == "string_view" for c in info.columns)
    # (string_view columns only: as _to_frame casts them; string and large_string columns
    # are left to pandas' own cast, as to_pandas leaves them: 1,000,000 rows of two string
    # columns cast on threads took 3.0 ms, left to pandas 1.9)
    cast_strings = strings is not None and views

    def frame(value: Any) -> Any:
        table = read_table(value) if not views else read_asking(value, _large_strings)
        if check:
            _nan_beside_null(table, strict)
        out = None
        if strings is not None:
            out = _frame_by_columns(
                _strings_cast_at_once(table) if cast_strings else table, strings
            )
        if out is None:
            if views:
                return share_on_write(_to_frame(table, None))
            out = _unlisted(table).to_pandas(split_blocks=True, types_mapper=_arrow_backed)
        return share_on_write(out)

    return frame


@cache
def _by_column_type() -> re.Pattern[str]:
    """The types :func:`_frame_by_columns` converts: numbers, booleans, strings,
    timestamps without a time zone and durations."""
    return re.compile(
        r"^(?:u?int(?:8|16|32|64)|float(?:16|32|64)|halffloat|double|bool|large_string"
        r"|string|string_view|timestamp\[(?:s|ms|us|ns)\]|duration\[(?:s|ms|us|ns)\])$"
    )


def _column_strings(info: DataInfo) -> tuple[bool, ...] | None:
    """For a plain table (:func:`_plain_frame`) that :func:`_frame_by_columns` makes,
    whether each column holds strings; None for one it leaves to ``to_pandas`` (dates,
    time zones, repeated names), or where pandas has no constructor from blocks."""
    cols = info.columns
    if len({c.name for c in cols}) != len(cols) or _blocks_frame_maker() is None:
        return None
    if not all(_by_column_type().match(c.dtype) for c in cols):
        return None
    return tuple(c.dtype in ("string", "large_string", "string_view") for c in cols)


def _frame_by_columns(table: Any, strings: tuple[bool, ...]) -> Any:
    """The frame ``table.to_pandas(split_blocks=True)`` makes of a table without pandas
    metadata whose columns :func:`_column_strings` describes (a test compares them over
    each type, nulls, chunks, slices, no rows), made a column at a time, as pyarrow
    makes each (``to_numpy``, sharing Arrow's buffer where it holds no nulls in one
    chunk; strings by pandas' string dtype's ``__from_arrow__``), into a frame of them
    whose column labels are made once (:func:`_frame_of_columns`): ``to_pandas`` makes
    them on each call. 5 columns (int64, float64, string, bool, timestamp) of 1,000
    rows: 151 us against 282. None where it cannot: pandas metadata, a column of no
    chunks, strings that pandas keeps as objects."""
    meta = table.schema.metadata
    if meta and b"pandas" in meta:
        return None
    string_dtype = _string_dtype() if True in strings else None
    columns = {}
    for name, col, text in zip(table.column_names, table.columns, strings, strict=True):
        if not col.num_chunks:
            return None
        if not text:
            columns[name] = col.to_numpy()
        elif string_dtype is None:
            return None
        else:
            columns[name] = string_dtype.__from_arrow__(col)
    return _frame_of_columns(columns, table.num_rows)


# The dtype to_pandas gives a table's string columns, per state of pandas' string options
# (:func:`_string_options`), or None where it gives them as objects.
_STRING_DTYPES: dict[Hashable, Any] = {}


def _pyarrow_strings() -> bool:
    """Whether pandas' str dtype is pyarrow's now (it then keeps large_string's buffers)."""
    dtype = _string_dtype()
    return dtype is not None and getattr(dtype, "storage", None) == "pyarrow"


def _shares_large_strings(col: Any) -> bool:
    """Whether ``col`` (a ChunkedArray) is large_string that pandas' str dtype, pyarrow's,
    takes as it is: ``to_pandas()`` without a ``types_mapper`` shares its buffers."""
    return arrowkit.pa_module().types.is_large_string(col.type) and _pyarrow_strings()


def _string_dtype() -> Any:
    """The pandas dtype of ``to_pandas``' string columns (pandas 3: ``str``, pyarrow's
    ``StringDtype(na_value=nan)``), asked of pyarrow once per state of the options that
    choose it; None where it is not an extension dtype (strings as Python objects)."""
    key = _string_options()
    try:
        return _STRING_DTYPES[key]
    except KeyError:
        pass
    pa = arrowkit.pa_module()
    dtype = pa.table({"s": pa.array(["a"], pa.large_string())}).to_pandas().dtypes.iloc[0]
    made = dtype if callable(getattr(dtype, "__from_arrow__", None)) else None
    _STRING_DTYPES[key] = made
    return made


# The Arrow types a table of numbers is made of, for _bind_numeric_frame: integers (with
# nulls or without), float32 and float64 (nulls as NaN), booleans without nulls.
_NUMERIC_FRAME_TYPES = frozenset(
    ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
    + ["float32", "float64", "bool"]
)


def _numeric_frame(info: DataInfo) -> bool:
    """A table of :data:`_NUMERIC_FRAME_TYPES` columns with distinct names, values
    aligned to their width, nulls known, some in an integer column and none in a boolean
    one (without nulls in its integers, a
    table of numbers is a plain frame, one ``to_pandas`` as fast: :func:`_bind_frame`)."""
    cols = info.columns
    if not info.known or not cols or len({c.name for c in cols}) != len(cols):
        return False
    if not any(c.nulls and is_integer(c.dtype) for c in cols):
        return False
    return all(
        c.dtype in _NUMERIC_FRAME_TYPES
        and c.nulls >= 0
        and c.chunks >= 1
        and not (c.nulls and c.dtype == "bool")
        and Flag.UNALIGNED not in c.flags
        for c in cols
    )


def _bind_numeric_frame(ctx: Context) -> Callable[[Any], Any]:
    """A table of numbers (:func:`_numeric_frame`) into a DataFrame, a column at a time,
    with the result ``to_pandas(types_mapper=...)`` gives (a test compares them): each
    column's ``to_numpy()`` (a view of Arrow's buffer without nulls, NaN in a copy for a
    float column's nulls, looked at for NaN among its values as it is made: from
    :data:`_FILLED_FROM_ROWS` rows in one pass, ``tensors.nan_filled``, below by
    :func:`_filled_holds_nan`), an integer column with nulls as a masked array made from
    its buffers (:func:`_masked_integers`), one ``pd.DataFrame`` of them.

    ``to_pandas`` costs 240-350 us for 1,000 rows before it converts anything, and
    pandas' ``__from_arrow__`` builds a masked array's mask through a boolean Arrow array
    and copies it again to invert it: for two columns (int64 and float64, a tenth null)
    of 1,000,000 rows this took 2.7 ms, ``to_pandas(types_mapper=...)`` 4.9 ms. A table
    carrying pandas metadata (an index to rebuild), a boolean column holding nulls or a
    column of no chunks goes the general way (:func:`_import`)."""
    general = with_context(_import, ctx)
    read_table, numbers = arrowkit.read_table, _numbers_frame(ctx)

    def frame(value: Any) -> Any:
        table = read_table(value)
        out = numbers(table)
        return general(table) if out is None else out

    return frame


def _numbers_frame(ctx: Context) -> Callable[[Any], Any]:
    """``frame(table) -> DataFrame | None`` for :func:`_bind_numeric_frame` and
    :func:`_import` (the same frame from both): None for a table the general way takes
    (pandas metadata, a column of no chunks, a boolean column holding nulls)."""
    strict = ctx.strict
    cols = ctx.info.columns
    check = any(c.nulls and is_float(c.dtype) for c in cols)
    # What each column is, by position (the route key fixes the schema): 1 an integer
    # column, 2 a boolean one, 0 a float32 or float64 one (_NUMERIC_FRAME_TYPES).
    kinds = tuple(1 if is_integer(c.dtype) else 2 if c.dtype == "bool" else 0 for c in cols)
    frame_of = _frame_of_columns

    def frame(table: Any) -> Any:
        meta = table.schema.metadata
        if meta and b"pandas" in meta:
            return None
        data = {}
        known = {}  # (of the float columns with nulls: NaN among their values?)
        for i, (name, col, kind) in enumerate(
            zip(table.column_names, table.columns, kinds, strict=True)
        ):
            if not col.num_chunks:
                return None
            if not col.null_count:
                data[name] = col.to_numpy()
            elif kind == 0 and col.num_chunks == 1 and len(col) >= _FILLED_FROM_ROWS:
                # a float column: NaN for its nulls, and NaN among its values, in one pass
                data[name], known[i] = nan_filled(col.chunk(0))
            elif kind == 0:
                data[name] = filled = col.to_numpy()
                known[i] = _filled_holds_nan(col, filled)
            elif kind == 1:
                data[name] = _masked_integers(col, share=True)
            else:  # (a boolean column holding nulls)
                return None
        if check:
            _nan_beside_null(table, strict, known)
        return share_on_write(frame_of(data, table.num_rows))

    return frame


# From this many rows a float column with nulls is made into numpy and looked at for NaN
# in one pass (:func:`~interchange_hub._bridge.tensors.nan_filled`); below, its
# ``to_numpy()`` and then :func:`_filled_holds_nan` (every tenth value null, medians:
# 16,384 rows 30.1 us that way, 31.6 in one pass; 65,536 rows 194.8 and 168.6; a tenth
# null at random with NaN under them, as from pandas: 46.0 and 42.6, 298.9 and 226.3).
_FILLED_FROM_ROWS = 1 << 15


def _frame_of_columns(columns: dict[str, Any], rows: int) -> Any:
    """``pd.DataFrame(columns, copy=False)`` (a dict of 1-D numpy arrays and pandas
    extension arrays of ``rows`` values, by distinct names), each column its own block as
    that makes them, through pandas' constructor of frames from blocks
    (``pandas.api.internals.create_dataframe_from_blocks``, pandas 3) with column labels
    made once per tuple of names (:func:`_labels`): pandas makes an Index of string labels
    as its pyarrow-backed ``str`` dtype, 63 us for two names (on a machine where a frame
    of an Int64 and a float64 column of 1,000 rows took 124 us through ``pd.DataFrame``,
    26 so). Where pandas has no such constructor: ``pd.DataFrame`` itself."""
    pd = _pd()
    make = _blocks_frame_maker()
    if make is None:
        return pd.DataFrame(columns, index=pd.RangeIndex(rows), copy=False)
    blocks = []
    place, ndarray = np_module().array, np_module().ndarray
    for i, values in enumerate(columns.values()):
        if type(values) is ndarray:
            values = values.reshape(1, -1)  # (a view: numpy's blocks hold rows of columns)
        blocks.append((values, place([i])))
    return make(blocks, index=pd.RangeIndex(rows), columns=_labels(tuple(columns)))


@cache
def _blocks_frame_maker() -> Callable[..., Any] | None:
    """pandas' ``create_dataframe_from_blocks`` (pandas 3, the call pyarrow's
    ``to_pandas`` makes), or None where pandas has none."""
    try:
        from pandas.api.internals import create_dataframe_from_blocks
    except ImportError:
        return None
    return create_dataframe_from_blocks  # type: ignore[no-any-return]


# Column labels made per tuple of names and the options that decide the dtype pandas
# gives string labels (:func:`_string_options`); a frame gets a view of one (an Index of
# its own, whose name is set apart, over the same immutable values).
_LABELS: dict[tuple[Hashable, tuple[str, ...]], Any] = {}


def _labels(names: tuple[str, ...]) -> Any:
    """The column labels of a frame of columns named ``names``, what ``pd.DataFrame``
    makes of a dict's keys: a view of the Index kept for those names where its values
    can be made read-only (:func:`_sealed_labels`), else a new Index."""
    options = _string_options()
    key = (options, names)
    labels = _LABELS.get(key)
    if labels is None:
        # (what pd.DataFrame makes of a dict's keys: names are strings, never a range)
        labels = _pd().Index(list(names))
        if not _sealed_labels(labels, options):
            return labels  # (values a frame could write to: an Index of its own)
        if len(_LABELS) >= 256:
            _LABELS.clear()
        _LABELS[key] = labels
    return labels.view()


# Whether, for each state of pandas' string options, an Index of string labels can be
# made read-only (:func:`_sealed_labels`), as found once on a probe.
_SEALABLE: dict[Hashable, bool] = {}


def _sealed_labels(labels: Any, options: Hashable) -> bool:
    """Make the values of ``labels`` read-only, so that frames can share them: an
    in-place write to one frame's labels (``df.columns.values[0] = "z"``, which pandas
    3.0's pyarrow-backed labels and object labels allow) would rename the columns of every
    frame sharing them. Whether that holds, found once per state of the options on a
    probe Index (written to through ``values``, ``array`` and ``np.asarray``, then read
    back); False where it does not: each frame then gets labels of its own."""
    sealable = _SEALABLE.get(options)
    if sealable is None:
        probe = _pd().Index(["a", "b"])
        _seal(probe)
        writes: tuple[Callable[[], Any], ...] = (
            lambda: probe.values.__setitem__(0, "z"),
            lambda: probe.array.__setitem__(0, "z"),
            lambda: np_module().asarray(probe).__setitem__(0, "z"),
        )
        for write in writes:
            try:
                write()
            except Exception:  # noqa: BLE001, S110 - refused: what sealing is for
                pass
        sealable = _SEALABLE[options] = list(probe) == ["a", "b"]
    if sealable:
        _seal(labels)
    return sealable


def _seal(labels: Any) -> None:
    """The values of an Index made read-only where pandas keeps a flag for it: a numpy
    array's ``writeable``, a pyarrow-backed array's ``_readonly`` (pandas 3.0 leaves it
    False for an Index; 3.1 sets it)."""
    data = getattr(labels, "_data", None)
    if isinstance(data, np_module().ndarray):
        data.flags.writeable = False
    elif data is not None and hasattr(data, "_readonly"):
        data._readonly = True


def _string_options() -> Hashable:
    """The options that decide the dtype pandas gives an Index of strings
    (``future.infer_string``, ``mode.string_storage``), read from pandas' store of
    options (0.1 us; ``pd.get_option`` takes 2-6 us each), else through ``get_option``."""
    options = _option_store()
    if options is not None:
        try:
            return (options["future"]["infer_string"], options["mode"]["string_storage"])
        except (KeyError, TypeError):
            pass
    get = _pd().get_option
    with warnings.catch_warnings():  # (pandas 3 says future.infer_string is deprecated)
        warnings.simplefilter("ignore")
        try:
            return (get("future.infer_string"), get("mode.string_storage"))
        except Exception:  # noqa: BLE001 - an option pandas removed: the one left
            return str(get("mode.string_storage"))


@cache
def _option_store() -> Any:
    """pandas' dict of option values (``pandas._config.config._global_config``), None
    where pandas keeps them elsewhere."""
    try:
        from pandas._config.config import _global_config
    except ImportError:
        return None
    return _global_config if isinstance(_global_config, dict) else None


def _writes_copy() -> bool:
    """Whether pandas copies a block that another object refers to before writing to it
    (copy-on-write: always in pandas 3, the ``mode.copy_on_write`` option in pandas 2),
    which :func:`share_on_write` relies on to keep shared memory from being written."""
    if _pandas_3():
        return True
    return _pd().options.mode.copy_on_write is True


@cache
def _pandas_3() -> bool:
    return int(_pd().__version__.split(".")[0]) >= 3


def _masked_integers(col: Any, share: bool = False) -> Any:
    """An Arrow integer Array or ChunkedArray with nulls as pandas' masked array (Int64,
    UInt8, ...), made from its buffers: the mask unpacked from the validity bitmap,
    inverted a byte per eight rows; the values copied once (pandas' ``__from_arrow__``
    copies them: writable memory of pandas' own) or, with ``share`` and one chunk, a
    read-only view of Arrow's buffer, which the caller makes safe to write to with
    :func:`share_on_write` (pandas copies the column on its first write, as for the
    numeric columns ``to_pandas(split_blocks=True)`` shares), where pandas copies before
    writing (:func:`_writes_copy`).
    It equals what pandas' ``__from_arrow__`` makes (values under nulls included): 12.8
    ms for 10,000,000 int64 values, against 34.9 ms through ``to_pandas`` with a
    ``types_mapper``, which builds the mask as a boolean Arrow array and inverts a copy;
    shared, the values cost nothing (a polars frame of an int64 and a float64 column,
    a tenth null, 10,000,000 rows into pandas: 22.2 ms copied, 13.3 ms shared)."""
    np = np_module()
    pa = arrowkit.pa_module()
    chunks = [c for c in (col.chunks if isinstance(col, pa.ChunkedArray) else (col,)) if len(c)]
    dtype = np.dtype(col.type.to_pandas_dtype())
    parts = [_chunk_masked(np, dtype, c) for c in chunks]
    if len(parts) == 1:
        values, mask = parts[0]
        if share and _writes_copy():
            values = values.view()  # (read-only: a write goes through pandas' copy)
            values.flags.writeable = False
        else:
            values = values.copy()
    elif parts:
        values = np.concatenate([v for v, _ in parts])
        mask = np.concatenate([m for _, m in parts])
    else:
        values, mask = np.empty(0, dtype), np.empty(0, np.bool_)
    return _pd().arrays.IntegerArray(values, mask, copy=False)


def _chunk_masked(np: Any, dtype: Any, chunk: Any) -> tuple[Any, Any]:
    """A chunk's values (a view of its buffer) and its mask (True where null, new)."""
    rows, offset = len(chunk), chunk.offset
    validity, data = chunk.buffers()[:2]
    values = np.frombuffer(data, dtype, count=rows, offset=offset * dtype.itemsize)
    if validity is None or not chunk.null_count:
        return values, np.zeros(rows, np.bool_)
    return values, null_mask(chunk)


@cache
def _concat_options() -> dict[str, bool]:
    """``union_categories=True`` where ``pd.concat`` takes it (pandas 3.1): partitions'
    categoricals with different categories stay categorical instead of becoming values."""
    import inspect

    return (
        {"union_categories": True}
        if "union_categories" in inspect.signature(_pd().concat).parameters
        else {}
    )


@hookimpl
def register_adapters(register: Any) -> None:
    register(PandasAdapter())
