"""nanoarrow adapter: Array and ArrayStream (one-shot).

nanoarrow has no table type: a struct array without null rows is a table (one with null
rows is a column), a stream of structs that cannot be null is a table's stream, and a
stream of nullable structs (a column's) is read once, then planned as what it holds.

Speaks the Arrow PyCapsule interface both ways, always zero-copy: nanoarrow imports by
moving the C structs. Describing and measuring go through pyarrow when installed, and so
do exports that may hold what pyarrow's C export broke when the nanoarrow object was made
of pyarrow data (empty chunks at an offset: :func:`_export_bind`).
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from interchange_hub import arrowkit
from interchange_hub._core.deps import installed, require
from interchange_hub._core.info import Column, Copy, DataInfo, Estimate, Flag, Kind, Unroutable
from interchange_hub._core.marks import hookimpl
from interchange_hub.adapter import (
    ARROW,
    Adapter,
    Buffer,
    Context,
    Edge,
    IdentityKeys,
)
from interchange_hub.errors import ConsumedSourceError, ConversionError, NoRouteError

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable, Mapping, Sequence


def _na() -> Any:
    return require("nanoarrow", "to make nanoarrow objects")


# nanoarrow's Array class, once nanoarrow is imported (the route key's test of type)
_ARRAY: type | None = None


def _array_class() -> type:
    global _ARRAY
    _ARRAY = _na().Array
    return _ARRAY


class NanoarrowAdapter(Adapter):
    name = "nanoarrow"
    keyed_losses = True  # no count or size in its estimates' losses
    aliases = ("na",)
    module = "nanoarrow"
    waypoint = True
    extra = "nanoarrow"
    types = ("nanoarrow.Array", "nanoarrow.ArrayStream")

    def owns(self, obj: object) -> bool:
        na = _na()
        return isinstance(obj, (na.Array, na.ArrayStream))

    def type_kinds(self) -> Mapping[type, Kind | None]:
        na = _na()
        return {na.Array: None, na.ArrayStream: Kind.STREAM}

    def __init__(self) -> None:
        # A nanoarrow Array is immutable: its key is computed once (see IdentityKeys).
        self._keys = IdentityKeys(_route_key)
        self._lookup = self._keys.lookup()

    def is_one_shot(self, obj: object) -> bool:
        return isinstance(obj, _na().ArrayStream)

    def route_key(self, obj: Any) -> Hashable | None:
        # (nanoarrow's Array class read once: _na() is 0.1 us of a 0.37 us key)
        return self._keys(obj) if type(obj) is (_ARRAY or _array_class()) else None

    def route_key_of(self, cls: type) -> Callable[[Any], Hashable | None]:
        if type(self).route_key is not NanoarrowAdapter.route_key:  # (a subclass keys its own way)
            return self.route_key
        # An Array's key from route_key's table without its method and type test; other
        # types (streams, subclasses) have none.
        return self._lookup if cls is (_ARRAY or _array_class()) else self.route_key

    def describe(self, obj: Any) -> DataInfo:
        na = _na()
        _register_c_array()  # (before any route of nanoarrow data is kept)
        is_table = _is_struct(obj.schema)
        if isinstance(obj, na.ArrayStream):
            _check_unread(obj)
            if not installed("pyarrow"):
                return DataInfo(Kind.STREAM, known=False)
            pa = arrowkit.pa_module()
            if is_table and _nullable(obj.schema):
                # Nullable structs (a struct column's stream): a chunk may have null rows,
                # which a table has not, or be a slice, which pyarrow's record batch import
                # gets wrong. Read once (each chunk as an array), then planned: a table of
                # the fields without null rows, else a column (as an Array of structs).
                return DataInfo(Kind.STREAM, known=False)
            if is_table:  # a table's stream: record batches (structs that cannot be null)
                return arrowkit.describe_schema(pa.schema(obj.schema), Kind.STREAM)
            # A stream of plain arrays is one column, read whole when converted.
            return arrowkit.describe_schema(pa.schema([pa.field(obj.schema)]), Kind.COLUMN)
        if installed("pyarrow"):
            pa = arrowkit.pa_module()
            col = pa.chunked_array(obj)
            # A struct with null rows is a column (a table has none), and so is an
            # extension type stored as a struct (its C schema's format is a struct's too).
            if is_table and not col.null_count and pa.types.is_struct(col.type):
                info = arrowkit.describe_table(arrowkit.struct_table(col))
                return info if _batches(obj) else _sliced(info)
            return arrowkit.describe_column(col)
        kind = Kind.TABLE if is_table else Kind.COLUMN
        return DataInfo(kind, (Column("", _type_name(obj.schema), -1, -1, obj.n_chunks),))

    def buffers(self, obj: Any) -> list[Buffer]:
        if isinstance(obj, _na().ArrayStream):
            return []
        return arrowkit.buffers(arrowkit.pa_module().chunked_array(obj))

    def concat(self, parts: Sequence[Any]) -> Any:
        """One chunked Array of every part's chunks (``Array.from_chunks``): zero-copy."""
        na = _na()
        if not all(isinstance(p, na.Array) for p in parts):
            names = ", ".join(
                dict.fromkeys(
                    f"{type(p).__module__.split('.')[0]}.{type(p).__qualname__}" for p in parts
                )
            )
            why = (
                "a stream is read once, not joined; convert to na.Array instead"
                if any(isinstance(p, na.ArrayStream) for p in parts)
                else "the results of one conversion share one type"
            )
            raise ConversionError(
                f"cannot join {len(parts)} partitions of {names}: {why}, or take them one "
                "by one with .partitions()"
            )
        chunks = [chunk for p in parts for chunk in p.iter_chunks()]
        # A schema makes nanoarrow request it of each chunk, which its arrays refuse.
        return na.Array.from_chunks(chunks) if chunks else na.Array.from_chunks([], parts[0].schema)

    def edges(self) -> Sequence[Edge]:
        return (
            Edge(
                "nanoarrow",
                ARROW,
                self.name,
                "__arrow_c_stream__",
                _export_estimate,
                _export,
                ("nanoarrow",),
                bind=_export_bind,
            ),
            Edge(
                ARROW,
                "nanoarrow",
                self.name,
                "na.Array/na.ArrayStream",
                _import_estimate,
                _import,
                ("nanoarrow",),
                bind=_import_bind,
            ),
        )


