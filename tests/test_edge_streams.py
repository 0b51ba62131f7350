"""Streams at the edges of pyarrow's C export: empty chunks at an offset.

pyarrow's C export (pyarrow 26) of an empty chunk at a nonzero offset drops its buffers
and keeps the offset. Whoever reads such data through the C interfaces, ``pa.table`` of a
RecordBatchReader included, holds an invalid array for string_view/binary_view ("View
buffer size (bytes): 0 isn't large enough for length: 0 and offset: 2", which pyarrow
refuses to export again), and for every type a chunk that pyarrow's concatenation refuses
("buffer slice would exceed buffer length"). A reader over a table whose columns are
chunked differently gives such chunks: its batches slice a column at the other columns'
chunk boundaries. The hub's pyarrow and nanoarrow exports put them at offset 0.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import nanoarrow as na
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import interchange_hub as ih
from interchange_hub import arrowkit


def _table(typ: pa.DataType) -> pa.Table:
    """The fuzzer's case 50120 (seed 20240611): duration[ns] in chunks [0, 2, 0, 3] beside
    a view column in one chunk with a null, so the third batch holds an empty view chunk
    at offset 2."""
    durations = pa.array([1, 2, 3, 4, 5], pa.duration("ns"))
    chunks = [durations.slice(0, 0), durations.slice(0, 2), durations.slice(2, 0)]
    views = pa.array([b"a", None, b"a value longer than twelve", b"d", b"e"], typ)
    return pa.table(
        {
            "x y0": pa.chunked_array([*chunks, durations.slice(2)]),
            "x y1": pa.chunked_array([views]),
        }
    )


def _reader(table: pa.Table) -> pa.RecordBatchReader:
    return pa.RecordBatchReader.from_batches(table.schema, table.to_batches())


def _check(table: pa.Table, expected: pa.Table) -> None:
    table.validate(full=True)  # "View buffer size (bytes): 0 isn't large enough ..."
    assert table.to_pylist() == expected.to_pylist()


VIEWS = [pa.string_view(), pa.binary_view()]


def test_the_batches_of_the_reader_hold_an_empty_view_chunk_at_an_offset() -> None:
    batches = _table(pa.binary_view()).to_batches()
    assert [(len(b), b.column(1).offset) for b in batches] == [(0, 0), (2, 0), (0, 2), (3, 2)]


@pytest.mark.parametrize(
    ("typ", "copy"), [(pa.binary_view(), False), (pa.string_view(), None)], ids=str
)
def test_a_reader_into_pandas_converts_back(hub: ih.Hub, typ: Any, copy: Any) -> None:
    """The fuzzer's failure (binary_view, copy=False): the frame held the invalid chunk,
    and its export failed. (pandas builds its own storage of string_view: a copy.)"""
    table = _table(typ)
    frame = hub.convert(_reader(table), to=pd.DataFrame, copy=copy)
    column = frame["x y1"].array._pa_array  # the frame's own Arrow data, as pandas holds it
    column.validate(full=True)
    _check(pa.Table.from_pandas(frame, preserve_index=False), table)
    _check(hub.convert(frame, to=pa.Table), table)


TARGETS: list[Any] = [
    pa.Table,
    pa.RecordBatchReader,
    "pandas",
    "polars",
    pl.LazyFrame,
    "nanoarrow",
    na.ArrayStream,
]


def _as_table(out: Any) -> pa.Table:
    """A pyarrow Table of a result, read with its own library's API (not the hub)."""
    if isinstance(out, pa.RecordBatchReader):
        return out.read_all()
    if isinstance(out, pl.LazyFrame):
        out = out.collect()
    if isinstance(out, pl.DataFrame):
        return out.to_arrow()
    if isinstance(out, pd.DataFrame):
        return pa.Table.from_pandas(out, preserve_index=False)
    if isinstance(out, (na.Array, na.ArrayStream)):
        return arrowkit.struct_table(pa.chunked_array(out))
    assert isinstance(out, pa.Table)
    return out


