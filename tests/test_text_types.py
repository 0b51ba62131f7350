"""Text encoded anew for a target that keeps another Arrow text type as it is (polars'
views, pandas' large_string): made that type, which the target then shares (checked by
address), as the plan says; the results are those of before."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import interchange_hub as ih
from tests.helpers import shared_memory


@pytest.mark.parametrize(
    "arr",
    [
        np.array(["a", "bb", "a value of more than twelve", ""]),
        np.array([b"a", b"bb", b"bytes of more than twelve", b""]),
        np.array([["a", "b"], ["cc", "d" * 15]], order="F"),
        np.array([["a", "b"], ["cc", "d" * 15]]),
    ],
    ids=["str", "bytes", "2-D F", "2-D C"],
)
def test_numpy_text_into_polars_is_encoded_once_as_views(hub: ih.Hub, arr: Any) -> None:
    """numpy's fixed-width text into polars (which keeps text as Arrow views, the polars
    adapter's ``arrow_string_type``) is encoded as string_view / binary_view, which polars
    shares, where string / binary would be encoded and then rebuilt as views; the values
    are polars' own, and into any other library the text stays string / binary."""
    plain = hub.convert(arr, to="pyarrow")
    types = {str(t) for t in (plain.schema.types if arr.ndim == 2 else [plain.type])}
    assert types == ({"string"} if arr.dtype.kind == "U" else {"binary"})
    for _ in range(2):  # planned, then the kept route
        out = hub.convert(arr, to="polars")
        expected = pl.from_arrow(plain)
        assert type(out) is type(expected) and out.to_arrow().equals(expected.to_arrow())
    plan = hub.plan(arr, to="polars")
    first, last = plan.steps
    view = "string_view" if arr.dtype.kind == "U" else "binary_view"
    assert {c.dtype for c in first.estimate.out.columns} == {view}
    assert last.zero_copy, plan
    # What the step gives polars is what polars holds (checked by address).
    made = first.edge.run(arr, plan.request.context(first.before, at_source=True))  # type: ignore[union-attr]
    columns = made.columns if arr.ndim == 2 else [made]
    assert {str(c.type) for c in columns} == {view}
    again = hub.convert(made, to="polars")
    inside, total = shared_memory(hub, again, made)
    assert inside == total > 0


def test_numpy_text_into_a_pandas_frame_is_encoded_once_as_large_strings(hub: ih.Hub) -> None:
    """The same for pandas, whose str dtype keeps large_string's buffers (the pandas
    adapter's ``arrow_string_type``): numpy's text is encoded as large_string, which a
    frame shares (checked by address); the frame is the one of before."""
    arr = np.array([["a", "b"], ["cc", "d" * 15], ["", "e"]], order="F")
    plan = hub.plan(arr, to="pandas")
    first, last = plan.steps
    assert {c.dtype for c in first.estimate.out.columns} == {"large_string"}
    assert last.zero_copy, plan
    frame = hub.convert(arr, to="pandas")
    expected = pd.DataFrame({"column_0": ["a", "cc", ""], "column_1": ["b", "d" * 15, "e"]})
    pd.testing.assert_frame_equal(frame, expected)
    made = first.edge.run(arr, plan.request.context(first.before, at_source=True))  # type: ignore[union-attr]
    assert {str(c.type) for c in made.columns} == {"large_string"}
    again = hub.convert(made, to="pandas")
    assert hub.shared_bytes(made, again) > 0


@pytest.mark.parametrize("to", ["polars", "pandas"])
def test_numpy_text_without_columns_keeps_its_rows(hub: ih.Hub, to: str) -> None:
    """A (rows, 0) text array: a table of no columns and its rows, as the plan says (the
    text type asked for changes no column: there is none)."""
    arr = np.empty((3, 0), dtype="<U2")
    plan = hub.plan(arr, to=to)
    assert plan.steps[0].estimate.out.rows == 3
    assert hub.convert(arr, to=to).shape == (3, 0)


@pytest.mark.parametrize("nulls", [False, True])
def test_a_large_string_series_is_shared_by_pandas_str_dtype(hub: ih.Hub, nulls: bool) -> None:
    """A large_string column into a pandas Series: pandas' str dtype (pyarrow's) takes its
    buffers as they are (checked by address), as the plan says, where a types_mapper made
    to_pandas copy them; with pandas' Python string storage, the plan says it copies, and
    it does."""
    values = ["a", None, "a value of more than twelve"] if nulls else ["a", "bb", "c" * 20]
    col = pa.chunked_array([pa.array(values, pa.large_string())])
    for _ in range(2):  # planned, then the kept route
        series = hub.convert(col, to="pandas")
        assert series.dtype == "str" and series.tolist() == col.to_pandas().tolist()
        assert hub.plan(col, to="pandas").steps[-1].zero_copy
        inside, total = shared_memory(hub, series, col)
        assert inside == total > 0
    assert hub.shared_bytes(col, hub.convert(col, to="pandas", copy=True)) == 0
    with pd.option_context("mode.string_storage", "python"):
        fresh = ih.Hub(autoload=False)
        plan = fresh.plan(col, to="pandas")
        assert not plan.steps[-1].zero_copy and "builds its own" in str(plan)
        assert fresh.shared_bytes(col, fresh.convert(col, to="pandas")) == 0


@pytest.mark.parametrize("kind", ["S", "U"])
@pytest.mark.parametrize("target", ["pyarrow", "polars", "pandas", "nanoarrow"])
def test_numpy_text_keeps_a_nul_inside_a_value(kind: str, target: str) -> None:
    # Found by a fuzzing review: pa.array cuts a numpy text value at its first NUL
    # (b"a\x00b" became b"a"), silently; numpy keeps it (only trailing NULs are padding).
    values = [b"a\x00b", b"\x00b", b"ok", b"x\x00"]
    arr = np.array(values if kind == "S" else [v.decode() for v in values])
    expected = arr.tolist()  # (numpy's own values: b"x\x00" is b"x")
    out = ih.convert(arr, to=target)
    back = ih.convert(out, to="pyarrow")
    assert back.to_pylist() == expected
    table = ih.convert(np.stack([arr, arr], axis=1), to="pyarrow")
    assert table.column(0).to_pylist() == expected
