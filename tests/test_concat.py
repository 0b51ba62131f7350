"""``Adapter.concat``: partitions' results joined into one object of their library, in order.

Each library's join is compared with the library's own concatenation of the same parts;
for the Arrow libraries (pyarrow, polars, nanoarrow, arro3, datasets) the result must
share every byte of every part, checked by buffer address. ``join`` (what
``Partitioned.compute()`` calls) is checked alongside, and once end to end through a
``Partitioned`` over local parts.
"""

from __future__ import annotations

import inspect
import warnings
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import interchange_hub as ih
from interchange_hub.adapter import Options
from interchange_hub.errors import ConversionError, LossyConversionError, LossyConversionWarning
from interchange_hub.partitioned import Partitioned, PartitionReport, Parts, join, metadata_plan


@pytest.fixture
def hub() -> ih.Hub:
    return ih.default_hub()


def plugin_hub(module: str) -> ih.Hub:
    """The built-in adapters and one plugin (skipped when it or its library is missing)."""
    plugin = pytest.importorskip(module)
    return ih.Hub(autoload=False, plugins=[*ih.builtin_plugins(), plugin])


def joined(hub: ih.Hub, parts: list[Any]) -> Any:
    """``concat`` through the owner and ``join``; both must agree (values and type)."""
    owner = hub.registry.owner(parts[0])
    assert owner is not None
    result = owner.concat(parts)
    again = join(hub, parts, None)
    assert type(again) is type(result)
    return result


def part_bytes(hub: ih.Hub, part: Any) -> int:
    return sum(b.size for b in hub.buffers(part))


def assert_shares_every_part(hub: ih.Hub, result: Any, parts: list[Any]) -> None:
    """Every byte of every non-empty part lies inside the result's buffers (checked by
    address); an empty part's few bytes (an offsets buffer) may be left out."""
    for i, part in enumerate(parts):
        if not len(part):
            continue
        total = part_bytes(hub, part)
        assert total > 0, f"part {i} reports no buffers"
        assert hub.shared_bytes(part, result) == total, f"part {i} was copied"


# Three parts: nulls and two chunks, an empty one, a plain one.
def arrow_tables() -> list[pa.Table]:
    first = pa.concat_tables(
        [
            pa.table({"x": [1, None, 3], "s": ["a", None, "c"]}),
            pa.table({"x": [4, 5], "s": ["d", "e"]}),
        ]
    )
    empty = pa.table({"x": pa.array([], pa.int64()), "s": pa.array([], pa.string())})
    last = pa.table({"x": [6], "s": ["f"]})
    return [first, empty, last]


# -- pyarrow ---------------------------------------------------------------------------------
def test_pyarrow_tables_are_joined_zero_copy(hub: ih.Hub) -> None:
    parts = arrow_tables()
    result = joined(hub, parts)
    assert isinstance(result, pa.Table)
    assert result.equals(pa.concat_tables(parts))
    assert result.column("x").to_pylist() == [1, None, 3, 4, 5, 6]
    assert_shares_every_part(hub, result, parts)


def test_pyarrow_record_batches_become_one_table(hub: ih.Hub) -> None:
    parts = [b for t in arrow_tables() for b in t.to_batches()]
    mixed = [parts[0], pa.Table.from_batches(parts[1:])]
    for given in (parts, mixed):
        result = joined(hub, given)
        assert isinstance(result, pa.Table)
        assert result.equals(pa.Table.from_batches(parts))
        assert_shares_every_part(hub, result, given)


def test_pyarrow_arrays_and_chunked_arrays_become_one_chunked_array(hub: ih.Hub) -> None:
    parts = [
        pa.array([1.5, None, 2.5]),
        pa.chunked_array([[3.5], [None, 4.5]]),
        pa.array([], pa.float64()),
        pa.chunked_array([], pa.float64()),
        pa.array([5.5]),
    ]
    result = joined(hub, parts)
    assert isinstance(result, pa.ChunkedArray)
    assert result.type == pa.float64()
    assert result.to_pylist() == [1.5, None, 2.5, 3.5, None, 4.5, 5.5]
    assert result.num_chunks == 5  # every part's chunks, none combined
    assert_shares_every_part(hub, result, parts)


