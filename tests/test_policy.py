"""Copy policy, lossless defaults, strict mode and lossy warnings."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
import torch

import interchange_hub as ih

BIG = 2**53 + 1


def test_integers_with_nulls_stay_integers_in_table_libraries(hub: ih.Hub) -> None:
    table = pa.table({"n": pa.array([BIG, None, 3])})
    pdf = hub.convert(table, to="pandas")
    assert str(pdf["n"].dtype) == "Int64"
    assert pdf["n"].iloc[0] == BIG and pdf["n"].isna().tolist() == [False, True, False]
    df = hub.convert(table, to="polars")
    assert df.schema["n"] == pl.Int64 and df["n"].to_list() == [BIG, None, 3]
    back = hub.convert(pdf, to="pyarrow")
    assert back.column("n").type == pa.int64() and back.column("n").to_pylist() == [BIG, None, 3]


def test_a_kept_lossy_route_warns_at_the_callers_line_on_every_call(hub: ih.Hub) -> None:
    # The kept run passes over the hub's frame below the caller at once (ih.convert or
    # Hub.convert, which run it themselves): each warning still points at the caller's
    # line.
    table = pa.table({"count": [1, None, 3], "other": [1.0, 2.0, 3.0]})
    for convert in (hub.convert, ih.convert):
        for _ in range(3):
            line = inspect.currentframe().f_lineno + 2  # type: ignore[union-attr]
            with pytest.warns(ih.LossyConversionWarning) as record:
                convert(table, to="numpy")
            assert {w.filename for w in record} == {__file__}
            assert {w.lineno for w in record} == {line} and len(record) == 1
        assert "count" in str(record[0].message)


def test_a_kept_lossy_routes_warnings_point_at_each_call_sites_own_line(hub: ih.Hub) -> None:
    # warn_all keeps the line of each call site (code object and instruction) once read:
    # two calls in one function keep their own lines, and code compiled anew (a notebook
    # cell run again, exec) its own, over many calls of each.
    table = pa.table({"count": [1, None, 3]})

    def twice() -> None:
        hub.convert(table, to="numpy")
        hub.convert(table, to="numpy")

    start = twice.__code__.co_firstlineno
    for _ in range(3):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            twice()
        assert [(w.filename, w.lineno) for w in caught] == [
            (__file__, start + 1),
            (__file__, start + 2),
        ]
    for blank in (3, 1, 5, 3):
        code = compile("\n" * blank + "hub.convert(table, to='numpy')\n", "<cell>", "exec")
        for _ in range(3):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                exec(code, {"hub": hub, "table": table})  # noqa: S102 - a cell of our own
            assert [(w.filename, w.lineno) for w in caught] == [("<cell>", blank + 1)]


def test_a_kept_lossy_routes_warnings_follow_the_filters_as_warnings_warn_does(
    hub: ih.Hub,
) -> None:
    # warn_all hands each message to warnings.warn_explicit with the caller's context:
    # "default" shows each message once per line (the module's __warningregistry__),
    # "error" raises, "ignore" shows nothing, as warnings.warn would.
    table = pa.table({"count": [1, None, 3], "x": [None, 2.0, 3.0]})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        for _ in range(4):
            hub.convert(table, to="numpy")
    assert len(caught) == 2 and {w.filename for w in caught} == {__file__}
    assert sorted(str(w.message).split(": ")[1] for w in caught) == ["column 'count'", "column 'x'"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("ignore")
        hub.convert(table, to="numpy")
    assert caught == []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ih.LossyConversionWarning, match="column 'count'"):
            hub.convert(table, to="numpy")


def test_integers_with_nulls_into_a_tensor_warn_naming_the_column(hub: ih.Hub) -> None:
    table = pl.DataFrame({"count": [1, None, 3], "other": [1, 2, 3]})
    with pytest.warns(ih.LossyConversionWarning) as record:
        matrix = hub.convert(table, to="numpy")
    messages = [str(w.message) for w in record]
    assert {w.filename for w in record} == {__file__}  # the warning points at the caller
    assert any(
        "column 'count': int64 with nulls -> float64: nulls become NaN" in m for m in messages
    )
    assert any("column 'other'" in m and "promoted" in m for m in messages)
    assert matrix.dtype == np.float64 and np.isnan(matrix[1, 0])


def test_strict_turns_the_warning_into_an_error_before_converting(hub: ih.Hub) -> None:
    series = pl.Series("count", [1, None, 3])
    with pytest.raises(ih.LossyConversionError, match="column 'count'"):
        hub.convert(series, to="torch", strict=True)
    with pytest.raises(ih.LossyConversionError):
        hub.plan(series, to="torch", strict=True)


def test_timezone_and_unit_survive_a_round_trip(hub: ih.Hub) -> None:
    typ = pa.timestamp("ns", "America/New_York")
    table = pa.table({"t": pa.array([1_700_000_000_123_456_789, None], typ)})
    through_pandas = hub.convert(hub.convert(table, to="pandas"), to="pyarrow")
    assert through_pandas.column("t").type == typ
    through_polars = hub.convert(hub.convert(table, to="polars"), to="pyarrow")
    assert through_polars.column("t").type == typ
    assert through_polars.column("t").to_pylist() == table.column("t").to_pylist()


def test_strings_stay_strings(hub: ih.Hub) -> None:
    table = pa.table({"s": pa.array(["a", None, "ccc"], pa.large_string())})
    for lib in ("polars", "pandas", "nanoarrow"):
        out = hub.convert(hub.convert(table, to=lib), to="pyarrow")
        assert pa.types.is_large_string(out.column("s").type) or pa.types.is_string_view(
            out.column("s").type
        )
        assert out.column("s").to_pylist() == ["a", None, "ccc"]
    assert str(hub.convert(table, to="pandas")["s"].dtype) == "str"


def test_copy_false_raises_naming_column_and_reason(hub: ih.Hub) -> None:
    table = pa.table({"ok": [1.0, 2.0], "s": pa.array(["a", "b"], pa.string())})
    with pytest.raises(ih.CopyRequiredError, match=r"column 's'.*string_view") as info:
        hub.convert(table, to="polars", copy=False)
    assert info.value.columns == ("s",)
    assert isinstance(info.value, ih.InterchangeError)


def test_copy_false_passes_on_zero_copy_routes(hub: ih.Hub) -> None:
    arr = np.arange(10.0)
    assert hub.convert(arr, to="torch", copy=False).data_ptr() == arr.ctypes.data


def test_copy_false_with_nulls_into_a_tensor(hub: ih.Hub) -> None:
    with pytest.raises(ih.CopyRequiredError, match="nulls"):
        hub.convert(pa.array([1.5, None]), to="numpy", copy=False)


def test_copy_true_gives_independent_memory(hub: ih.Hub) -> None:
    arr = np.arange(10.0)
    t = hub.convert(arr, to="torch", copy=True)
    t[0] = 99.0
    assert arr[0] == 0.0
    table = pa.table({"a": np.arange(5)})
    df = hub.convert(table, to="polars", copy=True)
    assert hub.shared_bytes(table, df) == 0
    plan = hub.plan(table, to="polars", copy=True)
    assert any("copy=True" in s.estimate.why for s in plan.steps)


def test_read_only_aliasing_is_stated_in_the_plan(hub: ih.Hub) -> None:
    arr = pa.array(np.arange(4.0))
    plan = hub.plan(arr, to="torch")
    assert plan.zero_copy
    assert any("read-only" in note for note in plan.notes)
    assert not any("read-only" in n for n in hub.plan(arr, to="torch", copy=True).notes)


def test_result_outlives_source(hub: ih.Hub) -> None:
    import gc

    values = np.random.default_rng(5).standard_normal(50_000)
    expected = values.copy()
    t = hub.convert(pa.array(values), to="torch")
    del values
    gc.collect()
    assert torch.equal(t, torch.from_numpy(expected))


def test_pandas_index_travels_as_a_column_but_not_into_tensors(hub: ih.Hub) -> None:
    pdf = pd.DataFrame({"a": [1, 2]}, index=pd.Index(["x", "y"], name="key"))
    df = hub.convert(pdf, to="polars")
    assert df.columns == ["a", "key"]
    numbered = pd.DataFrame({"x": [1.0, 2.0, 3.0]}, index=[30, 10, 20])
    assert hub.convert(numbered, to="numpy").tolist() == [[1.0], [2.0], [3.0]]
    assert "index is left out" in str(hub.plan(numbered, to="torch"))
    assert hub.convert(numbered, to=pl.Series).to_list() == [1.0, 2.0, 3.0]


def test_cached_routes_still_honour_the_copy_policy(hub: ih.Hub) -> None:
    hub.convert(np.ones((5, 2)), to="polars", copy=True)
    one_column = np.arange(5.0).reshape(5, 1)
    result = hub.convert(one_column, to="polars", copy=True)
    one_column[0, 0] = 99.0
    assert result["column_0"].to_list() == [0.0, 1.0, 2.0, 3.0, 4.0]

    other = ih.Hub(autoload=False)
    other.convert(np.ones((5, 1)), to="polars", copy=False)  # zero-copy: one column
    with pytest.raises(ih.CopyRequiredError, match="C-ordered"):
        other.convert(np.ones((5, 2)), to="polars", copy=False)


def test_copy_true_results_are_writable(hub: ih.Hub) -> None:
    table = pa.table({"x": [1.0, 2.0], "n": [1, 2]})
    frame = hub.convert(table, to="pandas", copy=True)
    frame.iloc[0, 0] = 5.0
    assert frame.iloc[0, 0] == 5.0 and table.column("x")[0].as_py() == 1.0
    arr = hub.convert(pl.Series([1.0, 2.0]), to="numpy", copy=True)
    arr[0] = 7.0
    assert arr.flags.writeable and arr[0] == 7.0
    series = hub.convert(pa.chunked_array([[1.0, 2.0]]), to="pandas", copy=True)
    series.iloc[0] = 3.0
    assert series.iloc[0] == 3.0


def test_copy_true_keeps_the_container_type(hub: ih.Hub) -> None:
    for source in (pa.array([1, 2]), pa.record_batch({"a": [1]}), pa.chunked_array([[1], [2]])):
        assert type(hub.convert(source, to="pyarrow", copy=True)) is type(source)


def test_copy_true_copies_once_for_tensors(hub: ih.Hub) -> None:
    plan = hub.plan(np.arange(10.0), to="torch", copy=True)
    assert sum(1 for s in plan.steps if s.copies) == 1
    plan = hub.plan(pa.array(np.arange(10.0)), to="torch", copy=True)
    assert sum(1 for s in plan.steps if s.copies) == 1


def test_pandas_nan_is_missing_not_lost(hub: ih.Hub) -> None:
    series = pd.Series(np.random.default_rng(2).standard_normal(1000))
    series[::7] = np.nan
    plan = hub.plan(series, to="numpy")
    assert plan.lossless and plan.zero_copy  # NaN was pandas' missing value all along
    out = hub.convert(series, to="numpy", copy=False, strict=True)
    assert out.ctypes.data == series.to_numpy().ctypes.data
    assert np.array_equal(out, series.to_numpy(), equal_nan=True)
    # into a table library NaN becomes a proper null
    assert hub.convert(series, to="polars").null_count() == series.isna().sum()


def test_numpy_masked_arrays_keep_or_report_their_mask(hub: ih.Hub) -> None:
    masked = np.ma.masked_array([1.0, 2.0, 3.0], mask=[False, True, False])
    assert hub.convert(masked, to="polars").to_list() == [1.0, None, 3.0]
    assert not hub.plan(masked, to="pyarrow").zero_copy  # the mask becomes a bitmap
    with pytest.warns(ih.LossyConversionWarning):
        hub.convert(masked, to="torch")


@pytest.mark.parametrize("rows", [4, 5000])  # below and above the small-array gather
@pytest.mark.parametrize("order", ["C", "F"])
def test_2d_masked_arrays_keep_their_masks_as_nulls_of_their_columns(
    hub: ih.Hub, rows: int, order: str
) -> None:
    # Found by a review: a small C-ordered one lost its mask (its masked value came back
    # as data, strict=True too); a large one into torch failed with pyarrow's error.
    square = np.arange(rows * 2).reshape(rows, 2)
    data = np.asfortranarray(square) if order == "F" else np.ascontiguousarray(square)
    mask = np.zeros(data.shape, bool)
    mask[0, 1] = mask[3, 0] = True
    masked = np.ma.masked_array(data, mask=mask)
    table = hub.convert(masked, to="pyarrow", strict=True)
    assert [c.null_count for c in table.columns] == [1, 1]
    assert table.column(1)[0].as_py() is None and table.column(0)[0].as_py() == 0
    assert hub.convert(masked, to="polars").row(0) == (0, None)
    plan = str(hub.plan(masked, to="pyarrow"))
    assert plan.count("the numpy mask becomes an Arrow validity bitmap") == 2, plan
    # By address: a Fortran-ordered array's columns are its own memory (only the bitmaps
    # are new, as the plan claims); a C-ordered one's are gathered, as it claims too
    start = data.__array_interface__["data"][0]
    inside = [start <= c.chunk(0).buffers()[1].address < start + data.nbytes for c in table.columns]
    gathered = "each column is gathered" in plan
    assert inside == [order == "F"] * 2 and gathered == (order == "C"), plan
    assert hub.plan(masked, to="pyarrow").copied_bytes == (
        2 * -(-rows // 8) if order == "F" else 2 * (rows * 8 - (-rows // 8))
    ), plan
    with pytest.raises(ih.LossyConversionError, match="column 'column_1'"):
        hub.convert(masked, to="torch", strict=True)
    with pytest.warns(ih.LossyConversionWarning, match="nulls become NaN"):
        tensor = hub.convert(masked, to="torch")
    assert tensor[0, 0] == 0 and tensor[0, 1].isnan() and tensor[3, 0].isnan()


def test_copy_true_pandas_categoricals_are_writable(hub: ih.Hub) -> None:
    frame = pd.DataFrame({"c": pd.Categorical(["a", "b", "a"])})
    out = hub.convert(frame, to="pandas", copy=True)
    out.iloc[0, 0] = "b"
    assert out["c"].tolist() == ["b", "b", "a"] and frame["c"].tolist() == ["a", "b", "a"]


def test_numpy_views_of_arrow_memory_are_read_only_as_the_plan_says(hub: ih.Hub) -> None:
    col = pa.chunked_array([[1.0, 2.0, 3.0]])
    assert "writing to it raises ValueError" in str(hub.plan(col, to="numpy"))
    arr = hub.convert(col, to="numpy")
    with pytest.raises(ValueError, match="read-only"):
        arr[0] = 42.0
    writable = hub.convert(col, to="numpy", copy=True)
    writable[0] = 42.0
    assert col.to_pylist() == [1.0, 2.0, 3.0]
    assert "read-only" not in str(hub.plan(col, to="numpy", copy=True))


# -- copy=False forbids copies, not keeping the data (found by a fuzzing review) -------------
def _index_frame() -> pd.DataFrame:
    return pd.DataFrame({"a": [1.0, 2.0]}, index=pd.Index(["x", "y"], name="k"))


@pytest.mark.parametrize(
    ("make", "target"),
    [
        (_index_frame, "polars"),  # the copy-free route dropped the index column 'k'
        (lambda: np.array([1, 2, 3], "datetime64[s]"), "polars"),  # became Int64 ticks
        (lambda: np.ma.masked_array([1.0, 2.0], mask=[False, True]), "pyarrow"),  # the mask
    ],
    ids=["string index", "datetime64[s]", "masked array"],
)
def test_copy_false_refuses_where_the_copy_free_route_loses_what_a_copy_keeps(
    hub: ih.Hub, make: object, target: str
) -> None:
    source = make()  # type: ignore[operator]
    assert not hub.plan(source, to=target).losses  # the default route keeps everything
    with pytest.raises(ih.CopyRequiredError, match="the routes that do not copy lose"):
        hub.convert(source, to=target, copy=False)


def test_copy_false_still_takes_a_lossy_route_where_every_route_loses_as_much(
    hub: ih.Hub,
) -> None:
    masked = np.ma.masked_array([1.0, 2.0], mask=[False, True])
    with pytest.warns(ih.LossyConversionWarning, match="the mask is dropped"):
        out = hub.convert(masked, to="torch", copy=False)  # torch holds no mask at all
    assert out.tolist() == [1.0, 2.0]


def test_copy_true_of_a_masked_array_keeps_its_mask(hub: ih.Hub) -> None:
    # The copy=True plan's numpy deep copy (np.array) gave the values under the mask,
    # which every target then showed, silently.
    masked = np.ma.masked_array([1.0, 2.0, 3.0], mask=[False, True, False])
    copied = hub.convert(masked, to="numpy", copy=True)
    assert isinstance(copied, np.ma.MaskedArray) and copied.mask.tolist() == [0, 1, 0]
    assert hub.shared_bytes(copied, masked) == 0
    for target in ("pyarrow", "polars"):
        out = hub.convert(masked, to=target, copy=True)
        values = out.to_list() if target == "polars" else out.to_pylist()
        assert values == [1.0, None, 3.0], target


@pytest.mark.parametrize("dtype", ["datetime64[ns]", "datetime64[s]", "timedelta64[us]"])
def test_numpy_times_with_nat_go_to_pandas_shared_as_the_plan_says(hub: ih.Hub, dtype: str) -> None:
    # Found by a fuzzing review: the route through Arrow made nulls of NaT, which
    # to_pandas filled (a copy), on a plan that claimed zero-copy, copy=False included.
    values = np.arange(1000).astype(dtype)
    values[5] = np.datetime64("NaT") if dtype.startswith("datetime") else np.timedelta64("NaT")
    plan = hub.plan(values, to="pandas", copy=False)
    out = hub.convert(values, to="pandas", copy=False)
    assert plan.zero_copy and hub.shared_bytes(out, values) == values.nbytes
    assert str(out.dtype) == dtype and out.isna().sum() == 1


def test_pandas_views_of_a_numpy_array_never_write_to_it(hub: ih.Hub) -> None:
    # Found by a review: pandas' own writes copied first (copy-on-write), but a write
    # through Series.array, which copy-on-write does not see, changed the caller's array.
    values = np.arange(4.0)
    series = hub.convert(values, to="pandas")
    assert hub.shared_bytes(series, values) == values.nbytes  # still zero-copy
    with pytest.raises(ValueError, match="read-only"):
        series.array[0] = 77.0
    series.iloc[1] = 55.0
    frame = hub.convert(np.asfortranarray(np.arange(8.0).reshape(4, 2)), to="pandas")
    frame.iloc[0, 0] = -1.0
    with pytest.raises(ValueError, match="read-only"):
        frame["column_1"].array[0] = 9.0
    assert values.tolist() == [0.0, 1.0, 2.0, 3.0] and series.tolist() == [0.0, 55.0, 2.0, 3.0]
    assert values.flags.writeable  # the caller's array itself is left as it was


def test_copy_true_of_numpy_data_into_pandas_takes_the_same_way_with_a_copy(
    hub: ih.Hub,
) -> None:
    # Found by a review: complex numbers reach pandas only by pandas' own wrapping, which
    # refused copy=True, so copy=True turned a working conversion into NoRouteError.
    for values in (np.array([1 + 2j, 3j]), np.arange(4.0), torch.tensor([1 + 1j, 2j])):
        out = hub.convert(values, to="pandas", copy=True)
        assert (
            hub.shared_bytes(out, values) == 0
            and not hub.plan(values, to="pandas", copy=True).zero_copy
        )
        out.array[0] = 7
        assert complex(np.asarray(values)[0]) != 7 and out.iloc[0] == 7
