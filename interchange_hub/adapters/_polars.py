"""polars adapter: DataFrame and Series both ways, LazyFrame as a source.

Export goes through polars' own ``__arrow_c_stream__``. A DataFrame with several chunks
is exported column by column, because exporting the frame rechunks it (a copy) and
mutates the caller's frame (polars#21738). Import goes through ``pl.DataFrame`` /
``pl.Series``, or, on the hot path, through the native calls they end in
(:mod:`~interchange_hub._bridge.polars_native`), and a one-shot stream becomes a lazy
``scan_arrow_c_stream``.
"""

from __future__ import annotations

import re
from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from interchange_hub import arrowkit
from interchange_hub._bridge import polars_native
from interchange_hub._c.ndarray import ndarray_address
from interchange_hub._core.deps import installed, require
from interchange_hub._core.dtypes import (
    has_negative_scale,
    is_numeric,
    is_string_dictionary,
    mentions_fixed_offset,
    value_width,
)
from interchange_hub._core.info import (
    Column,
    Copy,
    DataInfo,
    Estimate,
    Flag,
    Kind,
    Loss,
    RouteChanged,
    Unroutable,
    report_losses,
)
from interchange_hub._core.marks import hookimpl
from interchange_hub.adapter import ARROW, Adapter, Buffer, Context, Edge, mixed_parts, with_context
from interchange_hub.errors import ConsumedSourceError, ConversionError

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable, Mapping, Sequence


# Columns of a LazyFrame: converting back to polars (with copy=True) keeps it lazy.
_LAZY = frozenset({Flag.LAZYFRAME})

# polars Categoricals map to a process-wide string cache: each export builds new indices.
_REBUILT = frozenset({Flag.REBUILT_ON_EXPORT})
# A validity bitmap polars imported at a non-zero offset is realigned on every export.
_BITMAP = frozenset({Flag.BITMAP_REBUILT_ON_EXPORT})
_SLICED = frozenset({Flag.SLICED})
# A polars Enum: Arrow carries it as a string dictionary (its categories, in order) and
# marks it Enum in field metadata only, which a column (a ChunkedArray) cannot hold. The
# import into polars makes such a column an Enum of its dictionary again, not a
# Categorical (copy=True of a Series, or of a frame of several chunks).
ENUM = "polars:enum"
_ENUM = frozenset({ENUM})


def _pl() -> Any:
    return require("polars", "to make polars objects")


class PolarsAdapter(Adapter):
    name = "polars"
    keyed_losses = True  # no count or size in its estimates' losses
    aliases = ("pl",)
    module = "polars"
    waypoint = True
    extra = "polars"
    types = ("polars.DataFrame", "polars.Series", "polars.LazyFrame")
    arrow_string_type = "string_view"  # its String (strings built as string are rebuilt)
    arrow_binary_type = "binary_view"  # its Binary

    def owns(self, obj: object) -> bool:
        pl = _pl()
        return isinstance(obj, (pl.DataFrame, pl.Series, pl.LazyFrame))

    def type_kinds(self) -> Mapping[type, Kind | None]:
        pl = _pl()
        return {pl.DataFrame: Kind.TABLE, pl.Series: Kind.COLUMN, pl.LazyFrame: Kind.STREAM}

    def describe(self, obj: Any) -> DataInfo:
        pl = _pl()
        # A frame's stream is built of its aligned chunks, batch i of every column's chunk
        # i (polars realigns them to export): each batch's columns are its rows long
        # (tests/test_protocol_sources.py reads such tables validated, misaligned chunks too)
        arrowkit.vouch_exact_batches(pl.DataFrame)
        if isinstance(obj, pl.LazyFrame):
            schema = obj.collect_schema()
            names = _arrow_names(schema)
            cols = tuple(
                Column(n, names[n], -1, -1, -1, _LAZY | _ENUM if isinstance(d, pl.Enum) else _LAZY)
                for n, d in schema.items()
            )
            return DataInfo(Kind.TABLE, cols)
        series = [obj] if isinstance(obj, pl.Series) else obj.get_columns()
        names = _arrow_names(pl.Schema({s.name: s.dtype for s in series}))
        cols = tuple(
            Column(
                s.name,
                names[s.name],
                s.estimated_size(),
                s.null_count(),
                s.n_chunks(),
                _REBUILT if s.dtype == pl.Categorical else _column_flags(pl, s),
            )
            for s in series
        )
        if isinstance(obj, pl.Series):
            return DataInfo(Kind.COLUMN, cols, rows=len(obj))
        if _adjacent(series, cols):
            cols = tuple(replace(c, flags=c.flags | _ADJACENT) for c in cols)
        return DataInfo(Kind.TABLE, cols, rows=len(obj))

    def route_key(self, obj: Any) -> Hashable | None:
        frame, series = _KEYED or _keyed()  # (0.1 us less than _pl() and two attributes)
        cls = type(obj)
        if cls is frame:
            return _frame_route_key(obj)
        if cls is series:
            return _series_route_key(obj)
        return None

    def route_key_of(self, cls: type) -> Callable[[Any], Hashable | None]:
        if type(self).route_key is not PolarsAdapter.route_key:  # (a subclass keys its own way)
            return self.route_key
        frame, series = _KEYED or _keyed()
        if cls is frame:
            return _frame_route_key
        return _series_route_key if cls is series else self.route_key

    def buffers(self, obj: Any) -> list[Buffer]:
        pl = _pl()
        if isinstance(obj, pl.LazyFrame):
            return []
        pa = arrowkit.pa_module()
        series = [obj] if isinstance(obj, pl.Series) else obj.get_columns()
        found = []
        for s in series:
            exported = pa.chunked_array(s)  # a Categorical exports new indices each time
            found += [replace(b, keep=exported) for b in arrowkit.buffers(exported)]
        return found

    def concat(self, parts: Sequence[Any]) -> Any:
        """``pl.concat(parts, rechunk=False)``: zero-copy, every part's chunks are kept
        (a LazyFrame stays lazy)."""
        pl = _pl()
        for cls in (pl.DataFrame, pl.Series, pl.LazyFrame):
            if all(isinstance(p, cls) for p in parts):
                return pl.concat(parts, rechunk=False)
        raise mixed_parts(parts)

    def edges(self) -> Sequence[Edge]:
        return (
            Edge(
                "polars",
                ARROW,
                self.name,
                "__arrow_c_stream__",
                _export_estimate,
                _export,
                ("polars",),
                bind=_export_bind,
            ),
            Edge(
                ARROW,
                "polars",
                self.name,
                "pl.DataFrame/pl.Series",
                _import_estimate,
                _import,
                ("polars",),
                bind=_import_bind,
            ),
        )


_ADJACENT = frozenset({Flag.ADJACENT})


def _adjacent(series: Sequence[Any], cols: Sequence[Column]) -> bool:
    """Whether a frame's columns (two or more, one numeric dtype, no nulls, one chunk
    each) lie side by side in memory, column i at column 0 + i * rows * itemsize: then
    ``DataFrame.to_numpy`` returns one column-major view of them (checked by address)."""
    if (
        len(cols) < 2
        or any(c.dtype != cols[0].dtype or c.nulls != 0 or c.chunks != 1 for c in cols)
        or not is_numeric(cols[0].dtype)
        or not installed("numpy")  # polars' to_numpy panics (a BaseException) without it
    ):
        return False
    try:
        arrays = [s.to_numpy(allow_copy=False) for s in series]
    except Exception:  # noqa: BLE001 - polars would copy: not adjacent
        return False
    start, step = ndarray_address(arrays[0]), arrays[0].nbytes
    return all(ndarray_address(a) == start + i * step for i, a in enumerate(arrays))


def _column_flags(pl: Any, series: Any) -> frozenset[str]:
    flags = _bitmap_flags(series)
    return flags | _ENUM if isinstance(series.dtype, pl.Enum) else flags