def test_pyarrow_readers_are_refused(hub: ih.Hub) -> None:
    table = arrow_tables()[0]
    parts = [pa.RecordBatchReader.from_batches(table.schema, table.to_batches()) for _ in "ab"]
    with pytest.raises(ConversionError, match="RecordBatchReader.*read once"):
        join(hub, parts, None)


def test_mixed_types_are_refused_with_their_names(hub: ih.Hub) -> None:
    parts = [arrow_tables()[0], pa.array([1])]
    with pytest.raises(ConversionError, match=r"mixed types \(pyarrow.Table, pyarrow.Int64Array"):
        join(hub, parts, None)
    with pytest.raises(ConversionError, match="mixed types"):
        join(hub, [np.arange(3), pa.array([1])], None)


# -- polars ----------------------------------------------------------------------------------
def test_polars_frames_and_series_are_joined_zero_copy(hub: ih.Hub) -> None:
    pl = pytest.importorskip("polars")
    frames = [pl.from_arrow(t) for t in arrow_tables()]
    result = joined(hub, frames)
    assert isinstance(result, pl.DataFrame)
    assert result.equals(pl.concat(frames), null_equal=True)
    assert result["x"].to_list() == [1, None, 3, 4, 5, 6]
    assert result["x"].n_chunks() == 3  # not rechunked (polars drops the empty chunk)
    assert_shares_every_part(hub, result, frames)

    series = [f["s"] for f in frames]
    column = joined(hub, series)
    assert isinstance(column, pl.Series) and column.name == "s"
    assert column.to_list() == ["a", None, "c", "d", "e", "f"]
    assert_shares_every_part(hub, column, series)


def test_polars_lazy_frames_stay_lazy(hub: ih.Hub) -> None:
    pl = pytest.importorskip("polars")
    frames = [pl.from_arrow(t) for t in arrow_tables()]
    result = joined(hub, [f.lazy() for f in frames])
    assert isinstance(result, pl.LazyFrame)
    assert result.collect().equals(pl.concat(frames), null_equal=True)


def test_polars_frames_and_series_do_not_mix(hub: ih.Hub) -> None:
    pl = pytest.importorskip("polars")
    frame = pl.DataFrame({"x": [1]})
    with pytest.raises(ConversionError, match=r"polars.DataFrame, polars.Series"):
        join(hub, [frame, frame["x"]], None)


# -- pandas ----------------------------------------------------------------------------------
def test_pandas_frames_keep_each_parts_index(hub: ih.Hub) -> None:
    pd = pytest.importorskip("pandas")
    parts = [ih.convert(t, to="pandas") for t in arrow_tables()]
    result = joined(hub, parts)
    assert isinstance(result, pd.DataFrame)
    expected = pd.concat([p for p in parts if len(p)])  # as Dask joins its partitions
    pd.testing.assert_frame_equal(result, expected)
    assert result.index.tolist() == [0, 1, 2, 3, 4, 0]
    assert result["x"].tolist()[3:] == [4, 5, 6]
    series = [p["s"] for p in parts]
    column = joined(hub, series)
    assert isinstance(column, pd.Series) and column.name == "s"
    pd.testing.assert_series_equal(column, pd.concat([s for s in series if len(s)]))


def test_pandas_only_empty_parts_give_an_empty_frame(hub: ih.Hub) -> None:
    pd = pytest.importorskip("pandas")
    empty = ih.convert(arrow_tables()[1], to="pandas")
    result = joined(hub, [empty, empty])
    assert isinstance(result, pd.DataFrame) and len(result) == 0
    assert list(result.columns) == ["x", "s"]


def test_pandas_categoricals_keep_their_dtype(hub: ih.Hub) -> None:
    pd = pytest.importorskip("pandas")
    tables = [
        pa.table({"c": pa.array(["a", "b", "a"]).dictionary_encode()}),
        pa.table({"c": pa.array(["z"]).dictionary_encode()}),
    ]
    parts = [ih.convert(t, to="pandas") for t in tables]
    result = joined(hub, parts)
    assert result["c"].tolist() == ["a", "b", "a", "z"]
    if "union_categories" in inspect.signature(pd.concat).parameters:  # pandas 3.1+
        assert isinstance(result["c"].dtype, pd.CategoricalDtype)
        assert set(result["c"].cat.categories) == {"a", "b", "z"}


