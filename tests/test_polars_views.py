"""Arrow strings and binaries into polars: pyarrow builds the views polars stores, over
the same characters, from VIEWS_FROM rows (polars' own import copies the characters)."""

from __future__ import annotations

import nanoarrow as na
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import interchange_hub as ih
from interchange_hub.adapters._polars import VIEWS_FROM
from tests.helpers import shared_memory

ROWS = VIEWS_FROM + 5


def _table(rows: int = ROWS) -> pa.Table:
    return pa.table(
        {
            "s": pa.array([None if i % 7 == 0 else f"value number {i}" for i in range(rows)]),
            "ls": pa.array([f"{i}" * (i % 9) for i in range(rows)], pa.large_string()),
            "b": pa.array(
                [None if i % 5 == 0 else bytes([i % 256]) * (i % 20) for i in range(rows)]
            ),
            "lb": pa.array([b"x" * (i % 30) for i in range(rows)], pa.large_binary()),
            "i": pa.array(range(rows)),
        }
    )


@pytest.mark.parametrize("rows", [10, ROWS], ids=["small", "large"])
def test_the_frame_is_the_one_polars_makes(hub: ih.Hub, rows: int) -> None:
    table = _table(rows)
    reference = pl.DataFrame(table)
    for _ in range(2):  # planned, then the kept route
        out = hub.convert(table, to=pl.DataFrame)
        assert out.equals(reference)
        assert out.schema == reference.schema


def test_views_share_the_characters_and_the_plan_counts_the_views(hub: ih.Hub) -> None:
    table = _table()
    plan = hub.plan(table, to="polars")
    viewed = {c.column: c.nbytes for c in plan.copies}
    assert viewed == {name: 16 * ROWS for name in ("s", "ls", "b", "lb")}
    assert "over the same characters" in str(plan)
    out = hub.convert(table, to="polars")
    inside, total = shared_memory(hub, out, table)
    data = table.column("s").chunks[0].buffers()[2]
    assert inside >= data.size  # (the characters; the views are new)
    assert total - inside >= 16 * ROWS * 4  # the views of the 4 columns are new memory


def test_copy_true_shares_nothing(hub: ih.Hub) -> None:
    table = _table()
    out = hub.convert(table, to="polars", copy=True)
    assert shared_memory(hub, out, table)[0] == 0
    assert out.equals(pl.from_arrow(table))


@pytest.mark.parametrize("offset", [0, 3])
def test_a_column_and_a_slice_become_the_series_polars_makes(hub: ih.Hub, offset: int) -> None:
    col = _table(ROWS + offset).column("s").slice(offset)
    for _ in range(2):
        out = hub.convert(col, to=pl.Series)
        assert out.equals(pl.Series(col))


def test_other_producers_and_nested_columns(hub: ih.Hub) -> None:
    table = _table()
    array = na.Array(table)  # a struct array from another producer: read into pyarrow
    assert hub.convert(array, to="polars").equals(pl.from_arrow(table))
    nested = table.append_column("l", pa.array([[str(i)] for i in range(ROWS)]))
    assert hub.convert(nested, to="polars").equals(pl.from_arrow(nested))


@pytest.mark.parametrize("rows", [10, ROWS], ids=["small", "large"])
def test_pandas_strings_become_the_frame_and_series_polars_makes(hub: ih.Hub, rows: int) -> None:
    # pyarrow-backed str columns only: pl.from_pandas' one-call route, with the views cast
    # by pyarrow from VIEWS_FROM rows.
    frame = pd.DataFrame(
        {
            "a": pd.array([None if i % 7 == 0 else f"value {i}" for i in range(rows)], dtype="str"),
            "b": pd.array([str(i) * (i % 5) for i in range(rows)], dtype="str"),
        }
    )
    for _ in range(2):
        out = hub.convert(frame, to=pl.DataFrame)
        assert out.equals(pl.from_pandas(frame)) and out.schema == pl.from_pandas(frame).schema
        series = hub.convert(frame["a"], to=pl.Series)
        assert series.equals(pl.Series(frame["a"])) and series.name == "a"
    unnamed = frame["b"].rename(None)
    assert hub.convert(unnamed, to=pl.Series).equals(pl.Series(unnamed))
    plan = hub.plan(frame, to="polars")
    assert [s.edge.adapter for s in plan.steps] == ["fastpath"]
    if rows == ROWS:
        assert {c.nbytes for c in plan.copies} == {16 * ROWS}
        inside, _ = shared_memory(hub, hub.convert(frame, to="polars"), frame)
        assert inside > 0  # the characters
    assert shared_memory(hub, hub.convert(frame, to="polars", copy=True), frame)[0] == 0