def _bitmap_flags(series: Any) -> frozenset[Flag]:
    """Flag a column whose validity bitmap polars rebuilds on each export (seen by address):
    its own, or for a nested column any of its buffers (the bitmaps of nested arrays it
    holds at an offset, or into which it pushed a struct's nulls). A Map's offsets are
    new on every export (polars holds 64-bit ones): ``Flag.REBUILT_ON_EXPORT``. A nested
    column also gets the flags of its exported nested arrays (``arrowkit.nested_flags``:
    ``Flag.NESTED_BITMAP_OFFSET``, which arrow-rs consumers copy, ...)."""
    nested = series.dtype.is_nested()
    if (series.null_count() == 0 and not nested) or not installed("pyarrow"):
        return frozenset()
    pa = arrowkit.pa_module()
    try:
        first, second = pa.chunked_array(series), pa.chunked_array(series)
    except Exception:  # noqa: BLE001 - not exportable: the export edge reports it
        return frozenset()
    flags = arrowkit.nested_flags(first.type, first.chunks) if nested else frozenset()
    if series.null_count() and any(c.offset for c in first.chunks):
        # a slice of a column with nulls (df[1:]): exported at an offset, its bitmap is
        # rebuilt by a consumer that realigns it (arrow-rs, polars' own import)
        flags = flags | _SLICED
    if nested and "map<" in str(first.type):
        return flags | _REBUILT
    for a, b in zip(first.chunks, second.chunks, strict=True):
        pairs = (
            zip(a.buffers(), b.buffers(), strict=True)
            if nested
            else [(a.buffers()[0], b.buffers()[0])]
        )
        for va, vb in pairs:
            if va is not None and vb is not None and va.size and va.address != vb.address:
                return flags | _BITMAP
    return flags


def _arrow_names(schema: Any) -> dict[str, str]:
    """The Arrow type name of each column, read from polars' schema export (no data)."""
    items = tuple(schema.items())
    try:
        return dict(_cached_arrow_names(items))
    except TypeError:  # an unhashable dtype: no cache
        return _arrow_names_of(items)


@lru_cache(maxsize=256)
def _cached_arrow_names(items: tuple[tuple[str, Any], ...]) -> tuple[tuple[str, str], ...]:
    return tuple(_arrow_names_of(items).items())


def _arrow_names_of(items: tuple[tuple[str, Any], ...]) -> dict[str, str]:
    pl = _pl()
    schema = pl.Schema(dict(items))
    names = {}
    plain = {}
    for name, dtype in schema.items():
        if dtype == pl.Object:
            names[name] = "object"
        elif dtype in (pl.Int128, pl.UInt128):
            names[name] = str(dtype).lower()
        else:
            plain[name] = dtype
    if not plain or not installed("pyarrow"):
        names.update((n, str(d).lower()) for n, d in plain.items())
        return names
    pa = arrowkit.pa_module()
    try:
        arrow = pa.schema(pl.Schema(plain))
    except Exception:  # noqa: BLE001 - find the column polars cannot export, one by one
        for name, dtype in plain.items():
            try:
                field = pa.schema(pl.Schema({name: dtype})).field(0)
                names[name] = arrowkit.dtype_name(field.type)
            except Exception:  # noqa: BLE001
                names[name] = f"unexportable {dtype}"
        return names
    names.update((f.name, arrowkit.dtype_name(f.type)) for f in arrow)
    return names


def _export_estimate(ctx: Context) -> Estimate:
    info = ctx.info
    for col in info.columns:
        if col.dtype == "object":
            raise Unroutable(
                f"polars Object column {col.name!r} holds Python objects, which Arrow cannot "
                "carry (polars would export raw pointers); convert it to a concrete dtype"
            )
        if col.dtype.startswith("unexportable"):
            raise Unroutable(
                f"column {col.name!r} ({col.dtype.split(' ', 1)[1]}) has no Arrow export in "
                "polars (128-bit integers inside nested types); cast it first"
            )
    wide = [c for c in info.columns if c.dtype in _WIDE_INTS]
    losses = tuple(
        Loss(
            c.name,
            c.dtype,
            _DECIMAL,
            "Arrow has no 128-bit integer; values of 39 digits "
            "(|v| >= 10**38) do not fit and make the conversion fail",
        )
        for c in wide
    )
    copies: tuple[Copy, ...] = (
        tuple(
            Copy(
                c.name, c.nbytes, f"{c.dtype} is cast to {_DECIMAL} (polars' own export is private)"
            )
            for c in wide
        )
        + tuple(
            Copy(c.name, c.nbytes, "polars builds new Arrow dictionary indices for a Categorical")
            if c.dtype.startswith("dictionary<")
            else Copy(
                c.name,
                (max(info.rows, 0) + 1) * 4,
                "polars holds a Map's offsets as 64-bit integers and exports new 32-bit ones",
            )
            for c in info.columns
            if Flag.REBUILT_ON_EXPORT in c.flags
        )
        + tuple(
            Copy(
                c.name,
                max(info.rows, 0) // 8 + 1,
                "polars realigns a validity bitmap it imported at an offset"
                + (
                    " (or one of a nested array, or one it pushed a struct's nulls into)"
                    if c.dtype.startswith(_NESTED_ARROW)
                    else ""
                ),
            )
            for c in info.columns
            if Flag.BITMAP_REBUILT_ON_EXPORT in c.flags
        )
    )
    why = "polars exports its own buffers"
    if info.columns and info.columns[0].chunks == -1:
        why = "the LazyFrame is collected (its query runs), then exported"
    elif info.kind == Kind.TABLE and any(c.chunks > 1 for c in info.columns):
        if installed("pyarrow"):
            why = "several chunks: exported column by column, keeping chunks (no rechunk)"
        else:
            copies += tuple(
                Copy(c.name, c.nbytes, "several chunks are rechunked")
                for c in info.columns
                if c.chunks > 1
            )
    if wide:
        cols = tuple(replace(c, dtype=_DECIMAL) if c in wide else c for c in info.columns)
        info = info.but(columns=cols)
    return Estimate(info, copies, losses, why=why)


def _export(value: Any, ctx: Context) -> Any:
    pl = _pl()
    if isinstance(value, pl.LazyFrame):
        value = value.collect()
    if any(c.dtype in _WIDE_INTS for c in ctx.info.columns):
        value = _cast_wide_ints(pl, value)
    if isinstance(value, pl.DataFrame) and any(s.n_chunks() > 1 for s in value.get_columns()):
        if installed("pyarrow"):
            pa = arrowkit.pa_module()
            cols = value.get_columns()
            table = pa.table([pa.chunked_array(s) for s in cols], names=[s.name for s in cols])
            return _enum_fields(
                pl, pa, table, [c.name for c in ctx.info.columns if ENUM in c.flags]
            )
        return value.rechunk()
    if isinstance(value, pl.DataFrame):
        large = _large_on_request(ctx)
        if large is not None:
            return large(value)
    return value


def _enum_fields(pl: Any, pa: Any, table: Any, enums: Sequence[str]) -> Any:
    """``table`` (pyarrow) with its columns named in ``enums`` marked polars Enums of
    their dictionaries, in the field metadata polars itself writes for that Enum (what
    ``pl.from_arrow`` reads back as an Enum, not a Categorical); zero-copy. A column of
    no chunks (no dictionary to read the categories from) is left as it is."""
    if not enums:
        return table
    fields = list(table.schema)
    for i, field in enumerate(fields):
        column = table.column(i)
        if field.name in enums and pa.types.is_dictionary(field.type) and column.num_chunks:
            enum = pl.Enum(column.chunk(0).dictionary.to_pylist())
            marked = pa.schema(pl.Schema({field.name: enum})).field(0)
            fields[i] = field.with_metadata(marked.metadata)
    return pa.Table.from_arrays(table.columns, schema=pa.schema(fields, table.schema.metadata))


