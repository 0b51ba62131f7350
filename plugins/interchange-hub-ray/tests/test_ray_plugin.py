"""The Ray plugin on a real local Ray cluster: Datasets converted block by block in Ray
tasks, by the workers' own hubs, every zero-copy claim checked by buffer address."""

from __future__ import annotations

import importlib.metadata
import json
import logging
import os
import pickle
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from typing import Any

# Use only the plugins each test names, never those installed in the environment (the
# Ray workers inherit this too: their hubs have the built-in adapters only).
os.environ.setdefault("INTERCHANGE_HUB_DISABLE_PLUGIN_AUTOLOAD", "1")

import interchange_hub as ih
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
import ray
import ray.data
import torch
from interchange_hub.errors import (
    CopyRequiredError,
    LossyConversionError,
    LossyConversionWarning,
    WriteThroughWarning,
)
from interchange_hub.partitioned import PartitionReport

import interchange_hub_ray
from interchange_hub_ray import RayAdapter, RayCollection

ROWS = 1000  # rows per block


@pytest.fixture(scope="session", autouse=True)
def ray_cluster() -> Iterator[float]:
    """One local Ray cluster for the whole file: 2 CPUs, a small object store, no
    dashboard, no worker logs on the driver. Yields how long ``ray.init`` took."""
    start = time.perf_counter()
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        object_store_memory=150 * 1024 * 1024,
        log_to_driver=False,
        configure_logging=False,
    )
    seconds = time.perf_counter() - start
    # Ray Data's context warns of a deprecated field it sets itself when first made.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        context = ray.data.DataContext.get_current()
    context.enable_progress_bars = False
    logging.getLogger("ray.data").setLevel(logging.ERROR)
    try:
        yield seconds
    finally:
        ray.shutdown()


@pytest.fixture
def hub() -> ih.Hub:
    """The built-in adapters and this plugin, nothing from entry points."""
    return ih.Hub(autoload=False, plugins=[*ih.builtin_plugins(), interchange_hub_ray])


def blocks(n: int = 4) -> list[pa.Table]:
    """``n`` blocks of numbers (zero-copy into polars and torch), ``ROWS`` rows each."""
    return [
        pa.table(
            {
                "i": pa.array(np.arange(k * ROWS, (k + 1) * ROWS, dtype=np.int64)),
                "x": pa.array(np.arange(ROWS, dtype=np.float64) + k / 10),
            }
        )
        for k in range(n)
    ]


def dataset(tables: list[pa.Table]) -> Any:
    ds = ray.data.from_arrow(tables)
    assert ds.num_blocks() == len(tables)  # one block per table, in order
    return ds


def arrow_blocks(ds: Any) -> list[pa.Table]:
    """The Dataset's blocks, read in this process: the object store's shared memory,
    mapped at the same addresses by every ``ray.get`` here."""
    return list(ray.get(ds.to_arrow_refs()))


def pid(report: PartitionReport) -> int:
    return int(report.worker.rsplit(":", 1)[1])


# -- registration ----------------------------------------------------------------------------
def test_registered_and_declared(hub: ih.Hub) -> None:
    ds = dataset(blocks(2))
    adapter = hub.registry.owner(ds)
    assert isinstance(adapter, RayAdapter) and adapter.name == "ray"
    assert isinstance(adapter.collection(ds), RayCollection)
    assert hub.registry.owner(ds.map_batches(lambda b: b)) is adapter  # lazy Datasets too
    try:
        dist = importlib.metadata.distribution("interchange-hub-ray")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("the plugin is not installed (pip install -e plugins/interchange-hub-ray)")
    eps = [ep for ep in dist.entry_points if ep.group == "interchange_hub"]
    assert [(ep.name, ep.value) for ep in eps] == [("ray", "interchange_hub_ray")]


def test_describe_and_meta_come_from_the_schema(hub: ih.Hub) -> None:
    tables = blocks(3)
    ds = dataset(tables)
    info = hub.describe(ds)
    assert info.rows == -1 and [c.name for c in info.columns] == ["i", "x"]
    assert all(c.nbytes == -1 and c.nulls == -1 for c in info.columns)
    meta = RayCollection(ds).meta
    assert isinstance(meta, pa.Table) and meta.num_rows == 0
    assert meta.schema == tables[0].schema
    assert RayCollection(ds).npartitions == 3
    assert RayCollection(ds.map_batches(lambda b: b)).npartitions is None  # not known yet


