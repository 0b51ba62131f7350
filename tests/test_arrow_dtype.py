"""dtype="arrow": pandas results of pd.ArrowDtype columns, zero-copy and lossless."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import interchange_hub as ih
from tests.helpers import shared_memory


def _arrow_backed(frame: pd.DataFrame) -> bool:
    return all(isinstance(t, pd.ArrowDtype) for t in frame.dtypes)


def test_polars_with_nulls_shares_every_buffer(hub: ih.Hub) -> None:
    # The cells where the benchmark's fastest direct call,
    # to_pandas(use_pyarrow_extension_array=True), shares memory the default result copies.
    df = pl.DataFrame({"i": [1, None, 3], "f": [0.5, None, float("nan")], "b": [True, None, False]})
    plan = hub.plan(df, to="pandas", dtype="arrow")
    assert plan.zero_copy and plan.lossless, plan
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing lossy: NaN and null stay apart
        out = hub.convert(df, to="pandas", dtype="arrow")
    assert _arrow_backed(out)
    pd.testing.assert_frame_equal(out, df.to_pandas(use_pyarrow_extension_array=True))
    inside, total = shared_memory(hub, out, df)
    assert total and inside == total
    assert out["i"].dtype == pd.ArrowDtype(pa.int64())  # not float64, not Int64
    assert out["f"].isna().tolist() == [False, True, False]  # NaN is a value, null missing


def test_every_arrow_type_is_kept_by_address(hub: ih.Hub) -> None:
    table = pa.table(
        {
            "i": pa.array([1, None, 3]),
            "s": pa.array(["a", None, "c"]),
            "d": pa.array(["x", "y", "x"]).dictionary_encode(),
            "ts": pa.array([1, 2, None], pa.timestamp("ns", "UTC")),
            "min": pa.array([-(2**63), 0, None], pa.timestamp("us")),  # NaT in numpy
            "dec": pa.array([1, 2, None], pa.decimal128(5, 2)),
            "st": pa.array([{"x": 1}, None, {"x": 2}]),
            "date": pa.array([1, 2, None], pa.date32()),
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # INT64_MIN is no NaT here: nothing to warn
        out = hub.convert(table, to="pandas", dtype="arrow")
    assert hub.plan(table, to="pandas", dtype="arrow").zero_copy
    pd.testing.assert_frame_equal(out, table.to_pandas(types_mapper=pd.ArrowDtype))
    for name in table.column_names:
        kept = out[name].array._pa_array  # the Arrow data pandas holds
        assert kept.type == table.column(name).type
        ours = [b.address for b in kept.chunks[0].buffers() if b is not None]
        theirs = [b.address for b in table.column(name).chunks[0].buffers() if b is not None]
        assert ours == theirs, name


def test_layouts_pandas_cannot_hold_are_planned_copies(hub: ih.Hub) -> None:
    table = pa.table(
        {
            "sv": pa.array(["x", None, "z"], pa.string_view()),
            "lv": pa.array([[1], [2, 3], None], pa.list_view(pa.int64())),
            "n": pa.array([1, 2, 3]),
        }
    )
    plan = hub.plan(table, to="pandas", dtype="arrow")
    assert {c.column for c in plan.copies} == {"sv", "lv"}
    out = hub.convert(table, to="pandas", dtype="arrow")
    assert str(out["sv"].dtype) == "large_string[pyarrow]"
    assert str(out["lv"].dtype) == "list<item: int64>[pyarrow]"
    assert repr(out) and out.iloc[1:].shape == (2, 3)  # pandas can read and filter them
    assert out["lv"].tolist()[1] == [2, 3]
    with pytest.raises(ih.CopyRequiredError, match="large_string"):
        hub.convert(table, to="pandas", dtype="arrow", copy=False)


def test_a_column_becomes_an_arrow_backed_series(hub: ih.Hub) -> None:
    col = pa.chunked_array([[1, None], [3]])
    out = hub.convert(col, to=pd.Series, dtype="arrow")
    assert isinstance(out, pd.Series) and out.dtype == pd.ArrowDtype(pa.int64())
    assert out.isna().tolist() == [False, True, False]
    assert hub.plan(col, to=pd.Series, dtype="arrow").zero_copy


def test_copy_true_shares_nothing(hub: ih.Hub) -> None:
    table = pa.table({"i": pa.array([1, None, 3]), "s": ["a", "b", None]})
    out = hub.convert(table, to="pandas", dtype="arrow", copy=True)
    assert _arrow_backed(out)
    assert shared_memory(hub, out, table)[0] == 0
    pd.testing.assert_frame_equal(out, table.to_pandas(types_mapper=pd.ArrowDtype))


def test_a_pandas_frame_keeps_its_index_and_becomes_arrow_backed(hub: ih.Hub) -> None:
    frame = pd.DataFrame({"a": [1, 2], "b": [1.5, None]}, index=pd.Index([5, 6], name="k"))
    out = hub.convert(frame, to="pandas", dtype="arrow")
    assert _arrow_backed(out)
    assert out.index.tolist() == [5, 6] and out.index.name == "k"
    assert out["b"].isna().tolist() == [False, True]
    again = hub.convert(out, to="pandas", dtype="arrow")  # already Arrow-backed
    pd.testing.assert_frame_equal(again, out)
    assert shared_memory(hub, again, out)[0] == shared_memory(hub, again, out)[1] > 0


def test_the_result_can_be_written_without_changing_the_source(hub: ih.Hub) -> None:
    table = pa.table({"i": [1, 2, 3]})
    out = hub.convert(table, to="pandas", dtype="arrow")
    out.loc[0, "i"] = 99
    assert table.column("i").to_pylist() == [1, 2, 3]


@pytest.mark.parametrize("target", ["numpy", "polars", "pyarrow", "torch"])
def test_targets_without_a_choice_of_backends_refuse_it(hub: ih.Hub, target: str) -> None:
    with pytest.raises(ih.InvalidOptionError, match=f"{target} has no such choice"):
        hub.convert(pa.table({"a": [1]}), to=target, dtype="arrow")


def test_numpy_data_becomes_arrow_backed_columns(hub: ih.Hub) -> None:
    out = hub.convert(np.arange(6.0).reshape(3, 2), to="pandas", dtype="arrow")
    assert _arrow_backed(out) and out.shape == (3, 2)


def test_the_route_is_cached_apart_from_the_default(hub: ih.Hub) -> None:
    df = pl.DataFrame({"i": [1, None]})
    for _ in range(2):  # the second call of each takes its cached route
        assert _arrow_backed(hub.convert(df, to="pandas", dtype="arrow"))
        assert str(hub.convert(df, to="pandas").dtypes["i"]) == "Int64"