def _large_on_request(ctx: Context) -> Callable[[Any], Any] | None:
    """``export(frame)``: the frame as a :class:`_LargeOnRequest` where it holds enough
    values in views (:data:`_OWN_CAST_VALUES`), else as it is; None where the context
    rules it out: no views, a step of polars itself next (which reads its views as they
    are), a pyarrow result (pyarrow reads a stream as its producer gives it, and asks for
    no schema: the wrapper would cost 0.6 us a call for nothing), no pyarrow."""
    info = ctx.info
    views = sum(arrowkit.has_views(c.dtype) for c in info.columns)
    if not views or info.kind != Kind.TABLE or ctx.target in _READ_AS_GIVEN:
        return None
    if not installed("pyarrow"):
        return None
    rows = -(-_OWN_CAST_VALUES // views)

    def export(frame: Any) -> Any:
        return _LargeOnRequest(frame) if frame.height >= rows else frame

    return export


# Targets whose import reads the stream's views as they are, asking for no schema
_READ_AS_GIVEN = ("polars", "pyarrow")


# The values (rows x columns holding views) from which _LargeOnRequest has polars cast
# its views itself. polars casts the columns side by side, pyarrow's cast (which the
# consumer runs otherwise) one after the other, each at about the same speed: measured on
# 2 cores, same process, interleaved (hub into pandas, views as they are -> polars' cast):
# two string_view columns of 100,000 rows 1,036 -> 1,025 us, 300,000 rows 2,475 -> 1,569,
# 1,000,000 rows 5,421 -> 3,843 (into nanoarrow); one string_view column beside four
# others of 100,000 rows 846 -> 1,020 (polars converts the other columns too), 300,000
# rows 1,932 -> 2,083, 1,000,000 rows 5,643 -> 5,112.
_OWN_CAST_VALUES = 500_000


class _LargeOnRequest:
    """A polars DataFrame's Arrow stream, as polars' own ``__arrow_c_stream__`` gives it,
    except where the consumer asks (the PyCapsule interface's ``requested_schema``, which
    polars ignores) for the frame's schema with large types in place of views at every
    depth (what nanoarrow and pandas' ``str`` dtype need), for a frame large enough that
    polars' own conversion is the faster (:data:`_OWN_CAST_VALUES`): then that,
    ``to_arrow(compat_level=CompatLevel.oldest())``. A request for any other schema, or
    of a smaller frame, gets polars' own stream, as without asking; the consumer casts."""

    __slots__ = ("_schema", "frame")

    def __init__(self, frame: Any) -> None:
        self.frame = frame
        self._schema: Any = None

    def schema(self) -> Any:
        """The pyarrow Schema of polars' own export (read once)."""
        if self._schema is None:
            pa = arrowkit.pa_module()
            self._schema = pa.RecordBatchReader.from_stream(self.frame).schema
        return self._schema

    def __arrow_c_schema__(self) -> Any:
        return self.schema().__arrow_c_schema__()

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        frame = self.frame
        if requested_schema is not None:
            pa = arrowkit.pa_module()
            try:
                asked = pa.Schema._import_from_c_capsule(requested_schema)
            except (pa.ArrowInvalid, TypeError, ValueError):  # not a schema of a table
                return frame.__arrow_c_stream__()
            own = self.schema()
            if not asked.equals(own) and asked.equals(arrowkit.without_views_schema(own)):
                table = frame.to_arrow(compat_level=_pl().CompatLevel.oldest())
                # (metadata as asked; another polars' other types: pyarrow's cast)
                if not table.schema.equals(asked, check_metadata=True):
                    table = arrowkit.cast_columns(table, asked)
                return table.__arrow_c_stream__()
        return frame.__arrow_c_stream__()

    def __repr__(self) -> str:
        return f"<polars frame's Arrow stream, large types on request: {self.frame.shape}>"


def _series_route_key(obj: Any) -> Hashable | None:
    """A Series' route key from polars' native Series: its name, dtype (the class where
    that says all), chunk count and whether it holds nulls, and for a nested dtype the
    flags describe probes of it by address."""
    try:
        native = obj._s  # polars' native Series: 0.05 us a call, not 0.1-0.16
        if not native.len():
            return None
        nulls = native.null_count() > 0
        dtype = native.dtype()
        plain = _PLAIN_DTYPES.get(type(dtype))
        if plain is None:
            plain = _plain_dtype(dtype)
        if plain:  # the class says all: hashed and compared by identity, 0.3 us less
            return (native.name(), type(dtype), native.n_chunks(), nulls)
        if dtype.is_nested():  # what describe reads of its nested arrays, probed here
            return (native.name(), dtype, native.n_chunks(), nulls, _bitmap_flags(obj))
        return (native.name(), dtype, native.n_chunks(), nulls)
    except AttributeError:  # polars changed its private handle: the public calls
        return _public_key(obj, (obj,))
    except TypeError:  # an unhashable dtype
        return None


def _public_key(obj: Any, columns: Any) -> Hashable | None:
    """The route key through polars' public Series calls (None for no rows)."""
    if not len(obj):
        return None
    try:
        return (
            type(obj),
            tuple(
                (s.name, s.dtype, s.n_chunks(), s.null_count() > 0, _nested_key(s)) for s in columns
            ),
        )
    except TypeError:  # an unhashable dtype
        return None


def _frame_route_key(df: Any) -> Hashable | None:
    """A DataFrame's route key from polars' native frame in a few calls (1.6 µs for 4
    columns, against 4.6 µs through the Series wrappers): names, dtype strings, chunk
    counts, which columns hold nulls. Nested and enum dtypes, whose strings leave out
    their fields or categories, add the full dtypes, and nested columns what describe
    probes of them by address (a
    nested array's nulls and offsets do not show in the column's: :func:`_nested_key`).
    Whether each column holds nulls is in the key; whether polars realigns a flat
    column's validity bitmap on export (``Flag.BITMAP_REBUILT_ON_EXPORT``, which describe
    sees by exporting twice) is not: it changes only the plan's claim of a bitmap's copy
    (rows / 8 bytes), which a bound run checks where it matters, with copy=False
    (:func:`_export_bind`). Where polars changed its private handles: the public calls
    (:func:`_public_key`)."""
    try:
        native = df._df
        if not native.height():  # (an empty frame is planned each time)
            return None
        columns = native.get_columns()
        chunks = []
        nulls = 0
        for i, c in enumerate(columns):  # (one loop: 0.5 us less than two generator passes)
            if c.null_count():
                nulls |= 1 << i
            chunks.append(c.n_chunks())
        dtypes = tuple(native.dtype_strings())
        flat = _FLAT_DTYPES.get(dtypes)
        if flat is None:
            flat = not any(d.startswith(_NESTED) or "enum" in d for d in dtypes)
            if len(_FLAT_DTYPES) >= 1024:
                _FLAT_DTYPES.clear()
            _FLAT_DTYPES[dtypes] = flat
        if not flat:
            return (
                tuple(native.columns()),
                tuple(df.dtypes),
                tuple(chunks),
                nulls,
                tuple(_nested_key(s) for s in df.get_columns()),
            )
        return (tuple(native.columns()), dtypes, tuple(chunks), nulls)
    except AttributeError:  # polars changed its private handle: the public calls
        return _public_key(df, df.get_columns())
    except TypeError:  # an unhashable dtype
        return None


# polars' DataFrame and Series classes, once polars is imported (the route key's test of
# type, read without a call to _pl)
_KEYED: tuple[type, type] | None = None


def _keyed() -> tuple[type, type]:
    global _KEYED
    pl = _pl()
    _KEYED = (pl.DataFrame, pl.Series)
    return _KEYED


# Whether each polars dtype class seen holds no parameters (Float64, String, Date, ...,
# against Datetime's unit or a List's inner type): its instances are then all equal, and
# a Series' route key holds the class. polars' DataType hashes and compares in Python
# (0.2 us to hash, more to compare, and each Series.dtype() call makes a new instance).
_PLAIN_DTYPES: dict[type, bool] = {}


def _plain_dtype(dtype: Any) -> bool:
    """Whether ``dtype``'s class alone says which dtype it is: an instance without state
    of its own (an empty ``__dict__``) and not nested; remembered per class."""
    cls = type(dtype)
    try:
        plain = not vars(dtype) and not dtype.is_nested() and dtype == cls()
    except Exception:  # noqa: BLE001 - a class that needs parameters, or no __dict__
        plain = False
    _PLAIN_DTYPES[cls] = plain
    return plain


# Whether each frame's dtype strings seen are all flat (no nested or enum dtype, whose
# strings leave out fields or categories): a dictionary lookup per call, not a scan.
_FLAT_DTYPES: dict[tuple[str, ...], bool] = {}


def _nested_key(series: Any) -> frozenset[Flag] | None:
    """What a nested column adds to the route key: the flags describe probes by address
    (:func:`_bitmap_flags`: bitmaps polars rebuilds on export, its nested arrays' flags);
    None for any other column."""
    return _bitmap_flags(series) if series.dtype.is_nested() else None


# polars' dtype strings of nested types (dtype_strings: "struct[2]", "list[i64]", ...)
_NESTED = ("struct", "list", "array", "map")


def _export_bind(ctx: Context) -> Callable[[Any], Any] | None:
    """Nothing to do for a frame or Series that polars exports as it is (the route key
    keeps chunk counts, dtypes and which columns hold nulls, so the context holds for
    every object it serves), except with copy=False: the key leaves out whether polars
    realigns a flat column's validity bitmap, a copy that copy=False refuses, so the run
    probes the nullable columns by address (:func:`_bitmap_flags`) and raises
    RouteChanged where one would be realigned (the conversion is planned, and refused)."""
    info = ctx.info
    if (
        ctx.copy is False
        and info.known
        and info.kind in (Kind.TABLE, Kind.COLUMN)
        and any(c.nulls > 0 and Flag.LAZYFRAME not in c.flags for c in info.columns)
    ):
        export = _export_bind(replace(ctx, copy=None)) or _same
        return _bitmaps_checked(export, info)
    if (
        info.known
        and info.kind != Kind.STREAM
        and info.columns  # a LazyFrame of no columns has no flag to say it is lazy
        and not any(
            c.dtype in _WIDE_INTS or c.chunks != 1 or Flag.LAZYFRAME in c.flags
            for c in info.columns
        )
    ):
        return _large_on_request(ctx)
    return with_context(_export, ctx)


def _same(value: Any) -> Any:
    return value


def _bitmaps_checked(export: Callable[[Any], Any], info: DataInfo) -> Callable[[Any], Any]:
    """``export`` after a check that polars realigns no validity bitmap of the columns
    the plan saw with nulls and flat (it planned each shared: a copy=False route), and
    that each is sliced as the plan saw it (``Flag.SLICED``: the route key leaves it out).
    """
    nullable = [
        i
        for i, c in enumerate(info.columns)
        if c.nulls and not c.dtype.startswith(_NESTED_ARROW)  # nested: in the route key
    ]

    def checked(value: Any) -> Any:
        series = value.get_columns() if info.kind == Kind.TABLE else (value,)
        for i in nullable:
            flags = _bitmap_flags(series[i])
            if Flag.BITMAP_REBUILT_ON_EXPORT in flags:
                raise RouteChanged(f"polars realigns column {info.columns[i].name!r}'s bitmap")
            if (Flag.SLICED in flags) != (Flag.SLICED in info.columns[i].flags):
                # (a slice's bitmap at an offset, which a consumer may realign: planned)
                raise RouteChanged(f"column {info.columns[i].name!r} is sliced, or no longer")
        return export(value)

    return checked


_WIDE_INTS = ("int128", "uint128")
# Arrow type names of the nested types polars exports
_NESTED_ARROW = ("struct<", "large_list<", "fixed_size_list<", "map<", "list<")
_DECIMAL = "decimal128(38, 0)"


def _cast_wide_ints(pl: Any, value: Any) -> Any:
    wide = (pl.Int128, pl.UInt128)
    try:
        if isinstance(value, pl.Series):
            return value.cast(pl.Decimal(38, 0)) if value.dtype in wide else value
        return value.with_columns(
            pl.col(n).cast(pl.Decimal(38, 0)) for n, d in value.schema.items() if d in wide
        )
    except Exception as exc:
        raise ConversionError(
            f"a 128-bit integer column has values of 39 digits, which {_DECIMAL} cannot "
            f"hold ({type(exc).__name__}: {exc}); cast them to Float64 or String first"
        ) from exc


def _want(ctx: Context) -> Kind:
    """The kind of polars object asked for: to="polars" reads a stream into a DataFrame,
    as ``pl.from_arrow(reader)`` does; to=pl.LazyFrame keeps it lazy."""
    info = ctx.info
    if ctx.kind is not None:
        return ctx.kind
    return Kind.TABLE if info.kind == Kind.STREAM else info.kind


def _lazy_once(value: Any, info: DataInfo) -> Any:
    """A LazyFrame reading the one-shot stream ``value`` on its first collect; a second
    collect raises (polars' own scan_arrow_c_stream would give an empty frame)."""
    pl = _pl()
    from polars.io.plugins import register_io_source

    reader = arrowkit.pa_module().RecordBatchReader.from_stream(value)
    schema = pl.from_arrow(reader.schema.empty_table()).schema
    state = {"read": False}

    def source(with_columns: Any, predicate: Any, n_rows: Any, batch_size: Any) -> Any:
        if state["read"]:
            raise ConsumedSourceError(
                "this LazyFrame reads a one-shot stream and was already collected; collect "
                "it once, or convert the stream with to='polars' for a DataFrame"
            )
        state["read"] = True
        left = n_rows
        for batch in reader:
            frame = pl.from_arrow(batch)
            if with_columns is not None:
                frame = frame.select(with_columns)
            if predicate is not None:
                frame = frame.filter(predicate)
            if left is not None:
                frame = frame.head(left)
                left -= frame.height
            yield frame
            if left is not None and left <= 0:
                break

    return register_io_source(source, schema=schema)


# Arrow's interval types (month_day_nano_interval, ...), which polars cannot import
_ARROW_INTERVAL = re.compile(r"(?<![\w.])(?:month_day_nano|month|day_time)_interval")


# An ordered Arrow dictionary (a pandas Categorical of ordered=True) becomes a polars
# Categorical, which keeps no order: pl.from_arrow and pl.from_pandas drop it silently.
_ORDER_DROPPED = (
    "polars keeps no ordered flag: a Categorical sorts and compares by its strings, not "
    "by the categories' order; cast the column to pl.Enum(categories) to keep the order"
)


_ENUM_KEPT = frozenset({ENUM, Flag.ENUM_METADATA})  # (read back as a polars Enum)


_WIDE = re.compile(r"decimal256\((\d+),")  # (the precision of each decimal256 in a type)
_NARROW_OR_WIDE_DECIMAL = re.compile(r"decimal(?:32|64|256)\(")


def _import_estimate(ctx: Context) -> Estimate:
    info = ctx.info
    if info.kind == Kind.TENSOR:
        raise Unroutable("polars takes tensors through the Arrow bridge")
    want = _want(ctx)
    names = [c.name for c in info.columns]
    if len(set(names)) < len(names):
        repeated = sorted({n for n in names if names.count(n) > 1})
        raise Unroutable(
            f"polars needs unique column names, and {', '.join(map(repr, repeated))} repeat; "
            "rename the columns first"
        )
    copies: list[Copy] = []
    losses: list[Loss] = []
    views = info.rows >= VIEWS_FROM and _views_cast(ctx) and installed("pyarrow")
    for col in info.columns:
        if has_negative_scale(col.dtype):
            raise Unroutable(
                f"polars holds no decimal of a negative scale, and column {col.name!r} "
                f"({col.dtype}) has one; cast it to a scale of 0 or more first (a decimal "
                "of precision p and scale -s holds the integers of decimal(p + s, 0))"
            )
        if "decimal256(" in col.dtype and any(int(p) > 38 for p in _WIDE.findall(col.dtype)):
            # (also nested: polars panicked on it, 'operator does not support Int256')
            raise Unroutable(
                f"polars holds decimals as 128-bit integers, and column {col.name!r} "
                f"({col.dtype}) has more than 38 digits; cast it to a decimal128 of at most "
                "38 digits (or to strings) first"
            )
        if "union<" in col.dtype:
            raise Unroutable(
                f"polars has no union type for column {col.name!r} ({col.dtype}); split it "
                "into one column per member type first (pyarrow.compute can pick them)"
            )
        if _ARROW_INTERVAL.search(col.dtype):  # (not pandas' interval extension: a struct)
            raise Unroutable(
                f"polars cannot import column {col.name!r} ({col.dtype}); cast it to a "
                "duration or a struct of its fields first"
            )
        if _ENUM_KEPT & col.flags and col.dtype.startswith("dictionary<"):
            reason = "a polars Enum's dictionary is rebuilt as polars Enum"
        else:
            reason = _import_copy_reason(col.dtype)
        if views and col.dtype in _VIEW_OF:
            why = (
                f"polars stores {col.dtype} as {_VIEW_OF[col.dtype]}; pyarrow builds the "
                "views (16 bytes a row) over the same characters, which stay shared "
                "(read-only Arrow memory)"
            )
            copies.append(Copy(col.name, 16 * info.rows, why))
        elif reason:
            copies.append(Copy(col.name, col.nbytes, reason))
        elif (col.dtype.startswith("fixed_size_list") or _numeric_tensor(col.dtype)) and (
            Flag.SLICED in col.flags
            or Flag.CHUNKS_SPLIT in col.flags
            or Flag.FIXED_SIZE_TAIL in col.flags
        ):
            reason = "polars cannot import a fixed-size list at an offset; it is rebuilt"
            copies.append(Copy(col.name, col.nbytes, reason))
        elif 0 < info.alignment < value_width(col.dtype):
            # (a column over memory that is not aligned to its values: numpy's, say)
            reason = "polars copies values that are not aligned to their width"
            copies.append(Copy(col.name, col.nbytes, reason))
        elif Flag.UNALIGNED in col.flags and col.dtype.startswith("decimal"):
            reason = (
                "polars loads decimals as 16-byte integers and copies values that are not "
                "16-byte aligned (IPC bodies are 8-byte aligned)"
            )
            copies.append(Copy(col.name, col.nbytes, reason))
        elif info.kind == Kind.STREAM and col.dtype.startswith(_NESTED_ARROW):
            reason = (
                "a stream's nested arrays show their nulls and offsets only once read: "
                "polars may rebuild their validity bitmaps (a struct's nulls pushed into its "
                "fields, arrays at offsets of their own realigned)"
            )
            copies.append(Copy(col.name, col.nbytes, reason))
        else:
            copies += _bitmap_copies(col, info.rows)
        if "ordered=1" in col.dtype and not (_ENUM_KEPT & col.flags):
            losses.append(Loss(col.name, col.dtype, "Categorical", _ORDER_DROPPED))
        if "extension<arrow.uuid>" in col.dtype:  # (also nested: a struct's field, say)
            top = col.dtype == "extension<arrow.uuid>"
            losses.append(
                Loss(
                    col.name,
                    col.dtype,
                    "Binary" if top else col.dtype.replace("extension<arrow.uuid>", "binary_view"),
                    "polars reads arrow.uuid as Binary: the extension type is dropped (the "
                    "16 bytes of each value are kept)",
                )
            )
        if mentions_fixed_offset(col.dtype):
            losses.append(
                Loss(
                    col.name,
                    col.dtype,
                    "Datetime('UTC')",
                    "polars has no fixed-offset zones: the zone becomes UTC (same instants; "
                    "local times shift by the offset)",
                )
            )
    if want == Kind.STREAM and info.kind == Kind.STREAM:
        why = "a LazyFrame over the stream: read on its first collect (a second one raises)"
        return Estimate(info, (), tuple(losses), why=why)
    if info.kind == Kind.STREAM:
        why = "the stream is read into a DataFrame"
    else:
        why = "imported through the C stream interface"
    return Estimate(
        info.but(kind=want),
        tuple(copies),
        tuple(losses),
        why,
    )


def _bitmap_copies(col: Column, rows: int) -> list[Copy]:
    """The validity bitmaps polars builds anew for column ``col`` (read from its flags):
    one at an offset (a sliced column's, one polars slices to align a table's chunks, a
    nested array's at an offset of its own), or one it merges a struct's nulls into."""
    size = max(rows, 0) // 8 + 1
    if col.nulls > 0 and Flag.SLICED in col.flags:
        why = "polars rebuilds the validity bitmap of a sliced column with nulls"
    elif col.nulls > 0 and Flag.CHUNKS_SPLIT in col.flags:
        why = (
            "polars slices the column where the table's other columns' chunks end, and "
            "rebuilds the validity bitmaps of those slices"
        )
    elif Flag.STRUCT_NULLS_OVER_FIELDS in col.flags:
        why = (
            "polars pushes a struct's nulls into its fields (and a list field's into its "
            "values): their validity bitmaps are rebuilt"
        )
    elif Flag.NESTED_OWN_OFFSET in col.flags:
        why = (
            "polars realigns the validity bitmap of a nested array with nulls that starts "
            "at an offset of its own (a field or list values built from a slice)"
        )
    else:
        return []
    return [Copy(col.name, size, why)]


# A fixed-shape tensor of numbers: polars keeps its fixed-size list storage as an Array
# column over the same buffers (checked by address: tests/test_zero_copy.py)
_NUMERIC_TENSOR = re.compile(
    r"extension<arrow\.fixed_shape_tensor\[value_type=(?:u?int(?:8|16|32|64)|halffloat|float|double),"
)


def _numeric_tensor(dtype: str) -> bool:
    return _NUMERIC_TENSOR.match(dtype) is not None


def _import_copy_reason(dtype: str) -> str:
    if dtype in ("string", "large_string"):
        return f"polars stores strings as string_view; {dtype} is rebuilt"
    if dtype in ("binary", "large_binary"):
        return f"polars stores binary as binary_view; {dtype} is rebuilt"
    if dtype.startswith("dictionary<") and not is_string_dictionary(dtype):
        return "polars Categoricals hold strings: the dictionary is decoded to its values"
    if dtype.startswith("dictionary<"):
        return "dictionary columns are rebuilt as polars Categorical"
    if dtype.startswith("list<"):
        return "32-bit list offsets are widened to polars' 64-bit lists"
    if "list<" in dtype.replace("large_list<", "").replace("fixed_size_list<", ""):
        return "32-bit list offsets inside the nested column are widened to polars' 64-bit lists"
    if dtype == "date64[ms]":
        return "polars stores dates as 32-bit days (Date); date64 is converted to date32"
    if dtype.startswith(("decimal32", "decimal64")):
        return "polars holds decimals as 128-bit integers: the values are widened to decimal128"
    if dtype.startswith(("list_view<", "large_list_view<")):
        return "polars has no list views: the column is rebuilt as a list"
    if dtype.startswith("run_end_encoded<"):
        return "polars has no run-end encoding: the runs are decoded"
    if "list_view<" in dtype:
        return "polars has no list views: those inside the nested column are rebuilt as lists"
    if "run_end_encoded<" in dtype:
        return "polars has no run-end encoding: runs inside the nested column are decoded"
    if dtype.startswith("decimal256"):
        return "polars holds decimals as 128-bit integers: a decimal256 of at most 38 digits is narrowed to decimal128 (exactly)"
    if _NARROW_OR_WIDE_DECIMAL.search(dtype):
        return (
            "polars holds decimals as 128-bit integers: those inside the nested column are "
            "cast to decimal128 (exactly)"
        )
    if "date64" in dtype:
        return "polars stores dates as 32-bit days (Date): date64 inside the nested column is converted to date32"
    if dtype.startswith("fixed_size_binary"):
        return "polars stores fixed-size binary as binary_view; it is rebuilt"
    if dtype.startswith("time32") or dtype in ("time64[us]",):
        return "polars stores times as nanoseconds (time64[ns]); values are rescaled"
    if dtype in ("timestamp[s]", "duration[s]") or dtype.startswith("timestamp[s,"):
        return (
            "polars has no second unit; values are rescaled to milliseconds (any beyond "
            "their range become null, warned)"
        )
    if dtype.startswith("extension<") and not _numeric_tensor(dtype):
        return "polars rebuilds an extension column's storage (strings as views)"
    plain = dtype.replace("string_view", "").replace("binary_view", "")
    if "string" in plain or "binary" in plain:
        return "strings and binaries inside nested columns are rebuilt as views"
    return ""


def _import(value: Any, ctx: Context) -> Any:
    info = ctx.info
    want = _want(ctx)
    if info.kind == Kind.COLUMN:
        objects = bool(info.columns) and _objects(info.columns[0].dtype)
        name = info.columns[0].name if info.columns else ""
        if info.columns and ENUM in info.columns[0].flags and installed("pyarrow"):
            series = _frame(value, info, ctx.strict, name).to_series(0)
        else:
            series = _series(value, name, ctx.strict, objects)
        if want == Kind.COLUMN:
            return series
        return series.to_frame().lazy() if want == Kind.STREAM else series.to_frame()
    if want == Kind.STREAM and info.kind == Kind.STREAM:
        if not any(_needs_rewrite(c.dtype) for c in info.columns):
            return _lazy_once(value, info)
        return _frame(value, info, ctx.strict).lazy()  # types polars refuses are rewritten
    frame = _frame(value, info, ctx.strict)
    if want == Kind.COLUMN:
        return frame.to_series(0)
    lazy = want == Kind.STREAM or (
        ctx.kind is None and info.columns and Flag.LAZYFRAME in info.columns[0].flags
    )
    return frame.lazy() if lazy else frame


def _import_bind(ctx: Context) -> Callable[[Any], Any] | None:
    """``pl.DataFrame`` itself for a plain table, ``pl.from_arrow`` for a plain column:
    what :func:`_import` ends in when no type needs rewriting and nothing is lazy."""
    info = ctx.info
    want = _want(ctx)
    if (
        not info.known
        or not info.columns
        or any(
            _needs_rewrite(c.dtype)
            or Flag.LAZYFRAME in c.flags
            or ENUM in c.flags
            or _objects(c.dtype)
            for c in info.columns
        )
        or not installed("pyarrow")
    ):
        return with_context(_import, ctx)
    pl = _pl()
    # Strings and binaries that polars rebuilds as views: pyarrow's cast makes the views
    # (over the same character buffer, which stays read-only Arrow memory) where polars'
    # own import copies the characters too, not where copy=True wants memory of its own.
    views = _cast_to_views(info) if _views_cast(ctx) else ()
    native_frame, native_series, capsule_series = polars_native.arrow_makers()
    if info.kind == Kind.TABLE and want == Kind.TABLE and all(c.chunks == 1 for c in info.columns):
        if views:
            return _viewed_frame(native_frame, views)
        if not any("<" in c.dtype for c in info.columns):
            return native_frame  # flat columns: pl.DataFrame's own end (9 us, not 40)
        frame, table, read_table = native_frame, arrowkit.pa_module().Table, arrowkit.read_table

        def dataframe(value: Any) -> Any:
            # Nested columns of any other producer are read into pyarrow first (zero-copy):
            # polars imports a C stream's record batches as structs, pushing their nulls
            # into new bitmaps where it shares a pyarrow Table's (the plan's flags describe
            # the latter).
            return _compacting(frame, value if type(value) is table else read_table(value))

        return dataframe
    if info.kind == Kind.COLUMN and want == Kind.COLUMN:
        name = info.columns[0].name if info.columns else ""
        read_column, native = arrowkit.read_column, native_series
        pa = arrowkit.pa_module()
        array, chunked = pa.Array, pa.ChunkedArray
        # One chunk of numbers or booleans from another producer (a nanoarrow Array): its
        # capsule read by polars itself, 7-9 us with the name set, not 15-20 through a
        # pyarrow array first (pl.Series takes no name with a capsule object: alias).
        only = info.columns[0]
        capsule = len(info.columns) == 1 and only.chunks == 1
        capsule = capsule and (is_numeric(only.dtype) or only.dtype == "bool")

        def series(value: Any) -> Any:
            if capsule and not isinstance(value, (array, chunked)):
                try:
                    out = capsule_series(value)  # (pl.Series(value)'s own end)
                except Exception:  # noqa: BLE001, S110 - the pyarrow way below says what fails
                    pass
                else:  # (polars names it from the capsule's schema, or not at all)
                    return out if out.name == name else out.alias(name)
            data = value if isinstance(value, array) else read_column(value)
            if type(data) is chunked:
                if data.num_chunks != 1:  # pl.Series would join the chunks: a copy
                    out = _column_series(pl, pa, data)
                    return out.alias(name) if name and out.name != name else out
                data = data.chunk(0)
            if views and len(data) >= VIEWS_FROM:
                data = data.cast(views[0][1])
            try:
                return native(name, data)  # what from_arrow ends in: 1.3 us, not 5.6
            except Exception as exc:  # noqa: BLE001 - only polars' nested fixed-size list check
                return _compacting(lambda d: native(name, d), data, exc)

        return series
    return with_context(_import, ctx)


# From this many rows the string and binary columns polars stores as views are cast to
# views by pyarrow before polars imports them (:func:`_cast_to_views`); below it polars'
# own import costs less. Medians, pl.DataFrame against cast + pl.DataFrame, 2 string
# columns: 10,000 rows 103.7 -> 63.9 us, 1e6 7.35 -> 3.47 ms, 1e7 71.9 -> 31.1 ms; an
# int, float, string, bool and datetime table: 2,000 rows 69.4 -> 112.7 us (slower),
# 10,000 126.3 -> 122.2, 30,000 300.4 -> 140.7, 1e6 7.40 -> 1.80 ms, 1e7 72.1 -> 16.1.
VIEWS_FROM = 16_384
# The flat types polars stores as views, and their views.
_VIEW_OF = {
    "string": "string_view",
    "large_string": "string_view",
    "binary": "binary_view",
    "large_binary": "binary_view",
}


def _views_cast(ctx: Context) -> bool:
    """Whether the bound import (:func:`_import_bind`) casts the string and binary columns
    to views itself (:func:`_cast_to_views`) once the data holds VIEWS_FROM rows: a flat
    table of one chunk a column into a DataFrame, or a column of one chunk into a Series,
    unless copy=True asks for memory of its own (polars then copies the characters)."""
    info = ctx.info
    if (ctx.copy and not ctx.fresh) or not info.known or not info.columns:
        return False
    if any(
        _needs_rewrite(c.dtype) or Flag.LAZYFRAME in c.flags or _objects(c.dtype)
        for c in info.columns
    ):
        return False
    want = _want(ctx)
    if info.kind == Kind.TABLE and want == Kind.TABLE:
        return all(c.chunks == 1 and "<" not in c.dtype for c in info.columns)
    return info.kind == Kind.COLUMN and want == Kind.COLUMN and info.columns[0].chunks == 1


def _cast_to_views(info: DataInfo) -> tuple[tuple[int, Any], ...]:
    """(position, view type) of each flat string or binary column (32- or 64-bit offsets)
    of ``info``: polars stores them as string_view and binary_view, and its import
    rebuilds them, characters copied. pyarrow's cast builds the views over the same
    character buffer, 2-4x faster (see VIEWS_FROM)."""
    found = [(i, _VIEW_OF[c.dtype]) for i, c in enumerate(info.columns) if c.dtype in _VIEW_OF]
    if not found:
        return ()
    alias = arrowkit.pa_module().type_for_alias
    return tuple((i, alias(view)) for i, view in found)


def _viewed_frame(
    frame: Callable[[Any], Any], views: tuple[tuple[int, Any], ...]
) -> Callable[[Any], Any]:
    """``frame(table)`` (``pl.DataFrame``) of a table of flat columns, one chunk each,
    whose columns ``views`` names are cast to views first where it has VIEWS_FROM rows."""
    table_cls, read_table = arrowkit.pa_module().Table, arrowkit.read_table

    def dataframe(value: Any) -> Any:
        if type(value) is not table_cls:  # (another producer: polars reads a small one)
            try:
                rows = len(value)
            except TypeError:
                rows = VIEWS_FROM
            if rows < VIEWS_FROM:
                return frame(value)
            value = read_table(value)
        if value.num_rows >= VIEWS_FROM:
            schema = value.schema
            for i, typ in views:
                value = value.set_column(
                    i, schema.field(i).with_type(typ), value.column(i).cast(typ)
                )
        return frame(value)

    return dataframe


def _for_polars(pa: Any, data: Any, strict: bool = False, unplanned: bool = False) -> Any:
    """Arrow data polars can import: fixed offsets become UTC, second-unit values polars'
    milliseconds cannot hold become null (warned), and fixed-size lists at an offset are
    rebuilt (polars fails on them: its validity length check ignores offsets).

    ``unplanned``: the plan saw Python objects, not these types, so it could not warn of
    a fixed offset: that loss is reported here, on the data as read."""
    if unplanned:
        fields = data.schema if hasattr(data, "schema") else [pa.field("", data.type)]
        losses = [
            Loss(
                f.name,
                str(f.type),
                "Datetime('UTC')",
                "polars has no fixed-offset zones: the zone becomes UTC (same instants; "
                "local times shift by the offset)",
            )
            for f in fields
            if _fixed_offset(pa, f.type)
        ]
        report_losses(losses, "polars", strict)
    data = _seconds_in_range(pa, data, strict)
    data = _decode_dictionaries(pa, data)
    data = _widen_decimals(pa, data)
    data = _plain_layouts(pa, data)
    data = _fixed_offsets_to_utc(pa, data)  # (on plain layouts: pyarrow casts no views)
    if hasattr(data, "schema"):
        if any(pa.types.is_date64(f.type) for f in data.schema):
            schema = pa.schema(
                f.with_type(pa.date32()) if pa.types.is_date64(f.type) else f for f in data.schema
            )
            data = data.cast(schema)
        if any(_fixed_size(pa, f.type) for f in data.schema):
            if arrowkit.split_columns(data.columns):
                # polars slices a table's columns where another's chunks end, and fails
                # on the fixed-size list slices: the chunks are aligned here (slices,
                # zero-copy), and those at an offset rebuilt
                data = pa.Table.from_batches(data.to_batches(), schema=data.schema)
            return pa.table([_rebuilt(pa, c) for c in data.columns], schema=data.schema)
        return data
    if pa.types.is_date64(data.type):
        return data.cast(pa.date32())
    return _rebuilt(pa, data)


def _plain_layouts(pa: Any, data: Any) -> Any:
    """``data`` with list views rebuilt as lists and run-end encoded columns decoded
    (polars 2.1 refuses "+vl", "+vL" and "+r")."""
    if hasattr(data, "schema"):
        if all(arrowkit.has_plain_layout(f.type) for f in data.schema):
            return data
        columns = [arrowkit.plain_layout(c) for c in data.columns]
        return pa.table(columns, names=data.column_names)
    return arrowkit.plain_layout(data)


def _precision(dtype: str) -> int:
    """The precision of a decimal type's name, ``decimal256(40, 2)`` -> 40."""
    return int(dtype.split("(", 1)[1].split(",", 1)[0])


def _widen_decimals(pa: Any, data: Any) -> Any:
    """decimal32/64 (and decimal256 of at most 38 digits) as decimal128 of the same
    precision and scale: polars holds decimals as 128-bit integers, and a narrow decimal
    imported through the C interface leaves a Series whose Arrow export panics (polars
    2.1: an abort of the process). date64 as date32 (polars' Date), which polars made a
    Datetime where nested. At any depth of structs, lists and maps."""

    t = pa.types

    def wide(typ: Any) -> Any:  # (also nested: polars panicked on a list of decimal256)
        if t.is_decimal32(typ) or t.is_decimal64(typ) or t.is_decimal256(typ):
            return pa.decimal128(typ.precision, typ.scale)  # (a decimal256: at most 38 digits)
        if t.is_date64(typ):  # (nested: polars made a Datetime of it, silently)
            return pa.date32()
        if t.is_struct(typ):
            return pa.struct([f.with_type(wide(f.type)) for f in typ])
        if t.is_list(typ):
            return pa.list_(typ.value_field.with_type(wide(typ.value_type)))
        if t.is_large_list(typ):
            return pa.large_list(typ.value_field.with_type(wide(typ.value_type)))
        if t.is_fixed_size_list(typ):
            return pa.list_(typ.value_field.with_type(wide(typ.value_type)), typ.list_size)
        if t.is_map(typ):
            key = typ.key_field.with_type(wide(typ.key_type))
            return pa.map_(key, typ.item_field.with_type(wide(typ.item_type)), typ.keys_sorted)
        return typ

    if hasattr(data, "schema"):
        types = [wide(f.type) for f in data.schema]
        if all(new == f.type for new, f in zip(types, data.schema, strict=True)):
            return data
        schema = pa.schema(f.with_type(new) for new, f in zip(types, data.schema, strict=True))
        return data.cast(schema)
    typ = wide(data.type)
    return data if typ == data.type else data.cast(typ)


def _decode_dictionaries(pa: Any, data: Any) -> Any:
    """polars Categoricals hold strings: other dictionaries are decoded to their values
    (polars would turn a chunked integer dictionary into strings)."""

    def plain(typ: Any) -> bool:
        if not pa.types.is_dictionary(typ):
            return False
        value = typ.value_type
        return not (
            pa.types.is_string(value)
            or pa.types.is_large_string(value)
            or pa.types.is_string_view(value)
        )

    # (decode_dictionary, not a cast: pyarrow 26 casts no dictionary of structs to its
    # values, and takes no string views, also nested in the values)
    if hasattr(data, "schema"):
        if not any(plain(f.type) for f in data.schema):
            return data
        columns = [arrowkit.decode_dictionary(c) if plain(c.type) else c for c in data.columns]
        return pa.table(columns, names=data.column_names)
    return arrowkit.decode_dictionary(data) if plain(data.type) else data


def _fixed_size(pa: Any, typ: Any) -> bool:
    """Whether a column is a fixed-size list, or an extension of one (a fixed-shape tensor)."""
    return bool(pa.types.is_fixed_size_list(getattr(typ, "storage_type", typ)))


def _rebuilt(pa: Any, col: Any) -> Any:
    """A fixed-size list column with each chunk that is a slice of its values (at an
    offset; with nulls, shorter than them: ``Flag.FIXED_SIZE_TAIL``) rebuilt at offset 0
    (a copy of that chunk); its chunks are kept (polars takes them at offset 0)."""
    if not _fixed_size(pa, col.type):
        return col
    if not hasattr(col, "chunks"):
        return pa.concat_arrays([col]) if _sliced_fixed(pa, col) else col
    if not any(_sliced_fixed(pa, c) for c in col.chunks):
        return col
    chunks = [pa.concat_arrays([c]) if _sliced_fixed(pa, c) else c for c in col.chunks]
    return pa.chunked_array(chunks, type=col.type)


def _sliced_fixed(pa: Any, chunk: Any) -> bool:
    if chunk.offset:
        return True
    storage = chunk.storage if isinstance(chunk.type, pa.BaseExtensionType) else chunk
    return bool(storage.null_count) and len(storage.values) > len(chunk) * storage.type.list_size


#: The largest second polars' milliseconds hold (it rescales s to ms, and wraps beyond).
_MAX_SECONDS = (2**63 - 1) // 1000


def _seconds_in_range(pa: Any, data: Any, strict: bool) -> Any:
    """``data`` with second-unit timestamps and durations beyond polars' millisecond
    range nulled, each such column reported as lossy (polars would wrap them)."""
    pc = require("pyarrow.compute")
    named = (
        list(zip(data.column_names, data.columns, strict=True))
        if hasattr(data, "schema")
        else [("", data)]
    )
    losses, fixed = [], {}
    for name, col in named:
        typ = col.type
        if not (pa.types.is_timestamp(typ) or pa.types.is_duration(typ)) or typ.unit != "s":
            continue
        raw = col.cast(pa.int64())  # the stored seconds
        outside = pc.or_(pc.greater(raw, _MAX_SECONDS), pc.less(raw, -_MAX_SECONDS))
        count = pc.sum(outside).as_py() or 0
        if count:
            losses.append(
                Loss(
                    name,
                    str(typ),
                    "polars milliseconds",
                    f"{count} value(s) beyond ±{_MAX_SECONDS} s, which polars' milliseconds "
                    "cannot hold, become null",
                )
            )
            fixed[name] = pc.if_else(outside, pa.scalar(None, typ), col)
    report_losses(losses, "polars", strict)
    if not fixed:
        return data
    if not hasattr(data, "schema"):
        return fixed[""]
    cols = [fixed.get(n, c) for n, c in named]
    return pa.table(cols, schema=data.schema)


def _fixed_offsets_to_utc(pa: Any, data: Any) -> Any:
    """Cast timestamps with a fixed offset zone (+05:30), which polars refuses (nested in a
    struct, list or map, it panics), to UTC: the same instants, the zone only changes."""
    fields = data.schema if hasattr(data, "schema") else [pa.field("", data.type)]
    if not any(_fixed_offset(pa, f.type) for f in fields):
        return data
    if not hasattr(data, "schema"):
        return data.cast(_utc_type(pa, data.type))
    schema = pa.schema(f.with_type(_utc_type(pa, f.type)) for f in data.schema)
    return data.cast(schema)


def _fixed_offset(pa: Any, typ: Any) -> bool:
    """Whether ``typ``, or a type nested in it, is a timestamp with a fixed-offset zone."""
    if pa.types.is_timestamp(typ):
        return bool(typ.tz and typ.tz[0] in "+-")
    return pa.types.is_nested(typ) and mentions_fixed_offset(str(typ))


def _utc_type(pa: Any, typ: Any) -> Any:
    """``typ`` with each timestamp of a fixed-offset zone, also nested, zoned UTC."""
    t = pa.types
    if t.is_timestamp(typ):
        return pa.timestamp(typ.unit, "UTC") if _fixed_offset(pa, typ) else typ
    if not _fixed_offset(pa, typ):
        return typ

    def field(f: Any) -> Any:
        return f.with_type(_utc_type(pa, f.type))

    if t.is_struct(typ):
        return pa.struct([field(f) for f in typ])
    if t.is_list(typ):
        return pa.list_(field(typ.value_field))
    if t.is_large_list(typ):
        return pa.large_list(field(typ.value_field))
    if t.is_fixed_size_list(typ):
        return pa.list_(field(typ.value_field), typ.list_size)
    if t.is_list_view(typ):
        return pa.list_view(field(typ.value_field))
    if t.is_large_list_view(typ):
        return pa.large_list_view(field(typ.value_field))
    if t.is_map(typ):
        return pa.map_(field(typ.key_field), field(typ.item_field), typ.keys_sorted)
    if t.is_dictionary(typ):
        return pa.dictionary(typ.index_type, _utc_type(pa, typ.value_type), typ.ordered)
    if t.is_run_end_encoded(typ):
        return pa.run_end_encoded(typ.run_end_type, _utc_type(pa, typ.value_type))
    return typ  # (a union: polars refuses it before this matters)


def _series(value: Any, name: str, strict: bool = False, unplanned: bool = False) -> Any:
    pl = _pl()
    if installed("pyarrow"):
        col = _for_polars(arrowkit.pa_module(), arrowkit.read_column(value), strict, unplanned)
        series = _column_series(pl, arrowkit.pa_module(), col)
    else:
        series = pl.Series(value)
    return series.alias(name) if name and series.name != name else series


def _column_series(pl: Any, pa: Any, col: Any) -> Any:
    """``pl.from_arrow(col, rechunk=False)``, except for a struct ChunkedArray of several
    chunks, which polars joins into one (a copy of every buffer) unless it comes in a
    table: it is imported as a one-column table (its chunks kept, zero-copy)."""
    if (
        isinstance(col, pa.ChunkedArray)
        and col.num_chunks > 1
        and pa.types.is_struct(getattr(col.type, "storage_type", col.type))
    ):
        return _compacting(
            lambda c: pl.from_arrow(pa.table({"": c}), rechunk=False), col
        ).to_series()
    return _compacting(lambda c: pl.from_arrow(c, rechunk=False), col)


def _needs_rewrite(dtype: str) -> bool:
    """Types polars refuses or misreads, which _for_polars rewrites first."""
    return (
        mentions_fixed_offset(dtype)
        or dtype in ("timestamp[s]", "duration[s]")
        or dtype.startswith(
            (
                "fixed_size_list",
                "extension<arrow.fixed_shape_tensor",  # a fixed-size list's storage
                "date64",
                "timestamp[s,",
                "decimal32",
                "decimal64",
                "decimal256",
            )
        )
        or "list_view<" in dtype  # also nested: rebuilt as lists
        or "run_end_encoded<" in dtype  # also nested: decoded
        or _NARROW_OR_WIDE_DECIMAL.search(dtype) is not None  # also nested: decimal128
        or "date64" in dtype  # also nested: date32
        or (dtype.startswith("dictionary<") and not is_string_dictionary(dtype))
    )


def _objects(dtype: str) -> bool:
    """Whether a planned column holds Python objects, whose Arrow type shows once read
    (numpy's object arrays, pandas' object columns)."""
    return dtype in ("object", "objects") or dtype.startswith("py:")


def _frame(value: Any, info: DataInfo, strict: bool = False, column: str | None = None) -> Any:
    """``value`` (Arrow data, a table; ``column``: a column, imported as a frame of it
    under that name) as a polars DataFrame."""
    pl = _pl()
    rewrite = any(_needs_rewrite(c.dtype) for c in info.columns)
    objects = any(_objects(c.dtype) for c in info.columns)  # types known once read
    enums = [c.name for c in info.columns if ENUM in c.flags]
    if (
        rewrite
        or objects
        or enums
        or column is not None
        or any(c.chunks != 1 for c in info.columns)
    ) and installed("pyarrow"):
        pa = arrowkit.pa_module()
        if column is None:
            data = arrowkit.read_table(value)
        else:
            data = pa.table({column: arrowkit.read_column(value)})
        table = _enum_fields(pl, pa, _for_polars(pa, data, strict, objects), enums)
        return _compacting(lambda t: pl.from_arrow(t, rechunk=False), table)
    if installed("pyarrow"):
        frame = polars_native.arrow_makers()[0]  # pl.DataFrame's own end: see _import_bind
        return _compacting(frame, arrowkit.read_table(value))
    return pl.DataFrame(value)


def _compacting(call: Callable[[Any], Any], data: Any, failed: Exception | None = None) -> Any:
    """``call(data)``, a polars import (``failed``: what it raised already). Where polars
    refuses a fixed-size list nested in another column at an offset of its own ("validity
    mask length must be equal to the number of values divided by size": its check ignores
    the offset), once more with each nested column compacted by ``pa.concat_arrays``: its
    arrays at offset 0, a copy the plan names (``Flag.NESTED_OWN_OFFSET``). Any other
    error is raised as it is; the common case costs a ``try``."""
    if failed is None:
        try:
            return call(data)
        except Exception as exc:  # noqa: BLE001 - polars raises ComputeError (see below)
            failed = exc
    if "validity mask length must be equal" not in str(failed):
        raise failed
    return call(_compacted(arrowkit.pa_module(), data))


def _compacted(pa: Any, data: Any) -> Any:
    """``data`` (Table, ChunkedArray or Array) with its nested columns' chunks copied to
    offset 0, their children too."""
    if isinstance(data, pa.Array):
        return pa.concat_arrays([data])
    if isinstance(data, pa.ChunkedArray):
        chunks = [pa.concat_arrays([c]) for c in data.chunks]
        return pa.chunked_array(chunks, type=data.type)
    columns = [
        _compacted(pa, c) if pa.types.is_nested(getattr(c.type, "storage_type", c.type)) else c
        for c in data.columns
    ]
    return pa.Table.from_arrays(columns, schema=data.schema)


@hookimpl
def register_adapters(register: Any) -> None:
    register(PolarsAdapter())