def _is_struct(schema: Any) -> bool:
    """Whether a nanoarrow Schema is a struct, read from its format string: ``schema.type``
    raises for types nanoarrow's Python enum lacks (decimal32/64, list views: 42-45)."""
    return bool(_na().c_schema(schema).format == "+s")


def _check_unread(stream: Any) -> None:
    """Raise ConsumedSourceError for a released ArrayStream (read already: a stream of
    nullable structs is read when converted, before any step could claim it)."""
    c_stream = getattr(stream, "_c_array_stream", None)  # (nanoarrow's own, no public API)
    if c_stream is not None and not c_stream.is_valid():
        raise ConsumedSourceError(
            "this nanoarrow ArrayStream was read already, and a stream can be read only "
            "once; create a new stream, or convert it to a table first and convert the table"
        )


def _nullable(schema: Any) -> bool:
    """Whether a nanoarrow Schema says its values may be null (``ARROW_FLAG_NULLABLE``):
    a table's stream exports its structs as not nullable, a column's as nullable."""
    return bool(_na().c_schema(schema).flags & _NULLABLE)


_NULLABLE = 2  # ARROW_FLAG_NULLABLE


def _batches(obj: Any) -> bool:
    """Whether each chunk of a struct nanoarrow Array is a record batch as it stands: at
    offset 0 and each child as long as it (read from the C structs, not the data). Only
    such a chunk is read right through the C interface as a record batch: pyarrow's
    import refuses an offset, and keeps a longer child as it is (an invalid table)."""
    c_array = _na().c_array
    for chunk in obj.iter_chunks():
        c = c_array(chunk)
        n = c.length
        if c.offset or any(c.child(i).length != n for i in range(c.n_children)):
            return False
    return True


def _sliced(info: DataInfo) -> DataInfo:
    """``info`` of a table whose struct chunks are not record batches as they stand (see
    :func:`_batches`): each column is flagged SLICED, so that the export reads it into
    pyarrow first (:func:`_export_bind`)."""
    return info.but(columns=tuple(replace(c, flags=c.flags | _SLICED) for c in info.columns))


