"""Arrow dictionaries pandas cannot take as they are: values with nulls, NaN or repeats,
more distinct values than the index type's width leaves room for once re-encoded, and
nested values (structs, lists, fixed-size lists, list views). Each comes back with the
same values, the type the type mapping says, and NaN among the values is warned (strict:
refused). Also the type mapping's patterns on deeply nested types, checked against what
the adapters really give."""

from __future__ import annotations

import math
import warnings
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

import interchange_hub as ih
from interchange_hub import arrowkit
from interchange_hub._tools import typemap

HUB = ih.Hub(autoload=False)


def plain(values: list[Any]) -> list[Any]:
    return ["NaN" if isinstance(v, float) and math.isnan(v) else v for v in values]


def quiet(source: Any, to: str) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return HUB.convert(source, to=to)


def dictionary(indices: list[Any], values: pa.Array, index: pa.DataType = pa.int32()) -> Any:
    return pa.DictionaryArray.from_arrays(pa.array(indices, index), values)


CASES = {
    "null value": dictionary([0, 1, None, 2, 1], pa.array(["a", None, "b"])),
    "repeated value": dictionary([0, 1, 2, 3], pa.array(["a", "b", "a", "c"])),
    "null and repeated": dictionary([0, 1, 2, 3, None], pa.array([3, None, 3, 4])),
    # 200 values behind int8 indices, one null: re-encoded, 199 distinct (int32 indices)
    "more than int8 holds": dictionary(
        [0, 1, 127, None], pa.array([None, *(str(i) for i in range(199))]), pa.int8()
    ),
    "ordered, null value": pa.DictionaryArray.from_arrays(
        pa.array([2, 0, 1], pa.int8()), pa.array(["lo", None, "hi"]), ordered=True
    ),
    "struct values": dictionary(
        [0, 1, None, 1],
        pa.StructArray.from_arrays([pa.array([1, None]), pa.array(["x", "y"])], ["i", "s"]),
    ),
    "fixed-size list values": dictionary(
        [0, 1, 0], pa.FixedSizeListArray.from_arrays(pa.array([1, 2, 3, None]), 2)
    ),
    "list view values": dictionary(
        [0, 1, 0],
        pa.ListViewArray.from_arrays(
            pa.array([2, 0], pa.int32()), pa.array([2, 1], pa.int32()), pa.array([1, 2, 3, 4])
        ),
    ),
}


@pytest.mark.parametrize("shape", ["column", "table", "chunked"])
@pytest.mark.parametrize("case", list(CASES))
def test_dictionaries_pandas_cannot_hold_as_they_are_keep_their_values(
    case: str, shape: str
) -> None:
    arr = CASES[case]
    source: Any = arr
    if shape == "table":
        source = pa.table({"d": arr})
    elif shape == "chunked":  # two chunks, each with a dictionary of its own
        source = pa.chunked_array([arr, arr.slice(1)])
    out = quiet(source, "pandas")
    back = HUB.convert(out, to="pyarrow")
    col = back.column(0) if isinstance(back, pa.Table) else back
    want = source.column(0) if isinstance(source, pa.Table) else source
    assert plain(col.to_pylist()) == plain(want.to_pylist())
    want_type = typemap.visit("pandas", str(arr.type))
    if case == "more than int8 holds":  # the rule's note: int8 codes up to 127 categories
        want_type = want_type.replace("indices=int8", "indices=int16")
    assert str(col.type) == want_type
    if pa.types.is_dictionary(col.type):
        series = out.iloc[:, 0] if isinstance(out, pd.DataFrame) else out
        assert series.dtype == "category" and series.cat.ordered == arr.type.ordered


@pytest.mark.parametrize("shape", ["column", "table"])
def test_nan_among_a_dictionarys_values_is_warned_and_refused_under_strict(shape: str) -> None:
    arr = dictionary([0, 1, 2, None, 0], pa.array([1.0, float("nan"), None]))
    source: Any = arr if shape == "column" else pa.table({"d": arr})
    with pytest.warns(ih.LossyConversionWarning, match="categories cannot hold NaN"):
        out = HUB.convert(source, to="pandas")
    series = out if shape == "column" else out["d"]
    assert series.isna().tolist() == [False, True, True, True, False]
    with pytest.raises(ih.LossyConversionError, match="NaN"):
        HUB.convert(source, to="pandas", strict=True)


