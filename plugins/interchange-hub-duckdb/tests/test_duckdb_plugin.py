"""The duckdb plugin: relations to and from every built-in library, copies and losses."""

from __future__ import annotations

import decimal
import gc
import importlib.metadata
import os
import re
import warnings
from collections.abc import Callable
from typing import Any

# Use only the plugins each test names, never those installed in the environment.
os.environ.setdefault("INTERCHANGE_HUB_DISABLE_PLUGIN_AUTOLOAD", "1")

import duckdb
import interchange_hub as ih
import nanoarrow as na
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
import torch
from interchange_hub.adapter import Column, Context, DataInfo, Kind, Unroutable

import interchange_hub_duckdb


@pytest.fixture
def hub() -> ih.Hub:
    """The built-in adapters and this plugin, nothing from entry points."""
    return ih.Hub(autoload=False, plugins=[*ih.builtin_plugins(), interchange_hub_duckdb])


def rows(obj: Any) -> list[dict[str, Any]]:
    """The rows of a result of any library, as plain Python values."""
    if isinstance(obj, duckdb.DuckDBPyRelation):
        return obj.to_arrow_table().to_pylist()  # type: ignore[no-any-return]
    if isinstance(obj, pa.Table):
        return obj.to_pylist()  # type: ignore[no-any-return]
    if isinstance(obj, na.Array):
        return pa.Table.from_struct_array(pa.array(obj)).to_pylist()  # type: ignore[no-any-return]
    if isinstance(obj, pl.DataFrame):
        return obj.to_dicts()
    if isinstance(obj, pd.DataFrame):
        table = pa.Table.from_pandas(obj, preserve_index=False)
        return table.to_pylist()  # type: ignore[no-any-return]
    raise TypeError(type(obj))


def sample() -> pa.Table:
    return pa.table(
        {
            "i": pa.array([1, None, 3, 4, -5], pa.int64()),
            "f": pa.array([0.5, 1.5, None, 3.5, 4.5]),
            "s": pa.array(["a", "bb", None, "dddd", ""]),
            "b": pa.array([True, False, None, True, False]),
        }
    )


def test_registered_and_declared(hub: ih.Hub) -> None:
    adapter = hub.registry.get("duckdb")
    assert isinstance(adapter, interchange_hub_duckdb.DuckDBAdapter)
    assert adapter.type_kinds() == {duckdb.DuckDBPyRelation: Kind.TABLE}
    try:
        dist = importlib.metadata.distribution("interchange-hub-duckdb")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("the plugin is not installed (pip install -e plugins/interchange-hub-duckdb)")
    eps = [ep for ep in dist.entry_points if ep.group == "interchange_hub"]
    assert [(ep.name, ep.value) for ep in eps] == [("duckdb", "interchange_hub_duckdb")]


# -- relation -> every library ---------------------------------------------------------------
@pytest.mark.parametrize("lib", ["pyarrow", "nanoarrow", "polars", "pandas"])
def test_relation_to_table_libraries(hub: ih.Hub, lib: str) -> None:
    rel = duckdb.connect().from_arrow(sample())
    result = hub.convert(rel, to=lib)
    assert rows(result) == sample().to_pylist()


@pytest.mark.parametrize("lib", ["numpy", "torch"])
def test_numeric_relation_to_tensors(hub: ih.Hub, lib: str) -> None:
    con = duckdb.connect()
    rel = con.sql("SELECT range * 1.0::DOUBLE AS x, range * 2.0::DOUBLE AS y FROM range(5)")
    tensor = hub.convert(rel, to=lib)
    expected = [[float(r), 2.0 * r] for r in range(5)]
    assert tensor.tolist() == expected
    one = hub.convert(con.sql("SELECT range::BIGINT AS v FROM range(4)"), to=lib)
    assert tuple(one.shape) == (4, 1) and one.reshape(-1).tolist() == [0, 1, 2, 3]


