"""The datasets plugin: Dataset and Column as sources, to="datasets" as a target.

Every zero-copy claim is checked by buffer address; every planned copy is checked to
share nothing the plan says it copies. The data is made here (no hub, no network).
"""

from __future__ import annotations

import gc
import importlib.metadata
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # nothing here may reach the network
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

import interchange_hub as ih
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
import torch
from interchange_hub.adapter import Column, Context, DataInfo, Kind, Unroutable

import interchange_hub_datasets

datasets = pytest.importorskip("datasets")

datasets.disable_progress_bars()


@pytest.fixture
def hub() -> ih.Hub:
    """The built-in adapters and this plugin, nothing from entry points."""
    return ih.Hub(autoload=False, plugins=[*ih.builtin_plugins(), interchange_hub_datasets])


def total_bytes(hub: ih.Hub, obj: Any) -> int:
    return sum(b.size for b in hub.buffers(obj))


def assert_claim_holds(hub: ih.Hub, src: Any, to: Any, **options: Any) -> Any:
    """Convert; a zero-copy plan must leave every source byte inside the result, and a
    plan that copies must not share every byte."""
    plan = hub.plan(src, to=to, **options)
    result = hub.convert(src, to=to, **options)
    total = total_bytes(hub, src)
    shared = hub.shared_bytes(src, result)
    if plan.zero_copy:
        assert shared >= total, f"zero-copy claimed, {shared} of {total} bytes shared\n{plan}"
    elif total:
        assert shared < total, f"a copy claimed, all {total} bytes shared\n{plan}"
    return result


