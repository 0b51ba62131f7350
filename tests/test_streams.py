"""One-shot sources: consumed once, read lazily where the target can take a stream."""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import nanoarrow as na
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import interchange_hub as ih
from tests.helpers import values

SCHEMA = pa.schema([("a", pa.int64()), ("s", pa.string())])


class CountingReader:
    """A reader whose batches are produced on demand, counting how many were read."""

    def __init__(self, batches: int = 3) -> None:
        self.read = 0
        self.reader = pa.RecordBatchReader.from_batches(SCHEMA, self._gen(batches))

    def _gen(self, n: int) -> Iterator[pa.RecordBatch]:
        for i in range(n):
            self.read += 1
            yield pa.record_batch([[i, i + 1], [f"x{i}", None]], schema=SCHEMA)


def test_reader_to_a_polars_lazyframe_is_lazy(hub: ih.Hub) -> None:
    source = CountingReader()
    plan = hub.plan(source.reader, to=pl.LazyFrame)
    lazy = hub.convert(source.reader, to=pl.LazyFrame)
    assert isinstance(lazy, pl.LazyFrame)
    assert source.read == 0
    assert any("one-shot" in n for n in plan.notes)
    frame = lazy.collect()
    assert source.read == 3 and frame["a"].to_list() == [0, 1, 1, 2, 2, 3]


def test_reader_to_pyarrow_and_nanoarrow_stays_a_stream(hub: ih.Hub) -> None:
    source = CountingReader()
    out = hub.convert(source.reader, to="pyarrow")
    assert isinstance(out, pa.RecordBatchReader) and source.read == 0
    assert out.read_all().num_rows == 6
    source = CountingReader()
    stream = hub.convert(source.reader, to="nanoarrow")
    assert isinstance(stream, na.ArrayStream) and source.read == 0
    assert len(stream.read_all()) == 6


def test_reader_to_pandas_materialises(hub: ih.Hub) -> None:
    source = CountingReader()
    frame = hub.convert(source.reader, to="pandas")
    assert isinstance(frame, pd.DataFrame) and len(frame) == 6
    assert source.read == 3


def test_a_consumed_reader_is_refused(hub: ih.Hub) -> None:
    source = CountingReader()
    hub.convert(source.reader, to="pandas")
    with pytest.raises(ih.ConsumedSourceError, match="read only once"):
        hub.convert(source.reader, to="polars")


def test_planning_does_not_consume(hub: ih.Hub) -> None:
    source = CountingReader()
    hub.plan(source.reader, to="pandas")
    hub.plan(source.reader, to="polars")
    assert source.read == 0
    assert len(hub.convert(source.reader, to="pandas")) == 6


def test_nanoarrow_stream_source(hub: ih.Hub) -> None:
    stream = na.ArrayStream(pa.table({"a": [1, 2, 3]}))
    assert hub.convert(stream, to="polars")["a"].to_list() == [1, 2, 3]
    with pytest.raises(ih.ConsumedSourceError):
        hub.convert(stream, to="pyarrow")


def test_reader_as_a_table_type(hub: ih.Hub) -> None:
    source = CountingReader()
    frame = hub.convert(source.reader, to=pl.DataFrame)
    assert isinstance(frame, pl.DataFrame) and frame.height == 6


def test_table_to_reader_type(hub: ih.Hub) -> None:
    reader = hub.convert(pl.DataFrame({"a": [1, 2]}), to=pa.RecordBatchReader)
    assert isinstance(reader, pa.RecordBatchReader)
    assert reader.read_all().column("a").to_pylist() == [1, 2]


def _reader_with_nulls() -> pa.RecordBatchReader:
    schema = pa.schema([("n", pa.int64()), ("m", pa.int64())])
    batch = pa.record_batch([[1, None, 3], [4, 5, 6]], schema=schema)
    return pa.RecordBatchReader.from_batches(schema, [batch])


def test_stream_losses_are_found_when_read(hub: ih.Hub) -> None:
    plan = hub.plan(_reader_with_nulls(), to="numpy")
    assert plan.losses == ()  # the nulls cannot be seen before reading
    assert "unknown until the stream is read" in str(plan)
    with pytest.warns(ih.LossyConversionWarning) as record:
        matrix = hub.convert(_reader_with_nulls(), to="numpy")
    assert any("column 'n'" in str(w.message) for w in record)
    assert matrix.shape == (3, 2)
    with pytest.raises(ih.LossyConversionError, match="column 'n'"):
        hub.convert(_reader_with_nulls(), to="torch", strict=True)


