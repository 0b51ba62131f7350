"""``ih.iter_batches`` over local sources: sizes, values, order, laziness, and the
zero-copy claim of each batch checked by buffer address."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import nanoarrow as na
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
import torch

import interchange_hub as ih
from interchange_hub.errors import InvalidOptionError, NoRouteError, UnknownTargetError

HUB = ih.default_hub()


def table(rows: int = 10, chunk: int | None = None) -> pa.Table:
    t = pa.table({"x": np.arange(rows, dtype=np.float64), "n": np.arange(rows, dtype=np.int64)})
    if chunk is not None:
        t = pa.Table.from_batches(t.to_batches(max_chunksize=chunk))
    return t


def test_sizes_values_and_order() -> None:
    batches = list(ih.iter_batches(table(10), to="polars", batch_size=4))
    assert [len(b) for b in batches] == [4, 4, 2]
    assert all(isinstance(b, pl.DataFrame) for b in batches)
    assert pl.concat(batches)["n"].to_list() == list(range(10))


def test_drop_last_and_whole_chunks() -> None:
    assert [
        len(b) for b in ih.iter_batches(table(10), to="pyarrow", batch_size=4, drop_last=True)
    ] == [4, 4]
    sizes = [len(b) for b in ih.iter_batches(table(10, chunk=3), to="pyarrow")]
    assert sizes == [3, 3, 3, 1]  # batch_size=None: the source's own chunks


def test_a_batch_inside_one_chunk_is_zero_copy() -> None:
    src = table(1000)
    for batch in ih.iter_batches(src, to="torch", batch_size=256, as_dict=True):
        assert set(batch) == {"x", "n"}
        for name, tensor in batch.items():
            assert HUB.shared_bytes(tensor, src) == tensor.numel() * 8, name


def test_a_batch_across_chunks_is_copied_and_says_so() -> None:
    src = table(10, chunk=3)
    batches = list(ih.iter_batches(src, to="torch", batch_size=4, as_dict=True))
    assert torch.equal(torch.cat([b["n"] for b in batches]), torch.arange(10))
    # rows 0-3 lie in chunks [0, 3) and [3, 6): the tensor is a new buffer
    assert HUB.shared_bytes(batches[0]["x"], src) == 0
    piece = pa.Table.from_batches([src.to_batches()[0], src.to_batches()[1].slice(0, 1)])
    assert not ih.plan(piece, to="torch", as_dict=True).zero_copy


def test_tables_to_a_2d_tensor() -> None:
    batches = list(ih.iter_batches(table(10), to="numpy", batch_size=5))
    assert [b.shape for b in batches] == [(5, 2), (5, 2)]
    np.testing.assert_array_equal(np.vstack(batches)[:, 1], np.arange(10))


def test_a_tensor_is_sliced_along_its_first_dimension_zero_copy() -> None:
    src = np.arange(30.0).reshape(10, 3)
    batches = list(ih.iter_batches(src, to="torch", batch_size=4))
    assert [tuple(b.shape) for b in batches] == [(4, 3), (4, 3), (2, 3)]
    for i, b in enumerate(batches):
        assert b.data_ptr() == src[i * 4 :].ctypes.data  # a view of the source
    assert torch.equal(torch.cat(batches), torch.from_numpy(src))


def test_columns_and_frames_of_other_libraries() -> None:
    series = pl.Series("v", [1, 2, 3, 4, 5])
    got = list(ih.iter_batches(series, to="numpy", batch_size=2))
    assert [b.tolist() for b in got] == [[1, 2], [3, 4], [5]]
    frame = pd.DataFrame({"a": np.arange(6.0), "b": list("abcdef")})
    parts = list(ih.iter_batches(frame, to="pyarrow", batch_size=4))
    assert [p.num_rows for p in parts] == [4, 2]
    assert parts[1].column("b").to_pylist() == ["e", "f"]


def test_a_stream_is_read_as_the_loop_goes() -> None:
    produced: list[int] = []

    def gen() -> Iterator[pa.RecordBatch]:
        for i in range(5):
            produced.append(i)
            yield pa.record_batch({"v": pa.array(range(i * 10, i * 10 + 10), pa.int64())})

    reader = pa.RecordBatchReader.from_batches(pa.schema({"v": pa.int64()}), gen())
    batches = ih.iter_batches(reader, to="polars", batch_size=10)
    first = next(batches)
    assert first["v"].to_list() == list(range(10))
    assert len(produced) <= 2  # not read to the end
    rest = list(batches)
    assert sum(len(b) for b in rest) == 40 and len(produced) == 5


def test_nanoarrow_stream() -> None:
    stream = na.ArrayStream(table(7))
    sizes = [len(b) for b in ih.iter_batches(stream, to="pyarrow", batch_size=3)]
    assert sizes == [3, 3, 1]


def test_copy_true_shares_nothing() -> None:
    src = table(100)
    for batch in ih.iter_batches(src, to="torch", batch_size=50, as_dict=True, copy=True):
        assert all(HUB.shared_bytes(t, src) == 0 for t in batch.values())


def test_empty_sources_give_no_batches() -> None:
    assert list(ih.iter_batches(table(0), to="polars", batch_size=3)) == []
    assert list(ih.iter_batches(np.zeros((0, 2)), to="torch", batch_size=3)) == []


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "10"])
def test_bad_batch_sizes_are_refused_at_once(bad: Any) -> None:
    with pytest.raises(InvalidOptionError, match="batch_size"):
        ih.iter_batches(table(), to="polars", batch_size=bad)


def test_bad_options_are_refused_at_once() -> None:
    with pytest.raises(InvalidOptionError, match="drop_last"):
        ih.iter_batches(table(), to="polars", batch_size=2, drop_last="yes")  # type: ignore[arg-type]
    with pytest.raises(InvalidOptionError, match="as_dict"):
        ih.iter_batches(table(), to="polars", as_dict=1)  # type: ignore[arg-type]
    with pytest.raises(InvalidOptionError, match="tensor"):
        ih.iter_batches(np.zeros((4, 2)), to="torch", batch_size=2, as_dict=True)
    with pytest.raises(InvalidOptionError, match="no dimensions"):
        ih.iter_batches(np.asarray(1.0), to="torch", batch_size=2)
    with pytest.raises(UnknownTargetError):
        ih.iter_batches(np.zeros((4, 2)), to="polrs", batch_size=2)
    # a table's target and options were checked only by the first batch's conversion
    with pytest.raises(UnknownTargetError, match="polars"):
        ih.iter_batches(table(), to="polrs", batch_size=2)
    with pytest.raises(InvalidOptionError, match="dtype='f9'"):
        ih.iter_batches(table(), to="numpy", dtype="f9")
    with pytest.raises(InvalidOptionError, match="copy must be"):
        ih.iter_batches(table(), to="numpy", copy="yes")  # type: ignore[arg-type]
    with pytest.raises(InvalidOptionError, match="strict must be"):
        ih.iter_batches(table(), to="numpy", strict=1)  # type: ignore[arg-type]
    with pytest.raises(ih.DeviceError, match="unknown device 'gpu'"):
        ih.iter_batches(table(), to="numpy", device="gpu")


def test_an_impossible_route_fails_in_the_first_batch_with_the_hubs_error() -> None:
    strings = pa.table({"s": ["a", "b", "c"]})
    batches = ih.iter_batches(strings, to="torch", batch_size=2)
    with pytest.raises(NoRouteError):
        next(batches)


def test_hub_method_matches_the_module_function() -> None:
    hub = ih.Hub(autoload=False)
    got = [len(b) for b in hub.iter_batches(table(9), to="pandas", batch_size=4)]
    assert got == [4, 4, 1]


def test_a_sparse_tensor_is_refused_by_batch_size_with_what_to_do() -> None:
    # Found by a fuzzing review: torch's own NotImplementedError (aten::as_strided on
    # SparseCPU) came out of the loop, not an error of the hub's.
    import torch

    sparse = torch.tensor([0.0, 1.5, 0.0, 2.0]).to_sparse()
    with pytest.raises(ih.InvalidOptionError, match=r"sparse.*to_dense\(\)"):
        ih.iter_batches(sparse, to="torch", batch_size=2)
    (whole,) = ih.iter_batches(sparse, to="torch")  # batch_size=None: as it is
    assert whole.to_dense().tolist() == [0.0, 1.5, 0.0, 2.0]


def test_a_pandas_index_is_left_out_of_tensor_batches_as_from_the_whole_frame() -> None:
    """The index travels as Arrow columns, which lose their index flag in the batches:
    into a tensor, or with as_dict=True, they are left out as ih.convert leaves them out;
    into a table they stay (into pandas, as the index again)."""
    frame = pd.DataFrame(
        {"a": [1.0, 2.0, 3.0, 4.0, 5.0], "b": [5.0, 6.0, 7.0, 8.0, 9.0]},
        index=pd.Index([10, 20, 30, 40, 50], name="k"),
    )
    whole = ih.convert(frame, to="numpy")
    batches = list(ih.iter_batches(frame, to="numpy", batch_size=2))
    assert [b.shape for b in batches] == [(2, 2), (2, 2), (1, 2)]
    assert np.array_equal(np.concatenate(batches), whole)
    tensors = list(ih.iter_batches(frame, to="torch", batch_size=3))
    assert torch.equal(torch.cat(tensors), torch.from_numpy(whole))
    dicts = list(ih.iter_batches(frame, to="numpy", batch_size=2, as_dict=True))
    assert [list(d) for d in dicts] == [list(ih.convert(frame, to="numpy", as_dict=True))] * 3
    frames = list(ih.iter_batches(frame, to="pandas", batch_size=2))
    assert pd.concat(frames).equals(frame)
    tables = list(ih.iter_batches(frame, to="pyarrow", batch_size=2))
    assert all(t.schema.names == ih.convert(frame, to="pyarrow").schema.names for t in tables)


def test_copy_false_and_strict_hold_on_the_way_to_the_batches() -> None:
    """Found by a review: the source's way to Arrow was planned without the options, so
    copy=False let a copy through (pandas objects encoded as Arrow strings) and
    strict=True a loss (polars Int128 as decimal128)."""
    strings = pd.DataFrame({"s": pd.Series(["a", "b", "c", "d"], dtype=object)})
    with pytest.raises(ih.CopyRequiredError, match="column 's' is copied"):
        ih.iter_batches(strings, to="pyarrow", batch_size=2, copy=False)
    assert [len(b) for b in ih.iter_batches(strings, to="pyarrow", batch_size=2)] == [2, 2]
    wide = pl.DataFrame({"a": pl.Series([1, 2], dtype=pl.Int128)})
    with pytest.raises(ih.LossyConversionError, match="int128"):
        ih.iter_batches(wide, to="pyarrow", batch_size=1, strict=True)
    with pytest.raises(ih.LossyConversionError, match="int128"):
        ih.convert(wide, to="pyarrow", strict=True, as_dict=True)


def test_a_stream_failing_part_way_is_said_in_the_hubs_error() -> None:
    # iter_batches and as_dict raised pyarrow's ArrowInvalid, its message holding the
    # producer's traceback as text (convert said it as a ConversionError already)
    schema = pa.schema([("a", pa.int64())])

    def batches() -> Iterator[pa.RecordBatch]:
        yield pa.record_batch([pa.array([1, 2])], schema=schema)
        raise RuntimeError("producer failed mid-stream")

    def reader() -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(schema, batches())

    got = []
    with pytest.raises(ih.ConversionError, match="failed after 2 row") as failed:
        for batch in ih.iter_batches(reader(), to="polars", batch_size=1):
            got.append(batch["a"].to_list())
    assert got == [[1], [2]] and "Traceback" not in str(failed.value)
    assert "producer failed mid-stream" in str(failed.value)
    assert isinstance(failed.value.__cause__, pa.ArrowInvalid)
    with pytest.raises(ih.ConversionError, match="into columns failed .*mid-stream"):
        ih.convert(reader(), to="numpy", as_dict=True)
    with pytest.raises(ih.ConversionError, match="mid-stream\\.$"):
        ih.convert(reader(), to="polars")