_SLICED = frozenset({Flag.SLICED})


def _type_name(schema: Any) -> str:
    """The type's name where nanoarrow's enum knows it, else its Arrow format string."""
    try:
        return str(schema.type)
    except ValueError:
        return str(_na().c_schema(schema).format)


def _route_key(obj: Any) -> Hashable | None:
    """The key of what describe reads: the data as pyarrow sees it (a struct without
    nulls or offsets is a table, as in describe). None without pyarrow: always planned."""
    if not installed("pyarrow"):
        return None
    col = arrowkit.pa_module().chunked_array(obj)
    is_table = _is_struct(obj.schema)
    if is_table and not col.null_count:
        key = arrowkit.route_key(arrowkit.struct_table(col))
        return None if key is None else ("table", key, _batches(obj))
    key = arrowkit.route_key(col)
    return None if key is None else ("column", key)


def _export_estimate(ctx: Context) -> Estimate:
    return Estimate(ctx.info, why="nanoarrow objects export their own buffers")


def _export(value: Any, ctx: Context) -> Any:
    run = _export_bind(ctx)
    return value if run is None else run(value)


def _export_bind(ctx: Context) -> Callable[[Any], Any] | None:
    """Nothing to do (None), except for what pyarrow's C export broke when the nanoarrow
    object was made of pyarrow data (an empty chunk at an offset whose buffers it dropped:
    :func:`arrowkit.empty_chunks_at_zero`), and for a table whose struct chunks may not be
    record batches as they stand (a column flagged SLICED: see :func:`_batches`).

    A table's stream is read through a pyarrow reader that puts its empty batches at
    offset 0 (lazily), a column's stream into a pyarrow ChunkedArray (it is read whole
    anyway). An Array with a chunk at an offset (flagged SLICED) is read into pyarrow
    (zero-copy): a table into a Table of its fields sliced to its rows, which every
    consumer reads right, a column into a ChunkedArray where a chunk needs the repair."""
    info = ctx.info
    if not installed("pyarrow"):
        return None
    pa = arrowkit.pa_module()
    chunked_array, struct_table = pa.chunked_array, arrowkit.struct_table
    column_at_zero, na_array = arrowkit.empty_chunks_at_zero, _na().Array
    if info.kind == Kind.STREAM:
        from_stream, reader_at_zero = (
            pa.RecordBatchReader.from_stream,
            arrowkit.empty_chunks_at_zero,
        )

        def stream(value: Any) -> Any:
            return reader_at_zero(from_stream(value)) if type(value) is not na_array else value

        return stream
    sliced = tuple(i for i, c in enumerate(info.columns) if Flag.SLICED in c.flags)
    if info.kind == Kind.COLUMN:
        if not sliced and all(c.chunks >= 0 for c in info.columns):
            return None  # an Array without chunks at an offset (a stream's are unknown)

        def column(value: Any) -> Any:
            if type(value) is na_array and not sliced:
                return value
            col = chunked_array(value)  # a stream: read whole, as its consumers do
            fixed = column_at_zero(col)
            return value if fixed is col and type(value) is na_array else fixed

        return column
    if info.kind != Kind.TABLE or not sliced:
        return None
    columns_at_zero = arrowkit.empty_chunks_at_zero

    def as_table(value: Any) -> Any:
        if not isinstance(value, na_array):
            return value
        return columns_at_zero(struct_table(chunked_array(value)), sliced)

    return as_table