def test_stream_integers_with_nulls_into_pandas(hub: ih.Hub) -> None:
    frame = hub.convert(_reader_with_nulls(), to="pandas")
    assert str(frame["n"].dtype) == "Int64" and str(frame["m"].dtype) == "int64"


def test_lazyframe_source(hub: ih.Hub) -> None:
    lazy = pl.DataFrame({"a": [1, 2, 3]}).lazy().filter(pl.col("a") > 1)
    assert hub.convert(lazy, to="pandas")["a"].tolist() == [2, 3]
    assert hub.convert(lazy, to="pyarrow").column("a").to_pylist() == [2, 3]
    assert hub.convert(lazy, to="polars") is lazy
    assert hub.convert(lazy, to=pl.DataFrame)["a"].to_list() == [2, 3]
    assert "collected" in str(hub.plan(lazy, to="numpy"))


def test_polars_strings_into_nanoarrow_do_not_crash(hub: ih.Hub) -> None:
    # nanoarrow 0.9 aborts the process on string_view, which is how polars exports strings.
    df = pl.DataFrame(
        {"s": ["a", None, "c" * 40], "c": pl.Series(["x", "y", "x"], dtype=pl.Categorical)}
    )
    plan = hub.plan(df, to="nanoarrow")
    assert "view types" in str(plan)
    assert values(hub.convert(df, to="nanoarrow")) == {
        "s": ["a", None, "c" * 40],
        "c": ["x", "y", "x"],
    }
    assert hub.convert(pl.Series("s", ["q"]), to="nanoarrow").to_pylist() == ["q"]
    lazy = pl.DataFrame({"s": ["a"]}).lazy()
    assert isinstance(hub.convert(lazy, to=na.ArrayStream), na.ArrayStream)


def test_lazyframe_of_in_memory_data_collects_twice(hub: ih.Hub) -> None:
    lazy = hub.convert(pa.table({"a": [1, 2, 3]}), to=pl.LazyFrame)
    assert lazy.collect().height == 3 and lazy.collect().height == 3


def test_a_stream_of_plain_arrays_is_a_one_shot_column(hub: ih.Hub) -> None:
    stream = hub.convert(pa.array([1.0, 2.0]), to=na.ArrayStream)
    plan = hub.plan(stream, to="torch")
    assert any("one-shot" in n for n in plan.notes)
    assert hub.convert(stream, to="torch").tolist() == [1.0, 2.0]
    with pytest.raises(ih.ConsumedSourceError):
        hub.convert(stream, to="polars")


def test_type_targets_for_streams_and_columns(hub: ih.Hub) -> None:
    assert isinstance(hub.convert(CountingReader().reader, to=na.Array), na.Array)
    reader = hub.convert(pa.array([1.0, 2.0]), to=pa.RecordBatchReader)
    assert reader.read_all().num_rows == 2
    assert hub.convert(pa.array([1.0, 2.0]), to=pl.LazyFrame).collect().shape == (2, 1)
    lazy = pl.DataFrame({"a": [1]}).lazy()
    assert isinstance(hub.convert(lazy, to="polars", copy=True), pl.LazyFrame)


def test_export_of_a_reader_serves_every_consumer_once(hub: ih.Hub) -> None:
    def reader() -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(
            SCHEMA, [pa.record_batch([[1], ["x"]], schema=SCHEMA)]
        )

    assert pl.DataFrame(hub.export(reader())).shape == (1, 2)
    assert pa.record_batch(hub.export(reader())).num_rows == 1
    exported = hub.export(reader())
    assert pa.schema(exported) == SCHEMA  # the schema is known without reading
    assert pa.table(exported).num_rows == 1


def test_export_of_nanoarrow_accepts_a_requested_schema(hub: ih.Hub) -> None:
    exported = hub.export(na.Array(pa.table({"a": [1, 2]})))
    table = pa.table(exported, schema=pa.schema([("a", pa.int32())]))
    assert table.schema.field("a").type == pa.int32()


def _reader() -> pa.RecordBatchReader:
    table = pa.table({"a": [1, 2, 3], "b": ["x", "y", "z"]})
    return pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=2))