@pytest.mark.parametrize("count", [1, 2], ids=["one-non-empty-part", "two-parts"])
def test_pandas_results_of_shared_memory_can_be_written(hub: ih.Hub, count: int) -> None:
    """The parts view Arrow's read-only memory copy-on-write; the join must stay writable
    without changing the parts or their sources (a lone non-empty part is not copied)."""
    pytest.importorskip("pandas")
    sources = [pa.table({"x": [1.0, 2.0, 3.0], "y": [4, 5, 6]}) for _ in range(count)]
    sources.append(sources[0].slice(0, 0))
    parts = [ih.convert(t, to="pandas") for t in sources]
    result = joined(hub, parts)
    result.loc[0, "x"] = 99.0
    result.iloc[1, 1] = -1
    assert result["x"].tolist()[0] == 99.0
    assert result["y"].tolist()[1] == -1
    for part, source in zip(parts, sources, strict=True):
        assert part["x"].tolist() == source.column("x").to_pylist()
        assert part["y"].tolist() == source.column("y").to_pylist()
    assert sources[0].column("x").to_pylist() == [1.0, 2.0, 3.0]


# -- numpy, torch ----------------------------------------------------------------------------
def test_numpy_arrays_are_joined_along_the_first_axis(hub: ih.Hub) -> None:
    parts = [np.arange(6.0).reshape(3, 2), np.empty((0, 2)), np.array([[np.nan, 7.0]])]
    result = joined(hub, parts)
    np.testing.assert_array_equal(result, np.concatenate(parts, axis=0))
    assert result.shape == (4, 2)
    flat = joined(hub, [np.array(["a", "bb"]), np.array(["ccc"])])
    assert flat.tolist() == ["a", "bb", "ccc"]


def test_numpy_masked_arrays_keep_their_masks(hub: ih.Hub) -> None:
    parts = [
        np.ma.masked_array([1, 2, 3], mask=[False, True, False]),
        np.ma.masked_array([4], mask=[True]),
    ]
    result = joined(hub, parts)
    assert isinstance(result, np.ma.MaskedArray)
    assert result.mask.tolist() == [False, True, False, True]
    assert result.compressed().tolist() == [1, 3]


def test_torch_tensors_are_joined_along_dim_0(hub: ih.Hub) -> None:
    torch = pytest.importorskip("torch")
    parts = [torch.arange(6.0).reshape(3, 2), torch.empty(0, 2), torch.tensor([[float("nan"), 7]])]
    result = joined(hub, parts)
    assert torch.equal(result[:3], parts[0]) and result.shape == (4, 2)
    expected = torch.cat(parts, dim=0)
    assert torch.allclose(result, expected, equal_nan=True)


@pytest.mark.parametrize("library", ["numpy", "torch"])
def test_a_promotion_that_changes_values_is_warned_and_strict_refuses_it(
    hub: ih.Hub, library: str
) -> None:
    # torch.cat and np.concatenate promote parts of different dtypes unchecked: int64
    # 2**53 + 1 into float64 (or float32) came back rounded, silently.
    module = pytest.importorskip(library)
    big = 2**53 + 1
    parts = [module.asarray([big, 2]), module.asarray([1.5], dtype=module.float64)]
    with pytest.warns(LossyConversionWarning, match="partition 0: int64 -> float64: the cast"):
        result = join(hub, parts, None)
    assert result.tolist() == [float(big), 2.0, 1.5] and len(result) == 3
    with pytest.raises(LossyConversionError, match="^strict=True, but the join of 2 partitions"):
        join(hub, parts, None, strict=True)
    # in a dict (as_dict=True), the column's partitions are checked as well
    with pytest.warns(LossyConversionWarning, match="partition 0: int64 -> float64"):
        join(hub, [{"a": parts[0]}, {"a": parts[1]}], None)
    # a promotion that keeps every value (and parts of one dtype) passes silently
    kept = join(hub, [module.asarray([1, 2]), module.asarray([0.5], dtype=module.float32)], None)
    assert kept.tolist() == [1.0, 2.0, 0.5]
    assert join(hub, [module.asarray([big]), module.asarray([3])], None).tolist() == [big, 3]