def _import_estimate(ctx: Context) -> Estimate:
    if ctx.info.kind == Kind.TENSOR:
        raise Unroutable("nanoarrow takes tensors through the Arrow bridge")
    want = ctx.kind or ctx.info.kind
    if ctx.target_type is not None and ctx.target_type.__name__ == "Array" and want == Kind.STREAM:
        want = Kind.TABLE
    for c in ctx.info.columns:
        if any(mark in c.dtype for mark in _VIEW_STORAGE) and not c.dtype.startswith(_REBUILT):
            # (nanoarrow read such a column as it was: the process crashed when it was read)
            raise Unroutable(
                f"nanoarrow cannot read string_view/binary_view safely, and column {c.name!r} "
                f"({c.dtype}) holds them as an extension type's storage, which a cast cannot "
                "reach; rebuild the column over large_string/large_binary first (for "
                "arrow.json: pa.ExtensionArray.from_storage(pa.json_(pa.large_string()), "
                "col.storage.cast(pa.large_string()))), or take its storage alone"
            )
    copies = tuple(
        Copy(
            c.name,
            c.nbytes,
            f"nanoarrow cannot read view types safely; {c.dtype} is cast to large types",
        )
        for c in ctx.info.columns
        if arrowkit.has_views(c.dtype)
    )
    if copies and not installed("pyarrow"):
        raise Unroutable("view types need pyarrow to be cast before nanoarrow reads them")
    return Estimate(ctx.info.but(kind=want), copies, why="C structs moved into nanoarrow")


# How a type name shows views in an extension type's storage (arrowkit.dtype_name, and
# pyarrow's own name of arrow.opaque)
_VIEW_STORAGE = (
    " over string_view",
    " over binary_view",
    "storage_type=string_view",
    "storage_type=binary_view",
)


# Extension types over views made anew over large types (arrowkit.without_views), at the
# top of a column: pyarrow's arrow.json and arrow.opaque
_REBUILT = (
    "extension<arrow.json> over string_view",
    "extension<arrow.opaque[storage_type=string_view,",
    "extension<arrow.opaque[storage_type=binary_view,",
)


def _import_bind(ctx: Context) -> Any:
    """:func:`_import` for the hot path: where the data holds no view types and keeps its
    kind, ``na.Array``/``na.ArrayStream`` itself (what :func:`_import` decides from the
    context alone, taken once); anything else as :func:`_import` does it."""
    na = _na()
    info = ctx.info
    want = _wanted(ctx)
    if any(arrowkit.has_views(c.dtype) for c in info.columns):
        return _flat_views_cast(ctx, want) or (lambda value: _import(value, ctx))
    if want != info.kind and Kind.STREAM not in (want, info.kind):
        return lambda value: _import(value, ctx)
    if want == Kind.STREAM:
        return na.ArrayStream
    _register_c_array()  # (the Arrays made here may be read by pyarrow next)
    return _array_maker() if installed("pyarrow") else na.Array


# The view types a table's column is cast from on the hot path, and what it becomes
_FLAT_VIEWS = {"string_view": "large_string", "binary_view": "large_binary"}

# The rows up to which :func:`_flat_views_cast` casts a table's view columns itself, one
# after the other; a longer table is cast as arrowkit.without_views casts it (slices of
# its columns on threads, from 16 MiB: which 16,384 rows reach with strings of 1 KiB).
_OWN_CAST_ROWS = 1 << 14