RUNS_DEEP = pa.RunEndEncodedArray.from_arrays(
    pa.array([1, 3], pa.int32()),
    pa.array(
        [{"a": [[1, 2], [3]]}, {"a": None}], pa.struct([("a", pa.list_(pa.list_(pa.int64())))])
    ),
)
TWO_DICTIONARIES = pa.StructArray.from_arrays(
    [
        dictionary([0, 1, 0], pa.array([[1], [2, 3]], pa.list_(pa.int64()))),
        dictionary([1, 0, 1], pa.array([[0.5], []], pa.list_(pa.float64())), pa.int8()),
    ],
    ["a", "b"],
)


# (pandas holds a struct of dictionaries as Python dicts, which pyarrow infers back)
@pytest.mark.parametrize(
    ("arr", "library"),
    [(RUNS_DEEP, "pandas"), (RUNS_DEEP, "polars"), (TWO_DICTIONARIES, "polars")],
    ids=["runs-deep-pandas", "runs-deep-polars", "two-dicts-polars"],
)
def test_the_type_mapping_reads_deeply_nested_types_as_the_adapters_make_them(
    arr: Any, library: str
) -> None:
    out = quiet(pa.table({"c": arr}), library)
    back = HUB.convert(out, to="pyarrow").column(0)
    assert str(back.type) == typemap.visit(library, str(arr.type))
    assert back.to_pylist() == arr.to_pylist()


@pytest.mark.parametrize("nulls", [False, True], ids=["no nulls", "a null"])
@pytest.mark.parametrize("shape", ["Array", "ChunkedArray", "Table", "Table of two"])
def test_categories_of_zoned_timestamps_keep_their_zone(nulls: bool, shape: str) -> None:
    # Found by a fuzzing review: pyarrow's to_pandas gives a dictionary of zoned
    # timestamps naive UTC categories (pyarrow 26), and the hub passed them on silently:
    # the zone was lost, and the round trip came back without it.
    indices = pa.array([0, 1, None] if nulls else [0, 1, 1], pa.int32())
    values = pa.array([0, 10**18], pa.timestamp("ns", "Asia/Tokyo"))
    d = pa.DictionaryArray.from_arrays(indices, values)
    source = {
        "Array": d,
        "ChunkedArray": pa.chunked_array([d]),
        "Table": pa.table({"d": d}),
        "Table of two": pa.table({"d": d, "x": [1, 2, 3]}),
    }[shape]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing lossy, and no pandas deprecation on the way back
        for _ in range(2):  # planned, then the kept route
            out = HUB.convert(source, to="pandas")
            series = out if isinstance(out, pd.Series) else out["d"]
            assert str(series.cat.categories.dtype) == "datetime64[ns, Asia/Tokyo]"
            assert series.isna().tolist() == [False, False, nulls]
            back = HUB.convert(out, to="pyarrow")
        typ = back.type if hasattr(back, "type") else back.schema.field("d").type
        assert typ.value_type == values.type


@pytest.mark.parametrize(
    "column",
    [
        pa.array([None, None], pa.string()),
        pa.array([None], pa.large_string()),
        pa.array([None, None], pa.string_view()),
        pa.chunked_array([[None], [None]], pa.string()),
        pa.array([], pa.string()),
        pa.nulls(2, pa.dictionary(pa.int32(), pa.string())),
    ],
    ids=["string", "large_string", "string_view", "two chunks", "empty", "dictionary"],
)
def test_an_all_null_string_column_stays_text_in_a_series(column: Any) -> None:
    # Found by a fuzzing review: given a types_mapper, pyarrow's to_pandas makes an
    # all-null string column objects (without one, and in a frame: pandas' str), and the
    # round trip came back as Arrow's null type.
    series = HUB.convert(column, to="pandas")
    back = HUB.convert(series, to="pyarrow")
    frame = HUB.convert(pa.table({"c": column}), to="pandas")
    if pa.types.is_dictionary(column.type):
        assert pa.types.is_large_string(back.type.value_type)
    else:
        assert series.dtype == frame["c"].dtype == "str"
        assert pa.types.is_large_string(back.type)


