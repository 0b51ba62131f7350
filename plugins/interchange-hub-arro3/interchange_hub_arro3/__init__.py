"""interchange_hub plugin for arro3 (``arro3-core``): Table, RecordBatch, Array,
ChunkedArray and RecordBatchReader as sources and targets; ArrayReader as a source.

arro3 speaks the Arrow PyCapsule interface both ways and moves the C structs without
copying, so both edges are zero-copy. The exceptions are measured, not guessed: arrow-rs
cannot export a validity bitmap that starts inside a byte, so a slice with nulls whose
offset is not a multiple of 8 gets a new bitmap on every export; and asking for a
contiguous ``Array`` or ``RecordBatch`` combines several chunks. Describing and measuring
import the object into pyarrow through the capsule (zero-copy).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from interchange_hub import arrowkit
from interchange_hub.adapter import (
    ARROW,
    Adapter,
    Buffer,
    Context,
    Copy,
    DataInfo,
    Edge,
    Estimate,
    Flag,
    Kind,
    Unroutable,
    is_arrow_stream,
    mixed_parts,
    require,
)
from interchange_hub.errors import ConsumedSourceError
from interchange_hub.hookspecs import hookimpl

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

__all__ = ["Arro3Adapter", "register_adapters"]

NAME = "arro3"
_NEEDS = ("arro3.core", "pyarrow")

# Column flag: every export of this column builds a new validity bitmap (see below).
REBUILT = Flag.REBUILT_ON_EXPORT
_REALIGNED = (
    "arro3 (arrow-rs) cannot export a validity bitmap that starts inside a byte: a slice "
    "with nulls at an offset that is not a multiple of 8 gets a new bitmap on every export"
)

# arrow-rs exports a slice as buffers narrowed to the slice. The hub measures a slice's
# own bytes only for flat fixed-width, (large) string/binary and dictionary columns; for
# the other types it sees the source's whole buffers, so sharing cannot be shown.
_UNMEASURED = (
    "arro3 re-exports a slice of this type as narrowed buffers, which the hub cannot show "
    "to be the source's memory; counted as a copy"
)
_SLICE_UNMEASURED = ("_view", "decimal", "list", "fixed_size", "map<", "union", "extension<")


# arrow-rs (arro3 0.9) ignores the offset of a sparse union it imports: a slice reads its
# rows from the start of the children. Such a column is rebuilt at offset 0 first.
_UNION_REBUILT = (
    "arrow-rs drops the offset of a sparse union it imports (a slice would read the rows "
    "from the start): the column is rebuilt at offset 0, a copy"
)


def _loses_union_offset(dtype: str, flags: frozenset[str]) -> bool:
    """Whether a column of ``dtype`` may hold a sparse union at an offset: a sliced one, or
    one nested in another type (whose children the hub does not look into)."""
    if "sparse_union<" not in dtype:
        return False
    return Flag.SLICED in flags or not dtype.startswith("sparse_union<")


def _measured_by_slice(dtype: str) -> bool:
    return not dtype.startswith("run_end") and not any(m in dtype for m in _SLICE_UNMEASURED)


def _a3() -> Any:
    return require("arro3.core", "to make arro3 objects")


class Arro3Adapter(Adapter):
    name = NAME
    module = "arro3.core"
    requirement = "arro3-core"
    types = (
        "arro3.core.Table",
        "arro3.core.RecordBatch",
        "arro3.core.Array",
        "arro3.core.ChunkedArray",
        "arro3.core.RecordBatchReader",
        "arro3.core.ArrayReader",
    )

    def owns(self, obj: object) -> bool:
        a3 = _a3()
        return isinstance(
            obj,
            (
                a3.Table,
                a3.RecordBatch,
                a3.Array,
                a3.ChunkedArray,
                a3.RecordBatchReader,
                a3.ArrayReader,
            ),
        )

    def type_kinds(self) -> Mapping[type, Kind | None]:
        a3 = _a3()
        return {
            a3.Table: Kind.TABLE,
            a3.RecordBatch: Kind.TABLE,
            a3.Array: Kind.COLUMN,
            a3.ChunkedArray: Kind.COLUMN,
            a3.RecordBatchReader: Kind.STREAM,
        }

    def is_one_shot(self, obj: object) -> bool:
        a3 = _a3()
        return isinstance(obj, (a3.RecordBatchReader, a3.ArrayReader))

    def describe(self, obj: Any) -> DataInfo:
        a3, pa = _a3(), arrowkit.pa_module()
        if isinstance(obj, (a3.RecordBatchReader, a3.ArrayReader)):
            if obj.closed:
                raise ConsumedSourceError(
                    f"this arro3 {type(obj).__name__} is closed: it was read already, and a "
                    "stream can be read only once; create a new reader"
                )
            if isinstance(obj, a3.RecordBatchReader):
                return arrowkit.describe_schema(pa.schema(obj), Kind.STREAM)
            # A stream of arrays is one column, read whole when converted.
            return arrowkit.describe_schema(pa.schema([pa.field(obj)]), Kind.COLUMN)
        data = _to_pyarrow(obj)
        info = _describe_pyarrow(data, pa.field(obj).name if _is_column(obj) else "")
        if any(c.nulls > 0 for c in info.columns):
            # Compare two exports: a bitmap arrow-rs rebuilds has a new address each time.
            rebuilt = _rebuilt_columns(info, data, _to_pyarrow(obj))
            if rebuilt:
                info = info.but(
                    columns=tuple(
                        replace(c, flags=c.flags | {REBUILT}) if c.name in rebuilt else c
                        for c in info.columns
                    )
                )
        return info

    def buffers(self, obj: Any) -> list[Buffer]:
        a3 = _a3()
        if isinstance(obj, (a3.RecordBatchReader, a3.ArrayReader)):
            return []  # reading a stream consumes it: nothing to look at
        data = _to_pyarrow(obj)
        return [replace(b, keep=data) for b in arrowkit.buffers(data)]

    def concat(self, parts: Sequence[Any]) -> Any:
        """Tables and record batches as one Table of all their batches, arrays as one
        ChunkedArray of all their chunks (named as the first part): zero-copy."""
        a3 = _a3()
        if all(isinstance(p, (a3.Table, a3.RecordBatch)) for p in parts):
            batches = [
                b for p in parts for b in (p.to_batches() if isinstance(p, a3.Table) else [p])
            ]
            return a3.Table.from_batches(batches, schema=parts[0].schema)
        if all(isinstance(p, (a3.Array, a3.ChunkedArray)) for p in parts):
            chunks = [
                c for p in parts for c in (p.chunks if isinstance(p, a3.ChunkedArray) else [p])
            ]
            field = parts[0].field
            column = a3.ChunkedArray(chunks, type=field)
            # A ChunkedArray built from chunks has an unnamed field; a table's column keeps it.
            return a3.Table.from_arrays([column], schema=a3.Schema([field])).column(0)
        if any(isinstance(p, (a3.RecordBatchReader, a3.ArrayReader)) for p in parts):
            raise mixed_parts(parts, "a reader is read once, not joined")
        raise mixed_parts(parts)

    def edges(self) -> Sequence[Edge]:
        return (
            Edge(
                NAME,
                ARROW,
                self.name,
                "__arrow_c_stream__/array",
                _export_estimate,
                _export,
                _NEEDS,
            ),
            Edge(ARROW, NAME, self.name, "a3.*.from_arrow", _import_estimate, _import, _NEEDS),
        )


def _is_column(obj: Any) -> bool:
    a3 = _a3()
    return isinstance(obj, (a3.Array, a3.ChunkedArray))


def _to_pyarrow(obj: Any) -> Any:
    """The pyarrow object sharing ``obj``'s memory (imported through its capsule)."""
    a3, pa = _a3(), arrowkit.pa_module()
    if isinstance(obj, a3.Table):
        return pa.table(obj)
    if isinstance(obj, a3.RecordBatch):
        return pa.record_batch(obj)
    if isinstance(obj, a3.Array):
        return pa.array(obj)
    if isinstance(obj, a3.ChunkedArray):
        return pa.chunked_array(obj)
    if isinstance(obj, a3.RecordBatchReader):
        return pa.RecordBatchReader.from_stream(obj)
    return pa.chunked_array(obj)  # an ArrayReader: read whole (once)