def test_a_reader_returned_as_it_is_counts_as_consumed(hub: ih.Hub) -> None:
    reader = _reader()
    assert hub.convert(reader, to="pyarrow") is reader  # the caller reads it now
    with pytest.raises(ih.ConsumedSourceError):
        hub.convert(reader, to="polars")  # not 0 rows, silently
    stream = na.ArrayStream(pa.table({"a": [1]}))
    assert hub.convert(stream, to="nanoarrow") is stream
    with pytest.raises(ih.ConsumedSourceError):
        hub.convert(stream, to="pyarrow")


def test_a_stream_to_polars_is_a_dataframe_as_from_arrow_gives(hub: ih.Hub) -> None:
    frame = hub.convert(_reader(), to="polars")
    assert isinstance(frame, pl.DataFrame)
    assert frame.equals(pl.from_arrow(_reader()))  # type: ignore[arg-type]


def test_a_lazyframe_over_a_stream_collects_once_then_raises(hub: ih.Hub) -> None:
    lazy = hub.convert(_reader(), to=pl.LazyFrame)
    assert isinstance(lazy, pl.LazyFrame)
    assert lazy.filter(pl.col("a") > 1).select("b").collect()["b"].to_list() == ["y", "z"]
    with pytest.raises(ih.ConsumedSourceError, match="already collected"):
        lazy.collect()
    assert hub.convert(_reader(), to=pl.LazyFrame).head(1).collect().height == 1


# -- streams of structs: nanoarrow's table streams, and columns of structs as streams -------
STRUCTS = pa.array([{"a": i, "s": f"x{i}"} for i in range(6)])


def _struct_stream(*chunks: pa.Array) -> na.ArrayStream:
    """A column's stream (its structs are nullable), of ``chunks``."""
    return na.ArrayStream(pa.chunked_array(list(chunks), type=STRUCTS.type))


def _as_table(hub: ih.Hub, out: object) -> pa.Table:
    if isinstance(out, pa.RecordBatchReader):
        return out.read_all()
    table = out if isinstance(out, pa.Table) else hub.convert(out, to=pa.Table)
    assert isinstance(table, pa.Table)
    return table


@pytest.mark.parametrize(
    "to",
    [pa.Table, pa.RecordBatch, pa.RecordBatchReader, "pyarrow", "polars", "pandas", na.Array],
    ids=str,
)
def test_a_stream_of_sliced_structs_gives_the_rows_of_its_slices(hub: ih.Hub, to: object) -> None:
    # a slice at offset 0 whose children are longer, and one at an offset
    chunks = [STRUCTS.slice(0, 2), STRUCTS.slice(3, 2)]
    plan = hub.plan(_struct_stream(*chunks), to=to)
    assert plan.deferred  # a table, or a column: what the chunks hold decides
    out = hub.convert(_struct_stream(*chunks), to=to)
    table = _as_table(hub, out)
    table.validate(full=True)
    assert table.to_pylist() == chunks[0].to_pylist() + chunks[1].to_pylist()


@pytest.mark.parametrize(
    "to", [pa.ChunkedArray, pa.Table, pa.RecordBatchReader, "pyarrow", "polars", na.Array], ids=str
)
def test_a_stream_of_structs_with_null_rows_is_a_column_that_keeps_them(
    hub: ih.Hub, to: object
) -> None:
    column = pa.array([{"a": 1, "s": "x"}, None, {"a": 3, "s": None}, None], STRUCTS.type)
    out = hub.convert(_struct_stream(column.slice(1), column.slice(0, 2)), to=to)
    if isinstance(out, pa.RecordBatchReader):
        out = out.read_all()
    back = out if isinstance(out, pa.Table) else hub.convert(out, to="pyarrow")
    got = back.column(0) if isinstance(back, pa.Table) else back
    got.validate(full=True)
    assert pa.types.is_struct(got.type) and got.null_count == 3  # null rows, not null fields
    assert got.to_pylist() == column.slice(1).to_pylist() + column.slice(0, 2).to_pylist()


def test_a_struct_column_through_a_nanoarrow_stream_comes_back_by_its_nulls(hub: ih.Hub) -> None:
    plain, nulls = STRUCTS.slice(2, 3), pa.array([None, {"a": 1, "s": "y"}], STRUCTS.type)
    table = hub.convert(hub.convert(plain, to=na.ArrayStream), to="pyarrow")
    assert isinstance(table, pa.Table) and table.to_pylist() == plain.to_pylist()
    column = hub.convert(hub.convert(nulls, to=na.ArrayStream), to="pyarrow")
    assert isinstance(column, pa.ChunkedArray) and column.to_pylist() == nulls.to_pylist()