@pytest.mark.parametrize("kind", ["period", "period with NaT", "interval"])
@pytest.mark.parametrize("through", ["pyarrow", "polars", "nanoarrow", "pandas copy=True"])
def test_pandas_period_and_interval_come_back_as_themselves(kind: str, through: str) -> None:
    # Found by a fuzzing review: pandas makes Arrow extension types of them
    # (pandas.period, pandas.interval), which the hub wrapped in pd.ArrowDtype, so any
    # trip out of pandas and back gave their storage's integers and dicts, silently;
    # pandas' own Table.to_pandas gives them back.
    periods = pd.Series(pd.period_range("2020-01", periods=3, freq="M"), name="p")
    source = {
        "period": periods,
        "period with NaT": periods.where(periods.index != 1),
        "interval": pd.Series(pd.interval_range(0, 3), name="i"),
    }[kind]
    for frame in (False, True):
        data = source.to_frame() if frame else source
        if through == "pandas copy=True":
            back = HUB.convert(data, to="pandas", copy=True)
        else:
            back = HUB.convert(HUB.convert(data, to=through), to="pandas")
        assert back.equals(data), (kind, through, frame)
    table = pa.table({"c": HUB.convert(source, to="pyarrow"), "x": [1, 2, 3]})
    assert not HUB.plan(table, to="pandas").zero_copy  # pandas makes its own arrays
    with pytest.raises(ih.CopyRequiredError):
        HUB.convert(table, to="pandas", copy=False)


def test_a_categorical_is_described_as_the_dictionary_pyarrow_makes_of_it() -> None:
    # Found by a review: every Categorical was described as a dictionary of large_string
    # with int8 indices, unordered, whatever it held: a plugin target planned and warned
    # for that type (a zone replaced, nanoseconds cut, an ordered flag dropped: unsaid).
    hub = ih.Hub(autoload=False)
    columns = {
        "text": pd.Categorical(["a", "b", None]),
        "ordered": pd.Categorical(["a", "b", "a"], ordered=True),
        "durations": pd.Categorical(pd.to_timedelta([1, 1500, None], unit="ns")),
        "zoned": pd.Categorical(pd.to_datetime(["2020-01-01"] * 3).tz_localize("Asia/Tokyo")),
        "ints": pd.Categorical([1, 2, 3]),
        "wide": pd.Categorical(
            [str(i) for i in range(300)][:3], categories=[str(i) for i in range(300)]
        ),
    }
    frame = pd.DataFrame(columns)
    described = {c.name: c.dtype for c in hub.describe(frame).columns}
    assert described == {n: arrowkit.dtype_name(pa.array(frame[n]).type) for n in columns}
    assert "ordered=1" in described["ordered"] and "indices=int16" in described["wide"]
    assert "tz=Asia/Tokyo" in described["zoned"] and "duration[ns]" in described["durations"]
    assert hub.describe(frame["zoned"]).columns[0].dtype == described["zoned"]  # a Series too


def test_periods_and_intervals_are_described_as_pandas_extension_types() -> None:
    # (they were "py:objects": a plugin target could not see what it would drop)
    hub = ih.Hub(autoload=False)
    frame = pd.DataFrame(
        {"p": pd.period_range("2020-01", periods=2, freq="M"), "i": pd.interval_range(0, 2)}
    )
    described = {c.name: c.dtype for c in hub.describe(frame).columns}
    assert described == {
        "p": "extension<pandas.period<ArrowPeriodType>>",
        "i": "extension<pandas.interval<ArrowIntervalType>>",
    }