def address(arr: Any) -> int:
    """The data buffer's address of a pyarrow Array (or a ChunkedArray's first chunk)."""
    chunk = arr.chunk(0) if isinstance(arr, pa.ChunkedArray) else arr
    return int(chunk.buffers()[1].address + chunk.offset * chunk.type.bit_width // 8)


def table_of(ds: Any) -> pa.Table:
    return ds.data.table


def sample(rows: int = 20) -> Any:
    rng = np.random.default_rng(5)
    return datasets.Dataset.from_dict(
        {
            "x": rng.standard_normal(rows),
            "i": np.arange(rows, dtype=np.int64) * 3,
            "s": [f"row{k}" if k % 4 else None for k in range(rows)],
        }
    )


def logical(ds: Any) -> list[dict[str, Any]]:
    """The Dataset's rows as datasets itself gives them (its indices mapping applied)."""
    return [dict(row) for row in ds]


# -- declarations ----------------------------------------------------------------------------
def test_registered_and_declared(hub: ih.Hub) -> None:
    adapter = hub.registry.get("datasets")
    assert isinstance(adapter, interchange_hub_datasets.DatasetsAdapter)
    assert adapter.type_kinds() == {datasets.Dataset: Kind.TABLE}
    assert hub.registry.get("hf") is adapter  # the alias
    assert type(hub.convert(pa.table({"a": [1]}), to=datasets.Dataset)) is datasets.Dataset
    assert type(hub.convert(pa.table({"a": [1]}), to="hf")) is datasets.Dataset
    try:
        dist = importlib.metadata.distribution("interchange-hub-datasets")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("the plugin is not installed (pip install -e plugins/interchange-hub-datasets)")
    eps = [ep for ep in dist.entry_points if ep.group == "interchange_hub"]
    assert [(ep.name, ep.value) for ep in eps] == [("datasets", "interchange_hub_datasets")]


def test_conformance() -> None:
    from interchange_hub.testing import assert_conforms

    assert_conforms(interchange_hub_datasets, "datasets")


# -- Dataset -> every library ----------------------------------------------------------------
def test_dataset_to_polars_shares_the_numbers(hub: ih.Hub) -> None:
    ds = sample()
    plan = hub.plan(ds, to="polars")
    df = assert_claim_holds(hub, ds, "polars")
    assert df.to_dicts() == logical(ds)
    assert "ds.data.table" in str(plan)
    # Numbers shared; polars rebuilds the strings as string_view (planned, per column).
    assert list(plan.copied_columns) == ["s"]
    assert df["x"].to_numpy().ctypes.data == address(table_of(ds).column("x"))
    numeric = ds.select_columns(["x", "i"])
    assert hub.plan(numeric, to="polars").zero_copy
    out = assert_claim_holds(hub, numeric, "polars")
    assert hub.shared_bytes(numeric, out) == total_bytes(hub, numeric) > 0


@pytest.mark.parametrize("lib", ["pyarrow", "nanoarrow", "pandas", "polars"])
def test_dataset_to_table_libraries(hub: ih.Hub, lib: str) -> None:
    ds = sample()
    result = assert_claim_holds(hub, ds, lib)
    back = hub.convert(result, to="pyarrow")
    assert back.to_pylist() == logical(ds)


def test_dataset_to_pyarrow_is_its_table_without_datasets_metadata(hub: ih.Hub) -> None:
    ds = sample()
    assert b"huggingface" in (table_of(ds).schema.metadata or {})
    table = hub.convert(ds, to="pyarrow")
    assert hub.plan(ds, to="pyarrow").zero_copy
    assert hub.shared_bytes(ds, table) == total_bytes(hub, ds)
    assert table.schema.metadata is None  # features metadata dropped: the data says what it is
    assert table.schema.remove_metadata() == table_of(ds).schema.remove_metadata()


@pytest.mark.parametrize("lib", ["numpy", "torch"])
def test_numeric_dataset_to_tensors(hub: ih.Hub, lib: str) -> None:
    ds = sample().select_columns(["x", "i"]).cast_column("i", datasets.Value("float64"))
    matrix = assert_claim_holds(hub, ds, lib)
    expected = [[r["x"], r["i"]] for r in logical(ds)]
    assert matrix.tolist() == expected
    columns = hub.convert(ds, to=lib, as_dict=True)
    assert hub.plan(ds, to=lib, as_dict=True).zero_copy
    for name in ("x", "i"):
        ptr = columns[name].data_ptr() if lib == "torch" else columns[name].ctypes.data
        assert ptr == address(table_of(ds).column(name))


def test_a_column_to_torch_is_zero_copy(hub: ih.Hub) -> None:
    ds = sample(1000)
    column = ds["x"]
    assert isinstance(column, datasets.Column)
    assert hub.describe(column).kind == Kind.COLUMN
    assert hub.plan(column, to="torch").zero_copy
    tensor = assert_claim_holds(hub, column, "torch")
    assert tensor.data_ptr() == address(table_of(ds).column("x"))
    assert tensor.tolist() == list(column)
    series = assert_claim_holds(hub, ds["i"], "polars")
    assert series.name == "i" and series.to_list() == list(ds["i"])
    strings = hub.convert(ds["s"], to="pandas")
    assert strings.isna().tolist()[:3] == [True, False, False] and strings[1] == "row1"
    # An integer column with nulls becomes float64 with NaN in a tensor, warned.
    ints = datasets.Dataset.from_dict({"n": [1, None, 3]})
    with pytest.warns(ih.LossyConversionWarning, match="'n'"):
        tensor = hub.convert(ints["n"], to="torch")
    assert tensor.dtype == torch.float64 and tensor.isnan().tolist() == [False, True, False]


def test_copy_true_shares_nothing(hub: ih.Hub) -> None:
    ds = sample()
    for lib in ("pyarrow", "polars", "pandas"):
        assert hub.shared_bytes(ds, hub.convert(ds, to=lib, copy=True)) == 0
    numeric = ds.select_columns(["x"])
    tensor = hub.convert(numeric, to="torch", copy=True)
    assert hub.shared_bytes(numeric, tensor) == 0


# -- the indices mapping: select, shuffle, filter, sort ----------------------------------
def _sorted(ds: Any) -> Any:
    with warnings.catch_warnings():
        # datasets 5.2 passes null_placement to pyarrow 26's SortOptions, deprecated there.
        warnings.simplefilter("ignore", FutureWarning)
        return ds.sort("x")


VIEWS: dict[str, Any] = {
    "select": lambda ds: ds.select([7, 2, 2, 19, 0]),
    "shuffle": lambda ds: ds.shuffle(seed=3),
    "filter": lambda ds: ds.filter(lambda row: row["i"] % 2 == 0),
    "sort": _sorted,
    "shuffled, then a range": lambda ds: ds.shuffle(seed=1).select(range(3, 9)),
}


@pytest.mark.parametrize("how", list(VIEWS))
def test_an_indices_mapping_is_applied(hub: ih.Hub, how: str) -> None:
    view = VIEWS[how](sample())
    assert view._indices is not None and len(table_of(view)) == 20
    info = hub.describe(view)
    assert info.rows == len(view)
    assert [c.nulls for c in info.columns] == [0, 0, sum(r["s"] is None for r in logical(view))]
    plan = hub.plan(view, to="polars")
    assert set(plan.copied_columns) == {"x", "i", "s"}
    assert "Table.take" in str(plan) and "indices mapping" in str(plan)
    df = hub.convert(view, to="polars")
    assert df.to_dicts() == logical(view)  # the logical rows, in their order
    assert hub.shared_bytes(view, df) == 0  # the planned copy really copies
    table = hub.convert(view, to="pyarrow")
    assert table.to_pylist() == logical(view)
    assert all(c.num_chunks == 1 for c in table.columns)
    assert hub.convert(view["x"], to="torch").tolist() == list(view["x"])


def test_copy_false_refuses_an_indices_mapping(hub: ih.Hub) -> None:
    view = sample().shuffle(seed=0)
    with pytest.raises(ih.CopyRequiredError, match="indices mapping"):
        hub.convert(view, to="pyarrow", copy=False)
    with pytest.raises(ih.CopyRequiredError, match="indices mapping"):
        hub.convert(view["x"], to="torch", copy=False)
    # A contiguous select is a slice in datasets itself: no mapping, nothing copied.
    sliced = sample().select(range(4, 12))
    assert sliced._indices is None
    table = hub.convert(sliced, to="pyarrow", copy=False)
    assert table.to_pylist() == logical(sliced)
    assert address(table.column("x")) == address(table_of(sliced).column("x"))


def test_an_indices_mapping_over_a_dictionary_column(hub: ih.Hub) -> None:
    table = pa.table({"d": pa.array(["a", "b", "c", "a"] * 5).dictionary_encode()})
    ds = datasets.Dataset(table).shuffle(seed=2)
    # datasets decodes dictionaries itself; a column it stored encoded is gathered by
    # Table.take (which keeps the dictionary), and copy=True still shares nothing.
    copied = hub.convert(ds, to="pyarrow", copy=True)
    assert copied.to_pylist() == logical(ds)
    assert hub.shared_bytes(ds, copied) == 0


# -- memory-mapped datasets (save_to_disk / load_from_disk) ------------------------------
def _mapped_ranges(path: Path) -> list[tuple[int, int]]:
    ranges = []
    for line in Path("/proc/self/maps").read_text().splitlines():
        if line.endswith(str(path)):
            lo, hi = line.split()[0].split("-")
            ranges.append((int(lo, 16), int(hi, 16)))
    return ranges


@pytest.fixture
def on_disk(tmp_path: Path) -> Any:
    rows = 5000  # datasets writes record batches of 1000 rows: 5 chunks per column
    source = datasets.Dataset.from_dict(
        {
            "x": np.arange(rows, dtype=np.float64) / 7,
            "y": np.arange(rows, dtype=np.float64),
            "s": [str(k % 13) for k in range(rows)],
        }
    )
    source.save_to_disk(str(tmp_path / "ds"))
    return datasets.load_from_disk(str(tmp_path / "ds"))


def test_a_loaded_dataset_is_memory_mapped_in_chunks(hub: ih.Hub, on_disk: Any) -> None:
    ds = on_disk
    assert isinstance(ds.data, datasets.table.MemoryMappedTable)
    assert table_of(ds).column("x").num_chunks == 5
    if sys.platform.startswith("linux"):
        ranges = _mapped_ranges(Path(ds.cache_files[0]["filename"]))
        assert ranges, "the Arrow file is not mapped"
        for buf in hub.buffers(ds):
            assert any(lo <= buf.address < hi for lo, hi in ranges), "a buffer outside the map"
    plan = hub.plan(ds, to="pyarrow")
    assert plan.zero_copy and "memory-mapped" in str(plan) and "5 record batches" in str(plan)


@pytest.mark.parametrize("lib", ["pyarrow", "nanoarrow", "polars"])
def test_a_mapped_dataset_stays_mapped(hub: ih.Hub, on_disk: Any, lib: str) -> None:
    numeric = on_disk.select_columns(["x", "y"])
    assert hub.plan(numeric, to=lib).zero_copy
    result = assert_claim_holds(hub, numeric, lib)
    assert hub.shared_bytes(numeric, result) == total_bytes(hub, numeric) == 80_000


def test_a_mapped_dataset_as_a_stream_of_batches_is_shared(hub: ih.Hub, on_disk: Any) -> None:
    reader = hub.convert(on_disk, to=pa.RecordBatchReader)
    assert hub.plan(on_disk, to=pa.RecordBatchReader).zero_copy
    chunks = table_of(on_disk).column("x").chunks
    batches = list(reader)
    assert len(batches) == 5
    for batch, chunk in zip(batches, chunks, strict=True):
        assert address(batch.column("x")) == address(chunk)


def test_a_mapped_dataset_into_one_tensor_copies_and_says_why(hub: ih.Hub, on_disk: Any) -> None:
    numeric = on_disk.select_columns(["x", "y"])
    plan = hub.plan(numeric, to="torch")
    assert not plan.zero_copy and "5 chunks are concatenated" in str(plan)
    tensor = assert_claim_holds(hub, numeric, "torch")
    assert tensor[:, 0].tolist() == list(on_disk["x"])
    assert hub.shared_bytes(numeric, tensor) == 0
    with pytest.raises(ih.CopyRequiredError, match="chunks"):
        hub.convert(numeric, to="torch", copy=False)
    # One result per column does not help: each column is still 5 chunks.
    assert not hub.plan(numeric, to="torch", as_dict=True).zero_copy


def test_a_mapped_shuffle_is_gathered(hub: ih.Hub, on_disk: Any) -> None:
    view = on_disk.shuffle(seed=4).select(range(100))
    df = hub.convert(view, to="polars")
    assert df.to_dicts() == logical(view)
    assert hub.shared_bytes(view, df) == 0


def test_results_outlive_a_mapped_dataset(hub: ih.Hub, on_disk: Any) -> None:
    expected = list(on_disk["x"])
    df = hub.convert(on_disk.select_columns(["x"]), to="polars")
    del on_disk
    gc.collect()
    junk = [np.full(4096, 7.5) for _ in range(64)]
    del junk
    assert df["x"].to_list() == expected


# -- features with no Arrow equivalent ---------------------------------------------------
def rich() -> Any:
    features = datasets.Features(
        {
            "label": datasets.ClassLabel(names=["neg", "pos"]),
            "img": datasets.Image(),
            "grid": datasets.Array2D(shape=(2, 2), dtype="float32"),
            "tags": datasets.List(datasets.ClassLabel(names=list("abcdefg"))),
            "tr": datasets.Translation(languages=["en", "fr"]),
            "v": datasets.Value("int32"),
        }
    )
    return datasets.Dataset.from_dict(
        {
            "label": [0, 1, 1],
            "img": [{"bytes": b"\x89PNG", "path": None}, {"bytes": None, "path": "x.png"}] * 1
            + [None],
            "grid": [np.full((2, 2), k, np.float32) for k in range(3)],
            "tags": [[0], [1, 6], []],
            "tr": [{"en": "a", "fr": "b"}] * 3,
            "v": [1, 2, 3],
        },
        features=features,
    )


def test_features_without_an_arrow_equivalent_are_warned(hub: ih.Hub) -> None:
    ds = rich()
    plan = hub.plan(ds, to="polars")
    assert sorted(loss.column for loss in plan.losses) == ["grid", "img", "label", "tags"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        df = hub.convert(ds, to="polars")
    lossy = [str(w.message) for w in caught if w.category is ih.LossyConversionWarning]
    assert len(lossy) == 4
    assert any("label names ('neg', 'pos') are dropped; the class ids are kept" in m for m in lossy)
    assert any("Image feature is dropped" in m for m in lossy)
    assert any("Array2D(shape=(2, 2), dtype='float32')" in m for m in lossy)
    assert any("'tags'" in m and "('a', 'b', 'c', 'd', 'e', ...)" in m for m in lossy)
    assert df["label"].to_list() == [0, 1, 1]  # the values are kept
    assert df["grid"].to_list()[2] == [[2.0, 2.0], [2.0, 2.0]]
    assert df["img"].to_list()[1] == {"bytes": None, "path": "x.png"}
    assert df["tr"].to_list()[0] == {"en": "a", "fr": "b"}  # a plain struct: no loss


def test_strict_refuses_before_converting(hub: ih.Hub) -> None:
    with pytest.raises(ih.LossyConversionError, match="label names"):
        hub.convert(rich(), to="pyarrow", strict=True)
    plain = rich().select_columns(["tr", "v"])
    assert hub.convert(plain, to="pyarrow", strict=True).num_rows == 3


def test_array_features_export_their_storage_without_a_copy(hub: ih.Hub) -> None:
    ds = rich().select_columns(["grid"])
    source = table_of(ds).column("grid")
    assert isinstance(source.type, pa.BaseExtensionType)
    with pytest.warns(ih.LossyConversionWarning):
        table = hub.convert(ds, to="pyarrow")
    assert table.column("grid").type == pa.list_(pa.list_(pa.float32()))
    assert hub.shared_bytes(ds, table) == total_bytes(hub, ds) > 0
    plan = hub.plan(ds, to="pyarrow")  # planning warns of nothing; converting does
    assert plan.zero_copy and "list<item: list<item: float>>" in str(plan)


# -- every library -> datasets ---------------------------------------------------------------
def frame() -> pa.Table:
    return pa.table(
        {
            "a": pa.array(np.arange(50, dtype=np.int64)),
            "f": pa.array(np.linspace(0, 1, 50)),
            "s": pa.array([f"v{k}" if k % 5 else None for k in range(50)]),
            "n": pa.array([k if k % 3 else None for k in range(50)], pa.int32()),
        }
    )


SOURCES: dict[str, Any] = {
    "pyarrow table": frame,
    "pyarrow batch": lambda: frame().to_batches()[0],
    "polars frame": lambda: pl.from_arrow(frame()),
    "pandas frame": lambda: frame().to_pandas(types_mapper=pd.ArrowDtype),
    "sliced table": lambda: frame().slice(7, 30),
    "chunked table": lambda: pa.concat_tables([frame().slice(0, 20), frame().slice(20)]),
}


@pytest.mark.parametrize("name", list(SOURCES))
def test_tables_to_datasets(hub: ih.Hub, name: str) -> None:
    source = SOURCES[name]()
    expected = hub.convert(source, to="pyarrow").to_pylist()
    plan = hub.plan(source, to="datasets")
    ds = assert_claim_holds(hub, source, "datasets")
    assert type(ds) is datasets.Dataset and logical(ds) == expected
    assert plan.zero_copy, plan
    assert hub.shared_bytes(source, ds) == total_bytes(hub, source) > 0


def test_polars_to_datasets_by_address(hub: ih.Hub) -> None:
    df = pl.DataFrame({"x": np.arange(1000.0), "s": [str(k) for k in range(1000)]})
    plan = hub.plan(df, to="datasets")
    assert plan.zero_copy and "fingerprinted without hashing" in str(plan)
    ds = hub.convert(df, to="datasets")
    assert address(table_of(ds).column("x")) == df["x"].to_numpy().ctypes.data
    assert ds.features["s"] == datasets.Value("string_view")  # polars' strings, as they are
    assert hub.convert(ds, to="polars").equals(df)  # and back, values and dtypes
    assert hub.shared_bytes(df, ds) == total_bytes(hub, df)


def test_a_dataset_is_made_without_hashing_the_data(
    hub: ih.Hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(dataset: Any) -> str:
        raise AssertionError("Dataset() hashed the data to fingerprint it")

    monkeypatch.setattr(datasets.arrow_dataset, "generate_fingerprint", refuse)
    ds = hub.convert(frame(), to="datasets")
    assert isinstance(ds._fingerprint, str) and len(ds._fingerprint) == 16
    assert ds._fingerprint != hub.convert(frame(), to="datasets")._fingerprint


def test_columns_tensors_and_streams_to_datasets(hub: ih.Hub) -> None:
    series = pl.Series("v", [1.5, None, 3.5])
    ds = assert_claim_holds(hub, series, "datasets")
    assert ds.column_names == ["v"] and ds["v"][:] == [1.5, None, 3.5]
    values = np.arange(100.0)
    ds = assert_claim_holds(hub, values, "datasets")
    assert ds.column_names == ["values"]
    assert address(table_of(ds).column("values")) == values.ctypes.data
    matrix = np.asfortranarray(np.arange(12.0).reshape(6, 2))
    ds = assert_claim_holds(hub, matrix, "datasets")
    assert ds.column_names == ["column_0", "column_1"] and ds["column_1"][:2] == [1.0, 3.0]
    table = frame()
    reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=7))
    assert "read once" in str(hub.plan(reader, to="datasets"))
    ds = hub.convert(reader, to="datasets")
    assert logical(ds) == table.to_pylist()
    with pytest.raises(ih.ConsumedSourceError):
        hub.convert(reader, to="datasets")


def test_dictionary_columns_are_decoded_as_a_planned_copy(hub: ih.Hub) -> None:
    table = pa.table({"d": pa.array(["a", "b", "a"] * 10).dictionary_encode(), "x": range(30)})
    plan = hub.plan(table, to="datasets")
    assert list(plan.copied_columns) == ["d"] and "datasets stores dictionary" in str(plan)
    with pytest.warns(ih.LossyConversionWarning, match="dictionary encoding is dropped"):
        ds = hub.convert(table, to="datasets")
    assert ds.features["d"] == datasets.Value("string") and ds["d"][:3] == ["a", "b", "a"]
    assert address(table_of(ds).column("x")) == address(table.column("x"))  # the rest shared
    with pytest.raises(ih.CopyRequiredError, match="'d'"):
        hub.convert(table, to="datasets", copy=False)
    with pytest.raises(ih.LossyConversionError):
        hub.convert(table, to="datasets", strict=True)


def test_a_dictionary_of_structs_of_string_views_is_decoded(hub: ih.Hub) -> None:
    # pyarrow 26 takes no string views, also nested in a dictionary's struct values
    values = pa.array([str(i) if i % 3 else None for i in range(12)]).cast(pa.string_view())
    structs = pa.StructArray.from_arrays([values.slice(3, 8)], ["x"])
    column = pa.DictionaryArray.from_arrays(pa.array([0, 7, None, 2] * 4, pa.int32()), structs)
    table = pa.table({"d": pa.chunked_array([column, column.slice(1)])})
    with pytest.warns(ih.LossyConversionWarning, match="dictionary encoding is dropped"):
        ds = hub.convert(table, to="datasets")
    assert ds["d"] == table.column("d").to_pylist()


@pytest.mark.parametrize(
    ("column", "reason"),
    [
        (pa.array([[("a", 1)]], pa.map_(pa.string(), pa.int64())), "no feature type for maps"),
        (pa.array([pa.MonthDayNano([1, 2, 3])], pa.month_day_nano_interval()), "intervals"),
        (pa.RunEndEncodedArray.from_arrays(pa.array([1], pa.int32()), pa.array([7])), "run-end"),
        (pa.array([[1]], pa.list_view(pa.int64())), "list views"),
        (pa.array([b"0" * 16], pa.uuid()), "extension types"),
        (
            pa.UnionArray.from_sparse(pa.array([0], pa.int8()), [pa.array([1]), pa.array(["a"])]),
            "unions",
        ),
    ],
)
def test_types_datasets_cannot_hold_are_refused(hub: ih.Hub, column: Any, reason: str) -> None:
    with pytest.raises(ih.NoRouteError) as caught:
        hub.convert(pa.table({"c": column}), to="datasets")
    assert any(reason in r and r.startswith("arrow -> datasets") for r in caught.value.reasons)
    assert reason in str(caught.value)


def test_repeated_names_and_no_columns_are_refused(hub: ih.Hub) -> None:
    twice = pa.Table.from_arrays([pa.array([1]), pa.array([2])], names=["a", "a"])
    with pytest.raises(ih.NoRouteError) as caught:
        hub.convert(twice, to="datasets")
    assert any("repeated column names" in r for r in caught.value.reasons)
    edge = next(e for e in interchange_hub_datasets.DatasetsAdapter().edges() if e.target == NAME)
    with pytest.raises(Unroutable, match="at least one column"):
        edge.estimate(Context(DataInfo(Kind.TABLE, (), rows=0)))
    tensor = DataInfo(Kind.TENSOR, (Column("", "float64", 48, 0),), rows=3, shape=(3, 2))
    with pytest.raises(Unroutable, match="Arrow bridge"):
        edge.estimate(Context(tensor))


NAME = "datasets"


def test_copy_true_into_datasets_shares_nothing(hub: ih.Hub) -> None:
    df = pl.DataFrame({"x": np.arange(100.0)})
    ds = hub.convert(df, to="datasets", copy=True)
    assert hub.shared_bytes(df, ds) == 0 and ds["x"][:3] == [0.0, 1.0, 2.0]


# -- edge cases ------------------------------------------------------------------------------
def test_empty_and_all_null(hub: ih.Hub) -> None:
    empty = sample().select([])
    assert len(empty) == 0
    assert hub.convert(empty, to="polars").shape == (0, 3)
    assert hub.convert(empty, to="pyarrow").schema.names == ["x", "i", "s"]
    nothing = sample().filter(lambda row: False)
    assert hub.convert(nothing, to="pandas").shape == (0, 3)
    ds = hub.convert(pa.table({"a": pa.array([], pa.int64())}), to="datasets")
    assert len(ds) == 0 and ds.features["a"] == datasets.Value("int64")
    nulls = datasets.Dataset.from_dict({"n": [None, None, None]})
    assert hub.describe(nulls.shuffle(seed=0)).columns[0].nulls == 3
    assert hub.convert(nulls, to="polars")["n"].to_list() == [None, None, None]


def test_odd_dtypes_round_trip(hub: ih.Hub) -> None:
    table = pa.table(
        {
            "f16": pa.array(np.arange(4, dtype=np.float16)),
            "u64": pa.array(np.arange(4, dtype=np.uint64)),
            "ts": pa.array(pd.date_range("2024-01-01", periods=4, tz="Europe/Paris")),
            "dec": pa.array([1, 2, 3, 4], pa.decimal128(10, 2)),
            "lst": pa.array([[1], [], None, [2, 3]]),
            "bin": pa.array([b"a", b"", None, b"d"], pa.large_binary()),
            "st": pa.array([{"a": 1}, None, {"a": 3}, {"a": 4}]),
        }
    )
    ds = assert_claim_holds(hub, table, "datasets")
    assert hub.plan(table, to="datasets").zero_copy
    back = assert_claim_holds(hub, ds, "pyarrow")
    assert back.equals(table)


def test_strided_and_non_contiguous_sources(hub: ih.Hub) -> None:
    base = np.arange(40.0)
    strided = base[::2]
    plan = hub.plan(strided, to="datasets")
    ds = assert_claim_holds(hub, strided, "datasets")
    assert ds["values"][:] == strided.tolist()
    assert not plan.zero_copy  # Arrow needs contiguous values: numpy gathers them (planned)
    c_order = np.arange(12.0).reshape(6, 2)  # row-major: each column is strided
    ds = assert_claim_holds(hub, c_order, "datasets")
    assert ds["column_1"][:] == c_order[:, 1].tolist()


def test_a_struct_field_column_is_refused_clearly(hub: ih.Hub) -> None:
    ds = datasets.Dataset.from_dict({"p": [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]})
    with pytest.raises(ih.UnsupportedObjectError, match=r"flatten"):
        hub.convert(ds["p"]["a"], to="polars")
    assert hub.convert(ds["p"], to="polars").to_list() == [{"a": 1, "b": "x"}, {"a": 2, "b": "y"}]
    flat = ds.flatten()
    assert hub.convert(flat["p.a"], to="torch").tolist() == [1, 2]


def test_dataset_dicts_and_iterable_datasets_are_refused(hub: ih.Hub) -> None:
    ds = sample()
    splits = datasets.DatasetDict({"train": ds, "test": ds.select(range(3))})
    with pytest.raises(ih.UnsupportedObjectError) as caught:
        hub.convert(splits, to="polars")
    message = str(caught.value)
    assert "DatasetDict" in message and "ds['train']" in message and "'test'" in message
    assert isinstance(caught.value, TypeError)
    with pytest.raises(ih.UnsupportedObjectError, match="materialise it first"):
        hub.convert(ds.to_iterable_dataset(), to="pyarrow")
    assert hub.buffers(splits) == []
    assert hub.convert(splits["train"], to="polars").height == 20


def test_the_default_hub_loads_the_plugin() -> None:
    try:
        importlib.metadata.distribution("interchange-hub-datasets")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("the plugin is not installed")
    # In a fresh interpreter with autoload on (this session's tests turn it off).
    code = (
        "import interchange_hub as ih, polars as pl, torch, warnings\n"
        "warnings.simplefilter('ignore')\n"
        "ds = ih.convert(pl.DataFrame({'a': [1, 2]}), to='datasets')\n"
        "assert ih.convert(ds, to='polars')['a'].to_list() == [1, 2]\n"
        "assert isinstance(ih.convert(ds, to='torch'), torch.Tensor)\n"
        "print(type(ds).__module__)"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTERCHANGE_HUB_")}
    run = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.startswith("datasets")


def test_the_format_does_not_change_what_is_converted(hub: ih.Hub) -> None:
    ds = sample()
    formatted = ds.with_format("torch", columns=["x"])  # how ds[...] answers, not the data
    df = hub.convert(formatted, to="polars")
    assert df.columns == ["x", "i", "s"] and df.to_dicts() == logical(ds)
    assert hub.shared_bytes(formatted, df) == hub.shared_bytes(ds, hub.convert(ds, to="polars"))


def test_concatenated_datasets(hub: ih.Hub, on_disk: Any) -> None:
    both = datasets.concatenate_datasets([on_disk, on_disk.select(range(10))])
    assert table_of(both).column("x").num_chunks == 6
    table = assert_claim_holds(hub, both.select_columns(["x"]), "pyarrow")
    assert table.column("x").to_pylist() == list(both["x"])
    assert hub.plan(both.select_columns(["x"]), to="polars").zero_copy


def test_non_nullable_fields_become_nullable_without_a_copy(hub: ih.Hub) -> None:
    values = pa.array(np.arange(10.0))
    schema = pa.schema([pa.field("x", pa.float64(), nullable=False)])
    table = pa.Table.from_arrays([values], schema=schema)
    assert hub.plan(table, to="datasets").zero_copy
    ds = hub.convert(table, to="datasets")
    assert table_of(ds).schema.field("x").nullable  # datasets' fields are all nullable
    assert address(table_of(ds).column("x")) == address(values)


def test_a_sliced_list_of_dictionaries_keeps_its_values(hub: ih.Hub) -> None:
    # Found by tests/fuzz.py: datasets' own nested cast turns the empty list at the start
    # of this slice into [None]; the plugin decodes with pyarrow's cast instead.
    inner = pa.array(["a", "b", None, "a", "c", "b", "x", "y", "z", "w", "v", "u"])
    offsets = pa.array([0, 2, 2, 3, 6, 8, 9, 12], pa.int64())
    mask = pa.array([False, False, True, False, False, False, False])
    lists = pa.LargeListArray.from_arrays(offsets, inner.dictionary_encode(), mask=mask)
    table = pa.table({"l": pa.chunked_array([lists.slice(1, 3), lists.slice(4, 3)])})
    with pytest.warns(ih.LossyConversionWarning, match="dictionary encoding"):
        ds = hub.convert(table, to="datasets")
    assert ds.features["l"] == datasets.LargeList(datasets.Value("string"))
    assert logical(ds) == table.to_pylist()


def test_nested_non_nullable_fields_are_kept_without_a_copy(hub: ih.Hub) -> None:
    values = pa.array(np.arange(6))
    item = pa.field("item", pa.int64(), nullable=False)
    lists = pa.ListArray.from_arrays(pa.array([0, 2, 6], pa.int32()), values).cast(pa.list_(item))
    structs = pa.StructArray.from_arrays(
        [pa.array([7, 8])], fields=[pa.field("a", pa.int64(), nullable=False)]
    )
    table = pa.table({"lst": lists, "st": structs})
    assert hub.plan(table, to="datasets").zero_copy
    ds = hub.convert(table, to="datasets")
    assert hub.shared_bytes(table, ds) == total_bytes(hub, table)
    assert logical(ds) == table.to_pylist()


def test_route_keys_serve_repeated_conversions_and_tell_datasets_apart(hub: ih.Hub) -> None:
    adapter = hub.registry.owner(datasets.Dataset(pa.table({"a": [1]})))
    assert adapter is not None
    plain = datasets.Dataset(pa.table({"a": [1, 2, 3]}))
    holes = datasets.Dataset(pa.table({"a": [1, None, 3]}))
    labels = datasets.Dataset.from_dict(
        {"a": [0, 1, 0]}, features=datasets.Features({"a": datasets.ClassLabel(names=["x", "y"])})
    )
    keys = [adapter.route_key(d) for d in (plain, holes, labels)]
    assert None not in keys and len(set(keys)) == 3  # nulls and features decide the plan
    assert adapter.route_key(plain.select([2, 0])) is None  # an indices mapping: planned
    assert adapter.route_key(plain["a"]) is None  # a Column: planned
    for _ in range(2):  # planned, then from the route cache
        assert hub.convert(plain, to="pyarrow").column("a").to_pylist() == [1, 2, 3]
        assert hub.convert(holes, to="pandas")["a"].tolist()[0] == 1
        with pytest.warns(ih.LossyConversionWarning):  # the labels' names are dropped
            hub.convert(labels, to="polars")


def test_polars_categoricals_are_decoded_with_a_warning(hub: ih.Hub) -> None:
    """polars' Categoricals are dictionaries of string views, which pyarrow 26 can neither
    cast nor take: the plugin gathers them as large strings (it failed mid-run)."""
    frame = pl.DataFrame({"c": pl.Series(["a", None, "b", "a"], dtype=pl.Categorical)})
    with pytest.warns(ih.LossyConversionWarning, match="column 'c'.*dictionary encoding"):
        ds = hub.convert(frame, to="datasets")
    assert str(ds.data.table.schema.field("c").type) == "string_view"
    assert ds["c"] == ["a", None, "b", "a"]
    with pytest.raises(ih.LossyConversionError):
        hub.convert(frame, to="datasets", strict=True)


@pytest.mark.parametrize(
    "make",
    [
        lambda: sample(),
        lambda: sample().shuffle(seed=1),
        lambda: sample()["x"],
        lambda: rich().select_columns(["grid"]),
        lambda: datasets.Dataset(pa.table({"a": [1, 2]}).replace_schema_metadata({"mine": "kept"})),
        lambda: datasets.Dataset(pa.table({"a": [1.5, None]})),
    ],
)
def test_the_bound_export_is_the_export(hub: ih.Hub, make: Any) -> None:
    # The hot path reads the table from its slot; it must give what the full export gives
    # (datasets' metadata dropped, other metadata kept, storage types, indices applied).
    from interchange_hub_datasets import _export, _export_bind

    obj = make()
    ctx = Context(hub.describe(obj), target="pyarrow")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ih.LossyConversionWarning)
        bound, full = _export_bind(ctx)(obj), _export(obj, ctx)
        converted = [hub.convert(obj, to="pyarrow") for _ in range(3)]  # planned, then cached
    for result in (bound, *converted):
        assert result.equals(full)
        schema = result.schema if isinstance(result, pa.Table) else None
        if schema is not None:
            assert schema.equals(full.schema, check_metadata=True)
            assert b"huggingface" not in (schema.metadata or {})


def test_a_categorical_inside_a_struct_reaches_a_dataset_decoded(hub: ih.Hub) -> None:
    # polars' Categorical is a dictionary of string views; pyarrow casts none nested in a
    # struct to its values (found by the fuzzer: ConversionError mid-run). Both the table
    # and a lazy frame of it, with and without copy=True.
    values = [{"c": "a", "n": 1}, {"c": None, "n": 2}, None, {"c": "b", "n": 3}]
    frame = pl.DataFrame(
        {"s": pl.Series(values, dtype=pl.Struct({"c": pl.Categorical, "n": pl.Int64}))}
    )
    for source, copy in [(frame, None), (frame, True), (frame.lazy(), True)]:
        with pytest.warns(ih.LossyConversionWarning, match="dictionary encoding is dropped"):
            ds = hub.convert(source, to="datasets", copy=copy)
        assert ds.num_rows == 4 and ds.data.column("s").to_pylist() == values