def test_relation_to_a_column_type(hub: ih.Hub) -> None:
    rel = duckdb.connect().sql("SELECT range::BIGINT AS v FROM range(3)")
    series = hub.convert(rel, to=pl.Series)
    assert isinstance(series, pl.Series) and series.name == "v" and series.to_list() == [0, 1, 2]
    arr = hub.convert(rel, to=pa.ChunkedArray)
    assert arr.to_pylist() == [0, 1, 2]


def test_describing_runs_no_query(hub: ih.Hub) -> None:
    table = sample()
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches())
    rel = duckdb.connect().from_arrow(reader)  # a relation over a one-shot source
    info = hub.describe(rel)
    assert [c.dtype for c in info.columns] == ["int64", "float64", "string", "bool"]
    assert info.kind == Kind.TABLE and info.rows == -1
    print(hub.plan(rel, to="polars"))
    assert rows(hub.convert(rel, to="polars")) == table.to_pylist()  # the reader was unread


def test_describe_matches_what_duckdb_exports(hub: ih.Hub) -> None:
    rel = duckdb.connect().sql(
        """SELECT 1::TINYINT a, 2::UBIGINT b, 1.5::FLOAT c, 2.5::DECIMAL(9,2) d, 'x' e,
        'ab'::BLOB f, DATE '2020-01-02' g, TIME '10:00' h, TIMESTAMP '2020-01-01' i,
        '2020-01-01'::TIMESTAMP_NS j, TIMESTAMPTZ '2020-01-01 00:00+00' k, INTERVAL 1 DAY l,
        [1, 2] m, {'p': 1, 'q': 'z'} n, 'a'::ENUM('a', 'b') o, MAP([1], ['v']) p,
        [1, 2]::INTEGER[2] q, 3::HUGEINT r, gen_random_uuid() s, NULL t"""
    )
    described = [c.dtype for c in hub.describe(rel).columns]
    exported = [str(f.type) for f in rel.to_arrow_table().schema]
    exported = [{"float": "float32", "double": "float64"}.get(t, t) for t in exported]
    assert described == exported


def test_the_static_type_map_is_what_duckdb_says() -> None:
    names = tuple(interchange_hub_duckdb._EXPORTED)
    assert interchange_hub_duckdb._asked(names) == tuple(interchange_hub_duckdb._EXPORTED.values())


# -- every library -> duckdb -----------------------------------------------------------------
TABLES: dict[str, Callable[[pa.Table], Any]] = {
    "pyarrow": lambda t: t,
    "nanoarrow": lambda t: na.Array(t),
    "polars": lambda t: pl.from_arrow(t),
    "pandas": lambda t: t.to_pandas(types_mapper=pd.ArrowDtype),
}


@pytest.mark.parametrize("lib", list(TABLES))
def test_table_libraries_to_duckdb(hub: ih.Hub, lib: str) -> None:
    source = TABLES[lib](sample())
    rel = hub.convert(source, to="duckdb")
    assert isinstance(rel, duckdb.DuckDBPyRelation)
    assert rows(rel) == sample().to_pylist()
    assert rel.columns == ["i", "f", "s", "b"]


COLUMNS: dict[str, Callable[[], Any]] = {
    "pyarrow": lambda: pa.array([1, None, 3]),
    "nanoarrow": lambda: na.Array(pa.array([1, None, 3])),
    "polars": lambda: pl.Series("v", [1, None, 3]),
    "pandas": lambda: pd.Series([1, None, 3], dtype="Int64", name="v"),
    "numpy": lambda: np.array([1.0, 2.0, 3.0]),
    "torch": lambda: torch.tensor([1.0, 2.0, 3.0]),
}


@pytest.mark.parametrize("lib", list(COLUMNS))
def test_columns_and_1d_tensors_become_one_column_relations(hub: ih.Hub, lib: str) -> None:
    rel = hub.convert(COLUMNS[lib](), to="duckdb")
    assert len(rel.columns) == 1
    values = [r[0] for r in rel.fetchall()]
    expected = [1.0, 2.0, 3.0] if lib in ("numpy", "torch") else [1, None, 3]
    assert values == expected
    assert rel.columns[0] == (
        "values" if lib in ("pyarrow", "nanoarrow", "numpy", "torch") else "v"
    )


