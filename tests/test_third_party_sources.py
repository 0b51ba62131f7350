"""Real producers the hub has no adapter for (duckdb, arro3): handled by protocol."""

from __future__ import annotations

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import interchange_hub as ih

duckdb = pytest.importorskip("duckdb")
a3 = pytest.importorskip("arro3.core")


def test_duckdb_relation_to_every_table_library(hub: ih.Hub) -> None:
    con = duckdb.connect()
    rel = con.sql("select range::BIGINT as i, range * 0.5::DOUBLE as f from range(1000)")
    plan = hub.plan(rel, to="polars")
    assert plan.deferred and "read once" in str(plan)
    assert hub.convert(rel, to="polars")["i"].to_list() == list(range(1000))
    assert isinstance(hub.convert(rel, to="pandas"), pd.DataFrame)
    assert hub.convert(rel, to="pyarrow").num_rows == 1000
    matrix = hub.convert(con.sql("select 1.0::DOUBLE as a, 2.0::DOUBLE as b"), to="numpy")
    assert matrix.tolist() == [[1.0, 2.0]]


def test_duckdb_errors_stay_in_the_error_tree(hub: ih.Hub) -> None:
    rel = duckdb.connect().sql("select 'x' as s")
    with pytest.raises(ih.NoRouteError, match="cannot be stored in a tensor"):
        hub.convert(rel, to="torch")


def test_arro3_table_and_array(hub: ih.Hub) -> None:
    table = a3.Table.from_arrow(pa.table({"a": np.arange(100), "b": np.arange(100.0)}))
    plan = hub.plan(table, to="polars")
    assert not plan.deferred and plan.zero_copy  # arro3 exposes its schema: planned ahead
    df = hub.convert(table, to="polars")
    assert isinstance(df, pl.DataFrame) and df["a"].to_list() == list(range(100))
    values = np.arange(10.0)
    arr = a3.Array.from_numpy(values)
    t = hub.convert(arr, to="torch")
    assert t.tolist() == values.tolist()
    assert hub.plan(arr, to="torch").zero_copy and t.data_ptr() == values.ctypes.data
    assert isinstance(hub.convert(arr, to="pandas"), pd.Series)