def test_ordered_categories_into_polars_are_warned() -> None:
    # polars' Categorical keeps no order (it sorts by the strings): pl.from_pandas and
    # pl.from_arrow drop an ordered flag silently; the hub warned of nothing either.
    import polars as pl

    ordered = pd.Categorical(["lo", "hi", "lo"], categories=["lo", "hi"], ordered=True)
    frame = pd.DataFrame({"x": [1.0, 2.0, 3.0], "c": ordered})
    table = pa.table({"c": pa.array(ordered)})
    assert table.schema.field("c").type.ordered
    for source in (frame, frame["c"], table, table["c"]):  # (a ChunkedArray has no name)
        named = "column 'c'" if not isinstance(source, pa.ChunkedArray) else "the data"
        with pytest.warns(ih.LossyConversionWarning, match=f"{named}: .*ordered=1.*no ordered"):
            result = HUB.convert(source, to="polars")
        column = result if isinstance(result, pl.Series) else result["c"]
        assert column.dtype == pl.Categorical and column.to_list() == ["lo", "hi", "lo"]
        with pytest.raises(ih.LossyConversionError, match="pl.Enum"):
            HUB.convert(source, to="polars", strict=True)
    assert "LOSSY column 'c'" in str(HUB.plan(frame, to="polars"))
    unordered = pd.DataFrame({"c": pd.Categorical(["lo", "hi", "lo"])})
    assert quiet(unordered, "polars")["c"].to_list() == ["lo", "hi", "lo"]
    enum = pl.DataFrame({"c": ["lo", "hi"]}, schema={"c": pl.Enum(["lo", "hi"])})
    assert quiet(HUB.convert(enum, to="pyarrow"), "polars").dtypes == [pl.Enum(["lo", "hi"])]


def test_an_enum_marked_in_field_metadata_is_keyed_apart_from_a_plain_ordered_dictionary() -> None:
    # polars exports an Enum as an ordered dictionary marked in its field's metadata (which
    # a schema's == and hash leave out): the marked table comes back an Enum, no warning;
    # the same table unmarked is warned, whichever of the two was converted first
    import polars as pl

    enum = pl.DataFrame({"c": ["lo", "hi", "lo"]}, schema={"c": pl.Enum(["lo", "hi"])})
    marked = enum.to_arrow()
    plain = pa.Table.from_arrays(
        marked.columns, schema=pa.schema([marked.schema.field(0).remove_metadata()])
    )
    assert marked.schema == plain.schema and marked.schema.field(0).metadata
    for order in ((marked, plain), (plain, marked)):
        hub = ih.Hub(autoload=False)
        for table in order * 2:
            if table is marked:
                with warnings.catch_warnings():
                    warnings.simplefilter("error")
                    assert hub.convert(table, to="polars").dtypes == [pl.Enum(["lo", "hi"])]
            else:
                with pytest.warns(ih.LossyConversionWarning, match="no ordered flag"):
                    assert hub.convert(table, to="polars").dtypes == [pl.Categorical]


@pytest.mark.parametrize("dtype", [None, "arrow"])
def test_a_categorical_index_comes_back_from_arrow_where_its_column_stood(
    dtype: str | None,
) -> None:
    # A review found a table of a frame with a CategoricalIndex refused into pandas
    # (IndexError): the columns' places counted the index level, a dictionary column too.
    index = pd.CategoricalIndex(["b", "a", "b"], name="k")
    frame = pd.DataFrame(
        {"c": pd.Categorical(["x", "y", "x"]), "v": pd.array([1, None, 3], dtype="Int64")},
        index=index,
    )
    table = pa.Table.from_pandas(frame)
    for layout in (table, table.select(["k", "c", "v"])):  # the index level first, too
        back = HUB.convert(layout, to="pandas", dtype=dtype)
        assert list(back.columns) == ["c", "v"] and back.index.name == "k"
        assert back.index.tolist() == ["b", "a", "b"]
        if dtype is None:
            assert back.equals(frame) and back.index.dtype == index.dtype
        else:
            assert back["v"].tolist()[::2] == [1, 3] and back["c"].tolist() == ["x", "y", "x"]
    assert HUB.convert(HUB.convert(frame[["v"]], to="nanoarrow"), to="pandas").equals(frame[["v"]])
