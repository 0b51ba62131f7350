"""pyarrow adapter: Table, RecordBatch, RecordBatchReader, Array, ChunkedArray.

Speaks the Arrow PyCapsule interface both ways; every edge is zero-copy except when a
contiguous type (Array, RecordBatch) is asked for and the data has several chunks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from interchange_hub import arrowkit
from interchange_hub._core.info import Copy, DataInfo, Estimate, Flag, Kind, Unroutable
from interchange_hub._core.marks import hookimpl
from interchange_hub._core.protocols import is_arrow_stream
from interchange_hub.adapter import (
    ARROW,
    Adapter,
    Buffer,
    Context,
    Edge,
    IdentityKeys,
    mixed_parts,
    with_context,
)
from interchange_hub.errors import ConversionError

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable, Mapping, Sequence


class PyArrowAdapter(Adapter):
    name = "pyarrow"
    keyed_losses = True  # no count or size in its estimates' losses
    aliases = ("pa", "arrow")
    module = "pyarrow"
    waypoint = True
    extra = "pyarrow"
    types = (
        "pyarrow.Table",
        "pyarrow.RecordBatch",
        "pyarrow.RecordBatchReader",
        "pyarrow.Array",
        "pyarrow.ChunkedArray",
    )

    def owns(self, obj: object) -> bool:
        pa = arrowkit.pa_module()
        return isinstance(
            obj, (pa.Table, pa.RecordBatch, pa.RecordBatchReader, pa.Array, pa.ChunkedArray)
        )

    def type_kinds(self) -> Mapping[type, Kind | None]:
        pa = arrowkit.pa_module()
        return {
            pa.Table: Kind.TABLE,
            pa.RecordBatch: Kind.TABLE,
            pa.Array: Kind.COLUMN,
            pa.ChunkedArray: Kind.COLUMN,
            pa.RecordBatchReader: Kind.STREAM,
        }

    def describe(self, obj: Any) -> DataInfo:
        pa = arrowkit.pa_module()
        if isinstance(obj, pa.RecordBatchReader):
            return arrowkit.describe_schema(obj.schema, Kind.STREAM)
        if isinstance(obj, (pa.Table, pa.RecordBatch)):
            return arrowkit.describe_table(obj)
        return arrowkit.describe_column(obj)

    def __init__(self) -> None:
        # pyarrow data is immutable: an object's key is computed once (see IdentityKeys).
        self._keys = IdentityKeys(arrowkit.route_key)
        self._lookup = self._keys.lookup()

    def route_key(self, obj: Any) -> Hashable | None:
        return self._keys(obj)

    def route_key_of(self, cls: type) -> Callable[[Any], Hashable | None]:
        if type(self).route_key is not PyArrowAdapter.route_key:  # (a subclass keys its own way)
            return self.route_key
        return self._lookup  # (route_key's table, without its method's frame)

    def is_one_shot(self, obj: object) -> bool:
        return isinstance(obj, arrowkit.pa_module().RecordBatchReader)

    def buffers(self, obj: Any) -> list[Buffer]:
        return arrowkit.buffers(obj)

    def concat(self, parts: Sequence[Any]) -> Any:
        """Tables and record batches as one Table, arrays as one ChunkedArray: zero-copy,
        every part's chunks are kept."""
        pa = arrowkit.pa_module()
        if all(isinstance(p, (pa.Table, pa.RecordBatch)) for p in parts):
            tables = [
                pa.Table.from_batches([p]) if isinstance(p, pa.RecordBatch) else p for p in parts
            ]
            return pa.concat_tables(tables)
        if all(isinstance(p, (pa.Array, pa.ChunkedArray)) for p in parts):
            chunks = [
                c for p in parts for c in (p.chunks if isinstance(p, pa.ChunkedArray) else (p,))
            ]
            return pa.chunked_array(chunks, type=parts[0].type)
        if any(isinstance(p, pa.RecordBatchReader) for p in parts):
            raise ConversionError(
                f"cannot join {len(parts)} partitions of pyarrow RecordBatchReader: a reader "
                "is read once, not joined; convert to a Table (to=pa.Table), or take the "
                "readers one by one with .partitions()"
            )
        raise mixed_parts(parts)

    def edges(self) -> Sequence[Edge]:
        return (
            Edge(
                "pyarrow",
                ARROW,
                self.name,
                "__arrow_c_stream__/array",
                _export_estimate,
                _export,
                ("pyarrow",),
                bind=_export_bind,
            ),
            Edge(
                ARROW,
                "pyarrow",
                self.name,
                "pa.table/pa.chunked_array",
                _import_estimate,
                _import,
                ("pyarrow",),
                bind=_import_bind,
            ),
        )


def _export_estimate(ctx: Context) -> Estimate:
    return Estimate(ctx.info, why="pyarrow objects export their own buffers")


def _export(value: Any, ctx: Context) -> Any:
    run = _export_bind(ctx)
    return value if run is None else run(value)


def _export_bind(ctx: Context) -> Callable[[Any], Any] | None:
    """pyarrow data as it is (None: nothing to do), but for its empty chunks at an
    offset, which pyarrow's C export leaves pointing past their buffers (an invalid array
    of views, a chunk that concatenation refuses: :func:`arrowkit.empty_chunks_at_zero`):
    each becomes an empty chunk at offset 0. Only columns of several chunks, one at an
    offset (``Flag.SLICED``; the route key tells both apart), are looked at, or every
    column with a chunk at an offset of data without rows; a reader's batches lazily, as
    they are read (only an empty batch holds such columns)."""
    info = ctx.info
    if info.kind == Kind.STREAM or not info.known:
        return arrowkit.empty_chunks_at_zero
    # A column of one chunk holds an empty one only when the data has no rows.
    sliced = tuple(
        i
        for i, c in enumerate(info.columns)
        if Flag.SLICED in c.flags and (c.chunks != 1 or not info.rows)
    )
    if not sliced:
        return None
    if info.kind == Kind.COLUMN:
        return arrowkit.empty_chunks_at_zero
    columns_at_zero = arrowkit.empty_chunks_at_zero

    def table(value: Any) -> Any:
        return columns_at_zero(value, sliced)

    return table