def test_widening_promotions_are_silent_without_reading_the_values(hub: ih.Hub) -> None:
    # A review found bfloat16 into float32, and a tensor that requires grad, warned as
    # "values may change (not checked)", and refused under strict=True: numpy reads
    # neither. A widening that holds every value is known from the dtypes alone.
    torch = pytest.importorskip("torch")
    exact = [
        [torch.tensor([1.5], dtype=torch.bfloat16), torch.tensor([2.0])],
        [torch.tensor([1.5], requires_grad=True), torch.tensor([2.0], dtype=torch.float64)],
        [torch.tensor([True]), torch.tensor([3], dtype=torch.int8)],
        [np.array([2**31 - 1], np.int32), np.array([0.5])],
        [np.array([255], np.uint8), np.array([-1], np.int16)],
    ]
    for parts in exact:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            joined = join(hub, parts, None, strict=True)
        assert joined.tolist()[0] == parts[0].tolist()[0]
    # (int64 into bfloat16 is no widening, and numpy reads no bfloat16: unchecked)
    parts = [torch.tensor([3]), torch.tensor([1.0], dtype=torch.bfloat16)]
    with pytest.raises(LossyConversionError, match="partition 0: int64 -> bfloat16: values may"):
        join(hub, parts, None, strict=True)


@pytest.mark.parametrize("library", ["numpy", "torch"])
def test_zero_d_parts_are_refused(hub: ih.Hub, library: str) -> None:
    module = pytest.importorskip(library)
    parts = [module.asarray(1.0), module.asarray(2.0)]
    with pytest.raises(ConversionError, match="0-d"):
        join(hub, parts, None)


def test_dicts_of_tensors_are_joined_key_by_key(hub: ih.Hub) -> None:
    torch = pytest.importorskip("torch")
    tables = [pa.table({"x": [1.0, 2.0], "y": [3, 4]}), pa.table({"x": [5.0], "y": [6]})]
    parts = [ih.convert(t, to="torch", as_dict=True) for t in tables]
    result = join(hub, parts, None)
    assert set(result) == {"x", "y"}
    assert result["x"].tolist() == [1.0, 2.0, 5.0]
    assert result["y"].tolist() == [3, 4, 6] and result["y"].dtype == torch.int64
    arrays = [ih.convert(t, to="numpy", as_dict=True) for t in tables]
    assert join(hub, arrays, None)["y"].tolist() == [3, 4, 6]


@pytest.mark.gpu
def test_cupy_arrays_are_joined_on_the_gpu(hub: ih.Hub) -> None:
    cp = pytest.importorskip("cupy")
    parts = [cp.arange(6.0).reshape(3, 2), cp.empty((0, 2)), cp.ones((1, 2))]
    result = joined(hub, parts)
    assert isinstance(result, cp.ndarray) and result.device.id == parts[0].device.id
    assert bool((result == cp.concatenate(parts, axis=0)).all())
    with pytest.raises(ConversionError, match="0-d"):
        join(hub, [cp.asarray(1.0), cp.asarray(2.0)], None)


# -- nanoarrow -------------------------------------------------------------------------------
def test_nanoarrow_arrays_are_joined_zero_copy(hub: ih.Hub) -> None:
    na = pytest.importorskip("nanoarrow")
    tables = arrow_tables()
    structs = [na.Array(t) for t in tables]
    result = joined(hub, structs)
    assert isinstance(result, na.Array)
    assert pa.table(pa.chunked_array(result)).equals(pa.concat_tables(tables))
    assert_shares_every_part(hub, result, structs)

    columns = [na.Array(t.column("x")) for t in tables]
    column = joined(hub, columns)
    assert column.to_pylist() == [1, None, 3, 4, 5, 6]
    assert column.n_chunks == 3  # two, none (the empty part), one
    assert_shares_every_part(hub, column, columns)

    empties = [na.Array(tables[1].column("x"))] * 2
    assert len(joined(hub, empties)) == 0