@pytest.mark.parametrize("lib", ["numpy", "torch"])
def test_2d_tensor_becomes_a_table(hub: ih.Hub, lib: str) -> None:
    matrix = np.arange(6.0).reshape(3, 2)
    source = matrix if lib == "numpy" else torch.from_numpy(matrix)
    rel = hub.convert(source, to=duckdb.DuckDBPyRelation)
    assert rel.columns == ["column_0", "column_1"]
    assert rel.fetchall() == [(0.0, 1.0), (2.0, 3.0), (4.0, 5.0)]


def test_nulls_empty_and_sliced_inputs(hub: ih.Hub) -> None:
    empty = hub.convert(sample().slice(0, 0), to="duckdb")
    assert empty.columns == ["i", "f", "s", "b"] and empty.fetchall() == []
    sliced = sample().slice(1, 3)
    assert sliced.column(0).chunk(0).offset == 1
    assert rows(hub.convert(sliced, to="duckdb")) == sliced.to_pylist()
    column = pa.array([None, 2, None, 4, 5]).slice(2)
    assert [r[0] for r in hub.convert(column, to="duckdb").fetchall()] == [None, 4, 5]


def test_a_one_shot_reader_is_read_once(hub: ih.Hub) -> None:
    table = pa.concat_tables([sample(), sample()])
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=2))
    rel = hub.convert(reader, to="duckdb")
    # duckdb scans its source several times per query; the relation reads a table, so
    # it can run any number of times.
    assert rows(rel) == table.to_pylist()
    assert rows(rel) == table.to_pylist()
    assert rel.aggregate("count(*)").fetchall() == [(10,)]
    with pytest.raises(ih.ConsumedSourceError):
        hub.convert(reader, to="duckdb")


def test_a_nanoarrow_stream_is_read_once(hub: ih.Hub) -> None:
    stream = na.ArrayStream(sample())
    rel = hub.convert(stream, to="duckdb")
    assert rows(rel) == sample().to_pylist()
    assert rows(rel) == sample().to_pylist()


