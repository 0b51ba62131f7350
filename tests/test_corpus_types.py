"""The corpus itself, and the types it adds (unions, the fixed-shape tensor) or cannot add
(the month and day-time intervals, which pyarrow 26 holds but cannot hand out)."""

from __future__ import annotations

import importlib.util
import warnings
from typing import Any

import nanoarrow as na
import numpy as np
import pyarrow as pa
import pytest

import interchange_hub as ih
from interchange_hub._tools.corpus import VARIANTS, corpus, variants

CORPUS = corpus()


@pytest.mark.parametrize("name", list(CORPUS))
def test_every_type_comes_in_every_variant(name: str) -> None:
    got = variants(name)
    assert set(VARIANTS) <= set(got) <= {*VARIANTS, "extremes"}
    typ = CORPUS[name].type
    assert all(column.type == typ for column in got.values())
    assert len(got["empty"]) == 0 and got["sliced"].offset > 0
    if name != "null":
        assert None not in got["no nulls"].to_pylist()
    assert [len(c) for c in got["chunked"].chunks] == [6, 6]
    assert len(got["empty first chunk"].chunk(0)) == 0
    # as IPC readers deliver it: an empty first batch, and one between
    assert [len(c) for c in got["ipc"].chunks] == [0, 12, 0, 11]
    assert got["ipc"].to_pylist() == [*got["nulls"].to_pylist(), *got["nulls"].to_pylist()[1:]]


def test_unions_hold_nulls_in_their_members_and_keep_their_type_codes() -> None:
    sparse, dense = CORPUS["sparse_union"], CORPUS["dense_union"]
    for union in (sparse, dense):
        values = union.to_pylist()
        assert [i for i, v in enumerate(values) if v is None] == [1, 4, 7, 10]
        assert {type(v) for v in values} == {int, str, type(None)}
    assert dense.type.type_codes == [5, 2]  # not the members' positions
    # an IPC reader gives an empty union chunk no type-ids buffer (pyarrow's nbytes then
    # reads a null pointer: the hub must not ask it, see tests/test_crashes.py)
    for name in ("sparse_union", "dense_union"):
        assert variants(name)["ipc"].chunk(0).buffers()[1] is None


def test_pyarrow_still_has_no_python_array_for_month_and_day_time_intervals() -> None:
    """Why the corpus lacks interval[year_month] and interval[day_time]: pyarrow 26 has no
    constructor, and imports them from the C data interface only inside a ChunkedArray or
    Table, whose chunks it cannot wrap (nor cast to anything). When this fails, pyarrow
    can: add them to the corpus and drop the hub's refusal."""
    for made, type_id in ((_months(), 21), (_day_time(), 22)):
        assert str(pa.field(na.c_schema(made.schema)).type) in (
            "month_interval",
            "day_time_interval",
        )
        with pytest.raises(KeyError, match=str(type_id)):
            pa.Array._import_from_c_capsule(*made.__arrow_c_array__())
        column = pa.chunked_array(na.Array(made))
        with pytest.raises(KeyError, match=str(type_id)):
            column.chunk(0)
        with pytest.raises(pa.ArrowNotImplementedError, match="Unsupported cast"):
            column.cast(pa.month_day_nano_interval())
    assert not hasattr(pa, "variable_shape_tensor")  # nor this canonical extension type


def _months() -> Any:
    return na.c_array_from_buffers(na.interval_months(), 3, [None, np.array([1, -2, 3], np.int32)])


def _day_time() -> Any:
    data = np.array([1, 500, -3, 4], np.int32)  # (days, milliseconds) pairs
    return na.c_array_from_buffers(na.interval_day_time(), 2, [None, data])


def _interval_sources(made: Any) -> dict[str, Any]:
    table = na.c_array_from_buffers(
        na.struct({"c": made.schema}), len(made), [None], children=[made]
    )
    return {
        "na.Array": lambda: na.Array(made),
        "pa.ChunkedArray": lambda: pa.chunked_array(na.Array(made)),
        "pa.Table": lambda: pa.table(na.Array(table)),
        "pa.RecordBatchReader": lambda: pa.RecordBatchReader.from_stream(pa.table(na.Array(table))),
        "na.ArrayStream": lambda: na.ArrayStream(pa.table(na.Array(table))),
    }


