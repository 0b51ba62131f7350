"""dtype= and as_dict=: tables become tensors the way users expect from to_numpy()."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
import torch

import interchange_hub as ih


def test_mixed_numeric_columns_upcast_as_to_numpy_does(hub: ih.Hub) -> None:
    df = pl.DataFrame({"a": [1, 2, 3], "b": [1.5, 2.5, 3.5]})
    got = hub.convert(df, to="numpy")
    np.testing.assert_array_equal(got, df.to_numpy())
    assert got.dtype == df.to_numpy().dtype == np.float64
    plan = hub.plan(df, to="numpy")
    assert "cast int64 -> float64" in str(plan) and plan.lossless
    frame = pd.DataFrame({"i": np.array([1, 2], np.int32), "f": np.array([0.5, 1.0], np.float32)})
    assert hub.convert(frame, to="numpy").dtype == frame.to_numpy().dtype  # float64


@pytest.mark.parametrize(
    ("a", "b"),
    [("int8", "uint8"), ("int32", "float32"), ("bool", "int16"), ("uint64", "int64")],
)
def test_promotion_follows_numpy(hub: ih.Hub, a: str, b: str) -> None:
    def column(dtype: str) -> pa.Array:
        return pa.array([True, False] if dtype == "bool" else [1, 0], dtype)

    table = pa.table({"a": column(a), "b": column(b)})
    assert hub.convert(table, to="numpy").dtype == np.result_type(np.dtype(a), np.dtype(b))


def test_values_a_cast_cannot_keep_are_warned_and_refused_under_strict(hub: ih.Hub) -> None:
    table = pa.table({"big": [2**53 + 1, 1], "f": [0.5, 1.0]})
    with pytest.warns(ih.LossyConversionWarning, match="column 'big': int64 -> float64"):
        hub.convert(table, to="numpy")
    with pytest.raises(ih.LossyConversionError, match="big"):
        hub.convert(table, to="numpy", strict=True)
    small = pa.table({"i": [2**52, 1], "f": [0.5, 1.0]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert hub.convert(small, to="numpy")[0, 0] == 2**52


@pytest.mark.parametrize("to", ["numpy", "torch"])
@pytest.mark.parametrize("make", [pa.array, lambda v: pa.table({"big": v})])
def test_integers_cast_to_float16_are_checked(hub: ih.Hub, to: str, make: Any) -> None:
    # pyarrow checks no integer cast to float16: 2**40 became inf with no warning (the plan
    # said "values it cannot hold are warned when run")
    with pytest.warns(ih.LossyConversionWarning, match="int64 -> float16: .*become inf"):
        result = hub.convert(make([2**40, 1]), to=to, dtype="float16")
    assert np.isinf(np.asarray(result).ravel()[0])
    with pytest.raises(ih.LossyConversionError, match="beyond \\+-2048"):
        hub.convert(make([2049, 1]), to=to, dtype="float16", strict=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # held exactly: no warning
        exact = hub.convert(make([-2048, 2048]), to=to, dtype="float16", strict=True)
    assert np.asarray(exact).ravel().tolist() == [-2048.0, 2048.0]


@pytest.mark.parametrize("dtype", ["float32", np.float32, np.dtype("float32"), torch.float32])
def test_dtype_casts_a_table_and_is_a_planned_copy(hub: ih.Hub, dtype: object) -> None:
    df = pl.DataFrame({"a": [1, 2], "b": [0.5, 1.5]})
    got = hub.convert(df, to="torch", dtype=dtype)
    assert got.dtype == torch.float32
    assert got.tolist() == [[1.0, 0.5], [2.0, 1.5]]
    plan = hub.plan(df, to="torch", dtype=dtype)
    assert not plan.zero_copy and "dtype='float32'" in str(plan)


def test_dtype_casts_tensors_and_keeps_the_source(hub: ih.Hub) -> None:
    arr = np.arange(4)
    out = hub.convert(arr, to="torch", dtype="float16")
    assert out.dtype == torch.float16 and hub.shared_bytes(out, arr) == 0
    same = hub.convert(arr, to="numpy", dtype="int64")
    assert same is arr  # already that dtype: nothing to do
    with pytest.warns(ih.LossyConversionWarning, match="changes values"):
        hub.convert(np.array([1.5, 300.0]), to="numpy", dtype="uint8")
    with pytest.raises(ih.LossyConversionError):
        hub.convert(np.array([1.5]), to="numpy", dtype="int32", strict=True)


@pytest.mark.parametrize("bad", ["float31", "string", 3, object()])
def test_a_bad_dtype_is_refused_with_the_choices(hub: ih.Hub, bad: object) -> None:
    with pytest.raises(ih.InvalidOptionError, match="float32"):
        hub.convert(np.arange(2), to="torch", dtype=bad)


@pytest.mark.parametrize(
    ("spelling", "dtype"),
    [
        ("<f4", np.float32),
        ("=i8", np.int64),
        ("|u1", np.uint8),
        ("?", np.bool_),
        ("f8", np.float64),
    ],
)
def test_numpy_type_strings_are_dtypes(hub: ih.Hub, spelling: str, dtype: Any) -> None:
    # '<f4' (what np.dtype('float32').str gives) was refused where 'f4' was taken
    values = np.array([0, 1, 1])
    assert hub.convert(values, to="numpy", dtype=spelling).dtype == dtype
    assert hub.convert(values, to="numpy", dtype=np.dtype(dtype).str).dtype == dtype
    with pytest.raises(ih.InvalidOptionError, match="not a tensor dtype"):
        hub.convert(np.arange(3), to="numpy", dtype=">f4" if np.little_endian else "<f4")


def test_dtype_is_for_tensor_results(hub: ih.Hub) -> None:
    with pytest.raises(ih.InvalidOptionError, match="applies to tensor results"):
        hub.convert(pa.table({"a": [1]}), to="polars", dtype="float32")


def test_as_dict_gives_one_tensor_per_column_zero_copy(hub: ih.Hub) -> None:
    df = pl.DataFrame({"a": [1, 2, 3], "b": [1.5, 2.5, 3.5], "c": [True, False, True]})
    got = hub.convert(df, to="torch", as_dict=True)
    assert list(got) == ["a", "b", "c"]
    assert got["a"].dtype == torch.int64 and got["b"].dtype == torch.float64
    assert got["c"].dtype == torch.bool
    assert hub.shared_bytes(got["a"], df) == 24 and hub.shared_bytes(got["b"], df) == 24
    plan = hub.plan(df, to="torch", as_dict=True)
    assert "column 'a': zero-copy" in str(plan) and "column 'c': copies" in str(plan)
    assert plan.copied_columns == ("c",)  # booleans are bit-packed in Arrow


def test_as_dict_with_dtype_and_copy(hub: ih.Hub) -> None:
    table = pa.table({"a": [1, 2], "b": [3, 4]})
    got = hub.convert(table, to="numpy", as_dict=True, dtype="float32")
    assert {k: v.dtype for k, v in got.items()} == {"a": np.float32, "b": np.float32}
    fresh = hub.convert(table, to="torch", as_dict=True, copy=True)
    assert all(hub.shared_bytes(t, table) == 0 for t in fresh.values())
    with pytest.raises(ih.CopyRequiredError):
        hub.convert(pa.table({"a": [1, None]}), to="torch", as_dict=True, copy=False)


def test_as_dict_refuses_what_has_no_columns_or_repeats_names(hub: ih.Hub) -> None:
    with pytest.raises(ih.InvalidOptionError, match="tensor"):
        hub.convert(np.arange(3), to="torch", as_dict=True)
    twice = pa.Table.from_arrays([pa.array([1]), pa.array([2])], names=["x", "x"])
    with pytest.raises(ih.InvalidOptionError, match="'x' repeat"):
        hub.convert(twice, to="torch", as_dict=True)
    with pytest.raises(ih.InvalidOptionError, match="as_dict must be"):
        hub.convert(twice, to="torch", as_dict="yes")  # type: ignore[call-overload]
    reader = pa.RecordBatchReader.from_batches(
        pa.schema([("a", pa.int64())]), [pa.record_batch({"a": [1]})]
    )
    with pytest.raises(ih.InvalidOptionError, match="one-shot"):
        hub.plan(reader, to="torch", as_dict=True)


def test_a_pandas_index_is_left_out_of_as_dict(hub: ih.Hub) -> None:
    frame = pd.DataFrame({"v": [1.0, 2.0]}, index=pd.Index([10, 20], name="k"))
    assert list(hub.convert(frame, to="numpy", as_dict=True)) == ["v"]


@pytest.mark.parametrize("kind", ["fixed_shape_tensor", "sparse_union", "dictionary<date32>"])
def test_a_column_of_no_chunks_is_an_empty_tensor_as_one_empty_chunk_is(
    hub: ih.Hub, kind: str
) -> None:
    # Found by a fuzzing review: combine_chunks of no chunks builds its array from a
    # Python sequence, which pyarrow refuses for these types ("... with a permutation is
    # not supported", for a tensor with none), where one empty chunk converted.
    sample = {
        "fixed_shape_tensor": pa.FixedShapeTensorArray.from_numpy_ndarray(np.zeros((2, 2, 2))),
        "sparse_union": pa.UnionArray.from_sparse(
            pa.array([0, 1], pa.int8()), [pa.array([1, 2]), pa.array(["a", "b"])]
        ),
        "dictionary<date32>": pa.DictionaryArray.from_arrays(
            pa.array([0], pa.int32()), pa.array([1], pa.date32())
        ),
    }[kind]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ih.LossyConversionWarning)  # (a union's objects)
        one = hub.convert(pa.chunked_array([sample.slice(0, 0)]), to="numpy")
        none = hub.convert(pa.chunked_array([], sample.type), to="numpy")
    assert none.shape == one.shape and none.dtype == one.dtype


@pytest.mark.parametrize("to", ["numpy", "torch"])
def test_an_integer_dtype_refuses_nulls_it_cannot_hold(hub: ih.Hub, to: str) -> None:
    # Found by a review: the plan said "cast float64 -> int32", and the result was float64
    # with NaN, dtype= silently ignored. A float dtype takes them as NaN.
    sources = [
        pa.table({"n": [1, 2, 3], "a": pa.array([1, None, 3])}),
        pa.array([1, None, 3]),
        pl.DataFrame({"a": [1, None, 3]}),
        pd.Series([1, None, 3], dtype="Int64", name="a"),
    ]
    for source in sources:
        with pytest.raises(ih.NoRouteError, match="holds nulls, which a tensor of dtype='int32'"):
            hub.plan(source, to=to, dtype="int32")
        with pytest.warns(ih.LossyConversionWarning, match="nulls become NaN"):
            out = hub.convert(source, to=to, dtype="float32")
        assert str(out.dtype).endswith("float32")
    # a stream's nulls show when it is read: refused then
    schema = pa.schema([("a", pa.int64())])
    reader = pa.RecordBatchReader.from_batches(
        schema, [pa.record_batch([[1, None]], schema=schema)]
    )
    with pytest.raises(ih.NoRouteError, match="column 'a' holds nulls"):
        hub.convert(reader, to=to, dtype="int32")


def test_as_dict_names_each_column_in_its_messages_and_results(hub: ih.Hub) -> None:
    # Found by a review: each column went on as a nameless Arrow column: warnings and
    # strict's refusal said "the data", a refusal came after another column's warning,
    # and a named Series gave the key '' (and an unnamed pandas Series).
    table = pa.table({"price": [1, None, 3], "qty": [1, 2, 3]})
    with pytest.warns(ih.LossyConversionWarning, match="column 'price'"):
        hub.convert(table, to="torch", as_dict=True)
    with pytest.raises(ih.LossyConversionError, match="column 'price'"):
        hub.convert(table, to="numpy", as_dict=True, strict=True)
    mixed = pl.DataFrame({"a": [1, None, 3], "name": ["x", "y", "z"]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # refused before column 'a' warns
        with pytest.raises(ih.NoRouteError, match="column 'name'"):
            hub.convert(mixed, to="torch", as_dict=True)
    assert "column 'price'" in str(hub.plan(table, to="numpy", as_dict=True))
    named = hub.convert(pl.Series("price", [1, 2]), to="pandas", as_dict=True)
    assert list(named) == ["price"] and named["price"].name == "price"
    back = hub.convert(pd.Series([1, 2], name="qty"), to="polars", as_dict=True)
    assert list(back) == ["qty"] and back["qty"].name == "qty"


def test_as_dict_write_through_names_the_column_and_its_source(hub: ih.Hub) -> None:
    # Each column's warning named a "pyarrow.ChunkedArray", whatever was passed
    table = pa.table({"a": np.arange(3.0), "b": np.arange(3.0)})
    for source, name in ((table, "pyarrow.Table"), (pl.from_arrow(table), "polars.DataFrame")):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            result = hub.convert(source, to="torch", as_dict=True)
        messages = [str(w.message) for w in seen if w.category is ih.WriteThroughWarning]
        assert [m.split(", which")[0] for m in messages] == [
            f"the torch result shares memory with the column {c!r} of the {name}" for c in "ab"
        ]
        assert result["a"].data_ptr() == table["a"].chunk(0).buffers()[1].address
