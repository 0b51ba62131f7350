"""The zero-copy routes the hub promises, checked with each library's own addresses."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
import torch

import interchange_hub as ih
from tests.helpers import assert_claim_holds


def arrow_data_address(obj: pa.Array | pa.ChunkedArray) -> int:
    chunk = obj.chunk(0) if isinstance(obj, pa.ChunkedArray) else obj
    return int(chunk.buffers()[1].address + chunk.offset * chunk.type.bit_width // 8)


def polars_address(series: pl.Series) -> int:
    return arrow_data_address(pa.chunked_array(series))


@pytest.fixture
def floats() -> np.ndarray:
    return np.random.default_rng(7).standard_normal(10_000)


def test_numpy_to_torch_and_back(hub: ih.Hub, floats: np.ndarray) -> None:
    t = hub.convert(floats, to="torch")
    assert t.data_ptr() == floats.ctypes.data
    back = hub.convert(t, to="numpy")
    assert back.ctypes.data == floats.ctypes.data
    assert hub.plan(floats, to="torch").zero_copy


def test_numpy_strided_view_to_torch_keeps_strides(hub: ih.Hub, floats: np.ndarray) -> None:
    view = floats[::2]
    t = hub.convert(view, to="torch")
    assert t.data_ptr() == view.ctypes.data
    assert t.stride() == (2,)


def test_numpy_to_pyarrow(hub: ih.Hub, floats: np.ndarray) -> None:
    arr = hub.convert(floats, to="pyarrow")
    assert isinstance(arr, pa.Array)
    assert arrow_data_address(arr) == floats.ctypes.data


def test_pyarrow_to_numpy_and_torch(hub: ih.Hub, floats: np.ndarray) -> None:
    arr = pa.array(floats)
    address = arrow_data_address(arr)
    assert hub.convert(arr, to="numpy").ctypes.data == address
    assert hub.convert(arr, to="torch").data_ptr() == address


def test_sliced_pyarrow_to_torch_keeps_offset(hub: ih.Hub, floats: np.ndarray) -> None:
    arr = pa.array(floats)[5:]
    assert hub.convert(arr, to="torch").data_ptr() == arrow_data_address(arr)


def test_pyarrow_polars_both_ways(hub: ih.Hub) -> None:
    table = pa.table({"a": np.arange(1000, dtype=np.int64), "b": np.linspace(0, 1, 1000)})
    df = hub.convert(table, to="polars")
    for name in table.column_names:
        assert polars_address(df[name]) == arrow_data_address(table.column(name))
    back = hub.convert(df, to="pyarrow")
    for name in table.column_names:
        assert arrow_data_address(back.column(name)) == arrow_data_address(table.column(name))


def test_pandas_numeric_to_pyarrow_and_polars(hub: ih.Hub) -> None:
    pdf = pd.DataFrame({"a": np.arange(1000), "b": np.linspace(0, 1, 1000)})
    addresses = {n: pdf[n].to_numpy().ctypes.data for n in pdf.columns}
    table = hub.convert(pdf, to="pyarrow")
    df = hub.convert(pdf, to="polars")
    for name, address in addresses.items():
        assert arrow_data_address(table.column(name)) == address
        assert polars_address(df[name]) == address


def test_polars_series_to_torch_without_polars_copy(hub: ih.Hub, floats: np.ndarray) -> None:
    series = pl.Series("x", floats)
    plan = hub.plan(series, to="torch")
    assert plan.zero_copy
    # Series.to_numpy (a view) then torch: no detour through Arrow.
    assert [s.edge.target for s in plan.steps] == ["numpy", "torch"]
    t = hub.convert(series, to="torch")
    assert t.data_ptr() == polars_address(series)
    # polars' own to_torch copies; the hub's route does not.
    assert series.to_torch().data_ptr() != polars_address(series)


def test_multi_chunk_polars_frame_is_exported_without_mutation(hub: ih.Hub) -> None:
    df = pl.concat([pl.DataFrame({"a": [1, 2]}), pl.DataFrame({"a": [3, 4]})], rechunk=False)
    assert df.n_chunks() == 2
    plan = hub.plan(df, to="pyarrow")
    table = hub.convert(df, to="pyarrow")
    assert plan.zero_copy
    assert table.column("a").num_chunks == 2
    assert df.n_chunks() == 2  # exporting the frame itself would have rechunked it in place


def test_fortran_ordered_matrix_to_table_is_zero_copy(hub: ih.Hub) -> None:
    matrix = np.asfortranarray(np.random.default_rng(1).standard_normal((100, 3)))
    plan = hub.plan(matrix, to="pyarrow")
    table = hub.convert(matrix, to="pyarrow")
    assert plan.zero_copy
    for i in range(3):
        assert arrow_data_address(table.column(i)) == matrix[:, i].ctypes.data
    c_ordered = np.ascontiguousarray(matrix)
    assert not hub.plan(c_ordered, to="pyarrow").zero_copy


@pytest.mark.parametrize("dtype", ["float64", "float32", "int8", "uint16"])
def test_nd_tensors_into_polars_share_as_the_plan_says(hub: ih.Hub, dtype: str) -> None:
    # polars keeps a numeric fixed-shape tensor's storage as an Array column over the same
    # buffers: the plan claimed a copy ("strings as views"), and copy=False was refused
    array = np.arange(24).astype(dtype).reshape(2, 3, 4)
    for source in (array, torch.from_numpy(array)):
        assert hub.plan(source, to="polars").zero_copy
        result = hub.convert(source, to="polars", copy=False)
        assert hub.shared_bytes(array, result) == array.nbytes
    sliced = hub.convert(array, to="pyarrow")[1:]  # (at an offset: polars rebuilds it)
    assert not hub.plan(sliced, to="polars").zero_copy
    assert hub.shared_bytes(sliced, hub.convert(sliced, to="polars")) == 0


def test_one_column_table_to_a_2d_view(hub: ih.Hub, floats: np.ndarray) -> None:
    table = pa.table({"x": floats})
    t = hub.convert(table, to="torch")
    assert tuple(t.shape) == (len(floats), 1)
    assert t.data_ptr() == arrow_data_address(table.column("x"))


def test_polars_enum_shares_and_categorical_copies(hub: ih.Hub) -> None:
    enum = pl.Series("e", ["a", "b", "a"] * 100, dtype=pl.Enum(["a", "b"]))
    categorical = pl.Series("c", ["a", "b", "a"] * 100, dtype=pl.Categorical)
    for series, zero_copy in ((enum, True), (categorical, False)):
        plan = hub.plan(series, to="pyarrow")
        result = hub.convert(series, to="pyarrow")
        assert plan.zero_copy is zero_copy
        total = sum(b.size for b in hub.buffers(series))
        assert (hub.shared_bytes(series, result) >= total) is zero_copy


def test_polars_enums_stay_enums_through_an_arrow_copy(hub: ih.Hub) -> None:
    """copy=True of a Series, or of a frame of several chunks, goes through Arrow, where a
    column (a ChunkedArray) cannot hold the field metadata that marks an Enum: the import
    makes it an Enum of its dictionary again (it had become a Categorical)."""
    many = pl.Enum([f"c{i}" for i in range(300)])  # 16-bit indices
    for dtype in (pl.Enum(["b", "a", "c"]), many):
        cats = dtype.categories.to_list()
        series = pl.Series("e", [cats[2], None, cats[0], cats[1]] * 50, dtype=dtype)
        frame = pl.DataFrame({"e": series, "n": range(len(series))})
        chunked = pl.concat([frame, frame], rechunk=False)
        lazy = chunked.lazy()
        for src in (series, frame, chunked, lazy):
            plan = hub.plan(src, to="polars", copy=True)
            result = hub.convert(src, to="polars", copy=True)
            got: Any = result.collect() if isinstance(result, pl.LazyFrame) else result
            want: Any = src.collect() if isinstance(src, pl.LazyFrame) else src
            assert got.dtype == dtype if isinstance(got, pl.Series) else got.schema == want.schema
            assert got.equals(want), (type(src), str(plan))
            assert "rebuilt as polars Categorical" not in str(plan)
            if not isinstance(src, pl.LazyFrame):
                assert_claim_holds(hub, plan, src, result)
    # into pyarrow, a frame of several chunks keeps polars' mark (as df.to_arrow() does)
    table = hub.convert(chunked, to="pyarrow")
    assert table.schema.field("e").metadata == chunked.to_arrow().schema.field("e").metadata
    back: Any = pl.from_arrow(table)
    assert back.schema == chunked.schema


def test_small_copies_are_claimed_too(hub: ih.Hub) -> None:
    """Validity bitmaps rebuilt from pandas masks or for sliced columns are copies."""
    masked = pd.DataFrame({"n": pd.array([1, None, 3] * 100, dtype="Int64")})
    unmasked = pd.DataFrame({"n": pd.array([1, 2, 3] * 100, dtype="Int64")})
    sliced = pa.table({"x": pa.array(np.arange(1000), mask=np.arange(1000) % 7 == 0)[3:]})
    cases = [(masked, "pyarrow", False), (unmasked, "pyarrow", True), (sliced, "polars", False)]
    for src, dst, zero_copy in cases:
        plan = hub.plan(src, to=dst)
        assert plan.zero_copy is zero_copy, str(plan)
        assert_claim_holds(hub, plan, src, hub.convert(src, to=dst))


def test_pandas_and_numpy_share_blocks_both_ways(hub: ih.Hub) -> None:
    frame = pd.DataFrame({"a": np.arange(5.0), "b": np.arange(5.0) * 2})
    frame = frame.copy()  # one consolidated 2-D block
    matrix = hub.convert(frame, to="numpy")
    assert matrix.ctypes.data == frame["a"].to_numpy().ctypes.data
    assert matrix[:, 1].ctypes.data == frame["b"].to_numpy().ctypes.data
    tensor = hub.convert(frame, to="torch")
    assert tensor.data_ptr() == frame["a"].to_numpy().ctypes.data
    array = np.arange(12.0).reshape(4, 3)
    back = hub.convert(array, to="pandas")
    assert back["column_1"].to_numpy().ctypes.data == array[:, 1].ctypes.data
    assert hub.plan(array, to="pandas").zero_copy and hub.plan(frame, to="numpy").zero_copy


def test_unaligned_numpy_into_polars_is_a_planned_copy(hub: ih.Hub) -> None:
    # polars copies values not aligned to their width: the plan said zero-copy, and
    # copy=False let the copy through (found by a review helper); pyarrow shares them
    for offset in (1, 4):
        raw = b"\x00" * offset + np.arange(4.0).tobytes()
        unaligned = np.frombuffer(raw, dtype=np.float64, offset=offset)
        assert not unaligned.flags.aligned
        assert not hub.plan(unaligned, to="polars").zero_copy
        assert hub.convert(unaligned, to="polars").to_list() == [0.0, 1.0, 2.0, 3.0]
        with pytest.raises(ih.CopyRequiredError):
            hub.convert(unaligned, to="polars", copy=False)
        shared = hub.convert(unaligned, to="pyarrow", copy=False)
        assert hub.shared_bytes(unaligned, shared) == 32


def test_a_masked_array_masking_nothing_is_shared_with_pandas_as_planned(hub: ih.Hub) -> None:
    # pandas copies a MaskedArray it is handed: the plan said zero-copy
    masked = np.ma.array([1.0, 2.0, 3.0])
    for _ in range(2):  # (planned, then the kept run)
        series = hub.convert(masked, to="pandas")
        assert hub.plan(masked, to="pandas").zero_copy
        assert np.shares_memory(series.to_numpy(), masked.data)
        assert series.tolist() == [1.0, 2.0, 3.0]