def _wanted(ctx: Context) -> Kind:
    return ctx.kind if ctx.kind is not None else ctx.info.kind


def _import_estimate(ctx: Context) -> Estimate:
    info, want = ctx.info, _wanted(ctx)
    if info.kind == Kind.TENSOR:
        raise Unroutable("pyarrow takes tensors through the Arrow bridge")
    name = getattr(ctx.target_type, "__name__", "")
    copies: tuple[Copy, ...] = ()
    if name in ("Array", "RecordBatch"):
        copies = tuple(
            Copy(c.name, c.nbytes, f"{c.chunks} chunks are combined into one {name}")
            for c in info.columns
            if c.chunks > 1
        )
    return Estimate(
        info.but(kind=want), copies, why="imported through the C stream/array interface"
    )


def _import(value: Any, ctx: Context) -> Any:
    pa = arrowkit.pa_module()
    want, cls = _wanted(ctx), ctx.target_type
    if want == Kind.STREAM or cls is pa.RecordBatchReader:
        if is_arrow_stream(value) and ctx.info.kind != Kind.COLUMN:
            return pa.RecordBatchReader.from_stream(value)
        table = arrowkit.read(value, Kind.TABLE, ctx.info)  # a reader yields record batches
        return pa.RecordBatchReader.from_batches(table.schema, table.to_batches())
    if want == Kind.TABLE:
        if isinstance(value, pa.RecordBatch) and cls is None:
            return value  # already pyarrow (e.g. a copied RecordBatch): keep its type
        table = arrowkit.read(value, Kind.TABLE, ctx.info)
        if cls is pa.RecordBatch:
            return arrowkit.single_batch(table)
        return table
    col = arrowkit.read(value, Kind.COLUMN, ctx.info)  # a one-column table gives its column
    if cls is pa.Array and isinstance(col, pa.ChunkedArray):
        return col.combine_chunks()
    if cls is pa.ChunkedArray and isinstance(col, pa.Array):
        return pa.chunked_array([col], type=col.type)
    return col


def _import_bind(ctx: Context) -> Callable[[Any], Any] | None:
    """For a table asked as a table (a column as a column), what :func:`_import` does in
    one call: pyarrow data stays as it is, anything else is read by ``pa.table``
    (``pa.array`` / ``pa.chunked_array``)."""
    want, kind = _wanted(ctx), ctx.info.kind
    if ctx.target_type is not None or want != kind or kind not in (Kind.TABLE, Kind.COLUMN):
        return with_context(_import, ctx)
    pa = arrowkit.pa_module()
    if kind == Kind.COLUMN:
        arrays, read_column = (pa.Array, pa.ChunkedArray), arrowkit.read_column

        def as_column(value: Any) -> Any:
            return value if isinstance(value, arrays) else read_column(value)

        return as_column
    table, batch, read_table = pa.Table, pa.RecordBatch, arrowkit.read_table
    if all(c.chunks == 1 for c in ctx.info.columns):
        # One batch: read through the C array interface where the producer has it (a
        # nanoarrow Array: 5.3 us, against 6.7 us through its stream), as a Table.
        from_batches, record_batch = pa.Table.from_batches, pa.record_batch
        import_batch = pa.RecordBatch._import_from_c_capsule
        from_stream, checked = pa.RecordBatchReader._import_from_c_capsule, arrowkit.lengths_checked

        # How each class of value is read, asked of the class once (two hasattr calls
        # on a polars frame's class cost 0.3 us a call): 1 its C array (through the
        # export its adapter registered, if any: arrowkit.register_c_array), 2 its stream.
        ways: dict[type, tuple[int, Callable[[Any], tuple[Any, Any] | None] | None]] = {}

        def one_batch(value: Any) -> Any:
            cls = type(value)
            if cls is table or cls is batch:
                return value
            entry = ways.get(cls)
            if entry is None:
                # Asked of the type: a polars frame's own __getattr__ costs 1.5 us a miss.
                if len(ways) >= 64:  # (classes made on the fly: forgotten, not hoarded)
                    ways.clear()
                entry = ways[cls] = (
                    1
                    if hasattr(cls, "__arrow_c_array__")
                    else 2
                    if hasattr(cls, "__arrow_c_stream__")
                    else 0,
                    arrowkit.c_array_export(cls),
                )
            way, export = entry
            if way == 2:  # (a polars frame, whose tables are not checked: it vouches)
                # arrowkit.read_stream, inline (0.15 us of a polars frame's 6.6)
                return checked(from_stream(value.__arrow_c_stream__(None)).read_all(), value)
            if way == 1:
                if export is not None:  # (arrowkit.batch_from, inline)
                    pair = export(value)
                    if pair is not None:
                        return from_batches([import_batch(*pair)])
                return from_batches([record_batch(value)])
            return read_table(value)

        return one_batch

    def as_table(value: Any) -> Any:
        cls = type(value)
        return value if cls is table or cls is batch else read_table(value)

    return as_table


@hookimpl
def register_adapters(register: Any) -> None:
    register(PyArrowAdapter())
