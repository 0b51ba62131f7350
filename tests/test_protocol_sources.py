"""Objects known only by one dunder: the hub relies on the protocol, not on types."""

from __future__ import annotations

from typing import Any

import nanoarrow as na
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
import torch

import interchange_hub as ih
from tests.helpers import ALL_LIBS, values


class StreamOnly:
    def __init__(self, data: Any) -> None:
        self._data = data

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        return self._data.__arrow_c_stream__(requested_schema)


class ArrayOnly:
    def __init__(self, data: Any) -> None:
        self._data = data

    def __arrow_c_array__(self, requested_schema: object = None) -> object:
        return self._data.__arrow_c_array__(requested_schema)


class DLPackOnly:
    def __init__(self, data: Any) -> None:
        self._data = data

    def __dlpack__(self, **kwargs: Any) -> object:
        return self._data.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        device: tuple[int, int] = self._data.__dlpack_device__()
        return device


class WrongCapsule:
    def __arrow_c_array__(self, requested_schema: object = None) -> object:
        return pa.array([1]).__arrow_c_array__()[::-1]


TABLE = pa.table({"x": [1.0, 2.0, 3.0], "y": [4.0, 5.0, 6.0]})


@pytest.mark.parametrize("dst", ALL_LIBS)
def test_stream_only_table(hub: ih.Hub, dst: str) -> None:
    out = hub.convert(StreamOnly(TABLE), to=dst)
    if dst in ("numpy", "torch"):
        assert values(out) == [[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]
    else:
        assert values(out) == values(TABLE)


@pytest.mark.parametrize("dst", ALL_LIBS)
def test_array_only_column(hub: ih.Hub, dst: str) -> None:
    arr = pa.array(np.arange(5, dtype=np.int64))
    source = ArrayOnly(arr)
    out = hub.convert(source, to=dst)
    assert values(out) == [0, 1, 2, 3, 4]
    assert hub.plan(source, to=dst).steps[0].edge.source == "arrow"


@pytest.mark.parametrize("dst", ALL_LIBS)
def test_dlpack_only_tensor(hub: ih.Hub, dst: str) -> None:
    data = np.arange(6.0)
    out = hub.convert(DLPackOnly(data), to=dst)
    assert values(out) == data.tolist()


def test_dlpack_only_is_zero_copy_into_torch(hub: ih.Hub) -> None:
    data = np.arange(6.0)
    t = hub.convert(DLPackOnly(data), to="torch")
    assert t.data_ptr() == data.ctypes.data


def test_stream_only_pandas_and_polars_producers(hub: ih.Hub) -> None:
    pdf = pd.DataFrame({"a": [1, 2]})
    assert hub.convert(StreamOnly(pdf), to="polars")["a"].to_list() == [1, 2]
    t = hub.convert(StreamOnly(pl.Series("a", [1.5, 2.5])), to="torch")
    assert torch.equal(t, torch.tensor([1.5, 2.5], dtype=torch.float64))


def test_wrong_capsule_name_is_a_protocol_error(hub: ih.Hub) -> None:
    with pytest.raises(ih.ProtocolError, match="arrow_schema"):
        hub.convert(WrongCapsule(), to="polars")


def test_negative_strides_from_any_dlpack_producer_are_normalised(hub: ih.Hub) -> None:
    # torch.from_dlpack aborts the process on negative strides: the hub must copy first.
    reversed_view = np.arange(5.0)[::-1]
    t = hub.convert(DLPackOnly(reversed_view), to="torch")
    assert t.tolist() == [4.0, 3.0, 2.0, 1.0, 0.0]
    assert not hub.plan(DLPackOnly(reversed_view), to="torch").zero_copy


def test_dlpack_producer_numpy_cannot_read(hub: ih.Hub) -> None:
    bf16 = torch.ones(3, dtype=torch.bfloat16)
    assert hub.convert(DLPackOnly(bf16), to="torch").dtype == torch.bfloat16
    with pytest.raises(ih.NoRouteError, match="cast it first"):
        hub.convert(DLPackOnly(bf16), to="numpy")


def test_export_of_an_unknown_stream_offers_only_its_stream(hub: ih.Hub) -> None:
    exported = hub.export(StreamOnly(TABLE))
    assert not hasattr(exported, "__dlpack__")
    assert pa.table(exported).num_rows == 3


def test_running_a_deferred_plan_reads_then_plans(hub: ih.Hub) -> None:
    source = StreamOnly(pa.table({"a": [1, 2]}))
    plan = hub.plan(source, to=pl.Series)
    assert plan.deferred
    assert hub.planner.run(source, plan).to_list() == [1, 2]


def test_a_stream_of_sliced_structs_gives_the_rows_of_its_slices(hub: ih.Hub) -> None:
    structs = pa.array([{"a": i} for i in range(6)])
    chunks = [structs.slice(0, 2), structs.slice(4, 2)]  # longer children; an offset
    table = hub.convert(StreamOnly(pa.chunked_array(chunks)), to=pa.Table)
    table.validate(full=True)
    assert table.to_pylist() == [{"a": 0}, {"a": 1}, {"a": 4}, {"a": 5}]


def test_a_stream_of_structs_with_null_rows_is_a_column(hub: ih.Hub) -> None:
    column = pa.chunked_array([pa.array([{"a": 1}, None, {"a": None}])])
    out = hub.convert(StreamOnly(column), to="pyarrow")
    assert isinstance(out, pa.ChunkedArray)  # not a table whose row 1 is {"a": None}
    assert out.to_pylist() == [{"a": 1}, None, {"a": None}] and out.null_count == 1


# -- streams of sliced nested data from generic producers ----------------------------------
class SchemaStream(StreamOnly):
    """A stream producer that also tells its schema (as ``ih.export`` objects do)."""

    def __arrow_c_schema__(self) -> object:
        data = self._data
        if isinstance(data, pa.ChunkedArray):
            return pa.field("", data.type).__arrow_c_schema__()
        return data.schema.__arrow_c_schema__()


def _exported(data: Any) -> Any:
    return ih.export(data)


def _of_nanoarrow(data: Any) -> Any:
    return StreamOnly(na.ArrayStream(data))  # nanoarrow's stream, not pyarrow's


PRODUCERS = {
    "stream only": StreamOnly,
    "with schema": SchemaStream,
    "ih.export": _exported,
    "nanoarrow's stream": _of_nanoarrow,
}
STRUCT = pa.StructArray.from_arrays(
    [
        pa.array([None if i % 3 == 0 else i for i in range(12)], pa.int64()),
        pa.array([None if i % 2 else f"s{i}" for i in range(13)]).slice(1),  # its own offset
    ],
    ["a", "s"],
)
NULL_ROWS = pa.StructArray.from_arrays(
    STRUCT.flatten(), ["a", "s"], mask=pa.array([i % 4 == 1 for i in range(12)])
)
IN_LIST = pa.ListArray.from_arrays(
    pa.array([0, 2, 2, 3, 5, 7, 7, 8, 10, 12, 12], pa.int32()), STRUCT
)
LISTS = pa.array([[i, None] if i % 3 else None for i in range(12)], pa.list_(pa.int64()))


def _chunks(arr: pa.Array) -> pa.ChunkedArray:
    """Several chunks: longer children at offset 0, one at an offset, an empty one."""
    return pa.chunked_array([arr.slice(0, 3), arr.slice(4, 4), arr.slice(9, 0), arr.slice(8)])


def _with_column(arr: pa.Array) -> pa.Table:
    """A table of several batches whose column ``c`` is a slice of ``arr``."""
    chunks = _chunks(arr).chunks
    numbers = pa.chunked_array([pa.array(range(len(c)), pa.int64()) for c in chunks])
    return pa.Table.from_arrays([pa.chunked_array(chunks), numbers], names=["c", "n"])


NESTED = {
    "struct": _chunks(STRUCT),
    "struct with null rows": _chunks(NULL_ROWS),
    "list of structs": _chunks(IN_LIST),
    "list": _chunks(LISTS),
    "table of a struct column": _with_column(STRUCT),
    "table of a struct column with null rows": _with_column(NULL_ROWS),
    "table of a list of structs": _with_column(IN_LIST),
    "table of a list column": _with_column(LISTS),
}


def _arrow_of(out: Any) -> Any:
    """The pyarrow data of a result, read with its own library's API (not the hub)."""
    if isinstance(out, pd.DataFrame):
        return pa.Table.from_pandas(out, preserve_index=False)
    if isinstance(out, pd.Series):
        return pa.array(out.array)  # the ArrowDtype's own Arrow data
    if isinstance(out, (pl.DataFrame, pl.Series)):
        return out.to_arrow()
    if isinstance(out, pa.Table | pa.ChunkedArray | pa.Array):
        return out
    return pa.chunked_array(out)  # nanoarrow


@pytest.mark.parametrize("dst", ["pyarrow", "nanoarrow", "polars", "pandas"])
@pytest.mark.parametrize("data", NESTED.values(), ids=NESTED.keys())
@pytest.mark.parametrize("producer", PRODUCERS.values(), ids=PRODUCERS.keys())
def test_a_generic_stream_of_sliced_nested_data_keeps_its_rows(
    hub: ih.Hub, producer: Any, data: Any, dst: str
) -> None:
    """Sliced structs (children with nulls, longer than the rows, at offsets), in a list or
    as a column, in several batches: pyarrow's record batch import (``pa.table``) refused
    the stream of a struct column that tells its schema, or kept its longer children (an
    invalid table); every target gets the rows of the slices."""
    out = hub.convert(producer(data), to=dst)
    got = _arrow_of(out)
    got.validate(full=True)
    assert got.to_pylist() == data.to_pylist()
    if pa.types.is_struct(getattr(data, "type", pa.null())) and data.null_count:
        assert got.null_count == data.null_count  # null rows, not rows of null fields


class BatchesOf:
    """A table's stream (its structs not nullable) whose batches are slices at offset 0 of
    longer structs: valid C data, built by nanoarrow, not pyarrow (whose export slices the
    children to the rows)."""

    def __init__(self, *batches: pa.Array) -> None:
        self._batches = batches
        self._schema = na.c_schema(pa.field("", batches[0].type, nullable=False))

    def __arrow_c_schema__(self) -> object:  # told: planned ahead, read by pa.table
        return self._schema.__arrow_c_schema__()

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        from nanoarrow.c_array_stream import CArrayStream

        arrays = [na.c_array(b) for b in self._batches]
        stream = CArrayStream.from_c_arrays(arrays, self._schema, validate=False)
        return stream.__arrow_c_stream__()


def test_a_table_stream_of_batches_with_longer_children_is_never_an_invalid_table(
    hub: ih.Hub,
) -> None:
    source = BatchesOf(STRUCT.slice(0, 3), STRUCT.slice(0, 5))
    assert na.c_array(STRUCT.slice(0, 3)).child(0).length == 12
    try:
        out = hub.convert(source, to=pa.Table)
    except ih.InterchangeError:
        return  # a clear refusal will do; a correct table even better
    out.validate(full=True)  # "Column 0 named a expected length 8 but got length 24"
    assert out.to_pylist() == STRUCT.slice(0, 3).to_pylist() + STRUCT.slice(0, 5).to_pylist()


def _polars_frames() -> dict[str, pl.DataFrame]:
    """polars frames whose streams could hold longer columns if polars did not align
    them: misaligned chunks, slices of them, nested columns sliced, nulls."""
    base = pl.DataFrame(
        {
            "i": [None if i % 4 == 0 else i for i in range(12)],
            "st": [{"x": i, "y": f"s{i}"} for i in range(12)],
            "l": [[i] * (i % 3) for i in range(12)],
        }
    )
    # a column of three chunks beside one of one (polars keeps them so; exporting the
    # frame realigns them)
    parts = [
        pl.DataFrame({"a": [1, 2]}),
        pl.DataFrame({"a": [3, None, 5]}),
        pl.DataFrame({"a": [6]}),
    ]
    misaligned = pl.concat(parts, rechunk=False).hstack(pl.DataFrame({"b": list("uvwxyz")}))
    assert misaligned.n_chunks("all") == [3, 1]
    stacked = base.vstack(base.slice(3, 5))
    return {
        "one chunk": base,
        "sliced": base.slice(2, 7),
        "misaligned chunks": misaligned,
        "misaligned, sliced": misaligned.slice(1, 4),
        "stacked": stacked,
        "stacked, sliced": stacked.slice(10, 6),
    }


POLARS_FRAMES = (
    "one chunk",
    "sliced",
    "misaligned chunks",
    "misaligned, sliced",
    "stacked",
    "stacked, sliced",
)


@pytest.mark.parametrize("name", POLARS_FRAMES)
def test_polars_streams_hold_batches_as_long_as_their_rows(hub: ih.Hub, name: str) -> None:
    """What the polars adapter vouches for (arrowkit.vouch_exact_batches), so that the
    tables read from a polars frame's stream are not checked: every batch's columns are
    exactly its rows long, and so is every table the hub makes of the frame."""
    frame = _polars_frames()[name]
    reader = pa.RecordBatchReader._import_from_c_capsule(frame.clone().__arrow_c_stream__())
    for batch in reader:
        assert all(len(col) == batch.num_rows for col in batch.columns)
        batch.validate(full=True)
    for _ in range(2):  # planned, then the kept route
        out = hub.convert(frame, to=pa.Table)
        out.validate(full=True)
        assert out.to_pylist() == frame.to_dicts()
    assert ih.arrowkit.exact_batches(pl.DataFrame)


def test_a_vouch_covers_its_class_only(hub: ih.Hub) -> None:
    """A vouched class's tables are taken as they are (the check is skipped: what the
    vouch promises); its subclasses, and other producers, are still checked."""

    class Vouched(BatchesOf):
        pass

    class Subclass(Vouched):
        pass

    ih.arrowkit.vouch_exact_batches(Vouched)
    assert ih.arrowkit.exact_batches(Vouched)
    assert not ih.arrowkit.exact_batches(Subclass)
    assert not ih.arrowkit.exact_batches(BatchesOf)
    longer = (STRUCT.slice(0, 3), STRUCT.slice(0, 5))
    with pytest.raises(ih.InterchangeError, match="longer than their rows"):
        hub.convert(Subclass(*longer), to=pa.Table)
    out = hub.convert(Vouched(*longer), to=pa.Table)  # not checked: invalid, as vouched
    with pytest.raises(pa.ArrowInvalid):
        out.validate()
    # one batch: pyarrow's one-batch import (planned, then its kept run) decides per class
    for _ in range(2):
        with pytest.raises(ih.InterchangeError, match="longer than their rows"):
            hub.convert(Subclass(longer[0]), to=pa.Table)
        with pytest.raises(pa.ArrowInvalid):
            hub.convert(Vouched(longer[0]), to=pa.Table).validate()
