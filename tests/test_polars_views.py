"""Arrow strings and binaries into polars: pyarrow builds the views polars stores, over
the same characters, from VIEWS_FROM rows (polars' own import copies the characters)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

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


# -- polars' views into nanoarrow (which cannot read views): cast to large types ---------


def _viewed_frame(rows: int) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "s": [None if i % 7 == 0 else f"string value {i}" for i in range(rows)],
            "b": [bytes([i % 256]) * (i % 15) for i in range(rows)],
            "i": range(rows),
        }
    )


@pytest.mark.parametrize("rows", [2, 1000])
def test_views_into_nanoarrow_become_what_without_views_makes(
    rows: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    from interchange_hub import arrowkit

    frame = _viewed_frame(rows)
    expected = arrowkit.without_views(pa.table(frame))
    assert expected.schema.types[:2] == [pa.large_string(), pa.large_binary()]
    general: list[pa.Table] = []

    def spied(table: pa.Table) -> pa.Table:
        general.append(table)
        return expected

    monkeypatch.setattr(arrowkit, "without_views", spied)
    hub = ih.Hub(autoload=False)
    for _ in range(3):  # planned, then the kept run
        got = pa.table(hub.convert(frame, to="nanoarrow"))
        got.validate(full=True)
        assert got.schema.equals(expected.schema, check_metadata=True)
        assert got.equals(expected)
    assert general == []  # each view column cast in place, not the general way


def test_views_into_nanoarrow_keep_fields_and_metadata() -> None:
    field = pa.field("s", pa.string_view(), nullable=False, metadata={b"unit": b"none"})
    schema = pa.schema([field, pa.field("n", pa.int64())], metadata={b"table": b"kept"})
    table = pa.table([pa.array(["a", "bb", "a much longer string"]), [1, 2, 3]], schema=schema)
    hub = ih.Hub(autoload=False)
    for _ in range(2):
        got = pa.table(hub.convert(table, to="nanoarrow"))
        assert got.schema.field("s") == field.with_type(pa.large_string())
        assert got.schema.field("s").metadata == {b"unit": b"none"}
        assert not got.schema.field("s").nullable
        assert got.schema.metadata == {b"table": b"kept"}
        assert got.column("s").to_pylist() == ["a", "bb", "a much longer string"]


def _general_way(monkeypatch: pytest.MonkeyPatch) -> list[pa.Table]:
    """The tables arrowkit.without_views is given from now on (it still makes them)."""
    from interchange_hub import arrowkit

    general: list[pa.Table] = []
    without_views = arrowkit.without_views

    def spied(table: pa.Table) -> pa.Table:
        general.append(table)
        return without_views(table)

    monkeypatch.setattr(arrowkit, "without_views", spied)
    return general


def test_long_tables_go_the_general_way(monkeypatch: pytest.MonkeyPatch) -> None:
    from interchange_hub import arrowkit
    from interchange_hub.adapters import _nanoarrow

    frame = _viewed_frame(50)
    expected = arrowkit.without_views(pa.table(frame))
    monkeypatch.setattr(_nanoarrow, "_OWN_CAST_ROWS", 5)
    general = _general_way(monkeypatch)
    hub = ih.Hub(autoload=False)
    for calls in (1, 2):  # more rows than cast in place: threads' way, the same table
        got = pa.table(hub.convert(frame, to="nanoarrow"))
        assert got.equals(expected) and got.schema.equals(expected.schema)
        assert len(general) == calls


def _views_run(monkeypatch: pytest.MonkeyPatch, *dtypes: str) -> Any:
    """The bound import of a table of those dtypes (columns a, b, ...), whose nanoarrow
    Array is the table itself: looked at without nanoarrow reading it (views would crash
    the process)."""
    from interchange_hub._core.info import Column, DataInfo, Kind
    from interchange_hub.adapter import Context
    from interchange_hub.adapters import _nanoarrow

    monkeypatch.setattr(_nanoarrow, "_na", lambda: SimpleNamespace(Array=lambda t: t))
    cols = tuple(Column("ab"[i], d, 48, 0, 1) for i, d in enumerate(dtypes))
    run = _nanoarrow._flat_views_cast(Context(DataInfo(Kind.TABLE, cols, rows=3)), Kind.TABLE)
    assert run is not None
    return run


def test_columns_unlike_the_plan_go_the_general_way(monkeypatch: pytest.MonkeyPatch) -> None:
    run = _views_run(monkeypatch, "string_view")
    general = _general_way(monkeypatch)
    # planned: one string_view column. As planned: cast in place.
    assert run(pa.table({"a": pa.array(["x"], pa.string_view())})).schema.types == [
        pa.large_string()
    ]
    assert general == []
    # A column of a type the plan did not see is never cast to the planned one.
    nested = pa.table({"a": pa.array([["a"], None, ["b", "c"]], pa.list_(pa.string_view()))})
    out = run(nested)
    assert out.schema.field("a").type == pa.list_(pa.large_string())
    assert out.column("a").to_pylist() == [["a"], None, ["b", "c"]]
    ints = pa.table({"a": [1, 2, 3]})
    assert run(ints).equals(ints)
    # Another number of columns
    two = pa.table({"a": pa.array(["x"], pa.string_view()), "b": pa.array(["y"], pa.string_view())})
    assert run(two).schema.types == [pa.large_string(), pa.large_string()]
    assert len(general) == 3


def test_a_stream_unlike_its_schema_leaves_no_views(monkeypatch: pytest.MonkeyPatch) -> None:
    # A producer whose stream swaps what its schema said: the view is in the other column
    run = _views_run(monkeypatch, "string_view", "large_string")
    said = pa.schema([("a", pa.string_view()), ("b", pa.large_string())])
    gave = pa.table(
        {"a": pa.array(["x"], pa.large_string()), "b": pa.array(["y"], pa.string_view())}
    )

    class Swapped:
        def __arrow_c_schema__(self) -> object:
            return said.__arrow_c_schema__()

        def __arrow_c_stream__(self, requested_schema: object = None) -> object:
            return gave.__arrow_c_stream__()

    general = _general_way(monkeypatch)
    out = run(Swapped())
    assert out.schema.types == [pa.large_string(), pa.large_string()]
    assert out.to_pydict() == {"a": ["x"], "b": ["y"]}
    assert len(general) == 1


def test_nulls_in_a_non_nullable_view_column_are_refused_as_pyarrow_does() -> None:
    field = pa.field("s", pa.string_view(), nullable=False)
    table = pa.table([pa.array(["a", None], pa.string_view())], schema=pa.schema([field]))
    with pytest.raises(ValueError, match="non-nullable"):
        table.cast(pa.schema([field.with_type(pa.large_string())]))
    hub = ih.Hub(autoload=False)
    for _ in range(2):
        with pytest.raises(ih.ConversionError, match="non-nullable"):
            hub.convert(table, to="nanoarrow")


def test_a_producer_asked_for_large_types_gives_the_result_its_buffers() -> None:
    table = pa.table({"s": pa.array(["x", None, "y" * 20], pa.string_view()), "n": [1, 2, 3]})
    large = table.cast(pa.schema([("s", pa.large_string()), ("n", pa.int64())]))

    asked: list[object] = []

    class Asked:  # a producer that honours requested_schema: large types when asked
        def __arrow_c_schema__(self) -> object:
            return table.schema.__arrow_c_schema__()

        def __arrow_c_stream__(self, requested_schema: object = None) -> object:
            asked.append(requested_schema)
            source = large if requested_schema is not None else table
            return source.__arrow_c_stream__()

    hub = ih.Hub(autoload=False)
    got = pa.table(hub.convert(Asked(), to="nanoarrow"))
    assert got.equals(large)
    assert asked and asked[-1] is not None
    # taken as the producer gave them: the characters are its buffer, not a copy
    chars = large.column("s").chunk(0).buffers()[2]
    assert got.column("s").chunk(0).buffers()[2].address == chars.address