def _describe_pyarrow(data: Any, name: str) -> DataInfo:
    pa = arrowkit.pa_module()
    if isinstance(data, (pa.Table, pa.RecordBatch)):
        return arrowkit.describe_table(data)
    return arrowkit.describe_column(data, name)


def _rebuilt_columns(info: DataInfo, first: Any, second: Any) -> set[str]:
    pa = arrowkit.pa_module()
    pairs: list[tuple[Any, Any]] = [(first, second)]
    if isinstance(first, (pa.Table, pa.RecordBatch)):
        pairs = list(zip(first.columns, second.columns, strict=True))
    return {
        col.name
        for col, (a, b) in zip(info.columns, pairs, strict=True)
        if col.nulls > 0 and arrowkit.buffers(a) != arrowkit.buffers(b)
    }


# -- arro3 -> arrow --------------------------------------------------------------------------
def _export_estimate(ctx: Context) -> Estimate:
    info = ctx.info
    copies = tuple(
        Copy(c.name, max(info.rows, 0) // 8 + 1, _REALIGNED)
        for c in info.columns
        if REBUILT in c.flags
    )
    out = info.but(columns=tuple(replace(c, flags=c.flags - {REBUILT}) for c in info.columns))
    why = "arro3 objects export their own buffers through the Arrow PyCapsule interface"
    if info.kind == Kind.COLUMN and info.columns and info.columns[0].chunks == -1:
        why = "the ArrayReader is read once into a column"
    return Estimate(out, copies, why=why)


def _export(value: Any, ctx: Context) -> Any:
    return _to_pyarrow(value)


# -- arrow -> arro3 --------------------------------------------------------------------------
def _wanted(ctx: Context) -> Kind:
    return ctx.kind if ctx.kind is not None else ctx.info.kind


def _import_estimate(ctx: Context) -> Estimate:
    info, want = ctx.info, _wanted(ctx)
    if info.kind == Kind.TENSOR:
        raise Unroutable("arro3 takes tensors through the Arrow bridge")
    name = getattr(ctx.target_type, "__name__", "")
    copies = []
    for col in info.columns:
        # a stream's batches are not seen before they are read: any may be a slice
        flags = col.flags | {Flag.SLICED} if info.kind == Kind.STREAM else col.flags
        if _loses_union_offset(col.dtype, flags):
            copies.append(Copy(col.name, col.nbytes, _UNION_REBUILT))
        elif name in ("Array", "RecordBatch") and col.chunks > 1:
            reason = f"{col.chunks} chunks are combined into one {name}"
            copies.append(Copy(col.name, col.nbytes, reason))
        elif Flag.UNALIGNED in col.flags:
            # arrow-rs needs buffers aligned to their values (16 bytes for decimal128 and
            # the views of string_view/binary_view); an IPC body is 8-byte aligned
            reason = "arrow-rs realigns values that are not aligned to their width (a copy)"
            copies.append(Copy(col.name, col.nbytes, reason))
        elif Flag.SLICED in col.flags and col.nulls > 0 and col.dtype != "bool":
            # The result's bitmap cannot be shown to be the source's (see _REALIGNED); at
            # an offset that is a multiple of 8 it is, and the claim is conservative.
            copies.append(Copy(col.name, max(info.rows, 0) // 8 + 1, _REALIGNED))
        elif Flag.SLICED in col.flags and not _measured_by_slice(col.dtype):
            copies.append(Copy(col.name, col.nbytes, _UNMEASURED))
    why = "imported through the C stream/array interface (the C structs are moved)"
    if want == Kind.STREAM and info.kind == Kind.STREAM:
        why = "a lazy arro3 reader over the stream"
    elif info.kind == Kind.STREAM:
        why = "the stream is read once"
    return Estimate(info.but(kind=want), tuple(copies), why=why)


def _import(value: Any, ctx: Context) -> Any:
    a3, pa = _a3(), arrowkit.pa_module()
    info = ctx.info
    want, cls = _wanted(ctx), ctx.target_type
    column_name = info.columns[0].name if info.columns else ""
    # (each chunk is looked at: only one at an offset, or nested, is rebuilt)
    rebuild = any("sparse_union<" in c.dtype for c in info.columns)
    if want == Kind.STREAM or cls is a3.RecordBatchReader:
        if is_arrow_stream(value) and info.kind != Kind.COLUMN:
            if rebuild:  # still lazy: each batch is rebuilt as it is read
                reader = pa.RecordBatchReader.from_stream(value)
                batches = (_union_offsets_kept(pa, b) for b in reader)
                value = pa.RecordBatchReader.from_batches(reader.schema, batches)
            return a3.RecordBatchReader.from_stream(value)  # lazy: reads the stream once
        table = _union_offsets_kept(pa, arrowkit.read(value, Kind.TABLE, info))
        return a3.RecordBatchReader.from_batches(table.schema, table.to_batches())
    if want == Kind.TABLE:
        table = arrowkit.read(value, Kind.TABLE, info)
        if rebuild:
            table = _union_offsets_kept(pa, table)
        one_batch = cls is a3.RecordBatch
        if one_batch:
            return a3.RecordBatch.from_arrow(arrowkit.single_batch(table))
        return a3.Table.from_arrow(table)
    col = arrowkit.read(value, Kind.COLUMN, info)  # an Array from an array producer, else chunked
    if rebuild:
        col = _union_offsets_kept(pa, col)
    if cls is a3.Array or (cls is None and isinstance(col, pa.Array)):
        if isinstance(col, pa.ChunkedArray):
            col = col.combine_chunks()
        return _named_array(a3, pa, col, column_name)
    if isinstance(col, pa.Array):
        col = pa.chunked_array([col], type=col.type)
    return a3.Table.from_arrow(pa.table({column_name: col})).column(0)  # keeps the name


def _union_offsets_kept(pa: Any, data: Any) -> Any:
    """``data`` (a Table, RecordBatch, ChunkedArray or Array) with each chunk that may hold
    a sparse union at an offset rebuilt at offset 0 through an IPC stream, which writes a
    slice's own rows (see _UNION_REBUILT); other chunks are kept as they are."""
    if isinstance(data, (pa.Table, pa.RecordBatch)):
        columns = [_union_offsets_kept(pa, c) for c in data.columns]
        if isinstance(data, pa.RecordBatch):
            return pa.RecordBatch.from_arrays(columns, schema=data.schema)
        return pa.Table.from_arrays(columns, schema=data.schema)
    if isinstance(data, pa.ChunkedArray):
        return pa.chunked_array([_union_offsets_kept(pa, c) for c in data.chunks], data.type)
    dtype = arrowkit.dtype_name(data.type)
    if not _loses_union_offset(dtype, frozenset({Flag.SLICED} if data.offset else ())):
        return data
    batch = pa.record_batch([data], names=["c"])
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return pa.ipc.open_stream(sink.getvalue()).read_next_batch().column(0)


def _named_array(a3: Any, pa: Any, arr: Any, name: str) -> Any:
    """An arro3 Array of ``arr`` (zero-copy) whose field carries the column's name."""
    field = pa.field(name, arr.type)
    return a3.Array.from_arrow_pycapsule(field.__arrow_c_schema__(), arr.__arrow_c_array__()[1])


@hookimpl
def register_adapters(register: Callable[[Adapter], None]) -> None:
    register(Arro3Adapter())