def _flat_views_cast(ctx: Context, want: Kind) -> Callable[[Any], Any] | None:
    """:func:`_import` for a table whose view columns are all flat (``string_view``,
    ``binary_view``; the route key holds the dtypes), kept a table: read as
    :func:`_import` reads it (large types asked of the producer), then each view column
    cast to its large type, set into the table with its field (name, nullability,
    metadata) and the table's metadata: what ``arrowkit.without_views`` makes of it,
    without its lookup of the table's schema (a fresh schema's hash and comparison cost
    8 us for two columns, 17 for five: Arrow fingerprints both) and its checks, which the
    plan made (polars -> nanoarrow, 1,000 rows: two string_view columns 150-154 -> 112 us, against
    90-92 for ``na.Array(x.to_arrow(compat_level=pl.CompatLevel.oldest()))``; one among
    five columns 172-178 -> 118, against 123; 10,000 rows of the two 234 -> 188, against
    149: pyarrow's cast costs 11 us a call before any work).

    The general way (``without_views``, which works the table's own schema out) takes a
    table of more than :data:`_OWN_CAST_ROWS` rows, one of another number of columns than
    planned, a view column of another type than planned or its large one, a non-nullable
    view column holding nulls (pyarrow's cast refuses it), and, from a producer other than
    pyarrow's own tables and the classes whose adapters vouch for their streams
    (``arrowkit.exact_batches``: polars' frames), one with a view among its other columns
    (a stream unlike the schema it described: nanoarrow would crash on it)."""
    info = ctx.info
    if info.kind != Kind.TABLE or want != Kind.TABLE or not installed("pyarrow"):
        return None
    views = [(i, c.dtype) for i, c in enumerate(info.columns) if arrowkit.has_views(c.dtype)]
    if any(dtype not in _FLAT_VIEWS for _, dtype in views):
        return None  # nested views, a dictionary of them: the general way
    pa = arrowkit.pa_module()
    casts = tuple(
        (i, pa.type_for_alias(dtype), pa.type_for_alias(_FLAT_VIEWS[dtype])) for i, dtype in views
    )
    width, viewed = len(info.columns), {i for i, _ in views}
    others = tuple(i for i in range(width) if i not in viewed)
    make = _na().Array
    read, wanted = arrowkit.read_table_asking, arrowkit.without_views_schema
    table_cls, exact, has_views = pa.Table, arrowkit.exact_batches, arrowkit.has_views

    def run(value: Any) -> Any:
        table = read(value, wanted)
        if table.num_rows > _OWN_CAST_ROWS or table.num_columns != width:
            return make(_without_views(table))
        columns = table.columns
        cls = type(value)
        if cls is not table_cls and not exact(cls):
            for i in others:
                if has_views(str(columns[i].type)):
                    return make(_without_views(table))
        schema = table.schema
        out = table
        for i, view, large in casts:
            column = columns[i]
            typ = column.type
            if typ == view:
                field = schema.field(i)
                if not field.nullable and column.null_count:
                    return make(_without_views(table))  # (pyarrow's error)
                out = out.set_column(i, field.with_type(large), column.cast(large))
            elif typ != large:  # (a producer that honoured the request gave large types)
                return make(_without_views(table))
        return make(out)

    return run


def _without_views(table: Any) -> Any:
    """``arrowkit.without_views(table)``, refused where views are left (:func:`_import`)."""
    table = arrowkit.without_views(table)
    if arrowkit.views_left(table):
        raise NoRouteError(
            "nanoarrow cannot read string_view/binary_view safely and this column nests "
            "them where a cast cannot reach; cast it to plain strings first"
        )
    return table


@lru_cache(maxsize=1)
def _register_c_array() -> bool:
    """Register with :func:`arrowkit.register_c_array` the C array of a nanoarrow Array
    of one chunk on the CPU as ``Array.__arrow_c_array__`` gives it, its chunk's own
    export: 0.9 us for 4 float64 columns of 1,000 rows, against 2.0 through the method,
    which compares the Array's device with the CPU's (0.7 us) on each call. The CPU is
    told here by identity (nanoarrow's own CPU device, every Array's default); an Array
    of other devices or chunks goes to the method. Checked once, on a small table and
    column, against the method (the same values, types and metadata, the same buffers);
    without pyarrow, or with a nanoarrow whose internals differ, nothing is registered
    (True where it was)."""
    if not installed("pyarrow"):
        return False
    na, pa = _na(), arrowkit.pa_module()
    try:
        from nanoarrow.device import DEVICE_CPU  # (the default of every Array)

        def export(value: Any) -> tuple[Any, Any] | None:
            if value._device is DEVICE_CPU:
                data = value._data
                if data.n_arrays == 1:
                    return data.array(0).__arrow_c_array__()  # type: ignore[no-any-return]
            return None

        table = pa.table({"a": pa.array([1, None], pa.int64()), "s": ["x", "yz"]})
        table = table.replace_schema_metadata({"k": "v"})
        same = export(na.Array(pa.chunked_array([[1], [2]]))) is None
        for data, read in ((table, pa.RecordBatch), (table.column(1).chunk(0), pa.Array)):
            value = na.Array(data)
            ours = read._import_from_c_capsule(*export(value))  # type: ignore[misc]
            theirs = read._import_from_c_capsule(*value.__arrow_c_array__())
            same = same and ours.equals(theirs)
            same = same and arrowkit.buffers(ours) == arrowkit.buffers(theirs)
            if read is pa.RecordBatch:  # (equals leaves out the metadata)
                same = same and ours.schema.equals(theirs.schema, check_metadata=True)
        if same:
            arrowkit.register_c_array(na.Array, export)
    except Exception:  # noqa: BLE001 - another nanoarrow: its method, as pyarrow calls it
        return False
    return bool(same)