INTERVAL_TARGETS = ["pyarrow", "nanoarrow", "polars", "pandas", "numpy", "torch"] + [
    name for name in ("arro3", "duckdb") if importlib.util.find_spec(f"interchange_hub_{name}")
]


@pytest.mark.parametrize("kind", ["month_interval", "day_time_interval"])
def test_month_and_day_time_intervals_are_refused_with_the_reason(kind: str) -> None:
    plugins = [f"interchange_hub_{name}" for name in INTERVAL_TARGETS[6:]]
    hub = ih.Hub(autoload=False, plugins=plugins)
    made = _months() if kind == "month_interval" else _day_time()
    wrong = []
    for source, make in _interval_sources(made).items():
        for target in INTERVAL_TARGETS:
            try:
                hub.plan(make(), to=target)
                hub.convert(make(), to=target)
                wrong.append(f"{source} -> {target}: converted")
            except ih.NoRouteError as exc:
                if "month_day_nano_interval" not in str(exc):
                    wrong.append(f"{source} -> {target}: refused without the reason: {exc}")
            except ih.InterchangeError as exc:
                wrong.append(f"{source} -> {target}: {type(exc).__name__}: {exc}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("name", ["sparse_union", "dense_union"])
def test_an_empty_union_table_goes_through_nanoarrow(hub: ih.Hub, name: str) -> None:
    table = pa.table({"c": variants(name)["empty"], "x": pa.array([], pa.int64())})
    back = hub.convert(hub.convert(table, to="nanoarrow"), to="pyarrow")
    assert back.schema == table.schema and back.num_rows == 0


def test_unions_go_through_pandas_and_back(hub: ih.Hub) -> None:
    table = pa.table(
        {
            "s": variants("sparse_union")["sliced"],
            "d": variants("dense_union")["sliced"],
            "x": pa.array(range(7)),
        }
    )
    frame = hub.convert(table, to="pandas")
    assert hub.plan(table, to="pandas").zero_copy
    assert hub.shared_bytes(frame, table.select(["s", "d"])) > 0
    again = hub.convert(hub.convert(frame, to="pyarrow"), to="pandas")  # pandas' own export
    back = hub.convert(again, to="pyarrow")
    assert back.schema.types == table.schema.types
    assert back.to_pylist() == table.to_pylist()


def test_a_tensor_column_goes_through_pandas_and_back(hub: ih.Hub) -> None:
    table = pa.table({"t": variants("fixed_shape_tensor")["nulls"], "x": pa.array(range(12))})
    frame = hub.convert(table, to="pandas")
    assert hub.plan(table, to="pandas").zero_copy
    back = hub.convert(hub.convert(hub.convert(frame, to="pyarrow"), to="pandas"), to="pyarrow")
    assert back.schema.field("t").type == table.schema.field("t").type
    assert back.column("t").to_pylist() == table.column("t").to_pylist()


def test_tensor_columns_are_refused_or_converted_as_planned(hub: ih.Hub) -> None:
    with_nulls = variants("fixed_shape_tensor")["nulls"]
    for target in ("numpy", "torch"):
        with pytest.raises(ih.NoRouteError, match="4 null rows"):
            hub.plan(with_nulls, to=target)
    empty = np.zeros((0, 2, 2), np.float32)
    column = hub.convert(empty, to="pyarrow")
    assert len(column) == 0
    assert column.type == hub.convert(np.zeros((1, 2, 2), np.float32), to="pyarrow").type
    assert hub.convert(column, to="numpy").shape == (0, 2, 2)
    with pytest.raises(ih.NoRouteError, match="no values"):
        hub.plan(np.zeros((5, 0, 3), np.float32), to="pyarrow")


def test_a_tensor_column_without_nulls_is_an_nd_tensor_sharing_its_buffers(hub: ih.Hub) -> None:
    column = variants("fixed_shape_tensor")["no nulls"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = hub.convert(column, to="numpy")
    assert out.shape == (12, 2, 2) and hub.plan(column, to="numpy").zero_copy
    assert out.reshape(12, 4).tolist() == column.to_pylist()
    assert hub.shared_bytes(out, column) == out.nbytes