def test_nanoarrow_streams_are_refused(hub: ih.Hub) -> None:
    na = pytest.importorskip("nanoarrow")
    parts = [na.ArrayStream(arrow_tables()[0]) for _ in "ab"]
    with pytest.raises(ConversionError, match="stream is read once"):
        join(hub, parts, None)


# -- Partitioned.compute() end to end ----------------------------------------------------------
class LocalParts(Parts):
    """Results already here, as an engine would bring them back."""

    engine = "local"

    def __init__(self, results: list[Any]) -> None:
        self._results = results

    def count(self) -> int:
        return len(self._results)

    def gather(self) -> tuple[list[Any], list[PartitionReport]]:
        return list(self._results), []


def test_partitioned_compute_joins_in_order(hub: ih.Hub) -> None:
    pl = pytest.importorskip("polars")
    tables = arrow_tables()
    results = [ih.convert(t, to="polars") for t in tables]
    options = Options()
    plan = metadata_plan(
        hub, tables[1], "polars", options, engine="local", source="local", partitions=3,
        result="ih.Partitioned",
    )  # fmt: skip
    empty = ih.convert(tables[1], to="polars")
    computed = Partitioned(LocalParts(results), hub, empty, plan).compute()
    assert isinstance(computed, pl.DataFrame)
    assert computed.equals(pl.concat(results), null_equal=True)
    assert Partitioned(LocalParts([]), hub, empty, plan).compute() is empty


# -- plugins ---------------------------------------------------------------------------------
def test_arro3_tables_and_columns_are_joined_zero_copy() -> None:
    hub = plugin_hub("interchange_hub_arro3")
    a3 = pytest.importorskip("arro3.core")
    tables = [t.replace_schema_metadata({"k": "v"}) for t in arrow_tables()]
    parts = [a3.Table.from_arrow(t) for t in tables]
    result = joined(hub, parts)
    assert isinstance(result, a3.Table)
    assert pa.table(result).equals(pa.concat_tables(tables), check_metadata=True)
    assert_shares_every_part(hub, result, parts)

    batches = [a3.RecordBatch.from_arrow(b) for t in tables for b in t.to_batches()]
    assert pa.table(joined(hub, batches)).equals(pa.concat_tables(tables))

    columns = [p.column("s") for p in parts]
    assert {type(c) for c in columns} == {a3.ChunkedArray}
    arrays = [*columns, hub.convert(pa.array(["g", None]), to="arro3")]  # an unnamed Array
    assert isinstance(arrays[-1], a3.Array)
    column = joined(hub, arrays)
    assert isinstance(column, a3.ChunkedArray)
    assert column.field.name == "s"  # the first part's name
    assert column.to_pylist() == ["a", None, "c", "d", "e", "f", "g", None]
    assert_shares_every_part(hub, column, arrays)
    with pytest.raises(ConversionError, match="mixed types|share one type"):
        join(hub, [parts[0], column], None)


def test_duckdb_relations_become_one_relation_in_order() -> None:
    hub = plugin_hub("interchange_hub_duckdb")
    duckdb = pytest.importorskip("duckdb")
    tables = arrow_tables()
    parts = [hub.convert(t, to="duckdb") for t in tables]
    result = joined(hub, parts)
    assert isinstance(result, duckdb.DuckDBPyRelation)
    assert result.fetchall() == [
        (1, "a"), (None, None), (3, "c"), (4, "d"), (5, "e"), (6, "f"),
    ]  # fmt: skip
    assert hub.convert(result, to="pyarrow").equals(pa.concat_tables(tables))
    # a relation made elsewhere runs once into Arrow
    con = duckdb.connect()
    foreign = con.sql("SELECT 7::BIGINT AS x, 'g' AS s")
    assert joined(hub, [parts[2], foreign]).fetchall() == [(6, "f"), (7, "g")]


def test_duckdb_relations_over_tables_of_other_types_are_read_back_by_duckdb() -> None:
    hub = plugin_hub("interchange_hub_duckdb")
    with pytest.warns(LossyConversionWarning, match="dictionary encoding"):
        first = hub.convert(pa.table({"c": pa.array(["a", "b"]).dictionary_encode()}), to="duckdb")
    second = hub.convert(pa.table({"c": ["z"]}), to="duckdb")
    result = joined(hub, [first, second])
    assert result.fetchall() == [("a",), ("b",), ("z",)]