def test_a_nanoarrow_stream_of_structs_read_once_is_consumed(hub: ih.Hub) -> None:
    stream = _struct_stream(STRUCTS)
    assert hub.convert(stream, to=pa.Table).num_rows == 6
    with pytest.raises(ih.ConsumedSourceError, match="read only once"):
        hub.convert(stream, to="polars")


def test_a_table_stream_in_nanoarrow_stays_lazy(hub: ih.Hub) -> None:
    source = CountingReader()
    stream = na.ArrayStream(source.reader)  # a table's stream: structs that cannot be null
    assert not hub.plan(stream, to=pa.RecordBatchReader).deferred
    reader = hub.convert(stream, to=pa.RecordBatchReader)
    assert isinstance(reader, pa.RecordBatchReader) and source.read == 0
    assert reader.read_all().num_rows == 6


@pytest.mark.parametrize("layout", ["offset", "shorter"])
@pytest.mark.parametrize(
    "to",
    [pa.Table, pa.RecordBatch, pa.RecordBatchReader, "polars", "pandas", "numpy", na.ArrayStream],
    ids=str,
)
def test_a_sliced_struct_array_in_nanoarrow_is_the_table_of_its_rows(
    hub: ih.Hub, to: object, layout: str
) -> None:
    floats = pa.array([i / 2 for i in range(8)])
    numbers = pa.StructArray.from_arrays([pa.array(range(8)), floats], ["a", "b"])
    struct = numbers.slice(3, 4) if layout == "offset" else numbers.slice(0, 4)
    src = na.Array(struct)
    assert hub.describe(src).kind == ih.Kind.TABLE  # a struct array without null rows
    plan = hub.plan(src, to=to)
    out = hub.convert(src, to=to)
    if to == "numpy":
        assert out.tolist() == [[r["a"], r["b"]] for r in struct.to_pylist()]
        return
    table = _as_table(hub, out)
    table.validate(full=True)
    assert table.to_pylist() == struct.to_pylist()
    if to is pa.Table:  # the fields sliced to the rows: the source's memory
        assert plan.zero_copy
        assert hub.shared_bytes(src, out) == sum(b.size for b in hub.buffers(src)) > 0


def test_a_sliced_struct_array_and_a_whole_one_do_not_share_a_route(hub: ih.Hub) -> None:
    whole = na.Array(pa.record_batch({"a": [7, 8, 9], "s": ["p", "q", "r"]}))
    sliced = na.Array(STRUCTS.slice(0, 3))  # the same schema, children of 6 rows
    for _ in range(2):  # the second conversion of each takes the fast path
        assert hub.convert(whole, to=pa.Table).column("a").to_pylist() == [7, 8, 9]
        table = hub.convert(sliced, to=pa.Table)
        table.validate(full=True)
        assert table.column("a").to_pylist() == [0, 1, 2]


def test_export_of_a_stream_whose_kind_shows_once_read_reads_it_once() -> None:
    # A nanoarrow stream of nullable structs is a table's batches or a struct column: the
    # export reads it once and offers what it held (it used to refuse with no reason).
    column = pa.chunked_array([pa.array([{"a": 1}, None])])
    exported = ih.export(na.ArrayStream(column))
    assert pa.chunked_array(exported).to_pylist() == [{"a": 1}, None]
    table = ih.export(na.ArrayStream(pa.table({"a": [1, 2]})))
    assert pa.table(table).to_pylist() == [{"a": 1}, {"a": 2}]


@pytest.mark.parametrize("to", ["torch", "numpy"])
def test_a_one_batch_one_column_stream_is_read_into_new_memory_as_planned(to: str) -> None:
    # The plan says a stream is read into new memory (its nulls are unknown until read);
    # one batch of one column became a view of the batch, which torch wrote into with no
    # WriteThroughWarning (a review helper's find).
    batch = pa.record_batch({"a": np.arange(4.0)})
    hub = ih.default_hub()
    sources = [
        lambda: pa.RecordBatchReader.from_batches(batch.schema, [batch]),
        lambda: na.ArrayStream(pa.RecordBatchReader.from_batches(batch.schema, [batch])),
        lambda: ih.export(pa.Table.from_batches([batch])),
    ]
    for make in sources:
        assert not hub.plan(make(), to=to).zero_copy
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # (no WriteThroughWarning: nothing is shared)
            out = hub.convert(make(), to=to)
        assert hub.shared_bytes(batch, out) == 0
        out[0, 0] = 42.0
        assert batch.column(0).to_pylist() == [0.0, 1.0, 2.0, 3.0]
