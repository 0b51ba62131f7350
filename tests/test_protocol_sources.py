"""Objects known only by one dunder: the hub relies on the protocol, not on types."""

from __future__ import annotations

from typing import Any

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