def test_datasets_with_indices_mappings_keep_their_rows() -> None:
    hub = plugin_hub("interchange_hub_datasets")
    picked = hub.convert(pa.table({"x": [1, 2, 3]}), to="datasets").select([2, 0])
    plain = hub.convert(pa.table({"x": [4, 5]}), to="datasets")
    assert joined(hub, [picked, plain])["x"][:] == [3, 1, 4, 5]


def test_duckdb_relations_keep_their_time_zone() -> None:
    hub = plugin_hub("interchange_hub_duckdb")
    zone = "America/New_York"
    tables = [
        pa.table({"t": pa.array([0, 3_600_000_000], pa.timestamp("us", tz=zone))}),
        pa.table({"t": pa.array([7_200_000_000], pa.timestamp("us", tz=zone))}),
    ]
    parts = [hub.convert(t, to="duckdb") for t in tables]
    result = joined(hub, parts)
    assert hub.describe(result).columns[0].dtype == hub.describe(parts[0]).columns[0].dtype
    back = hub.convert(result, to="pyarrow")
    assert back.column("t").cast(pa.int64()).to_pylist() == [0, 3_600_000_000, 7_200_000_000]


def test_datasets_are_concatenated_zero_copy() -> None:
    hub = plugin_hub("interchange_hub_datasets")
    datasets = pytest.importorskip("datasets")
    parts = [hub.convert(t, to="datasets") for t in arrow_tables()]
    result = joined(hub, parts)
    assert isinstance(result, datasets.Dataset)
    expected = datasets.concatenate_datasets(parts)
    assert result.to_dict() == expected.to_dict()
    assert result["x"][:] == [1, None, 3, 4, 5, 6]
    assert_shares_every_part(hub, result, parts)


def test_jax_arrays_are_joined_along_axis_0() -> None:
    hub = plugin_hub("interchange_hub_jax")
    jax = pytest.importorskip("jax")
    jnp = jax.numpy
    parts = [jnp.arange(6.0).reshape(3, 2), jnp.zeros((0, 2)), jnp.ones((1, 2))]
    result = joined(hub, parts)
    assert isinstance(result, jax.Array)
    np.testing.assert_array_equal(np.asarray(result), np.asarray(jnp.concatenate(parts)))
    with pytest.raises(ConversionError, match="0-d"):
        join(hub, [jnp.asarray(1.0), jnp.asarray(2.0)], None)


def test_xarray_joins_along_the_dimension_the_conversion_made() -> None:
    hub = plugin_hub("interchange_hub_xarray")
    xr = pytest.importorskip("xarray")
    pd = pytest.importorskip("pandas")
    tables = [pa.table({"x": [1.0, 2.0], "s": ["a", "b"]}), pa.table({"x": [3.0], "s": ["c"]})]
    datasets = [hub.convert(t, to="xarray") for t in tables]
    result = joined(hub, datasets)
    assert isinstance(result, xr.Dataset) and result.sizes == {"index": 3}
    xr.testing.assert_identical(result, xr.concat(datasets, dim="index"))

    frames = [
        pd.DataFrame({"v": [1.0, 2.0]}, index=pd.Index([10, 20], name="key")),
        pd.DataFrame({"v": [3.0]}, index=pd.Index([30], name="key")),
    ]
    keyed = joined(hub, [hub.convert(f, to="xarray") for f in frames])
    assert keyed["key"].values.tolist() == [10, 20, 30]
    assert keyed["v"].values.tolist() == [1.0, 2.0, 3.0]

    arrays = [hub.convert(a, to="xarray") for a in (np.arange(6.0).reshape(3, 2), np.ones((1, 2)))]
    tensor = joined(hub, arrays)
    assert isinstance(tensor, xr.DataArray) and tensor.dims == ("dim_0", "dim_1")
    np.testing.assert_array_equal(tensor.values, np.concatenate([a.values for a in arrays]))
    with pytest.raises(ConversionError, match="0-d"):
        join(hub, [xr.DataArray(1.0), xr.DataArray(2.0)], None)