# -- plans -----------------------------------------------------------------------------------
def test_plan_from_metadata_then_exact_from_the_workers(hub: ih.Hub) -> None:
    ds = dataset(blocks(3))
    plan = hub.plan(ds, to="polars")
    text = str(plan)
    assert plan.partitions == 3 and not plan.is_exact and plan.zero_copy
    assert "Plan ray.Dataset -> polars, partition-wise over 3 partitions on ray" in text
    assert "planned from metadata" in text and "result: ih.Partitioned" in text
    exact = plan.exact()
    assert exact.is_exact and len(exact.reports) == 3
    assert [r.index for r in exact.reports] == [0, 1, 2]
    assert [r.rows for r in exact.reports] == [ROWS] * 3
    assert exact.shared_bytes == -1  # planned only: nothing converted
    assert all(pid(r) != os.getpid() for r in exact.reports)  # planned on Ray workers
    assert "over 3 partitions on ray (" in str(exact) and "zero-copy" in str(exact)
    block = hub.plan(ds, to="pyarrow")
    assert "result: ray.data.Dataset" in str(block)


def test_a_lazy_dataset_plans_with_an_unknown_partition_count(hub: ih.Hub) -> None:
    ds = ray.data.range(40, override_num_blocks=4).map_batches(
        lambda b: {"id": b["id"], "half": b["id"] * 0.5}
    )
    plan = hub.plan(ds, to="polars")
    assert plan.partitions is None and "over ? partitions on ray" in str(plan)
    parts = hub.convert(ds, to="polars")
    frame = parts.compute()
    assert frame["id"].to_list() == list(range(40))
    assert frame["half"].to_list() == [i * 0.5 for i in range(40)]
    assert parts.plan.is_exact and parts.plan.partitions == 4 and parts.plan.zero_copy


# -- Partitioned: polars, torch, numpy ---------------------------------------------------------
def test_polars_values_order_workers_and_shared_bytes(hub: ih.Hub) -> None:
    tables = blocks(4)
    ds = dataset(tables)
    parts = hub.convert(ds, to="polars")
    assert isinstance(parts, ih.Partitioned) and parts.engine == "ray"
    assert len(parts) == 4 and "not computed" in repr(parts)
    frame = parts.compute()
    assert frame.equals(pl.from_arrow(pa.concat_tables(tables)))  # values, block order
    # A zero-copy route, computed: the blocks come from the object store as they are and
    # convert here; the frame shares the object store's memory.
    plan = parts.plan
    assert plan.is_exact and plan.zero_copy and plan.copied_bytes == 0
    assert all(r.on_client and pid(r) == os.getpid() for r in plan.reports)
    assert plan.shared_bytes == plan.source_bytes == 4 * 2 * 8 * ROWS
    assert "on the client, as fetched" in str(plan)
    # Persisted, the same conversion runs in Ray tasks, and each checks its own claim.
    kept = hub.convert(ds, to="polars").persist()
    plan = kept.plan
    assert [r.index for r in plan.reports] == [0, 1, 2, 3]
    for report in plan.reports:
        assert report.route == "pyarrow.Table -> polars" and report.zero_copy
        assert report.source_bytes == 2 * 8 * ROWS
        assert report.shared_bytes == report.source_bytes  # checked by address, on the worker
        assert pid(report) != os.getpid() and not report.on_client
    assert plan.shared_bytes == plan.source_bytes == 4 * 2 * 8 * ROWS
    assert len(plan.workers) >= 1
    text = str(plan)
    assert "partition-wise over 4 partitions on ray" in text and "on the workers" in text
    assert "shared with the partitions, checked by buffer address: 62.5 KiB of 62.5 KiB" in text
    assert kept.compute().equals(frame)