@pytest.mark.parametrize("to", TARGETS, ids=str)
@pytest.mark.parametrize("source", ["reader", "table"])
@pytest.mark.parametrize("typ", VIEWS, ids=str)
def test_a_table_with_empty_view_chunks_at_an_offset_stays_valid(
    hub: ih.Hub, typ: Any, source: str, to: Any
) -> None:
    table = _table(typ)
    if source == "table":
        table = pa.Table.from_batches(table.to_batches())  # the chunks themselves
        assert table.column(1).chunk(2).offset == 2
    src = _reader(table) if source == "reader" else table
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing lossy: the same types and values
        out = hub.convert(src, to=to)
    expected = table.cast(_plain(table.schema)) if to in ("nanoarrow", na.ArrayStream) else table
    got = _as_table(out)
    if to in ("polars", pl.LazyFrame):  # polars' own types, the values kept
        expected = pa.Table.from_pylist(table.to_pylist(), schema=got.schema)
    _check(got, expected)
    if isinstance(out, (pa.RecordBatchReader, na.ArrayStream, pl.LazyFrame)):
        return  # a stream, read by the checks above (a LazyFrame over a reader: once)
    back = hub.convert(out, to=pa.Table)  # and the hub reads the result back
    back.validate(full=True)
    assert back.to_pylist() == expected.to_pylist()


def _plain(schema: pa.Schema) -> pa.Schema:
    """nanoarrow takes views as large types (it cannot read views safely)."""
    large = {pa.string_view(): pa.large_string(), pa.binary_view(): pa.large_binary()}
    return pa.schema([f.with_type(large.get(f.type, f.type)) for f in schema])


@pytest.mark.parametrize("typ", VIEWS, ids=str)
def test_the_reader_keeps_sharing_the_views_of_its_source(hub: ih.Hub, typ: Any) -> None:
    """Only the empty chunk is new: the others are the source's memory (zero-copy)."""
    table = _table(typ)
    plan = hub.plan(_reader(table), to=pa.RecordBatchReader)
    assert plan.zero_copy
    out = hub.convert(_reader(table), to=pa.RecordBatchReader)
    batches = list(out)
    for batch in batches:
        batch.validate(full=True)
    views = table.column(1).chunk(0).buffers()[1].address
    shared = [b.column(1).buffers()[1].address for b in batches if len(b)]
    assert shared == [views, views]


@pytest.mark.parametrize("to", [pa.ChunkedArray, pa.Array, pd.Series, pl.Series], ids=str)
@pytest.mark.parametrize("typ", VIEWS, ids=str)
def test_a_view_column_with_an_empty_chunk_at_an_offset_stays_valid(
    hub: ih.Hub, typ: Any, to: Any
) -> None:
    views = pa.array(["x", None, "a value longer than twelve"], pa.string_view()).cast(typ)
    column = pa.chunked_array([views.slice(0, 1), views.slice(1, 0), views.slice(1)])
    assert column.chunk(1).offset == 1
    out = hub.convert(column, to=to)
    if isinstance(out, pd.Series):
        got: Any = out.array._pa_array
    elif isinstance(out, pl.Series):
        got = out.to_arrow()
    else:
        got = out
    got.validate(full=True)
    assert got.to_pylist() == column.to_pylist()
    back = hub.convert(out, to=pa.ChunkedArray)
    back.validate(full=True)
    assert back.to_pylist() == column.to_pylist()


@pytest.mark.parametrize("typ", VIEWS, ids=str)
def test_an_empty_record_batch_at_an_offset_stays_valid(hub: ih.Hub, typ: Any) -> None:
    batch = pa.record_batch({"v": pa.array(["x", "y", "z"], pa.string_view()).cast(typ)})
    empty = batch.slice(2, 0)
    assert empty.column(0).offset == 2
    for to in (pa.Table, "pandas", "polars"):
        back = hub.convert(hub.convert(empty, to=to), to=pa.Table)
        back.validate(full=True)
        assert back.num_rows == 0 and back.schema.field(0).name == "v"


