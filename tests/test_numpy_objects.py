"""numpy arrays (and pandas object columns) of Python objects: ints beyond int64, and
objects of several types.

pyarrow infers int64 for Python ints and overflowed on one above 2**63 - 1 (a
``ConversionError`` wrapping "OverflowError: Python int too large to convert to C
long"), so a uint64 column with large values that went through numpy (a list<uint64>,
say, whose values numpy holds as Python ints) did not come back. Now ints that all fit
uint64 are read as uint64 (each place in a nested type on its own), exactly; ints that
fit no 64-bit type are refused with what to do. Objects of several types that no one
Arrow type holds without changing some of them (int and str, str and bytes, a date and
a datetime) are refused with what to do: pyarrow infers no union, and would have turned
a str into bytes, or cut a datetime to its date, silently. Ints beside floats (kept
exactly, or refused by pyarrow) or Decimals are read as pyarrow reads them.
"""

from __future__ import annotations

import datetime as dt
import decimal
import warnings
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import interchange_hub as ih

HUB = ih.Hub(autoload=False)
BIG = 2**64 - 1
TABLE_TARGETS = ["pyarrow", "nanoarrow", "polars", "pandas"]


def objects(*values: Any) -> np.ndarray:
    """A 1-D object array of ``values`` as they are (numpy would nest lists)."""
    out = np.empty(len(values), dtype=object)
    for i, value in enumerate(values):
        out[i] = value
    return out