def test_partitions_persist_handles_and_report(hub: ih.Hub) -> None:
    tables = blocks(3)
    parts = hub.convert(dataset(tables), to="polars")
    got = list(parts.partitions())  # one at a time, in order
    assert [df.equals(pl.from_arrow(t)) for df, t in zip(got, tables, strict=True)] == [True] * 3
    report = parts.report()
    assert report.is_exact and [r.index for r in report.reports] == [0, 1, 2]
    kept = hub.convert(dataset(tables), to="polars").persist()
    assert "ran" in repr(kept) and kept.plan.is_exact and kept.plan.zero_copy
    handles = kept.handles()
    assert len(handles) == 3 and all(isinstance(h, ray.ObjectRef) for h in handles)
    assert ray.get(handles[1]).equals(pl.from_arrow(tables[1]))
    assert kept.handles() == handles  # the same refs: nothing runs again
    assert kept.compute().equals(pl.from_arrow(pa.concat_tables(tables)))
    with pytest.raises(ih.InvalidOptionError, match="handles"):
        kept.to_delayed()


def test_nothing_runs_before_it_is_asked_for(hub: ih.Hub, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real_refs, real_remote = RayCollection.block_refs, interchange_hub_ray._remote

    def block_refs(self: RayCollection) -> list[Any]:
        calls.append("blocks")
        return real_refs(self)

    def remote(fn: Any, num_returns: int = 1) -> Any:
        calls.append(fn.__name__)
        return real_remote(fn, num_returns)

    monkeypatch.setattr(RayCollection, "block_refs", block_refs)
    monkeypatch.setattr(interchange_hub_ray, "_remote", remote)
    tables = blocks(2)
    parts = hub.convert(dataset(tables), to="torch", as_dict=True)
    assert len(parts) == 2 and calls == []  # the count of a materialized Dataset is known
    result = parts.compute()
    assert calls == ["blocks"]  # zero-copy: the blocks are fetched, no task converts them
    assert set(result) == {"i", "x"}
    assert torch.equal(result["i"], torch.arange(2 * ROWS))
    assert all(r.zero_copy and r.shared_bytes == r.source_bytes for r in parts.plan.reports)


def test_numpy_nulls_are_lossy_per_block_and_strict_refuses_on_the_worker(hub: ih.Hub) -> None:
    tables = [pa.table({"a": pa.array([1, None, 3])}), pa.table({"a": pa.array([4, 5])})]
    ds = dataset(tables)
    assert hub.plan(ds, to="numpy").lossless  # the schema cannot show nulls
    parts = hub.convert(ds, to="numpy")
    with pytest.warns(ih.LossyConversionWarning, match="nulls become NaN"):
        values = parts.compute()  # planned zero-copy: converted here, and warned here
    assert values.shape == (5, 1) and np.isnan(values[1, 0])
    assert values[[0, 2, 3, 4], 0].tolist() == [1.0, 3.0, 4.0, 5.0]
    plan = parts.plan
    assert not plan.lossless and "nulls become NaN" in plan.losses[0]
    assert plan.reports[0].losses and not plan.reports[1].losses  # only the block with nulls
    assert plan.reports[1].zero_copy and not plan.reports[0].zero_copy
    with pytest.raises(LossyConversionError, match="nulls become NaN"):
        hub.convert(ds, to="numpy", strict=True).compute()


@pytest.mark.parametrize("target", ["numpy", "torch"])
def test_joining_blocks_of_two_dtypes_warns_of_the_values_it_changes(
    hub: ih.Hub, target: str
) -> None:
    # A block with nulls becomes float64 (warned there); torch.cat and np.concatenate then
    # promoted the int64 block to float64 unchecked: 2**53 + 1 came back as 2**53, unwarned.
    big = 2**53 + 1
    ds = dataset([pa.table({"a": [big, 2]}), pa.table({"a": pa.array([None, 4])})])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        values = hub.convert(ds, to=target).compute()
    said = [str(w.message) for w in caught if w.category is LossyConversionWarning]
    assert len(said) == 2 and "nulls become NaN" in said[0], said  # the block's, then the join's
    assert "partition 0: int64 -> float64: the cast changes values" in said[1], said
    assert str(values.dtype).endswith("float64") and values.shape == (4, 1)
    # values the promotion keeps are joined silently, as a table's columns are promoted
    ds = dataset([pa.table({"a": [1, 2]}), pa.table({"a": pa.array([None, 4])})])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        hub.convert(ds, to=target).compute()
    said = [str(w.message) for w in caught if w.category is LossyConversionWarning]
    assert len(said) == 1 and "nulls become NaN" in said[0], said


def test_copy_false_is_refused_before_anything_runs(
    hub: ih.Hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    local = pa.table({"flag": [True, False], "n": [1, 2]})
    with pytest.raises(CopyRequiredError, match="bit-packed"):  # the route itself copies
        hub.plan(local, to="torch", as_dict=True, copy=False)
    ds = dataset([local, local])

    def fail(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("nothing may run on Ray for a refused conversion")

    monkeypatch.setattr(RayCollection, "block_refs", fail)
    monkeypatch.setattr(interchange_hub_ray, "_remote", fail)
    with pytest.raises(CopyRequiredError, match="bit-packed"):
        hub.convert(ds, to="torch", as_dict=True, copy=False)
    with pytest.raises(CopyRequiredError, match="bit-packed"):
        hub.plan(ds, to="torch", as_dict=True, copy=False)
    with pytest.raises(CopyRequiredError):
        hub.convert(ds, to="pandas", copy=False)  # a Ray Dataset result: refused as early


# -- targets Ray holds: Ray Datasets ------------------------------------------------------------
def test_pyarrow_and_pandas_targets_stay_ray_datasets(hub: ih.Hub) -> None:
    tables = [pa.table({"i": [1, 2, 3], "s": ["a", "b", "c"]}), pa.table({"i": [4], "s": ["d"]})]
    ds = dataset(tables)
    for to in ("pyarrow", pa.Table):
        out = hub.convert(ds, to=to)
        assert isinstance(out, ray.data.Dataset), to
        assert pa.concat_tables(arrow_blocks(out)).equals(pa.concat_tables(tables)), to
    as_pandas = hub.convert(ds, to="pandas")
    assert isinstance(as_pandas, ray.data.Dataset)
    # Ray stores the frames its workers made as Arrow blocks again (its default
    # DataContext.batch_to_block_arrow_format): the values are the same.
    got = pa.concat_tables(arrow_blocks(as_pandas))
    assert got.to_pylist() == pa.concat_tables(tables).to_pylist()
    # Columns and dicts are not blocks: they come back partition-wise.
    assert isinstance(hub.convert(ds, to="pyarrow", as_dict=True), ih.Partitioned)
    column = hub.convert(ds.select_columns(["i"]), to=pa.ChunkedArray)
    assert isinstance(column, ih.Partitioned) and column.compute().to_pylist() == [1, 2, 3, 4]


def test_a_dataset_of_pandas_blocks_is_converted_from_pandas_on_the_workers(hub: ih.Hub) -> None:
    frames = [pd.DataFrame({"n": [1, 2], "s": ["a", "b"]}), pd.DataFrame({"n": [3], "s": ["c"]})]
    ds = ray.data.from_pandas(frames)
    meta = RayCollection(ds).meta
    assert isinstance(meta, pd.DataFrame) and list(meta.columns) == ["n", "s"]
    parts = hub.convert(ds, to="polars")
    assert parts.compute().equals(pl.DataFrame({"n": [1, 2, 3], "s": ["a", "b", "c"]}))
    routes = {r.route for r in parts.plan.reports}
    assert routes == {"pandas.DataFrame -> polars"}  # the blocks as Ray holds them


def test_an_empty_dataset(hub: ih.Hub) -> None:
    empty = pa.table({"i": pa.array([], pa.int64()), "x": pa.array([], pa.float64())})
    ds = dataset([empty])
    frame = hub.convert(ds, to="polars").compute()
    assert frame.shape == (0, 2) and frame.schema == pl.Schema({"i": pl.Int64, "x": pl.Float64})
    tensors = hub.convert(ds, to="torch", as_dict=True).compute()
    assert {k: v.shape for k, v in tensors.items()} == {"i": (0,), "x": (0,)}
    assert list(hub.iter_batches(ds, to="polars", batch_size=10)) in ([], [pl.DataFrame(empty)])
    assert hub.convert(ds, to="pyarrow").count() == 0
    nothing = ray.data.from_items([])  # no blocks, no schema
    parts = hub.convert(nothing, to="polars")
    assert len(parts) == 0 and parts.compute().shape == (0, 0)


# -- iter_batches: Ray's own streaming -----------------------------------------------------------
def test_iter_batches_to_torch_sizes_values_and_zero_copy(hub: ih.Hub) -> None:
    tables = blocks(3)
    ds = dataset(tables)
    held = arrow_blocks(ds)
    batches = list(hub.iter_batches(ds, to="torch", batch_size=400, as_dict=True))
    assert [len(b["i"]) for b in batches] == [400] * 7 + [200]
    assert torch.equal(torch.cat([b["i"] for b in batches]), torch.arange(3 * ROWS))
    assert torch.equal(
        torch.cat([b["x"] for b in batches]),
        torch.from_numpy(pa.concat_tables(tables)["x"].to_numpy()),
    )
    for k, batch in enumerate(batches):
        start = k * 400
        within = start // ROWS == (start + len(batch["i"]) - 1) // ROWS
        shared = sum(hub.shared_bytes(t, block) for t in batch.values() for block in held)
        nbytes = sum(t.nbytes for t in batch.values())
        # A batch inside one block shares the object store's memory; one that spans two
        # blocks is joined into new memory (a copy, as its plan says).
        assert shared == (nbytes if within else 0), (k, shared, nbytes)
    whole = list(hub.iter_batches(ds, to="polars"))  # batch_size=None: whole blocks
    assert [len(df) for df in whole] == [ROWS] * 3


# -- the helpers ---------------------------------------------------------------------------------
def test_map_batches_gives_fn_polars_frames_on_the_workers() -> None:
    tables = blocks(2)

    def double(df: pl.DataFrame) -> pl.DataFrame:
        return df.with_columns(
            twice=pl.col("i") * 2, kind=pl.lit(type(df).__name__), pid=pl.lit(os.getpid())
        )

    out = interchange_hub_ray.map_batches(dataset(tables), double, batch_size=250)
    assert isinstance(out, ray.data.Dataset)
    table = pa.concat_tables(arrow_blocks(out))
    assert table["twice"].to_pylist() == [2 * i for i in range(2 * ROWS)]
    assert set(table["kind"].to_pylist()) == {"DataFrame"}
    assert os.getpid() not in set(table["pid"].to_pylist())


def test_map_batches_dicts_of_tensors_classes_and_generators() -> None:
    ds = dataset([pa.table({"a": [1, 2, 3], "b": [0.5, 1.5, 2.5]})])

    def scale(batch: dict[str, torch.Tensor], factor: int) -> dict[str, torch.Tensor]:
        assert all(isinstance(t, torch.Tensor) for t in batch.values())
        return {name: t * factor for name, t in batch.items()}

    out = interchange_hub_ray.map_batches(
        ds, scale, batch_format="torch", as_dict=True, fn_kwargs={"factor": 10}
    )
    assert out.take_all() == [{"a": 10, "b": 5.0}, {"a": 20, "b": 15.0}, {"a": 30, "b": 25.0}]

    class AddK:
        def __init__(self, k: int) -> None:
            self.k = k

        def __call__(self, df: pl.DataFrame) -> pl.Series:  # a column becomes a table
            return (df["a"] + self.k).alias("a_plus_k")

    out = interchange_hub_ray.map_batches(
        ds, AddK, fn_constructor_args=(100,), compute=ray.data.ActorPoolStrategy(size=1)
    )
    assert out.take_all() == [{"a_plus_k": 101}, {"a_plus_k": 102}, {"a_plus_k": 103}]

    def split(df: pd.DataFrame) -> Iterator[pd.DataFrame]:
        yield df.head(1)
        yield df.tail(2)

    out = interchange_hub_ray.map_batches(ds, split, batch_format="pandas")
    assert [row["a"] for row in out.take_all()] == [1, 2, 3]
    with pytest.raises(CopyRequiredError):  # planned from the known schema, before Ray runs
        interchange_hub_ray.map_batches(ds, scale, batch_format="numpy", copy=False)


def test_collate_shares_the_object_store_memory(hub: ih.Hub) -> None:
    pytest.importorskip("ray.train.torch", reason="iter_torch_batches needs ray[train]")
    ds = dataset(blocks(3))
    held = arrow_blocks(ds)

    def shared(batch: dict[str, torch.Tensor]) -> tuple[int, int]:
        total = sum(t.nbytes for t in batch.values())
        return sum(hub.shared_bytes(t, b) for t in batch.values() for b in held), total

    collate = interchange_hub_ray.collate(hub=hub)
    assert isinstance(collate, interchange_hub_ray.HubCollate)
    from ray.data.collate_fn import ArrowBatchCollateFn

    assert isinstance(collate, ArrowBatchCollateFn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WriteThroughWarning)
        ours = [shared(b) for b in ds.iter_torch_batches(batch_size=ROWS, collate_fn=collate)]
        theirs = [shared(b) for b in ds.iter_torch_batches(batch_size=ROWS)]
    assert ours == [(2 * 8 * ROWS, 2 * 8 * ROWS)] * 3  # every byte in the object store
    # Ray 2.60's own collate shares plain numbers too (measured, for the README):
    print(f"\ncollate shared bytes: hub {ours}, Ray default {theirs}")
    assert sum(s for s, _ in ours) >= sum(s for s, _ in theirs)
    restored = pickle.loads(pickle.dumps(interchange_hub_ray.collate(dtype="float32")))
    assert restored.options.dtype == "float32" and restored.hub is None


def test_collate_carries_times_zero_copy_where_the_default_collate_fails(hub: ih.Hub) -> None:
    from ray.data.collate_fn import DefaultCollateFn

    batch = pa.table({"t": pa.array(np.arange(5).astype("datetime64[us]")), "v": [1, 2, 3, 4, 5]})
    with pytest.raises(TypeError, match="datetime64"):
        DefaultCollateFn(combine_chunks=True)(batch)
    with pytest.warns(LossyConversionWarning, match="int64 us since the epoch"):
        out = interchange_hub_ray.collate(hub=hub)(batch)
    assert out["t"].dtype == torch.int64 and out["t"].tolist() == list(range(5))
    assert hub.shared_bytes(out["t"], batch) == out["t"].nbytes
    numbers = batch.select(["v"]).append_column("w", pa.array(np.arange(5.0)))
    stacked = interchange_hub_ray.collate(hub=hub, as_dict=False, dtype="float32")(numbers)
    assert stacked.shape == (5, 2) and stacked.dtype == torch.float32
    assert stacked[:, 1].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


# -- the default hub, through the entry point ----------------------------------------------------
def test_the_default_hub_loads_it_from_its_entry_point() -> None:
    """``ih.plan`` and ``ih.convert`` themselves, in a process that autoloads, connected
    to this cluster."""
    try:
        importlib.metadata.distribution("interchange-hub-ray")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("the plugin is not installed")
    code = (
        "import json, logging, sys, warnings, pyarrow as pa, ray, ray.data\n"
        "import interchange_hub as ih\n"
        "ray.init(address=sys.argv[1], log_to_driver=False, configure_logging=False)\n"
        "warnings.simplefilter('ignore', DeprecationWarning)\n"
        "ray.data.DataContext.get_current().enable_progress_bars = False\n"
        "logging.getLogger('ray.data').setLevel(logging.ERROR)\n"
        "ds = ray.data.from_arrow([pa.table({'a': [1, 2]}), pa.table({'a': [3]})])\n"
        "text = str(ih.plan(ds, to='polars'))\n"
        "frame = ih.convert(ds, to='polars').compute()\n"
        "print(json.dumps(['over 2 partitions on ray' in text, frame['a'].to_list()]))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTERCHANGE_HUB_")}
    env["INTERCHANGE_HUB_LOAD_PLUGINS"] = "ray"
    address = ray.get_runtime_context().gcs_address
    out = subprocess.run(
        [sys.executable, "-c", code, address],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=120,
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [True, [1, 2, 3]]


def test_the_collection_conformance_kit() -> None:
    from interchange_hub.testing import assert_collection_conforms

    def make(table: pa.Table, n: int) -> Any:
        step = max(1, -(-table.num_rows // n))
        pieces = [table.slice(i, step) for i in range(0, table.num_rows, step)] or [table]
        return ray.data.from_arrow(pieces).materialize()

    def collect(result: Any) -> Any:  # a Ray Dataset of converted blocks
        return pa.concat_tables(ray.get(result.to_arrow_refs()))

    report = assert_collection_conforms(interchange_hub_ray, "ray", make, collect=collect)
    assert len(report.checks) > 40
