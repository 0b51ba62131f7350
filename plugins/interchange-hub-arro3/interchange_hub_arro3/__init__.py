"""interchange_hub plugin for arro3 (``arro3-core``): Table, RecordBatch, Array,
ChunkedArray and RecordBatchReader as sources and targets; ArrayReader as a source.

arro3 speaks the Arrow PyCapsule interface both ways and moves the C structs without
copying, so both edges are zero-copy. The exceptions are measured, not guessed: arrow-rs
exports every array but a boolean one narrowed to its rows, at offset 0, so a validity
bitmap whose first row does not start a byte is rebuilt on every export: that of a slice
with nulls whose offset is not a multiple of 8, and that of a nested array with nulls at
such an offset (a struct's fields take the struct's offset: arrow-rs moves it into them;
a list's values, a dictionary or a union's member may have an offset of their own). And
asking for a contiguous ``Array`` or ``RecordBatch`` combines several chunks. Describing
and measuring import the object into pyarrow through the capsule (zero-copy).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from interchange_hub import arrowkit
from interchange_hub.adapter import (
    ARROW,
    Adapter,
    Buffer,
    Column,
    Context,
    Copy,
    DataInfo,
    Edge,
    Estimate,
    Flag,
    Kind,
    Loss,
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
_REBUILT_BITMAPS = (
    "arro3 (arrow-rs) cannot export a validity bitmap that starts inside a byte: a slice "
    "with nulls, or a nested array with nulls, at an offset that is not a multiple of 8 gets "
    "a new bitmap on every export (seen by comparing two exports)"
)

# arrow-rs has no offset for a struct: importing one at an offset, it moves the offset into
# each field, whose validity bitmap then starts there (bit 3 of a struct sliced at 3); and
# it exports a field like any array, narrowed to its rows, so that bitmap is rebuilt. The
# fields' nulls are not in the column's description (its nulls are the struct's own).
_FIELD_BITMAPS = (
    "arrow-rs moves the offset of a struct into its fields: a field's validity bitmap that "
    "then starts inside a byte is rebuilt on every export (the fields' nulls are not seen: "
    "claimed wherever the struct is at an offset)"
)
# A nested array with nulls whose validity bitmap starts inside a byte, seen by the core's
# description (``Flag.NESTED_BITMAP_OFFSET`` where the core has it): arrow-rs rebuilds it.
_NESTED_BITMAP_OFFSET = "nested_bitmap_offset"
_NESTED_BITMAPS = (
    "a nested array with nulls (a struct's field, a list's values, a dictionary, a union's "
    "member) starts inside a byte of its validity bitmap: arrow-rs rebuilds that bitmap on "
    "every export"
)
# Whether the core describes nested arrays' offsets (it sets the flag above): where it
# does not, a struct at an offset is claimed by its type alone (see _FIELD_BITMAPS), and a
# nested array at an offset of its own is not seen.
_CORE_SEES_NESTED_OFFSETS = any(flag == _NESTED_BITMAP_OFFSET for flag in Flag)

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


# arrow-rs (arro3 0.9) panics importing a struct at an offset whose child is a struct
# ("assertion failed: end <= self.len()"; read from a stream, it aborts the process): it
# slices a nested struct to its parent's rows twice. The same for a struct whose child is
# a struct at an offset of its own and of another length, and for the structs in the
# values of a fixed-size list at an offset (arrow-rs slices those values to its rows).
# Such a struct (or list) is rebuilt at offset 0 over its children sliced to its rows
# (zero-copy); only a validity bitmap that does not start at a byte boundary is copied.
_NESTED_STRUCT_BITMAPS = (
    "arrow-rs cannot import a struct of structs at an offset (it panics): the offset is "
    "moved into the children, and the validity bitmaps of the nested structs are rebuilt "
    "at offset 0 (a copy)"
)


def _is_nested(dtype: str) -> bool:
    """Whether a column of ``dtype`` holds nested arrays (fields, values, a dictionary,
    members), whose bitmaps are not the column's own. (Parameters of flat types are in
    brackets or parentheses: timestamp[us, tz=UTC], decimal128(10, 2).)"""
    return "<" in dtype


def _moves_offset_into_fields(dtype: str) -> bool:
    """Whether arrow-rs moves the offset of a column of ``dtype`` into its fields: a struct,
    a fixed-size list (into its values, times its size), or an extension type whose name
    shows one of them (opaque types name their storage)."""
    moving = ("struct<", "fixed_size_list<")
    return dtype.startswith(moving) or (
        dtype.startswith("extension<") and any(m in dtype for m in moving)
    )


def _nests_structs(dtype: str) -> bool:
    """Whether a column of ``dtype`` may hold a struct whose child is a struct (a map's
    entries are one where its values are structs)."""
    structs = dtype.count("struct<")
    return structs > 1 or (structs == 1 and "map<" in dtype)


def _may_nest_structs(dtype: str) -> bool:
    """:func:`_nests_structs`, a fixed-size list that may hold structs (arrow-rs slices its
    values to its rows, a struct among them at an offset), or an extension type (whose
    storage is not always in its name): such columns are looked at when imported."""
    fixed_structs = "fixed_size_list<" in dtype and "struct<" in dtype
    return _nests_structs(dtype) or fixed_structs or "extension<" in dtype


def _rebuilt_for_arrow_rs(dtype: str) -> bool:
    """Whether a column of ``dtype`` is looked at, and rebuilt where it needs it, before
    arrow-rs imports it (a sparse union or a struct of structs at an offset)."""
    return "sparse_union<" in dtype or _may_nest_structs(dtype)


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
        if any(_may_rebuild(c) for c in info.columns):
            # Compare two exports: a bitmap arrow-rs rebuilds has a new address each time
            # (the column's own, or that of a nested array with nulls: see _NESTED_BITMAPS).
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
            Edge(
                ARROW,
                NAME,
                self.name,
                "a3.*.from_arrow",
                _import_estimate,
                _import,
                _NEEDS,
                bind=_import_bind,
            ),
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
        if _may_rebuild(col) and arrowkit.buffers(a) != arrowkit.buffers(b)
    }


def _may_rebuild(col: Column) -> bool:
    """Whether arrow-rs may build a new validity bitmap each time it exports ``col``: it
    has nulls, or nested arrays (whose nulls are not the column's)."""
    return col.nulls > 0 or _is_nested(col.dtype)


# -- arro3 -> arrow --------------------------------------------------------------------------
def _export_estimate(ctx: Context) -> Estimate:
    info = ctx.info
    copies = tuple(
        Copy(c.name, max(info.rows, 0) // 8 + 1, _REBUILT_BITMAPS)
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
    # A table is exported as record batches: where its columns' chunks do not line up,
    # pyarrow slices them to the batches, so that any column may arrive at an offset.
    realigned = info.kind == Kind.TABLE and len(info.columns) > 1
    realigned = realigned and any(c.chunks > 1 for c in info.columns)
    # Columns of different chunk counts certainly do not line up: each is cut to the
    # batches (columns of one chunk count are taken to line up, as concatenated tables do).
    cut = realigned and len({c.chunks for c in info.columns}) > 1
    for col in info.columns:
        # a stream's batches are not seen before they are read: any may be a slice
        flags = col.flags
        if info.kind == Kind.STREAM or (realigned and _rebuilt_for_arrow_rs(col.dtype)):
            flags = flags | {Flag.SLICED}
        at_offset = cut or Flag.SLICED in col.flags  # (as arrow-rs gets it)
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
        elif at_offset and col.nulls > 0 and col.dtype != "bool":
            # The result's bitmap cannot be shown to be the source's (see _REALIGNED); at
            # an offset that is a multiple of 8 it is, and the claim is conservative.
            copies.append(Copy(col.name, max(info.rows, 0) // 8 + 1, _REALIGNED))
        elif Flag.SLICED in col.flags and not _measured_by_slice(col.dtype):
            copies.append(Copy(col.name, col.nbytes, _UNMEASURED))
        elif (
            Flag.SLICED in flags
            and _nests_structs(col.dtype)
            and (col.nulls != 0 or col.dtype.count("struct<") > 2)
        ):
            # (a struct of structs inside the column's struct takes the offset too: its
            # nulls are not the column's, so the claim is conservative)
            copies.append(Copy(col.name, max(info.rows, 0) // 8 + 1, _NESTED_STRUCT_BITMAPS))
        elif _NESTED_BITMAP_OFFSET in col.flags:
            copies.append(Copy(col.name, max(info.rows, 0) // 8 + 1, _NESTED_BITMAPS))
        elif _moves_offset_into_fields(col.dtype) and (
            cut or (Flag.SLICED in col.flags and not _CORE_SEES_NESTED_OFFSETS)
        ):
            # (the core's flag above, where it has it, sees a sliced struct's fields; a
            # table's batches it does not see)
            copies.append(Copy(col.name, max(info.rows, 0) // 8 + 1, _FIELD_BITMAPS))
    why = "imported through the C stream/array interface (the C structs are moved)"
    if want == Kind.STREAM and info.kind == Kind.STREAM:
        why = "a lazy arro3 reader over the stream"
    elif info.kind == Kind.STREAM:
        why = "the stream is read once"
    # arro3 keeps no dictionary's ordered flag (arro3 0.9.1: it exports ordered=0)
    losses = tuple(
        Loss(c.name, c.dtype, _unordered(c.dtype), _ORDER_DROPPED)
        for c in info.columns
        if _ORDERED in c.dtype
    )
    out = info.but(
        kind=want,
        columns=tuple(
            replace(c, dtype=_unordered(c.dtype)) if _ORDERED in c.dtype else c
            for c in info.columns
        ),
    )
    return Estimate(out, tuple(copies), losses, why)


_ORDERED = "ordered=1"
_ORDER_DROPPED = (
    "arro3 keeps no dictionary's ordered flag: the categories are no longer marked ordered"
)


def _unordered(dtype: str) -> str:
    return dtype.replace(_ORDERED, "ordered=0")


def _import(value: Any, ctx: Context) -> Any:
    return _import_bind(ctx)(value)


def _import_bind(ctx: Context) -> Callable[[Any], Any]:
    """:func:`_import` for ``ctx``: which columns may need a rebuild for arrow-rs (sparse
    unions at an offset, structs of structs) is decided once, from their types."""
    a3, pa = _a3(), arrowkit.pa_module()
    info = ctx.info
    want, cls = _wanted(ctx), ctx.target_type
    column_name = info.columns[0].name if info.columns else ""
    # (each chunk of such a column is looked at: only one that needs it is rebuilt)
    rebuild = any(_rebuilt_for_arrow_rs(c.dtype) for c in info.columns)
    stream = want == Kind.STREAM or cls is a3.RecordBatchReader
    one_batch, one_array = cls is a3.RecordBatch, cls is a3.Array

    def safe(data: Any) -> Any:
        return _arrow_rs_safe(pa, data) if rebuild else data

    def run(value: Any) -> Any:
        if stream:
            if is_arrow_stream(value) and info.kind != Kind.COLUMN:
                if rebuild:  # still lazy: each batch is rebuilt as it is read
                    reader = pa.RecordBatchReader.from_stream(value)
                    batches = (_arrow_rs_safe(pa, b) for b in reader)
                    value = pa.RecordBatchReader.from_batches(reader.schema, batches)
                return a3.RecordBatchReader.from_stream(value)  # lazy: reads the stream once
            table = safe(arrowkit.read(value, Kind.TABLE, info))
            return a3.RecordBatchReader.from_batches(table.schema, table.to_batches())
        if want == Kind.TABLE:
            # A pyarrow RecordBatch (an arro3 one, exported, or copied with copy=True)
            # stays one batch, as to="pyarrow" keeps it
            batch = one_batch or (cls is None and isinstance(value, pa.RecordBatch))
            table = safe(arrowkit.read(value, Kind.TABLE, info))
            if batch:
                # (several chunks are concatenated into new arrays, at offset 0)
                return a3.RecordBatch.from_arrow(arrowkit.single_batch(table))
            return a3.Table.from_arrow(table)
        # an Array from an array producer, else chunked
        col = safe(arrowkit.read(value, Kind.COLUMN, info))
        if one_array or (cls is None and isinstance(col, pa.Array)):
            if isinstance(col, pa.ChunkedArray):
                col = col.combine_chunks()
            return _named_array(a3, pa, col, column_name)
        if isinstance(col, pa.Array):
            col = pa.chunked_array([col], type=col.type)
        return a3.Table.from_arrow(pa.table({column_name: col})).column(0)  # keeps the name

    return run


def _arrow_rs_safe(pa: Any, data: Any) -> Any:
    """``data`` (a Table, RecordBatch, ChunkedArray or Array) as arrow-rs can import it:
    each chunk that may hold a sparse union at an offset rebuilt at offset 0 through an
    IPC stream, which writes a slice's own rows (see _UNION_REBUILT), and each struct of
    structs at an offset rebuilt at offset 0 (see :func:`_structs_at_zero`); other
    columns and chunks are kept as they are. A Table is looked at as the record batches
    it is exported as (pyarrow slices columns whose chunks do not line up)."""
    if isinstance(data, pa.Table):
        if not any(_rebuilt_for_arrow_rs(arrowkit.dtype_name(t)) for t in data.schema.types):
            return data
        batches = data.to_batches()  # (the slices the export makes: the same reader)
        fixed = [_arrow_rs_safe(pa, b) for b in batches]
        if all(new is old for new, old in zip(fixed, batches, strict=True)):
            return data
        return pa.Table.from_batches(fixed, schema=data.schema)
    if isinstance(data, pa.RecordBatch):
        columns = [_arrow_rs_safe(pa, c) for c in data.columns]
        if all(new is old for new, old in zip(columns, data.columns, strict=True)):
            return data
        return pa.RecordBatch.from_arrays(columns, schema=data.schema)
    dtype = arrowkit.dtype_name(data.type)
    unions, structs = "sparse_union<" in dtype, _may_nest_structs(dtype)
    if not (unions or structs):
        return data
    chunks = data.chunks if isinstance(data, pa.ChunkedArray) else [data]
    fixed = []
    for chunk in chunks:
        if unions and _loses_union_offset(dtype, frozenset({Flag.SLICED} if chunk.offset else ())):
            chunk = _ipc_copy(pa, chunk)
        if structs:
            chunk = _structs_at_zero(pa, chunk)
        fixed.append(chunk)
    if all(new is old for new, old in zip(fixed, chunks, strict=True)):
        return data
    if isinstance(data, pa.ChunkedArray):
        return pa.chunked_array(fixed, data.type)
    return fixed[0]


def _ipc_copy(pa: Any, chunk: Any) -> Any:
    """``chunk`` written to an IPC stream and read back: new buffers, at offset 0."""
    batch = pa.record_batch([chunk], names=["c"])
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return pa.ipc.open_stream(sink.getvalue()).read_next_batch().column(0)


def _is_struct(pa: Any, typ: Any) -> bool:
    while isinstance(typ, pa.BaseExtensionType):
        typ = typ.storage_type
    return bool(pa.types.is_struct(typ))


def _structs_at_zero(pa: Any, arr: Any) -> Any:
    """``arr`` (a pyarrow Array) with every struct whose child is a struct at offset 0:
    rebuilt over its children sliced to its rows, which shares their buffers. The
    struct's validity bitmap is shared where the offset is a multiple of 8 (a slice of
    it), and rebuilt otherwise. ``arr`` itself when nothing needs it (a walk over the
    nested arrays, not the values)."""
    t, typ = pa.types, arr.type
    if isinstance(typ, pa.BaseExtensionType):
        storage = arr.storage
        new = _structs_at_zero(pa, storage)
        return arr if new is storage else pa.ExtensionArray.from_storage(typ, new)
    if t.is_struct(typ):
        # field(i): the child sliced to the struct's rows (its offset moved into it)
        fields = [arr.field(i) for i in range(typ.num_fields)]
        children = [_structs_at_zero(pa, f) for f in fields]
        # a struct child at an offset (the struct's, or its own) is sliced twice
        moved = any(f.offset and _is_struct(pa, f.type) for f in fields)
        if not moved and all(new is old for new, old in zip(children, fields, strict=True)):
            return arr
        return _struct_at_zero(pa, arr, children)
    if t.is_fixed_size_list(typ) and _holds_structs(pa, typ.value_type):
        values = arr.values  # (ignoring the list's offset)
        if arr.offset or values.offset:  # arrow-rs slices the values to the list's rows
            return _fixed_list_at_zero(pa, arr)
    if t.is_dictionary(typ):
        values = arr.dictionary
        new = _structs_at_zero(pa, values)
        if new is values:
            return arr
        return pa.DictionaryArray.from_arrays(arr.indices, new, ordered=typ.ordered, safe=False)
    if t.is_union(typ):
        # a dense union's children are its own; a sparse one's are at offset 0 here
        children = [arr.field(i) for i in range(typ.num_fields)]
        new_children = [_structs_at_zero(pa, c) for c in children]
        if all(new is old for new, old in zip(new_children, children, strict=True)):
            return arr
        own = 3 if typ.mode == "dense" else 2
        return pa.Array.from_buffers(
            typ, len(arr), arr.buffers()[:own], arr.null_count, arr.offset, new_children
        )
    if t.is_run_end_encoded(typ):
        values = arr.values
        new = _structs_at_zero(pa, values)
        if new is values:
            return arr
        return pa.Array.from_buffers(typ, len(arr), [None], 0, arr.offset, [arr.run_ends, new])
    own = _own_buffers(pa, typ)
    if not own:
        return arr
    values = arr.values  # the list's child as it is (not sliced to the list's rows)
    new = _structs_at_zero(pa, values)
    if new is values:
        return arr
    return pa.Array.from_buffers(
        typ, len(arr), arr.buffers()[:own], arr.null_count, arr.offset, [new]
    )


def _holds_structs(pa: Any, typ: Any) -> bool:
    """Whether arrays of ``typ`` hold structs that arrow-rs slices with them: a struct, or a
    fixed-size list (or extension type) of such."""
    while isinstance(typ, pa.BaseExtensionType):
        typ = typ.storage_type
    if pa.types.is_fixed_size_list(typ):
        return _holds_structs(pa, typ.value_type)
    return bool(pa.types.is_struct(typ))


def _struct_at_zero(pa: Any, arr: Any, children: list[Any] | None = None) -> Any:
    """The struct (or extension array over one) ``arr`` at offset 0 over ``children``
    (default: its fields sliced to its rows, made safe by :func:`_structs_at_zero`)."""
    typ = arr.type
    if isinstance(typ, pa.BaseExtensionType):
        return pa.ExtensionArray.from_storage(typ, _struct_at_zero(pa, arr.storage))
    if children is None:
        children = [_structs_at_zero(pa, arr.field(i)) for i in range(typ.num_fields)]
    return pa.StructArray.from_buffers(
        typ, len(arr), [_bitmap_at_zero(pa, arr)], arr.null_count, 0, children
    )


def _fixed_list_at_zero(pa: Any, arr: Any) -> Any:
    """The fixed-size list ``arr`` (of structs, see :func:`_holds_structs`) at offset 0
    over its values sliced to its rows, themselves at offset 0."""
    typ = arr.type
    size = typ.list_size
    rows = arr.values.slice(arr.offset * size, len(arr) * size)
    storage = rows.type
    while isinstance(storage, pa.BaseExtensionType):
        storage = storage.storage_type
    if pa.types.is_fixed_size_list(storage):
        if isinstance(rows.type, pa.BaseExtensionType):
            rows = pa.ExtensionArray.from_storage(rows.type, _fixed_list_at_zero(pa, rows.storage))
        else:
            rows = _fixed_list_at_zero(pa, rows)
    else:
        rows = _struct_at_zero(pa, rows)
    return pa.Array.from_buffers(
        typ, len(arr), [_bitmap_at_zero(pa, arr)], arr.null_count, 0, [rows]
    )


def _own_buffers(pa: Any, typ: Any) -> int:
    """How many buffers of a list-like array are its own (0: not a list-like type)."""
    t = pa.types
    if t.is_list(typ) or t.is_large_list(typ) or t.is_map(typ):
        return 2  # validity, offsets
    if t.is_list_view(typ) or t.is_large_list_view(typ):
        return 3  # validity, offsets, sizes
    return 1 if t.is_fixed_size_list(typ) else 0


def _bitmap_at_zero(pa: Any, arr: Any) -> Any:
    """The validity bitmap of ``arr`` starting at its first row (None: no nulls)."""
    if not arr.null_count:
        return None
    if arr.offset % 8 == 0:
        return arr.buffers()[0].slice(arr.offset // 8)
    return require("pyarrow.compute").is_valid(arr).buffers()[1]


def _named_array(a3: Any, pa: Any, arr: Any, name: str) -> Any:
    """An arro3 Array of ``arr`` (zero-copy) whose field carries the column's name."""
    field = pa.field(name, arr.type)
    return a3.Array.from_arrow_pycapsule(field.__arrow_c_schema__(), arr.__arrow_c_array__()[1])


@hookimpl
def register_adapters(register: Callable[[Adapter], None]) -> None:
    register(Arro3Adapter())