@lru_cache(maxsize=1)
def _array_maker() -> Callable[[Any], Any]:
    """``na.Array(value)``, where the value is pyarrow's and holds one batch (a Table of
    one, a RecordBatch, an Array), made from its C array, as ``na.Array`` makes it from
    a C array (``CMaterializedArrayStream.from_c_array``) rather than from the C stream
    it asks for: the same one-chunk array, 2.4-4.4 us against 6.0-7.1 for 1,000 rows (a
    stream is read into a list of chunks). Anything else, and a nanoarrow whose calls
    differ (checked once, on a small table and array, against ``na.Array``), goes to
    ``na.Array`` itself."""
    na, pa = _na(), arrowkit.pa_module()
    public = na.Array
    try:
        from nanoarrow._array import CArray  # (nanoarrow's own C array and stream)
        from nanoarrow._array_stream import CMaterializedArrayStream

        from_c_array, import_array = (
            CMaterializedArrayStream.from_c_array,
            CArray._import_from_c_capsule,
        )
        table_cls, batch_cls, array_cls = pa.Table, pa.RecordBatch, pa.Array

        def native(one: Any) -> Any:
            return public(from_c_array(import_array(*one.__arrow_c_array__())))

        probe = pa.table({"a": pa.array([1, None], pa.int64()), "s": ["x", "yz"]})
        probe = probe.replace_schema_metadata({"k": "v"})
        same = True
        for data, one in ((probe, probe.to_batches()[0]), (probe.column(1).chunk(0),) * 2):
            made, made_public = native(one), public(data)
            same = same and type(made) is type(made_public)
            same = same and made.n_chunks == made_public.n_chunks == 1
            same = same and made.to_pylist() == made_public.to_pylist()
            schema, schema_public = na.c_schema(made.schema), na.c_schema(made_public.schema)
            same = same and repr(schema) == repr(schema_public)  # (format, names, metadata)
            same = same and repr(made.device) == repr(made_public.device)
    except Exception:  # noqa: BLE001 - another nanoarrow: na.Array itself
        same = False
    if not same:
        return public  # type: ignore[no-any-return]

    def array(value: Any) -> Any:
        cls = type(value)
        if cls is table_cls:
            batches = value.to_batches()
            if len(batches) == 1:
                return native(batches[0])
        elif cls is batch_cls or isinstance(value, array_cls):
            return native(value)
        return public(value)

    return array


def _wanted(ctx: Context) -> Kind:
    """The kind the result takes: the one asked for, else the data's; a stream asked for
    as an ``na.Array`` is read into one."""
    want = ctx.kind or ctx.info.kind
    return Kind.TABLE if ctx.target_type is _na().Array and want == Kind.STREAM else want


def _import(value: Any, ctx: Context) -> Any:
    na = _na()
    info = ctx.info
    want = _wanted(ctx)
    if any(arrowkit.has_views(c.dtype) for c in info.columns):
        # nanoarrow 0.9 crashes the process on string_view/binary_view (polars' strings).
        if want == Kind.STREAM and info.kind != Kind.COLUMN:  # (a column's: read whole)
            value = arrowkit.pa_module().RecordBatchReader.from_stream(value)
        elif info.kind == Kind.TABLE and want == Kind.TABLE:
            # large types asked of the producer: one that can converts its own data
            value = arrowkit.read_table_asking(value, arrowkit.without_views_schema)
        else:
            value = arrowkit.read(value, info.kind, info)
        value = _without_views(value)
    if want == Kind.STREAM:
        return na.ArrayStream(value)
    if (info.kind == Kind.TABLE and want == Kind.COLUMN) or (
        info.kind == Kind.COLUMN and want == Kind.TABLE
    ):
        return na.Array(arrowkit.read(value, want, info))
    return na.Array(value)


@hookimpl
def register_adapters(register: Any) -> None:
    register(NanoarrowAdapter())