def test_the_relation_outlives_its_source_and_connection(hub: ih.Hub) -> None:
    source = pa.table({"x": np.arange(1000, dtype=np.int64) * 3})
    rel = hub.convert(source, to="duckdb")
    del source
    gc.collect()
    junk = [np.full(4096, 7) for _ in range(64)]
    del junk
    assert rel.aggregate("sum(x)").fetchall() == [(3 * 999 * 1000 // 2,)]
    _, table, _ = interchange_hub_duckdb._KEEP[rel]
    assert table.num_rows == 1000


def test_each_conversion_gets_its_own_connection(hub: ih.Hub) -> None:
    a = hub.convert(sample(), to="duckdb")
    b = hub.convert(sample(), to="duckdb")
    assert interchange_hub_duckdb._KEEP[a][0] is not interchange_hub_duckdb._KEEP[b][0]
    # An unread relation holds no open result: the default connection stays usable.
    answer = duckdb.sql("SELECT 42")
    assert answer is not None and answer.fetchall() == [(42,)]


def test_a_relation_converts_twice(hub: ih.Hub) -> None:
    rel = duckdb.connect().from_arrow(sample())
    assert not hub.is_one_shot(rel)
    assert rows(hub.convert(rel, to="pyarrow")) == rows(hub.convert(rel, to="pyarrow"))


# -- copies: claimed honestly ----------------------------------------------------------------
def test_export_copies_every_column(hub: ih.Hub) -> None:
    rel = duckdb.connect().from_arrow(sample())
    plan = hub.plan(rel, to="pyarrow")
    assert not plan.zero_copy
    assert list(plan.copied_columns) == ["i", "f", "s", "b"]
    assert hub.buffers(rel) == []
    with pytest.raises(ih.CopyRequiredError, match="new Arrow buffers"):
        hub.convert(rel, to="pyarrow", copy=False)
    assert rows(hub.convert(rel, to="pyarrow", copy=True)) == sample().to_pylist()


def test_import_is_not_claimed_zero_copy(hub: ih.Hub) -> None:
    table = sample()
    plan = hub.plan(table, to="duckdb")
    assert not plan.zero_copy and "its own vectors" in str(plan)
    with pytest.raises(ih.CopyRequiredError):
        hub.convert(table, to="duckdb", copy=False)
    rel = hub.convert(table, to="duckdb", copy=True)
    kept = interchange_hub_duckdb._KEEP[rel][1]
    assert hub.shared_bytes(table, kept) == 0  # copy=True: the relation reads new memory
    assert rows(rel) == table.to_pylist()


def test_identity_and_round_trip(hub: ih.Hub) -> None:
    rel = duckdb.connect().from_arrow(sample())
    assert hub.convert(rel, to="duckdb") is rel
    again = hub.convert(rel, to="duckdb", copy=True)
    assert again is not rel and rows(again) == rows(rel)


# -- refusals and losses ---------------------------------------------------------------------
def test_tensors_are_unroutable_in_the_estimate() -> None:
    edge = next(e for e in interchange_hub_duckdb.DuckDBAdapter().edges() if e.target == "duckdb")
    tensor = DataInfo(Kind.TENSOR, (Column("", "float64", 48, 0),), rows=3, shape=(3, 2))
    with pytest.raises(Unroutable, match="not tensors"):
        edge.estimate(Context(tensor))


def test_a_complex_tensor_has_no_route(hub: ih.Hub) -> None:
    matrix = np.ones((3, 2), dtype=np.complex128)
    with pytest.raises(ih.NoRouteError, match="complex") as caught:
        hub.convert(matrix, to="duckdb")
    assert isinstance(caught.value, ih.InterchangeError)


def test_wide_decimals_are_refused_with_advice(hub: ih.Hub) -> None:
    wide = pa.table({"d": pa.array([decimal.Decimal("1.5")], pa.decimal256(50, 1))})
    with pytest.raises(ih.NoRouteError, match="at most 38 digits; cast it"):
        hub.convert(wide, to="duckdb")
    narrow = pa.table({"d": pa.array([decimal.Decimal("1.5")], pa.decimal256(20, 1))})
    assert hub.convert(narrow, to="duckdb").fetchall() == [(decimal.Decimal("1.5"),)]


def test_float16_is_widened_with_a_warning(hub: ih.Hub) -> None:
    halves = pa.table({"h": pa.array(np.array([0.5, 1.5], dtype=np.float16))})
    with pytest.warns(ih.LossyConversionWarning, match="float16 -> FLOAT"):
        rel = hub.convert(halves, to="duckdb")
    assert rel.fetchall() == [(0.5,), (1.5,)]
    with pytest.raises(ih.LossyConversionError):
        hub.convert(halves, to="duckdb", strict=True)


def test_a_3d_tensor_keeps_its_shape_as_nested_arrays(hub: ih.Hub) -> None:
    cube = np.arange(24.0).reshape(2, 3, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rel = hub.convert(cube, to="duckdb")
    assert [str(t) for t in rel.types] == ["DOUBLE[4][3]"]
    assert rel.fetchall()[1][0] == tuple(tuple(row) for row in cube[1].tolist())


def test_a_permuted_tensor_loses_its_permutation(hub: ih.Hub) -> None:
    typ = pa.fixed_shape_tensor(pa.float64(), [2, 3], permutation=[1, 0])
    storage = pa.FixedSizeListArray.from_arrays(pa.array(np.arange(12.0)), 6)
    table = pa.table({"t": pa.ExtensionArray.from_storage(typ, storage)})
    with pytest.warns(ih.LossyConversionWarning, match="permutation is dropped"):
        rel = hub.convert(table, to="duckdb")
    assert [str(t) for t in rel.types] == ["DOUBLE[2][3]"]  # the storage order: 3 x 2
    with pytest.raises(ih.LossyConversionError):
        hub.convert(table, to="duckdb", strict=True)


def test_time_zones_are_kept_when_they_agree(hub: ih.Hub) -> None:
    zone = "America/New_York"
    table = pa.table({"t": pa.array([0, 10**6, None], pa.timestamp("us", zone))})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rel = hub.convert(table, to="duckdb")
    assert hub.describe(rel).columns[0].dtype == f"timestamp[us, tz={zone}]"
    back = hub.convert(rel, to="pyarrow")
    assert back.schema.field("t").type == pa.timestamp("us", zone)
    assert back.column("t").to_pylist() == table.column("t").to_pylist()


def test_a_second_time_zone_is_reported(hub: ih.Hub) -> None:
    table = pa.table(
        {
            "ny": pa.array([0], pa.timestamp("us", "America/New_York")),
            "kolkata": pa.array([0], pa.timestamp("s", "Asia/Kolkata")),
            "utc_ms": pa.array([0], pa.timestamp("ms", "UTC")),
        }
    )
    plan = hub.plan(table, to="duckdb")
    assert [loss.column for loss in plan.losses] == ["kolkata", "utc_ms"]
    with pytest.warns(ih.LossyConversionWarning) as caught:
        rel = hub.convert(table, to="duckdb")
    messages = [str(w.message) for w in caught]
    assert len(messages) == 2 and "Asia/Kolkata is replaced by America/New_York" in messages[0]
    back = hub.convert(rel, to="pyarrow")
    assert back.column("kolkata").to_pylist() == table.column("kolkata").to_pylist()  # instants


@pytest.mark.parametrize(
    ("array", "lost"),
    [
        (pa.array([1, None], pa.duration("ns")), "nanoseconds are truncated"),
        (pa.array(["a", "b", "a"]).dictionary_encode(), "dictionary encoding"),
        (pa.array([b"ab", None], pa.binary(2)), "fixed width is dropped"),
    ],
)
def test_import_losses_are_reported(hub: ih.Hub, array: pa.Array, lost: str) -> None:
    table = pa.table({"c": array})
    plan = hub.plan(table, to="duckdb")
    assert len(plan.losses) == 1 and lost in plan.losses[0].lost
    with pytest.warns(ih.LossyConversionWarning, match=lost):
        hub.convert(table, to="duckdb")


@pytest.mark.parametrize(
    ("array", "lost"),
    [
        (pa.array([["a", "b"], None], pa.list_(pa.dictionary(pa.int8(), pa.string()))), "decoded"),
        (pa.array([{"d": 5}, None], pa.struct([("d", pa.duration("ns"))])), "nanoseconds"),
        (pa.array([[1], []], pa.list_(pa.timestamp("us", "+05:30"))), "+05:30 is replaced by UTC"),
        (pa.array([[pa.MonthDayNano([1, 2, 3])]], pa.list_(pa.month_day_nano_interval())), "micro"),
        (pa.array([[b"ab"]], pa.list_(pa.binary(2))), "the width is dropped"),
        (
            pa.ListArray.from_arrays(
                pa.array([0, 1], pa.int32()),
                pa.ExtensionArray.from_storage(pa.uuid(), pa.array([b"u" * 16], pa.binary(16))),
            ),
            "extension types are dropped",
        ),
    ],
    ids=["dictionary", "duration", "offset zone", "interval", "fixed width", "uuid"],
)
def test_losses_inside_nested_types_are_reported(hub: ih.Hub, array: pa.Array, lost: str) -> None:
    table = pa.table({"n": array, "ok": pa.array([[1]] * len(array))})
    plan = hub.plan(table, to="duckdb")
    assert [loss.column for loss in plan.losses] == ["n"] and lost in plan.losses[0].lost
    with pytest.warns(ih.LossyConversionWarning, match=f"column 'n'.*{re.escape(lost)}"):
        rel = hub.convert(table, to="duckdb")
    assert len(rows(rel)) == len(array)
    with pytest.raises(ih.LossyConversionError, match="'n'"):
        hub.convert(table, to="duckdb", strict=True)


def test_a_nested_time_zone_is_the_connections_and_kept(hub: ih.Hub) -> None:
    typ = pa.list_(pa.timestamp("us", "Asia/Kolkata"))
    table = pa.table({"l": pa.array([[0, 10**6], None], typ)})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rel = hub.convert(table, to="duckdb")
    assert hub.describe(rel).columns[0].dtype == "list<l: timestamp[us, tz=Asia/Kolkata]>"
    back = hub.convert(rel, to="pyarrow")
    assert str(back.schema.field("l").type) == "list<l: timestamp[us, tz=Asia/Kolkata]>"
    assert back.column("l").to_pylist() == table.column("l").to_pylist()


def test_durations_duckdb_cannot_export_become_null_with_a_warning(hub: ih.Hub) -> None:
    """duckdb exports an INTERVAL in nanoseconds: microseconds beyond +-2**63/1000 (about
    292 years) broke the relation for good (ConversionException when read), and so did
    pandas' NaT under a null (INT64_MIN)."""
    frame = pd.DataFrame({"d": pd.to_timedelta([1, None], unit="ms").astype("timedelta64[ms]")})
    with pytest.warns(ih.LossyConversionWarning) as caught:
        rel = hub.convert(frame, to="duckdb")
    assert not any("become null" in str(w.message) for w in caught)  # only the null's payload
    assert rows(rel) == [{"d": pa.MonthDayNano([0, 0, 1_000_000])}, {"d": None}]
    big = pa.table({"s": pa.array([2**40, -(2**40), 7, None], pa.duration("s"))})
    with pytest.warns(ih.LossyConversionWarning) as caught:
        rel = hub.convert(big, to="duckdb")
    assert any(re.search("'s'.*2 values beyond .* become null", str(w.message)) for w in caught)
    assert [r["s"] for r in rows(rel)] == [None, None, pa.MonthDayNano([0, 0, 7 * 10**9]), None]
    with pytest.raises(ih.LossyConversionError):
        hub.convert(big, to="duckdb", strict=True)


def test_relations_have_their_own_time_zones(hub: ih.Hub) -> None:
    """The relations the hub makes share one private database, each on a connection of its
    own: a TimeZone set for one is not another's, nor the user's."""
    tokyo = hub.convert(pa.table({"t": pa.array([0], pa.timestamp("us", "Asia/Tokyo"))}), "duckdb")
    paris = hub.convert(
        pa.table({"t": pa.array([0], pa.timestamp("us", "Europe/Paris"))}), "duckdb"
    )
    assert str(tokyo.to_arrow_table().schema.field("t").type) == "timestamp[us, tz=Asia/Tokyo]"
    assert str(paris.to_arrow_table().schema.field("t").type) == "timestamp[us, tz=Europe/Paris]"
    assert duckdb.sql("SELECT current_setting('TimeZone')").fetchall() != [("Asia/Tokyo",)]


def test_export_losses_are_reported(hub: ih.Hub) -> None:
    rel = duckdb.connect().sql("SELECT gen_random_uuid() AS u, '{}'::JSON AS j, 1 AS ok")
    plan = hub.plan(rel, to="pyarrow")
    assert [(loss.column, loss.source) for loss in plan.losses] == [
        ("u", "duckdb UUID"),
        ("j", "duckdb JSON"),
    ]
    with pytest.warns(ih.LossyConversionWarning) as caught:
        table = hub.convert(rel, to="pyarrow")
    assert "UUIDs are exported" in str(caught[0].message)
    assert "JSON type is dropped" in str(caught[1].message)
    assert table.schema.field("u").type == pa.string()
    with pytest.raises(ih.LossyConversionError):
        hub.convert(rel, to="pyarrow", strict=True)


def test_duplicate_names_are_reported(hub: ih.Hub) -> None:
    table = pa.Table.from_arrays([pa.array([1]), pa.array([2])], names=["a", "A"])
    plan = hub.plan(table, to="duckdb")
    assert plan.losses[0].target == "name 'A_1'"
    with pytest.warns(ih.LossyConversionWarning, match="renames"):
        rel = hub.convert(table, to="duckdb")
    assert rel.columns == ["a", "A_1"]


def test_conformance() -> None:
    from interchange_hub.testing import assert_conforms

    assert_conforms(interchange_hub_duckdb, "duckdb")


@pytest.mark.parametrize("nested", [False, True], ids=["column", "in a list"])
def test_a_decimal_of_a_negative_scale_is_refused_with_what_to_do(
    hub: ih.Hub, nested: bool
) -> None:
    # Found by a fuzzing review: planned, then duckdb failed inside ("INTERNAL Error:
    # Information loss on integer cast").
    import decimal

    typ = pa.decimal128(5, -3)
    values = pa.array([decimal.Decimal("1E+5")], typ)
    column = pa.ListArray.from_arrays([0, 1], values) if nested else values
    with pytest.raises(ih.NoRouteError, match=r"negative scale.*cast it to a scale of 0"):
        hub.convert(pa.table({"d": column}), to="duckdb")


def test_a_dictionary_of_durations_or_zoned_times_is_warned_as_its_values_are(
    hub: ih.Hub,
) -> None:
    # Found by a review: a dictionary column was warned only of its encoding, "the values
    # are kept", while duckdb cut its durations' nanoseconds (and a pandas Categorical was
    # described as a dictionary of strings whatever its categories held).
    durations = pd.DataFrame({"c": pd.Categorical(pd.to_timedelta([1, 1500, None], unit="ns"))})
    with pytest.raises(ih.LossyConversionError, match="nanoseconds are truncated to microseconds"):
        hub.convert(durations, to="duckdb", strict=True)
    codes = pa.DictionaryArray.from_arrays(pa.array([0, 1]), pa.array([1, 1500], pa.duration("ns")))
    with pytest.warns(ih.LossyConversionWarning, match="nanoseconds are truncated"):
        hub.convert(pa.table({"c": codes}), to="duckdb")
    zoned = pd.DataFrame(
        {"c": pd.Categorical(pd.to_datetime(["2020-01-01"]).tz_localize("Asia/Tokyo"))}
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        back = hub.convert(hub.convert(zoned, to="duckdb"), to="pyarrow")
    said = " ".join(str(w.message) for w in caught)
    zone_kept = str(back.schema.field("c").type).endswith("tz=Asia/Tokyo]")
    assert zone_kept or "the time zone Asia/Tokyo is replaced" in said, said


def test_pandas_periods_and_intervals_are_warned_as_their_extension_types_drop(
    hub: ih.Hub,
) -> None:
    # Found by a review: described as Python objects, they became bare ordinals and
    # structs in duckdb without a warning (their frequency and closed side dropped).
    frame = pd.DataFrame(
        {"p": pd.period_range("2020-01", periods=2, freq="M"), "i": pd.interval_range(0, 2)}
    )
    with pytest.raises(ih.LossyConversionError, match="column 'p'.*extension type is dropped"):
        hub.convert(frame, to="duckdb", strict=True)


def test_python_decimals_beyond_38_digits_are_refused_when_read(hub: ih.Hub) -> None:
    # (pandas objects show their precision only when pyarrow reads them: duckdb's
    # "precision should be between 1 and 38" came out raw)
    frame = pd.DataFrame({"c": pd.Series([decimal.Decimal("1" * 45)], dtype=object)})
    with pytest.raises(ih.NoRouteError, match="column 'c' is decimal256.45, 0.*at most 38"):
        hub.convert(frame, to="duckdb")