def quiet(source: Any, to: str, **options: Any) -> Any:
    """``HUB.convert`` where no warning is expected (they are errors)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return HUB.convert(source, to=to, **options)


def as_arrow(result: Any) -> pa.ChunkedArray:
    """The one column of a result of any table library, as pyarrow."""
    if isinstance(result, pl.Series):
        return pa.chunked_array([result.to_arrow()])
    if isinstance(result, pd.Series):
        return pa.chunked_array([pa.Array.from_pandas(result)])
    arr = pa.chunked_array(result) if not isinstance(result, pa.Array) else result
    return arr if isinstance(arr, pa.ChunkedArray) else pa.chunked_array([arr])


# -- ints beyond int64 ---------------------------------------------------------------------
UINT64_CASES: dict[str, tuple[list[Any], pa.DataType]] = {
    "max": ([BIG, 1], pa.uint64()),
    "2**63": ([2**63, 0], pa.uint64()),
    "with None": ([BIG, None, 7], pa.uint64()),
    "list": ([[BIG, 1], None, [3]], pa.list_(pa.uint64())),
    "list of lists": ([[[2**63]], [[1, None]]], pa.list_(pa.list_(pa.uint64()))),
    "struct": (
        [{"a": BIG, "b": -1}, {"a": 1, "b": 2}],
        pa.struct([("a", pa.uint64()), ("b", pa.int64())]),  # each field on its own
    ),
    "struct of list": ([{"l": [BIG]}, None], pa.struct([("l", pa.list_(pa.uint64()))])),
    "map": ([[("k", BIG)], [("j", 1)], None], pa.map_(pa.string(), pa.uint64())),
}


@pytest.mark.parametrize("case", list(UINT64_CASES))
def test_ints_above_int64_come_back_as_exact_uint64(case: str) -> None:
    values, typ = UINT64_CASES[case]
    arr = objects(*values)
    before = arr.tolist()
    column = quiet(arr, "pyarrow", strict=True)  # nothing is lost
    assert column.type == typ
    assert column.to_pylist() == values
    if case == "with None":  # a uint64 array with a null: numpy's float64, as documented
        with pytest.warns(ih.LossyConversionWarning, match="uint64 with nulls -> float64"):
            HUB.convert(column, to="numpy")
        back = objects(*values)
    else:  # objects again (uint64 itself: a uint64 array)
        back = quiet(column, "numpy")
        assert back.dtype == (np.uint64 if typ == pa.uint64() else object)
    assert back.tolist() == values
    assert quiet(back, "pyarrow").type == typ
    assert arr.tolist() == before  # the source is left as it was


@pytest.mark.parametrize("target", TABLE_TARGETS)
def test_ints_above_int64_reach_every_table_library(target: str) -> None:
    out = quiet(objects(BIG, None, 2**63, 0), target)
    column = as_arrow(out)
    assert column.type == pa.uint64()
    assert column.to_pylist() == [BIG, None, 2**63, 0]


def test_a_2d_object_array_types_each_column_on_its_own() -> None:
    arr = np.array([[BIG, 1, "a"], [2, -3, "b"]], dtype=object)
    table = quiet(arr, "pyarrow")
    assert table.schema.types == [pa.uint64(), pa.int64(), pa.string()]
    assert table.to_pydict() == {"column_0": [BIG, 2], "column_1": [1, -3], "column_2": ["a", "b"]}
    frame = quiet(arr, "polars")
    assert frame.dtypes == [pl.UInt64, pl.Int64, pl.String]


def test_uint64_objects_reach_torch_through_pyarrow_and_back() -> None:
    import torch

    arr = objects(BIG, 1, 2**63)
    with pytest.raises(ih.NoRouteError, match=r"arr\.astype\('uint64'\)"):
        HUB.plan(arr, to="torch")  # Python objects: their type shows only when read
    column = quiet(arr, "pyarrow")
    tensor = quiet(column, "torch", copy=True)
    assert tensor.dtype == torch.uint64 and tensor.tolist() == [BIG, 1, 2**63]
    assert quiet(tensor, "numpy").tolist() == arr.tolist()
    assert quiet(arr.astype(np.uint64), "torch").tolist() == [BIG, 1, 2**63]  # as told


def test_a_uint64_column_through_numpy_objects_keeps_its_large_values() -> None:
    """What failed before: a list<uint64> column whose values numpy holds as Python ints."""
    column = pa.array([[BIG, 0], None, [2**63]], pa.list_(pa.uint64()))
    out = quiet(column, "numpy")
    assert out.dtype == object
    back = quiet(out, "pyarrow")
    assert back.type == column.type and back.to_pylist() == column.to_pylist()
    table = pa.table({"u": column, "i": pa.array([[-1], [1], None], pa.list_(pa.int64()))})
    frame = quiet(table, "pandas")  # pandas holds the lists as objects too, in its own way
    assert quiet(frame, "pyarrow").column("u").to_pylist() == column.to_pylist()


@pytest.mark.parametrize(
    ("values", "why"),
    [
        ([-1, BIG], r"-1 needs int64 and 18446744073709551615 uint64"),
        ([2**64, 1], r"18446744073709551616 is beyond 64 bits"),
        ([-(2**63) - 1, 1], r"-9223372036854775809 is beyond 64 bits"),
        ([[1, -1], [BIG]], r"-1 needs int64"),
        ([{"a": 2**70}], r"is beyond 64 bits"),
    ],
    ids=["negative and uint64", "2**64", "below int64", "in a list", "in a struct"],
)
@pytest.mark.parametrize("target", TABLE_TARGETS)
def test_ints_no_64_bit_type_holds_are_refused_with_what_to_do(
    values: list[Any], why: str, target: str
) -> None:
    with pytest.raises(ih.ConversionError, match=why) as info:
        HUB.convert(objects(*values), to=target)
    assert "decimal.Decimal" in str(info.value)  # what to do
    assert "OverflowError" not in str(info.value)


# -- objects of several types --------------------------------------------------------------
MIXED: dict[str, tuple[list[Any], str]] = {
    "int and str": ([1, "a", None], "int and str"),
    "str and int": (["a", 1], "int and str"),
    "float and str": ([1.5, "x"], "float and str"),
    "NaN and str": ([float("nan"), "x"], "float and str"),
    "bool and int": ([True, 1], "bool and int"),
    # pyarrow would make the str its UTF-8 bytes, silently
    "str and bytes": (["a", b"b"], "bytes and str"),
    # pyarrow would cut the datetime to its date (12:30 lost), silently
    "date and datetime": ([dt.date(2020, 1, 1), dt.datetime(2020, 1, 1, 12, 30)], "date and"),
    "int and list": ([1, [1, 2]], "int and list"),
    "dict and str": ([{"a": 1}, "a"], "dict and str"),
    "numpy int and str": ([np.int64(3), "a"], "int and str"),
}


@pytest.mark.parametrize("case", list(MIXED))
@pytest.mark.parametrize("target", TABLE_TARGETS)
def test_objects_of_several_types_are_refused_with_what_to_do(case: str, target: str) -> None:
    values, kinds = MIXED[case]
    arr = objects(*values)
    with pytest.raises(ih.ConversionError, match=f"several types \\({kinds}") as info:
        HUB.convert(arr, to=target)
    assert "the array holds" in str(info.value)
    assert "convert them to one type first" in str(info.value)
    assert not isinstance(info.value, ih.LossyConversionError)
    assert arr.tolist() == values or case == "NaN and str"  # (NaN != NaN)


def test_a_2d_object_array_names_the_column_of_several_types() -> None:
    arr = np.array([[1, "a"], [2, 3]], dtype=object)
    with pytest.raises(ih.ConversionError, match=r"column 'column_1' holds .*int and str"):
        HUB.convert(arr, to="pyarrow")


@pytest.mark.parametrize(
    "values",
    [[[1, "a"], [2]], [{"a": 1}, {"a": "x"}], [[("k", 1)], [("k", "v")]]],
    ids=["list items", "struct field", "map items"],
)
def test_several_types_inside_nested_objects_are_refused_with_what_to_do(values: Any) -> None:
    with pytest.raises(ih.ConversionError, match="no one Arrow type holds") as info:
        HUB.convert(objects(*values), to="pyarrow")
    assert "convert them to one type first" in str(info.value)
    assert "step 1" not in str(info.value)  # the hub's message, not pyarrow's raw error


@pytest.mark.parametrize(
    ("values", "typ", "back"),
    [
        ([1, 2.5, None], pa.float64(), [1.0, 2.5, None]),
        ([2**53, 0.5], pa.float64(), [2.0**53, 0.5]),
        (
            [1, decimal.Decimal("1.5")],
            pa.decimal128(38, 1),
            [decimal.Decimal("1.0"), decimal.Decimal("1.5")],
        ),
        # (pd.Timestamp keeps its nanoseconds: see test_fidelity)
        ([dt.datetime(2020, 1, 1), pd.Timestamp(5)], pa.timestamp("ns"), None),
        ([np.int64(1), 2, None], pa.int64(), [1, 2, None]),
        (["a", np.str_("b")], pa.string(), ["a", "b"]),
        ([[1, 2], (3,)], pa.list_(pa.int64()), [[1, 2], [3]]),
    ],
    ids=[
        "int and float",
        "2**53 and float",
        "int and Decimal",
        "datetime and Timestamp",
        "numpy ints",
        "numpy str",
        "list and tuple",
    ],
)
def test_ints_beside_floats_or_decimals_keep_their_values(
    values: list[Any], typ: pa.DataType, back: list[Any] | None
) -> None:
    column = quiet(objects(*values), "pyarrow")
    assert column.type == typ
    if back is not None:
        assert column.to_pylist() == back


def test_an_int_a_double_cannot_hold_beside_floats_is_refused() -> None:
    with pytest.raises(ih.ConversionError, match="exactly representable"):
        HUB.convert(objects(2**53 + 1, 0.5), to="pyarrow")


def test_objects_of_one_type_are_unchanged() -> None:
    """The common cases, as before: one kind of value, with None among them."""
    cases: dict[str, tuple[list[Any], pa.DataType]] = {
        "ints": ([1, None, -(2**63), 2**63 - 1], pa.int64()),
        "strs": (["a", None], pa.string()),
        "bytes": ([b"a", None], pa.binary()),
        "dates": ([dt.date(2020, 1, 1), None], pa.date32()),
        "Nones": ([None, None], pa.null()),
        "empty": ([], pa.null()),
        "bools": ([True, None], pa.bool_()),
    }
    for values, typ in cases.values():
        column = quiet(objects(*values), "pyarrow")
        assert column.type == typ and column.to_pylist() == values


# -- pandas object columns of such ints ----------------------------------------------------
@pytest.mark.parametrize("target", ["pyarrow", "nanoarrow", "polars"])
@pytest.mark.parametrize("shape", ["series", "frame"])
def test_pandas_object_ints_above_int64_come_back_as_exact_uint64(shape: str, target: str) -> None:
    values = [BIG, None, 2**63, 0]
    series = pd.Series(values, dtype=object, name="v")
    source: Any = series if shape == "series" else pd.DataFrame({"k": [1, 2, 3, 4], "v": series})
    out = quiet(source, target, strict=True)
    if shape == "frame":
        out = HUB.convert(out, to="pyarrow").column("v")
    column = as_arrow(out)
    assert column.type == pa.uint64()
    assert column.to_pylist() == values
    assert series.tolist() == values  # the source is left as it was


@pytest.mark.parametrize(
    ("values", "found"),
    [
        ([2**64, 1], "is beyond 64 bits"),
        ([-1, 2**63], "-1 needs int64 and 9223372036854775808 uint64"),
    ],
)
def test_pandas_object_ints_no_64_bit_type_holds_are_refused_with_what_to_do(
    values: list[int], found: str
) -> None:
    source = pd.DataFrame({"v": pd.Series(values, dtype=object)})
    with pytest.raises(ih.ConversionError, match=found) as caught:
        HUB.convert(source, to="pyarrow")
    assert "column 'v'" in str(caught.value) and "decimal.Decimal" in str(caught.value)


@pytest.mark.parametrize(("values", "dtype"), [([BIG, 2**63, 0], "uint64"), ([1, -2], "int64")])
def test_the_plan_of_pandas_object_ints_names_the_type_they_become(
    values: list[int], dtype: str
) -> None:
    source = pd.DataFrame({"v": pd.Series(values, dtype=object)})
    plan = HUB.plan(source, to="numpy")
    assert [c.dtype for c in plan.steps[-1].estimate.out.columns] == [dtype]
    assert str(quiet(source, "numpy").dtype) == dtype


@pytest.mark.parametrize(
    ("values", "dtype"),
    [
        ([BIG, None, 2**63, 0], "uint64"),
        ([None, 1, -2], "int64"),
        ([2**63, float("nan")], "uint64"),
    ],
)
def test_the_plan_of_pandas_object_ints_with_missing_values_names_the_type_they_become(
    values: list[Any], dtype: str
) -> None:
    """None or NaN among the ints: the plan reads the other values (numpy's cast refuses
    the missing ones), and names what the export gives."""
    source = pd.DataFrame({"v": pd.Series(values, dtype=object)})
    plan = HUB.plan(source, to="pyarrow")
    assert [c.dtype for c in plan.steps[0].estimate.out.columns] == [dtype]
    out = quiet(source, "pyarrow")
    assert str(out.column("v").type) == dtype
    assert out.column("v").null_count == 1


@pytest.mark.parametrize("shape", ["array", "frame"])
def test_numpy_integer_scalars_among_wide_ints_are_read_as_the_ints_they_hold(shape: str) -> None:
    """An object array of np.uint64 scalars beyond int64 beside Python ints failed with
    OverflowError: the wide-int reader took only Python ints."""
    values = objects(np.uint64(2**63 + 5), 3, None)
    source: Any = values if shape == "array" else pd.DataFrame({"v": pd.Series(values)})
    out = quiet(source, "pyarrow")
    column = as_arrow(out if shape == "array" else out.column("v"))
    assert column.type == pa.uint64()
    assert column.to_pylist() == [2**63 + 5, 3, None]
    mixed = objects(np.int64(-3), 2**63)
    bad: Any = mixed if shape == "array" else pd.DataFrame({"v": pd.Series(mixed)})
    with pytest.raises(ih.ConversionError, match="-3 needs int64 and 9223372036854775808 uint64"):
        HUB.convert(bad, to="pyarrow")


def test_the_plan_of_numpy_signed_scalars_beside_wide_ints_names_what_the_export_does() -> None:
    """numpy's uint64 cast wraps np.int64(-3) to 2**64 - 3: the plan said uint64 where
    the export refuses the column."""
    source = pd.DataFrame({"v": pd.Series(objects(np.int64(-3), 2**63, None))})
    plan = HUB.plan(source, to="pyarrow")
    assert [c.dtype for c in plan.steps[0].estimate.out.columns] == ["int64"]
    with pytest.raises(ih.ConversionError, match="-3 needs int64"):
        HUB.convert(source, to="pyarrow")
