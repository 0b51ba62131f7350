"""The Dask plugin: partition-wise conversion on the workers, in partition order, with the
per-partition zero-copy claims checked by buffer address where the partitions live.

Most tests run on Dask's synchronous scheduler (fast, in this process); those marked
``cluster`` run on a real ``distributed.LocalCluster`` of two worker processes, started
once for the module and closed at its end.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Iterator
from typing import Any

# Use only the plugins each test names, never those installed in the environment (the
# cluster's workers inherit this: their default hub holds the built-in adapters).
os.environ.setdefault("INTERCHANGE_HUB_DISABLE_PLUGIN_AUTOLOAD", "1")

import dask
import dask.array as da
import dask.dataframe as dd
import interchange_hub as ih
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
import torch
from dask.delayed import Delayed
from interchange_hub.errors import CopyRequiredError, InvalidOptionError
from interchange_hub.partitioned import Partitioned, PartitionedPlan

import interchange_hub_dask

ROWS = 8_000
NPARTS = 8


@pytest.fixture
def hub() -> ih.Hub:
    return ih.Hub(autoload=False, plugins=[*ih.builtin_plugins(), interchange_hub_dask])


@pytest.fixture
def sync() -> Iterator[None]:
    with dask.config.set(scheduler="sync"):
        yield


def frame(rows: int = ROWS) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"x": rng.random(rows), "n": np.arange(rows, dtype=np.int64)[::-1].copy()})


def ddf_of(pdf: pd.DataFrame, nparts: int = NPARTS) -> Any:
    # sort=False keeps the rows in the order given: partition order is checked below.
    return dd.from_pandas(pdf, npartitions=nparts, sort=False)


# -- results and their order (synchronous scheduler) ----------------------------------------
def test_to_polars_is_partitioned_and_computes_in_order(hub: ih.Hub, sync: None) -> None:
    pdf = frame()
    parts = hub.convert(ddf_of(pdf), to="polars")
    assert isinstance(parts, Partitioned)
    assert parts.npartitions == NPARTS and "not computed" in repr(parts)
    df = parts.compute()
    assert isinstance(df, pl.DataFrame)
    assert df.equals(pl.from_pandas(pdf))  # values and row order
    pieces = list(parts.partitions())
    assert len(pieces) == NPARTS and all(isinstance(p, pl.DataFrame) for p in pieces)
    assert pl.concat(pieces).equals(df)
    assert pieces[0]["n"][0] == ROWS - 1  # the first partition first


def test_to_pyarrow_computes_one_table(hub: ih.Hub, sync: None) -> None:
    pdf = frame()
    table = hub.convert(ddf_of(pdf), to="pyarrow").compute()
    assert isinstance(table, pa.Table)
    assert table.equals(pa.Table.from_pandas(pdf, preserve_index=False))
    assert table.column("x").num_chunks == NPARTS  # joined without a copy


def test_to_pyarrow_type_gives_the_same(hub: ih.Hub, sync: None) -> None:
    pdf = frame(100)
    table = hub.convert(ddf_of(pdf, 3), to=pa.Table).compute()
    assert table.column("n").to_pylist() == pdf["n"].tolist()


def test_to_numpy_is_a_dask_array(hub: ih.Hub, sync: None) -> None:
    pdf = frame()
    arr = hub.convert(ddf_of(pdf), to="numpy")
    assert isinstance(arr, da.Array)
    assert arr.dtype == np.float64 and arr.numblocks == (NPARTS, 1)
    np.testing.assert_array_equal(arr.compute(), pdf.to_numpy())


def test_series_to_numpy_is_one_dimensional(hub: ih.Hub, sync: None) -> None:
    pdf = frame(50)
    arr = hub.convert(ddf_of(pdf, 4)["n"], to="numpy")
    assert isinstance(arr, da.Array) and arr.ndim == 1 and arr.dtype == np.int64
    np.testing.assert_array_equal(arr.compute(), pdf["n"].to_numpy())


def test_to_pandas_stays_a_dask_dataframe(hub: ih.Hub, sync: None) -> None:
    pdf = frame(100)
    arrow_backed = ddf_of(pdf, 4).map_partitions(
        lambda p: p.convert_dtypes(dtype_backend="pyarrow")
    )
    out = hub.convert(arrow_backed, to="pandas")
    assert isinstance(out, dd.DataFrame)
    got = out.compute()
    assert list(got.columns) == ["x", "n"]
    np.testing.assert_array_equal(got["n"].to_numpy(), pdf["n"].to_numpy())


def test_series_to_torch(hub: ih.Hub, sync: None) -> None:
    pdf = frame(100)
    tensor = hub.convert(ddf_of(pdf, 4)["x"], to="torch").compute()
    assert isinstance(tensor, torch.Tensor)
    assert torch.equal(tensor, torch.from_numpy(pdf["x"].to_numpy()))


def test_as_dict_gives_a_dict_of_joined_tensors(hub: ih.Hub, sync: None) -> None:
    pdf = frame(100)
    out = hub.convert(ddf_of(pdf, 4), to="torch", as_dict=True)
    assert isinstance(out, Partitioned)
    got = out.compute()
    assert set(got) == {"x", "n"}
    assert torch.equal(got["n"], torch.from_numpy(pdf["n"].to_numpy()))


def test_dask_array_source(hub: ih.Hub, sync: None) -> None:
    values = np.arange(60.0).reshape(20, 3)
    arr = da.from_array(values, chunks=(6, 3))
    tensor = hub.convert(arr, to="torch").compute()
    assert torch.equal(tensor, torch.from_numpy(values))
    again = hub.convert(arr, to="numpy")
    assert isinstance(again, da.Array) and again.chunks[0] == arr.chunks[0]  # sizes known
    np.testing.assert_array_equal(again.compute(), values)


def test_dask_array_chunked_across_columns_is_refused(hub: ih.Hub, sync: None) -> None:
    arr = da.ones((10, 4), chunks=(5, 2))
    with pytest.raises(InvalidOptionError, match=r"rechunk"):
        hub.convert(arr, to="torch")


def test_one_partition_and_empty_frames(hub: ih.Hub, sync: None) -> None:
    empty = pd.DataFrame({"x": np.array([], dtype=np.float64)})
    df = hub.convert(dd.from_pandas(empty, npartitions=1), to="polars").compute()
    assert isinstance(df, pl.DataFrame) and df.shape == (0, 1) and df.schema["x"] == pl.Float64
    one = hub.convert(ddf_of(frame(10), 1), to="polars").compute()
    assert one.shape == (10, 2)


# -- plans ----------------------------------------------------------------------------------
def test_plan_from_metadata(hub: ih.Hub, sync: None) -> None:
    plan = hub.plan(ddf_of(frame()), to="polars")
    assert isinstance(plan, PartitionedPlan)
    assert not plan.is_exact and plan.partitions == NPARTS and plan.zero_copy
    text = str(plan)
    assert f"over {NPARTS} partitions on dask" in text
    assert "planned from metadata" in text and "pl.from_pandas" in text
    assert "ih.Partitioned" in text


def test_exact_plan_asks_each_partition(hub: ih.Hub, sync: None) -> None:
    plan = hub.plan(ddf_of(frame()), to="polars").exact()
    assert plan.is_exact and len(plan.reports) == NPARTS
    assert [r.index for r in plan.reports] == list(range(NPARTS))
    assert sum(r.rows for r in plan.reports) == ROWS
    assert plan.shared_bytes == -1  # planned, not run
    assert f"partitions 0-{NPARTS - 1} ({ROWS:,} rows)" in str(plan)


def test_plan_after_a_run_sums_the_workers_plans(hub: ih.Hub, sync: None) -> None:
    pdf = frame()
    parts = hub.convert(ddf_of(pdf), to="polars")
    assert not parts.plan.is_exact
    parts.compute()
    plan = parts.plan
    assert plan.is_exact and plan.zero_copy and plan.copied_bytes == 0
    data = pdf["x"].nbytes + pdf["n"].nbytes
    assert plan.source_bytes == data
    assert plan.shared_bytes == data  # every byte of every partition shared, by address
    assert "checked by buffer address" in str(plan)


def test_plan_counts_copies_per_partition(hub: ih.Hub, sync: None) -> None:
    pdf = frame()
    parts = hub.convert(ddf_of(pdf), to="torch")  # a 2-D tensor of two dtypes: a copy
    plan = parts.report()
    assert not plan.zero_copy
    assert plan.copied_bytes >= pdf["x"].nbytes + pdf["n"].nbytes
    assert set(plan.copied_columns) == {"x", "n"}
    assert plan.shared_bytes == 0


def test_copy_false_is_refused_before_anything_runs(hub: ih.Hub, sync: None) -> None:
    ran: list[int] = []

    def mark(p: pd.DataFrame) -> pd.DataFrame:
        ran.append(1)
        return p

    ddf = ddf_of(frame(100), 4).map_partitions(mark)
    ran.clear()  # dask ran it once on fake data, to learn its dtypes
    with pytest.raises(CopyRequiredError):
        hub.plan(ddf, to="torch", copy=False)
    with pytest.raises(CopyRequiredError):
        hub.convert(ddf, to="torch", copy=False)
    assert not ran


def test_strict_losses_that_depend_on_the_data_raise_on_the_worker(hub: ih.Hub, sync: None) -> None:
    pdf = pd.DataFrame({"big": pd.array([2**53 + 1, None], dtype="Int64")})
    assert not hub.plan(pdf, to="torch").lossless  # nulls into a tensor of floats
    ddf = dd.from_pandas(pdf, npartitions=1)
    plan = hub.plan(ddf, to="torch", strict=True)  # the metadata holds no nulls
    assert "nulls and chunking can differ per partition" in str(plan)
    with pytest.raises(ih.LossyConversionError, match="big"):
        hub.convert(ddf, to="torch", strict=True).compute()
    parts = hub.convert(ddf, to="torch")
    with pytest.warns(ih.LossyConversionWarning):
        parts.compute()
    assert parts.plan.losses and not parts.plan.lossless
    assert "LOSSY" in str(parts.plan)


# -- persist, handles, batches ----------------------------------------------------------------
def test_persist_and_handles(hub: ih.Hub, sync: None) -> None:
    pdf = frame()
    parts = hub.convert(ddf_of(pdf), to="polars")
    kept = parts.persist()
    assert kept.plan.is_exact  # the reports came back, the results stayed
    handles = kept.to_delayed()
    assert len(handles) == NPARTS and all(isinstance(h, Delayed) for h in handles)
    assert kept.compute().equals(pl.from_pandas(pdf))


def test_iter_batches_over_a_dask_dataframe(hub: ih.Hub, sync: None) -> None:
    pdf = frame()
    batches = list(hub.iter_batches(ddf_of(pdf), to="torch", batch_size=700, as_dict=True))
    assert [len(b["x"]) for b in batches] == [700] * (ROWS // 700) + [ROWS % 700]
    joined = torch.cat([b["n"] for b in batches])
    assert torch.equal(joined, torch.from_numpy(pdf["n"].to_numpy()))
    # a mistyped target or option is refused at the call, before a partition is computed
    with pytest.raises(ih.UnknownTargetError, match="torch"):
        hub.iter_batches(ddf_of(pdf), to="torhc", batch_size=700)
    with pytest.raises(InvalidOptionError, match="dtype='f9'"):
        hub.iter_batches(ddf_of(pdf), to="torch", dtype="f9")


def test_iter_batches_over_a_dask_array(hub: ih.Hub, sync: None) -> None:
    values = np.arange(40.0).reshape(20, 2)
    batches = list(hub.iter_batches(da.from_array(values, chunks=(6, 2)), to="torch", batch_size=8))
    assert [b.shape[0] for b in batches] == [8, 8, 4]
    assert torch.equal(torch.cat(batches), torch.from_numpy(values))


def test_describe_and_not_a_target(hub: ih.Hub, sync: None) -> None:
    info = hub.describe(ddf_of(frame(10), 2))
    assert [c.name for c in info.columns] == ["x", "n"] and info.rows == -1


# -- a real cluster -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,  # no dashboard, and its HTTP server (health
        # checks) on a free port, not 8787: another cluster on this machine may hold it
        scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},
        worker_dashboard_address=None,
        silence_logs=logging.ERROR,
    )
    client = distributed.Client(cluster)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


def make_partition(i: int) -> pd.DataFrame:
    """Partition ``i`` of 1e6 rows, made where it is computed (on a worker)."""
    rows = 125_000
    start = i * rows
    return pd.DataFrame(
        {"x": np.arange(start, start + rows, dtype=np.float64), "n": np.arange(start, start + rows)}
    )


def test_partitions_convert_on_the_workers_zero_copy(hub: ih.Hub, client: Any) -> None:
    ddf = dd.from_map(make_partition, range(NPARTS))
    pdf = pd.concat([make_partition(i) for i in range(NPARTS)], ignore_index=True)
    parts = hub.convert(ddf, to="polars")
    df = parts.compute()  # zero-copy: the partitions come here and convert here
    assert df.equals(pl.from_pandas(pdf))
    assert all(r.on_client for r in parts.plan.reports)
    kept = hub.convert(ddf, to="polars").persist()  # converted on the workers, kept there
    assert pl.concat(list(kept.partitions())).equals(df)
    plan = kept.plan
    worker_pids = {f":{pid}" for pid in client.run(os.getpid).values()}
    assert len(plan.reports) == NPARTS
    for report in plan.reports:
        assert any(report.worker.endswith(pid) for pid in worker_pids), report.worker
        assert not report.worker.endswith(f":{os.getpid()}") and not report.on_client
        assert report.zero_copy
        assert report.shared_bytes == report.source_bytes > 0  # checked on the worker
    assert plan.shared_bytes == pdf["x"].nbytes + pdf["n"].nbytes
    text = str(plan)
    assert f"over {NPARTS} partitions on dask" in text and "checked by buffer address" in text


def test_cluster_pandas_numpy_and_batches(hub: ih.Hub, client: Any) -> None:
    pdf = frame()
    ddf = ddf_of(pdf)
    assert hub.convert(ddf, to="pandas") is ddf  # pandas partitions, as they are
    copied = hub.convert(ddf, to="pandas", copy=True)  # converted on the workers
    assert isinstance(copied, dd.DataFrame) and copied is not ddf
    pd.testing.assert_frame_equal(copied.compute(), pdf)
    np.testing.assert_array_equal(hub.convert(ddf, to="numpy").compute(), pdf.to_numpy())
    sizes = [len(b) for b in hub.iter_batches(ddf, to="polars", batch_size=3000)]
    assert sizes == [3000, 3000, 2000]
    copied = hub.convert(ddf, to="torch")  # a route that copies runs on the workers
    tensor = copied.compute()
    assert torch.equal(tensor, torch.from_numpy(pdf.to_numpy()))
    assert not any(r.on_client for r in copied.plan.reports)
    assert "on the workers" in str(copied.plan)


def test_cluster_persist_keeps_results_on_the_workers(hub: ih.Hub, client: Any) -> None:
    pdf = frame()
    kept = hub.convert(ddf_of(pdf), to="pyarrow").persist()
    assert kept.plan.is_exact and len(kept.plan.workers) >= 1
    first = next(iter(kept.partitions()))
    assert isinstance(first, pa.Table) and first.num_rows == ROWS // NPARTS
    assert kept.compute().num_rows == ROWS


# -- the plugin as users install it -----------------------------------------------------------
def test_default_hub_loads_the_plugin_through_its_entry_point() -> None:
    script = textwrap.dedent(
        """
        import dask, dask.dataframe as dd, pandas as pd, polars as pl
        import interchange_hub as ih
        dask.config.set(scheduler="sync")
        ddf = dd.from_pandas(pd.DataFrame({"a": [1.0, 2.0, 3.0]}), npartitions=2)
        df = ih.convert(ddf, to="polars").compute()
        assert isinstance(df, pl.DataFrame) and df["a"].to_list() == [1.0, 2.0, 3.0], df
        print("ok", ih.plan(ddf, to="polars").partitions)
        """
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTERCHANGE_HUB_")}
    done = subprocess.run(
        [sys.executable, "-c", script],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok 2"


def test_no_warnings_from_planning_metadata(hub: ih.Hub, sync: None) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        hub.plan(ddf_of(frame(10), 2), to="polars")


def test_the_collection_conformance_kit(sync: None) -> None:
    from interchange_hub.testing import assert_collection_conforms

    report = assert_collection_conforms(
        interchange_hub_dask,
        "dask",
        lambda table, n: dd.from_pandas(table.to_pandas(), npartitions=n, sort=False),
    )
    assert len(report.checks) > 40


# -- found by a review (each silently changed data, or raised a library's raw error) --------
def test_a_partition_with_nulls_is_refused_not_cast_back_to_int(hub: ih.Hub, sync: None) -> None:
    # the array's dtype came from the metadata (int64): a later partition with nulls
    # (float64, NaN) was cast back by Dask, each NaN an INT64_MIN, with no error
    pdf = pd.DataFrame({"a": pd.array([1, 2, 3, None], dtype="Int64")})
    ddf = dd.from_pandas(pdf, npartitions=2, sort=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ih.LossyConversionWarning)
        with pytest.raises(ih.ConversionError, match=r"partition 1 .*float64.*dtype='float64'"):
            hub.convert(ddf, to="numpy").compute()
        floats = hub.convert(ddf, to="numpy", dtype="float64").compute().ravel()
    assert floats[:3].tolist() == [1.0, 2.0, 3.0] and np.isnan(floats[3])


def test_a_dask_array_keeps_its_trailing_shape(hub: ih.Hub, sync: None) -> None:
    # the declared shape was (4, 0): the converted _meta's, empty in every dimension
    arr = da.ones((4, 3), chunks=(2, 3))
    result = hub.convert(arr, to="numpy")
    assert result.shape == (4, 3) and result.chunks == ((2, 2), (3,))
    assert result[:, 1].compute().tolist() == [1.0] * 4
    assert tuple(hub.convert(arr, to="torch").compute().shape) == (4, 3)


def test_a_dask_array_into_pandas_and_a_0d_one(hub: ih.Hub, sync: None) -> None:
    # to="pandas" called map_partitions, which a dask array has not (AttributeError), and
    # a 0-d array raised IndexError from numblocks[0]
    frame = hub.convert(da.ones((4, 2), chunks=(2, 2)), to="pandas").compute()
    assert isinstance(frame, pd.DataFrame) and frame.shape == (4, 2)
    with pytest.raises(ih.NoRouteError, match="no dimensions"):
        hub.convert(da.from_array(np.float64(3.0)), to="torch")


def test_partitions_of_different_schemas_are_refused_in_the_hubs_error(
    hub: ih.Hub, sync: None
) -> None:
    def part(i: int) -> pd.DataFrame:
        return pd.DataFrame({"a": [1, 2]}) if i == 0 else pd.DataFrame({"a": [3.5, 4.5]})

    ddf = dd.from_map(part, [0, 1], meta=pd.DataFrame({"a": pd.Series([], dtype="int64")}))
    for to in ("polars", "pyarrow"):
        with pytest.raises(ih.ConversionError, match="partitions of different schemas"):
            hub.convert(ddf, to=to).compute()
    with pytest.raises(ih.ConversionError, match="partitions of different schemas"):
        list(hub.iter_batches(ddf, to="polars", batch_size=3))


def test_iter_batches_leaves_a_partitions_index_out_of_tensors(hub: ih.Hub, sync: None) -> None:
    # as it does a local frame's (README): the index went into each tensor batch
    pdf = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0]}, index=pd.Index([10, 20, 30, 40], name="k"))
    ddf = dd.from_pandas(pdf, npartitions=2, sort=False)
    batches = [b.tolist() for b in hub.iter_batches(ddf, to="torch")]
    assert batches == [[[1.0], [2.0]], [[3.0], [4.0]]]
    dicts = list(hub.iter_batches(ddf, to="torch", as_dict=True))
    assert [list(d) for d in dicts] == [["x"], ["x"]]


def test_a_type_asked_by_name_is_what_compute_gives(hub: ih.Hub, sync: None) -> None:
    # to=pa.Array gave a ChunkedArray and to=pa.RecordBatch a Table: the join's own kinds
    pdf = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0]})
    ddf = dd.from_pandas(pdf, npartitions=2, sort=False)
    array = hub.convert(ddf["a"], to=pa.Array).compute()
    assert isinstance(array, pa.Array) and array.to_pylist() == [1.0, 2.0, 3.0, 4.0]
    batch = hub.convert(ddf, to=pa.RecordBatch).compute()
    assert isinstance(batch, pa.RecordBatch) and batch.num_rows == 4
    assert isinstance(hub.convert(ddf, to=pa.Table).compute(), pa.Table)