def test_an_extension_type_stored_as_views_stays_valid(hub: ih.Hub) -> None:
    """An extension type is exported through its storage: the same lost views buffer."""
    storage = pa.array(["x", None, "a value longer than twelve"], pa.string_view())
    typ = pa.opaque(pa.string_view(), "views", "interchange_hub.tests")
    ext = pa.ExtensionArray.from_storage(typ, storage)
    table = pa.table({"v": pa.chunked_array([ext.slice(0, 1), ext.slice(2, 0), ext.slice(1)])})
    out = hub.convert(_reader(table), to=pa.Table)
    out.validate(full=True)
    assert out.to_pylist() == table.to_pylist()


# -- every type: pyarrow's concatenation refuses such a chunk, once exported ----------------
def _numbers() -> pa.Table:
    """int64 with nulls in chunks [0, 2, 0, 3] beside uint8 with nulls in one chunk: the
    third batch holds an empty uint8 chunk at offset 2 (buffers dropped when exported)."""
    ints = pa.array([1, None, 3, 4, 5], pa.int64())
    small = pa.array([None, 7, None, 9, 10], pa.uint8())
    chunks = [ints.slice(0, 0), ints.slice(0, 2), ints.slice(2, 0), ints.slice(2)]
    return pa.table({"i": pa.chunked_array(chunks), "u": pa.chunked_array([small])})


NUMBER_SOURCES = {
    "pa.RecordBatchReader": lambda t: _reader(t),
    "pa.Table of the batches": lambda t: pa.Table.from_batches(t.to_batches()),
    "na.ArrayStream": lambda t: na.ArrayStream(_reader(t)),  # exported by pyarrow already
    "na.Array": lambda t: na.Array(pa.Table.from_batches(t.to_batches())),
}


@pytest.mark.parametrize("to", [pa.RecordBatch, "pandas", "numpy", "polars"], ids=str)
@pytest.mark.parametrize("make", NUMBER_SOURCES.values(), ids=NUMBER_SOURCES.keys())
def test_an_empty_chunk_at_an_offset_of_any_type_can_be_concatenated(
    hub: ih.Hub, make: Any, to: Any
) -> None:
    """Each target concatenates the chunks (a RecordBatch, pandas' masked integers, a
    tensor): "buffer slice would exceed buffer length" from pyarrow, before."""
    table = _numbers()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ih.LossyConversionWarning)  # numpy: nulls -> NaN
        out = hub.convert(make(table), to=to)
    if to == "numpy":
        rows = [[None if math.isnan(v) else int(v) for v in row] for row in out.tolist()]
        assert rows == [[r["i"], r["u"]] for r in table.to_pylist()]
        return
    got = _as_table(pa.Table.from_batches([out]) if isinstance(out, pa.RecordBatch) else out)
    got.validate(full=True)
    assert got.to_pylist() == table.to_pylist()


@pytest.mark.parametrize("to", [pd.Series, pa.Array, "numpy"], ids=str)
@pytest.mark.parametrize("holder", ["na.ArrayStream", "na.Array", "pa.ChunkedArray"])
def test_a_column_with_an_empty_chunk_at_an_offset_can_be_concatenated(
    hub: ih.Hub, holder: str, to: Any
) -> None:
    """The fuzzer's case 2609 (seed 20240611): uint8, all null, in chunks [4, 0, 29]."""
    values = pa.array([None] * 33, pa.uint8())
    column = pa.chunked_array([values.slice(0, 4), values.slice(4, 0), values.slice(4)])
    src: Any = column
    if holder == "na.ArrayStream":
        src = na.ArrayStream(column)
    elif holder == "na.Array":
        src = na.Array(column)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ih.LossyConversionWarning)  # numpy: nulls -> NaN
        out = hub.convert(src, to=to)
    if to == "numpy":
        assert len(out) == 33 and all(math.isnan(v) for v in out.tolist())
        return
    got = pa.array(out.array) if isinstance(out, pd.Series) else out
    got.validate(full=True)
    assert got.to_pylist() == column.to_pylist()
