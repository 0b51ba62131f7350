"""The xarray plugin: values to tensors and long tables to table libraries, both ways,
every zero-copy claim checked by buffer address."""

from __future__ import annotations

import decimal
import importlib.metadata
import json
import os
import subprocess
import sys
import warnings
from typing import Any

# Use only the plugins each test names, never those installed in the environment.
os.environ.setdefault("INTERCHANGE_HUB_DISABLE_PLUGIN_AUTOLOAD", "1")

import interchange_hub as ih
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.compute
import pytest
import torch
import xarray as xr
from interchange_hub.adapter import Kind
from interchange_hub.errors import (
    ConsumedSourceError,
    CopyRequiredError,
    LossyConversionError,
    LossyConversionWarning,
    NoRouteError,
    WriteThroughWarning,
)
from interchange_hub.testing import assert_conforms

import interchange_hub_xarray


@pytest.fixture
def hub() -> ih.Hub:
    """The built-in adapters and this plugin, nothing from entry points."""
    return ih.Hub(autoload=False, plugins=[*ih.builtin_plugins(), interchange_hub_xarray])


def convert(hub: ih.Hub, src: Any, to: Any, **options: Any) -> tuple[Any, ih.Plan]:
    """Convert; a zero-copy plan must leave every source byte inside the result, and a plan
    that copies everything must share none."""
    plan = hub.plan(src, to=to, **options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WriteThroughWarning)
        result = hub.convert(src, to=to, **options)
    total = sum(b.size for b in hub.buffers(src))
    shared = hub.shared_bytes(src, result)
    if plan.zero_copy:
        assert shared >= total, f"zero-copy claimed, {shared} of {total} bytes shared\n{plan}"
    return result, plan


def grid() -> xr.DataArray:
    """A 2-D DataArray with an index coordinate, a dimension without coordinate, a 2-D
    coordinate and a scalar one."""
    return xr.DataArray(
        np.arange(12.0).reshape(3, 4),
        dims=("time", "x"),
        coords={
            "time": [10, 20, 30],
            "lat": (("time", "x"), np.linspace(0, 1, 12).reshape(3, 4)),
            "run": 7,
        },
        name="temp",
        attrs={"units": "K"},
    )


def no_shared_bytes(hub: ih.Hub, src: Any, result: Any) -> bool:
    return hub.shared_bytes(src, result) == 0


# -- registration ----------------------------------------------------------------------------
def test_registered_and_declared(hub: ih.Hub) -> None:
    adapter = hub.registry.get("xarray")
    assert isinstance(adapter, interchange_hub_xarray.XarrayAdapter)
    assert hub.registry.get("xr") is adapter
    assert adapter.type_kinds() == {xr.DataArray: Kind.TENSOR, xr.Dataset: Kind.TABLE}
    try:
        dist = importlib.metadata.distribution("interchange-hub-xarray")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("the plugin is not installed (pip install -e plugins/interchange-hub-xarray)")
    eps = [ep for ep in dist.entry_points if ep.group == "interchange_hub"]
    assert [(ep.name, ep.value) for ep in eps] == [("xarray", "interchange_hub_xarray")]


def test_conformance() -> None:
    report = assert_conforms(interchange_hub_xarray, "xarray")
    assert len(report.checks) > 150


def test_the_default_hub_loads_it_from_its_entry_point() -> None:
    """The issue's two calls, through ih.convert itself (in a process that autoloads)."""
    try:
        importlib.metadata.distribution("interchange-hub-xarray")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("the plugin is not installed")
    code = (
        "import json, numpy as np, polars as pl, xarray as xr, interchange_hub as ih\n"
        "da = xr.DataArray(np.arange(6.0).reshape(2, 3), dims=('x', 'y'))\n"
        "t = ih.convert(da, to='torch')\n"
        "ds = ih.convert(pl.DataFrame({'a': [1, 2], 'b': [0.5, 1.5]}), to='xarray')\n"
        "print(json.dumps([t.data_ptr() == da.values.ctypes.data, list(t.shape),\n"
        "                  type(ds).__name__, sorted(ds.data_vars)]))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("INTERCHANGE_HUB_")}
    env["INTERCHANGE_HUB_LOAD_PLUGINS"] = "xarray"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert json.loads(out.stdout) == [True, [2, 3], "Dataset", ["a", "b"]]


# -- DataArray -> tensors: the values, zero-copy ---------------------------------------------
def test_data_array_to_torch_is_zero_copy(hub: ih.Hub) -> None:
    da = grid()
    tensor, plan = convert(hub, da, "torch")
    assert plan.zero_copy and "DLPack" in str(plan)
    assert tensor.data_ptr() == da.values.ctypes.data  # by address
    assert tensor.shape == (3, 4) and tensor.tolist() == da.values.tolist()
    tensor[0, 0] = 99.0  # a view: writes reach the DataArray
    assert da.values[0, 0] == 99.0
    assert hub.convert(da, to=torch.Tensor).data_ptr() == da.values.ctypes.data
    arr, plan = convert(hub, da, "numpy")
    assert plan.zero_copy and arr.ctypes.data == da.values.ctypes.data


def test_strided_and_transposed_values_stay_shared_negative_strides_copy(hub: ih.Hub) -> None:
    da = grid()
    for view in (da.T, da.isel(x=slice(None, None, 2))):
        tensor, plan = convert(hub, view, "torch")
        assert plan.zero_copy and tensor.tolist() == view.values.tolist()
        assert hub.shared_bytes(view, tensor) > 0
    flipped = da.isel(x=slice(None, None, -1))
    tensor, plan = convert(hub, flipped, "torch")
    assert not plan.zero_copy and "negative strides" in str(plan)
    assert tensor.tolist() == flipped.values.tolist() and no_shared_bytes(hub, flipped, tensor)


def test_copy_true_and_dtype_give_new_memory(hub: ih.Hub) -> None:
    da = grid()
    tensor = hub.convert(da, to="torch", copy=True)
    assert no_shared_bytes(hub, da, tensor) and tensor.tolist() == da.values.tolist()
    cast = hub.convert(da, to="torch", dtype="float32")
    assert cast.dtype == torch.float32 and no_shared_bytes(hub, da, cast)


def test_arrow_backed_values_warn_that_torch_writes_through(hub: ih.Hub) -> None:
    da = hub.convert(pa.array(np.arange(5.0)), to="xarray")  # a read-only view of Arrow memory
    with pytest.warns(WriteThroughWarning):
        tensor = hub.convert(da, to="torch")
    assert tensor.data_ptr() == da.values.ctypes.data


def test_values_dlpack_cannot_carry_are_refused_with_the_fix(hub: ih.Hub) -> None:
    times = xr.DataArray(np.array(["2024-01-01", "NaT"], "M8[ns]"), dims="t")
    with pytest.raises(NoRouteError, match=r"DLPack cannot carry timestamp\[ns\].*\.values"):
        hub.convert(times, to="torch")
    with pytest.raises(NoRouteError, match="DLPack cannot carry numpy_str"):
        hub.convert(xr.DataArray(np.array(["a", "b"]), dims="i"), to="numpy")


# -- DataArray -> tables: the long table --------------------------------------------------------
def test_data_array_to_polars_is_the_long_table(hub: ih.Hub) -> None:
    da = grid()
    frame, plan = convert(hub, da, "polars")
    expected = da.to_dataframe().reset_index()
    assert frame.columns == ["temp", "time", "x", "lat", "run"]
    assert frame["temp"].to_list() == expected["temp"].tolist()
    for name in ("time", "x", "lat", "run"):
        assert frame[name].to_list() == expected[name].tolist(), name
    text = str(plan)
    assert "broadcast" in text and "positions are written" in text
    # The values and the 2-D coordinate (same dims, C order) are shared; the rest is spread.
    assert set(plan.copied_columns) == {"time", "x", "run"}
    assert hub.shared_bytes(da, frame) == da.values.nbytes
    lat = hub.convert(da, to="pyarrow").column("lat").chunk(0)
    assert lat.buffers()[1].address == da.coords["lat"].values.ctypes.data


def test_the_values_column_is_shared_in_every_table_library(hub: ih.Hub) -> None:
    da = grid()
    for lib in ("pyarrow", "pandas", "polars", "nanoarrow"):
        result, _ = convert(hub, da, lib)
        assert hub.shared_bytes(da, result) == da.values.nbytes, lib
    table = hub.convert(da, to="pyarrow")
    assert table.column("temp").chunk(0).buffers()[1].address == da.values.ctypes.data


def test_copy_false_refuses_the_broadcast_coordinates(hub: ih.Hub) -> None:
    with pytest.raises(CopyRequiredError, match="broadcast") as caught:
        hub.convert(grid(), to="polars", copy=False)
    assert {"time", "x", "run"} <= set(caught.value.columns)
    bare = xr.DataArray(np.arange(4.0), dims="i", name="v")  # no labels: a column
    series, plan = convert(hub, bare, "polars", copy=False)
    assert isinstance(series, pl.Series) and series.name == "v" and plan.zero_copy


def test_a_non_contiguous_data_array_is_copied_into_the_table(hub: ih.Hub) -> None:
    da = grid().T  # values F-ordered
    table, plan = convert(hub, da, "pyarrow")
    assert "temp" in plan.copied_columns and "not C-contiguous" in str(plan)
    assert no_shared_bytes(hub, da, table)  # the planned copy really copies
    assert table.column("temp").to_pylist() == da.values.ravel().tolist()
    assert table.column_names == ["temp", "x", "time", "lat", "run"]


def test_table_targets_take_a_column_when_there_are_no_labels(hub: ih.Hub) -> None:
    for da in (xr.DataArray(np.arange(3.0)), xr.DataArray(2.5)):  # 1-D and 0-d
        arr, plan = convert(hub, da, "pyarrow")
        assert plan.zero_copy and arr.to_pylist() == np.ravel(da.values).tolist()
    arr = hub.convert(grid(), to=pa.Array)  # one column asked: the values
    assert arr.to_pylist() == grid().values.ravel().tolist()


def test_nat_becomes_null_with_a_new_bitmap_only(hub: ih.Hub) -> None:
    values = np.array(["2024-01-01", "NaT", "2024-01-03"], "M8[ns]")
    da = xr.DataArray(values, dims="t", name="when")
    arr, plan = convert(hub, da, "pyarrow")
    assert "NaT become nulls" in str(plan) and arr.null_count == 1
    assert arr.buffers()[1].address == da.values.ctypes.data  # the values stay shared


def test_labels_of_strings_and_names_that_clash(hub: ih.Hub) -> None:
    da = xr.DataArray([1.0, 2.0], dims="c", coords={"c": ["a", "b"]})  # unnamed
    table = hub.convert(da, to="pyarrow")
    assert table.column_names == ["values", "c"] and table.column("c").to_pylist() == ["a", "b"]
    clash = xr.DataArray([1, 2], dims="i", coords={"k": ("i", [3, 4])}, name="k")
    with pytest.raises(NoRouteError, match=r"two columns named 'k'.*rename"):
        hub.convert(clash, to="polars")
    ds = xr.Dataset({"v": ("x", [1.0, 2.0])}, coords={"x": [10, 20]})
    own = hub.convert(ds["x"], to="polars")  # the coordinate itself: no repeated column
    assert isinstance(own, pl.Series) and own.to_list() == [10, 20]
    for same in (ds["x"][1:], ds["x"].copy()):  # a slice or copy of it: the same
        assert hub.convert(same, to="polars").to_list() == same.values.tolist()
    # Found by a review: a DataArray only named like its dimension lost that dimension's
    # coordinate silently (taken for the coordinate itself): it clashes, and says so.
    named = xr.DataArray([0.0, 1.0], dims="x", coords={"x": [10, 20]}, name="x")
    with pytest.raises(NoRouteError, match=r"two columns named 'x'.*rename"):
        hub.convert(named, to="polars")


def test_a_stacked_dimension_travels_as_its_levels(hub: ih.Hub) -> None:
    ds = xr.Dataset(
        {"a": (("x", "y"), np.arange(6.0).reshape(2, 3))},
        coords={"x": [1, 2], "y": ["p", "q", "r"]},
    )
    stacked = ds.stack(z=("x", "y"))
    frame = hub.convert(stacked, to="polars")
    assert frame.columns == ["a", "x", "y"]  # the MultiIndex of tuples stays behind
    assert frame.rows() == [(0.0, 1, "p"), (1.0, 1, "q"), (2.0, 1, "r"),
                            (3.0, 2, "p"), (4.0, 2, "q"), (5.0, 2, "r")]  # fmt: skip
    series = hub.convert(grid(), to=pl.Series)  # one column asked: the values
    assert series.name == "temp" and series.to_list() == grid().values.ravel().tolist()


def test_complex_values_cannot_become_arrow(hub: ih.Hub) -> None:
    da = xr.DataArray(np.arange(3) * 1j, dims="i")
    with pytest.raises(NoRouteError, match=r"Arrow has no complex type.*\.real and \.imag"):
        hub.convert(da, to="polars")
    assert hub.convert(da, to="torch").dtype == torch.complex128


# -- Dataset as a source -----------------------------------------------------------------------
def test_a_dataset_of_columns_is_a_zero_copy_table(hub: ih.Hub) -> None:
    ds = xr.Dataset({"a": ("index", np.arange(5.0)), "b": ("index", np.arange(5))})
    for lib in ("polars", "pyarrow", "pandas"):
        result, plan = convert(hub, ds, lib)
        assert plan.zero_copy, lib
        assert hub.shared_bytes(ds, result) == ds["a"].nbytes + ds["b"].nbytes
    frame = hub.convert(ds, to="polars")
    assert frame.columns == ["a", "b"] and frame["b"].to_list() == [0, 1, 2, 3, 4]


def test_a_gridded_dataset_broadcasts_its_variables(hub: ih.Hub) -> None:
    ds = xr.Dataset(
        {
            "t": (("x", "y"), np.ones((2, 3))),
            "h": ("y", np.arange(3.0)),
            "r": (("y", "x"), np.zeros((3, 2))),
        },
        coords={"y": ["p", "q", "r"]},
    )
    frame, plan = convert(hub, ds, "polars")
    expected = ds.to_dataframe().reset_index()
    assert frame.columns == ["t", "h", "r", "x", "y"]
    for name in frame.columns:
        assert frame[name].to_list() == expected[name].tolist(), name
    assert "t" not in plan.copied_columns and {"h", "r", "x", "y"} <= set(plan.copied_columns)


def test_a_dataset_to_tensors(hub: ih.Hub) -> None:
    ds = xr.Dataset({"a": ("i", np.arange(4.0)), "b": ("i", np.arange(4))})
    with pytest.raises(NoRouteError, match=r"2 data variables.*ds\['a'\].*as_dict=True"):
        hub.convert(ds, to="torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", WriteThroughWarning)
        tensors = hub.convert(ds, to="torch", as_dict=True)
    assert tensors["a"].data_ptr() == ds["a"].values.ctypes.data
    assert tensors["b"].data_ptr() == ds["b"].values.ctypes.data
    one = ds[["a"]]
    tensor, plan = convert(hub, one, "torch")
    assert plan.zero_copy and tensor.data_ptr() == ds["a"].values.ctypes.data


# -- into xarray -------------------------------------------------------------------------------
def test_a_polars_frame_becomes_a_dataset(hub: ih.Hub) -> None:
    frame = pl.DataFrame({"a": [1, 2, 3], "f": [0.5, 1.5, 2.5], "s": ["x", None, "z"]})
    ds, plan = convert(hub, frame, "xarray")
    assert isinstance(ds, xr.Dataset) and list(ds.data_vars) == ["a", "f", "s"]
    assert ds.sizes == {"index": 3} and ds["a"].dtype == np.int64
    assert ds["s"].values[0] == "x" and pd.isna(ds["s"].values[1])
    assert plan.copied_columns == ("s",) and "Python str objects" in str(plan)
    for name in ("a", "f"):  # numbers are shared, by address
        column = pa.table(frame).column(name).chunk(0)
        assert ds[name].values.ctypes.data == column.buffers()[1].address
    with pytest.raises(ValueError, match="read-only"):  # Arrow memory: the plan says so
        ds["a"].values[0] = 5
    assert "read-only" in str(plan)


def test_nulls_are_a_planned_copy_and_a_warned_loss(hub: ih.Hub) -> None:
    table = pa.table({"i": pa.array([1, None, 3]), "f": pa.array([1.5, None, 2.5])})
    plan = hub.plan(table, to="xarray")
    assert {(x.column, x.target) for x in plan.losses} == {("i", "float64"), ("f", "float64")}
    with pytest.warns(LossyConversionWarning) as caught:
        ds = hub.convert(table, to="xarray")
    messages = sorted(str(w.message) for w in caught)
    assert "column 'f'" in messages[0] and "column 'i'" in messages[1]
    assert "integers above 2**53 lose precision" in messages[1]
    assert ds["i"].dtype == np.float64 and np.isnan(ds["i"].values[1])
    with pytest.raises(LossyConversionError, match="column 'i'"):
        hub.convert(table, to="xarray", strict=True)
    with pytest.raises(CopyRequiredError, match="nulls"):
        hub.convert(table, to="xarray", copy=False)


def test_a_lossy_route_is_kept_and_warns_on_every_call(hub: ih.Hub) -> None:
    # The route of a table with nulls was planned on every call (132 us against 41 kept,
    # 4 columns of 1,000 rows): its losses depend only on what route keys hold (names,
    # types, which columns hold nulls), so it is kept, and warns the same each time.
    few = pa.table({"i": pa.array([1, None, 3]), "f": pa.array([1.5, 2.0, 2.5])})
    many = pa.table({"i": pa.array([None] * 9 + [4]), "f": pa.array([0.5] * 10)})
    messages = []
    for table in (few, many, many):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ds = hub.convert(table, to="xarray")
        messages.append([str(w.message) for w in caught])
        assert all(issubclass(w.category, LossyConversionWarning) for w in caught)
        assert np.isnan(ds["i"].values[0 if table is many else 1])
        assert ds["f"].values.tolist() == table["f"].to_pylist()
    assert messages[0] == messages[1] == messages[2] and len(messages[0]) == 1, messages
    assert "column 'i': int64 with nulls -> float64" in messages[0][0]
    assert [len(f.runs) for f in hub._cache.calls.values()] == [1]  # one route, kept
    # Nulls where there were none (the key differs): planned, and warned, for them.
    with pytest.warns(LossyConversionWarning, match="column 'f': float64 with nulls") as caught:
        hub.convert(pa.table({"i": [1, 2], "f": [None, 1.0]}), to="xarray")
    assert len(caught) == 1


def test_a_loss_the_plan_could_not_see_is_warned_when_it_shows(hub: ih.Hub) -> None:
    # pandas describes a categorical as dictionary<large_string>; these categories are
    # integers, whose nulls become NaN: found while converting, and warned then.
    series = pd.Series(pd.Categorical([1, None, 3]), name="c")
    with pytest.warns(LossyConversionWarning, match="column 'c'.*nulls become NaN"):
        da = hub.convert(series, to="xarray")
    assert da.dtype == np.float64 and np.isnan(da.values[1])


def test_pandas_nan_is_the_missing_value_and_stays_shared(hub: ih.Hub) -> None:
    frame = pd.DataFrame({"v": [1.0, np.nan, 3.0]}, index=pd.Index([10, 20, 30], name="k"))
    ds, plan = convert(hub, frame, "xarray")
    assert not plan.losses and ds.sizes == {"k": 3} and ds["k"].values.tolist() == [10, 20, 30]
    assert plan.copied_columns == ("k",) and "pandas Index" in str(plan)
    assert ds["v"].values.ctypes.data == frame["v"].to_numpy().ctypes.data


def test_arrow_types_xarray_cannot_hold(hub: ih.Hub) -> None:
    table = pa.table(
        {
            "tz": pa.array([0, 1_000_000], pa.timestamp("us", tz="Europe/Paris")),
            "d": pa.array([0, 1], pa.date32()),
            "dec": pa.array([decimal.Decimal("1.5"), None], pa.decimal128(5, 2)),
            "cat": pa.array(["x", "y"]).dictionary_encode(),
            "b": pa.array([True, None]),
            "lst": pa.array([[1], [2, 3]]),
            "st": pa.array([{"u": 2**63}, None], pa.struct([("u", pa.uint64())])),
            "tm": pa.array([1, 2], pa.time64("ns")),
            "nul": pa.nulls(2),
            "sv": pa.array(["a", None], pa.string_view()),
            "h": pa.array(np.array([1, 2], np.float16)),
            "ree": pa.compute.run_end_encode(pa.array([1.5, 1.5])),
        }
    )
    plan = hub.plan(table, to="xarray")
    assert "run-end encoded: decoded" in str(plan)
    # A time zone and nanoseconds of times cannot be kept; every other type is held its
    # own way (a planned copy) and its Arrow type kept in the variable's encoding.
    assert {x.column for x in plan.losses} == {"tz", "tm"}
    assert "h" not in plan.copied_columns
    assert (
        "tz" in plan.copied_columns
    )  # xarray copies datetime64 values (checked by address in tests/test_claims.py)
    assert {"d", "dec", "cat", "b", "lst", "st", "tm", "nul", "sv"} <= set(plan.copied_columns)
    text = str(plan)
    assert "time zone Europe/Paris is dropped" in text and "dictionary-encoded: decoded" in text
    assert "kept in the variable's encoding" in text
    with pytest.warns(LossyConversionWarning) as caught:
        ds = hub.convert(table, to="xarray")
    assert sorted(str(w.message).split("'")[1] for w in caught) == ["tm", "tz"]
    assert ds["tz"].dtype == np.dtype("M8[us]") and ds["d"].dtype == np.dtype("M8[s]")
    assert ds["cat"].values.tolist() == ["x", "y"] and ds["h"].dtype == np.float16
    assert ds["ree"].values.tolist() == [1.5, 1.5]
    assert ds["dec"].values[0] == decimal.Decimal("1.5") and ds["lst"].values[1] == [2, 3]
    assert ds["b"].values.tolist() == [True, None] and ds["st"].values[0] == {"u": 2**63}
    assert ds["d"].encoding["interchange_hub.arrow_type"] == pa.date32()
    back = hub.convert(ds, to="pyarrow")  # the kept types come back
    for name in ("d", "dec", "b", "lst", "st"):
        assert back.column(name).type == table.column(name).type, name
        assert back.column(name).to_pylist() == table.column(name).to_pylist(), name
    assert "made date32[day] again" in str(hub.plan(ds, to="pyarrow"))
    moved = ds.assign(d=ds["d"] + np.timedelta64(1, "h"))  # no longer whole days
    assert hub.convert(moved, to="pyarrow").column("d").type == pa.timestamp("s")


def test_a_column_becomes_a_data_array(hub: ih.Hub) -> None:
    series = pl.Series("s", [1.0, 2.0, 3.0])
    da, plan = convert(hub, series, "xarray")
    assert isinstance(da, xr.DataArray) and da.name == "s" and da.dims == ("index",)
    assert plan.zero_copy
    ds = hub.convert(series, to=xr.Dataset)
    assert list(ds.data_vars) == ["s"]
    dates = pa.array([0, None, 2], pa.date32())
    da = hub.convert(dates, to=xr.DataArray)
    assert da.dtype == np.dtype("M8[s]") and hub.convert(da, to="pyarrow").equals(dates)
    chunked = pa.chunked_array([[1.0, 2.0], [3.0]])
    da, plan = convert(hub, chunked, "xarray")
    assert "2 chunks are concatenated" in str(plan) and da.values.tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(CopyRequiredError, match="chunks"):
        hub.convert(chunked, to="xarray", copy=False)


def test_a_tensor_becomes_a_data_array_zero_copy(hub: ih.Hub) -> None:
    arr = np.arange(24.0).reshape(2, 3, 4)
    da, plan = convert(hub, arr, "xarray")
    assert plan.zero_copy and da.dims == ("dim_0", "dim_1", "dim_2")
    assert da.values.ctypes.data == arr.ctypes.data
    t = torch.arange(6).reshape(2, 3)
    da, plan = convert(hub, t, "xr")
    assert plan.zero_copy and da.values.ctypes.data == t.data_ptr()
    ds = hub.convert(arr, to=xr.Dataset)
    assert list(ds.data_vars) == ["values"] and ds["values"].values.ctypes.data == arr.ctypes.data
    fresh = hub.convert(arr, to="xarray", copy=True)
    assert no_shared_bytes(hub, arr, fresh) and fresh.values.tolist() == arr.tolist()
    with pytest.raises(NoRouteError, match="bfloat16"):
        hub.convert(torch.ones(3, dtype=torch.bfloat16), to="xarray")


def test_streams_are_read_once_and_their_nulls_warned_when_read(hub: ih.Hub) -> None:
    schema = pa.schema([("i", pa.int64())])
    batches = [pa.record_batch({"i": pa.array([1, None])}), pa.record_batch({"i": [3, 4]})]
    reader = pa.RecordBatchReader.from_batches(schema, batches)
    assert "read from a stream" in str(hub.plan(reader, to="xarray"))
    with pytest.warns(LossyConversionWarning, match="column 'i'"):
        ds = hub.convert(reader, to="xarray")
    assert ds["i"].values[2:].tolist() == [3.0, 4.0]
    with pytest.raises(ConsumedSourceError):
        hub.convert(reader, to="xarray")
    reader = pa.RecordBatchReader.from_batches(schema, batches)
    with pytest.raises(LossyConversionError):
        hub.convert(reader, to="xarray", strict=True)


def test_repeated_or_missing_names(hub: ih.Hub) -> None:
    table = pa.table({"index": [1.0, 2.0], "v": [3.0, 4.0]})  # a column named like the dim
    ds = hub.convert(table, to="xarray")
    assert list(ds.data_vars) == ["index", "v"] and "index_0" in ds.dims
    empty = hub.convert(pa.table({"a": pa.array([], pa.float64())}), to="xarray")
    assert empty.sizes == {"index": 0} and list(empty.data_vars) == ["a"]
    back = hub.convert(empty, to="pyarrow")
    assert back.num_rows == 0 and back.column_names == ["a"]


# -- xarray <-> xarray -------------------------------------------------------------------------
def test_between_data_array_and_dataset(hub: ih.Hub) -> None:
    da = grid()
    ds, plan = convert(hub, da, xr.Dataset)
    assert plan.zero_copy and ds["temp"].values.ctypes.data == da.values.ctypes.data
    back, plan = convert(hub, ds, xr.DataArray)
    assert plan.zero_copy and back.values.ctypes.data == da.values.ctypes.data
    two = ds.assign(other=ds["temp"] * 2)
    with pytest.raises(NoRouteError, match=r"2 data variables.*to_dataarray"):
        hub.convert(two, to=xr.DataArray)
    fresh = hub.convert(da, to="xarray", copy=True)
    assert isinstance(fresh, xr.DataArray) and fresh.identical(da)
    assert no_shared_bytes(hub, da, fresh)


# -- how variables are held --------------------------------------------------------------------
class _Duck:
    """A minimal duck array (a stand-in for pint, sparse or, with chunks, dask)."""

    def __init__(self, values: np.ndarray, chunked: bool = False) -> None:
        self.values = values
        if chunked:
            self.chunks = ((len(values),),)

    shape = property(lambda self: self.values.shape)
    dtype = property(lambda self: self.values.dtype)
    ndim = property(lambda self: self.values.ndim)
    size = property(lambda self: self.values.size)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.asarray(self.values)

    def __array_function__(self, *args: Any, **kwargs: Any) -> Any:
        return NotImplemented

    def __array_ufunc__(self, *args: Any, **kwargs: Any) -> Any:
        return NotImplemented

    def __getitem__(self, key: Any) -> _Duck:
        return _Duck(self.values[key])

    def __len__(self) -> int:
        return len(self.values)


def test_chunked_and_foreign_arrays_are_refused_with_the_fix(hub: ih.Hub) -> None:
    chunked = xr.DataArray(_Duck(np.arange(3.0), chunked=True), dims="i")
    for to in ("torch", "polars"):
        with pytest.raises(NoRouteError, match=r"chunked array.*\.compute\(\)"):
            hub.convert(chunked, to=to)
    foreign = xr.DataArray(_Duck(np.arange(3.0)), dims="i")
    for to in ("torch", "polars"):
        with pytest.raises(NoRouteError, match=r"_Duck, not a numpy array.*as_numpy"):
            hub.convert(foreign, to=to)


def test_a_real_dask_chunked_variable_is_refused_not_computed(hub: ih.Hub) -> None:
    dask_array = pytest.importorskip("dask.array")
    computed: list[int] = []

    def block(x: np.ndarray) -> np.ndarray:
        computed.append(1)
        return x

    lazy = dask_array.from_array(np.arange(6.0), chunks=3).map_blocks(block)
    computed.clear()  # dask may call it once on a meta array
    chunked = xr.DataArray(lazy, dims="i")
    for to in ("torch", "polars"):
        with pytest.raises(NoRouteError, match=r"chunked array.*\.compute\(\)"):
            hub.convert(chunked, to=to)
    assert not computed


def test_a_lazy_variable_is_loaded_a_copy(hub: ih.Hub) -> None:
    from xarray.core import indexing  # a lazily indexed array, as a file backend gives

    lazy = xr.Variable(("i",), indexing.LazilyIndexedArray(np.arange(4.0)))
    da = xr.DataArray(lazy, name="z")
    plan = hub.plan(da, to="torch")
    assert not plan.zero_copy and "loads it from its backend" in str(plan)
    assert hub.convert(da, to="torch").tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(CopyRequiredError, match="backend"):
        hub.convert(da, to="torch", copy=False)
    assert hub.convert(da, to="polars").to_list() == [0.0, 1.0, 2.0, 3.0]


def test_a_pandas_extension_array_goes_to_tables_only(hub: ih.Hub) -> None:
    da = pd.Series([1, None, 3], dtype="Int64", name="e").to_xarray()
    frame = hub.convert(da, to="polars")
    assert frame["e"].to_list() == [1, None, 3] and frame["e"].dtype == pl.Int64
    with pytest.raises(NoRouteError, match=r"pandas extension array \(Int64\)"):
        hub.convert(da, to="torch")


def test_empty_data(hub: ih.Hub) -> None:
    da = xr.DataArray(np.zeros((0, 3)), dims=("a", "b"))
    assert hub.convert(da, to="torch").shape == (0, 3)
    frame = hub.convert(da, to="polars")
    assert frame.shape == (0, 3) and frame.columns == ["values", "a", "b"]
    assert hub.convert(xr.Dataset(), to="pyarrow").num_columns == 0


@pytest.mark.parametrize(
    "column",
    [
        pa.array(["a", None, "bc"], pa.large_string()),
        pa.array(["a", None], pa.string_view()),
        pa.array([b"ab", None], pa.binary(2)),
        pa.array([b"a", None], pa.binary_view()),
        pa.array([], pa.string()),  # empty: no value to infer a type from
        pa.array([[1, 2], None], pa.list_view(pa.int64())),
        pa.ExtensionArray.from_storage(pa.uuid(), pa.array([b"u" * 16, None], pa.binary(16))),
        pa.ExtensionArray.from_storage(pa.bool8(), pa.array([1, None, 0], pa.int8())),
        pa.ExtensionArray.from_storage(pa.json_(), pa.array(['{"a": 1}', None])),
    ],
    ids=lambda c: str(c.type),
)
def test_types_held_as_objects_come_back_as_they_were(hub: ih.Hub, column: Any) -> None:
    """Text, bytes, views and extension types are Python objects in xarray; the Arrow type
    kept in the encoding makes each the same type again (an empty string column came back
    as null, large_string as string, uuid as fixed_size_binary, silently)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ds = hub.convert(pa.table({"c": column}), to="xarray")
        back = hub.convert(ds, to="pyarrow").column("c")
    assert back.type == column.type and str(back.type) == str(column.type)
    assert back.to_pylist() == column.to_pylist()


@pytest.mark.parametrize("typ", [pa.timestamp("s"), pa.duration("ns")])
def test_int64_min_in_a_time_column_is_warned_not_made_missing_silently(
    hub: ih.Hub, typ: Any
) -> None:
    """INT64_MIN is a value in Arrow and NaT, the missing value, in datetime64."""
    table = pa.table({"t": pa.array([-(2**63), 0, None], pa.int64()).cast(typ)})
    with pytest.warns(LossyConversionWarning, match=r"column 't'.*INT64_MIN is NaT"):
        ds = hub.convert(table, to="xarray")
    assert ds["t"].isnull().values.tolist() == [True, False, True]  # as warned
    with pytest.raises(LossyConversionError, match="INT64_MIN"):
        hub.convert(table, to="xarray", strict=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        hub.convert(table.slice(1), to="xarray")  # no INT64_MIN: nothing to say


def test_unions_are_refused_in_the_plan_with_what_to_do(hub: ih.Hub) -> None:
    """A union's values would be Python objects of several types, which the way back cannot
    read as one Arrow type (it failed mid-run, or came back as strings)."""
    union = pa.UnionArray.from_sparse(
        pa.array([0, 1], pa.int8()), [pa.array([1, 2]), pa.array(["a", "b"])]
    )
    with pytest.raises(NoRouteError, match="xarray holds no union type.*one column per member"):
        hub.plan(pa.table({"u": union}), to="xarray")


def test_polars_categoricals_are_decoded(hub: ih.Hub) -> None:
    """polars' Categoricals are dictionaries of string views, which pyarrow 26 cannot take."""
    frame = pl.DataFrame({"c": pl.Series(["a", None, "b", "a"], dtype=pl.Categorical)})
    ds = hub.convert(frame, to="xarray")
    assert ds["c"].values.tolist()[::2] == ["a", "b"]
    assert hub.convert(ds, to="polars")["c"].to_list() == ["a", None, "b", "a"]


def test_an_aligned_dataarray_reaches_jax_shared_and_an_unaligned_one_copied() -> None:
    jax = pytest.importorskip("jax")
    plugin = pytest.importorskip("interchange_hub_jax")
    hub = ih.Hub(autoload=False, plugins=[*ih.builtin_plugins(), interchange_hub_xarray, plugin])
    buf = np.empty(4096 + 8)
    start = (64 - buf.ctypes.data % 64) % 64 // 8  # the first 64-byte boundary
    for offset, shared in ((0, True), (2, False)):  # 2 float64s on: 16 bytes past it
        values = buf[start + offset : start + offset + 4096].reshape(1024, 4)
        data = xr.DataArray(values)
        with jax.enable_x64(True):  # float64 as it is (the setting is restored after)
            plan = hub.plan(data, to="jax")
            out = hub.convert(data, to="jax")
        assert isinstance(out, jax.Array) and plan.zero_copy == shared
        assert (out.unsafe_buffer_pointer() == values.ctypes.data) == shared


# -- pandas -> xarray in one step ------------------------------------------------------------
def test_pandas_numbers_go_straight_to_xarray_keeping_nan_without_a_scan(hub: ih.Hub) -> None:
    df = pd.DataFrame(
        {"a": [1.0, np.nan, 3.0], "b": np.arange(3, dtype="int32"), "c": [True, False, True]}
    )
    ds, plan = convert(hub, df, "xarray")
    assert plan.zero_copy and len(plan.steps) == 1 and not plan.scans, plan
    assert plan.steps[0].edge.protocol == "xr.Dataset(Series.to_numpy)"
    assert isinstance(ds, xr.Dataset) and list(ds.data_vars) == ["a", "b", "c"]
    assert ds["a"].dims == ("index",) and str(ds["b"].dtype) == "int32"
    assert np.isnan(ds["a"].values[1]) and ds["c"].values.tolist() == [True, False, True]
    for name in df.columns:  # the frame's own memory, read-only (as pandas' views are)
        assert np.shares_memory(ds[name].values, df[name].to_numpy())
        assert not ds[name].values.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        ds["b"].values[0] = 9
    assert df["b"].tolist() == [0, 1, 2]
    again = hub.convert(df, to="xarray")  # the cached route gives the same result
    assert again.identical(ds)
    # As the Arrow route made it: the same variables, dims and values.
    assert ds.identical(xr.Dataset({n: ("index", df[n].to_numpy()) for n in df.columns}))


def test_pandas_series_and_kinds_asked_for(hub: ih.Hub) -> None:
    s = pd.Series([1.5, np.nan], name="v")
    da, plan = convert(hub, s, "xarray")
    assert plan.zero_copy and isinstance(da, xr.DataArray) and da.name == "v"
    assert np.shares_memory(da.values, s.to_numpy())
    ds, _ = convert(hub, s, xr.Dataset)
    assert list(ds.data_vars) == ["v"]
    ds, _ = convert(hub, pd.Series([1, 2]), xr.Dataset)  # unnamed: "values"
    assert list(ds.data_vars) == ["values"]
    da, _ = convert(hub, pd.DataFrame({"x": [1, 2]}), xr.DataArray)
    assert isinstance(da, xr.DataArray) and da.name == "x"
    two = hub.convert(pd.DataFrame({"x": [1], "y": [2]}), to=xr.DataArray)  # a 2-D tensor
    assert two.dims == ("dim_0", "dim_1") and two.values.tolist() == [[1, 2]]


@pytest.mark.parametrize("to", ["xarray", xr.Dataset])
@pytest.mark.parametrize("columns", [["x"], ["x", "y"]])
def test_a_time_zone_index_keeps_the_dataset_and_its_coordinate(
    hub: ih.Hub, to: Any, columns: list[str]
) -> None:
    # The Dataset route drops the index's time zone (a warned loss); the route through
    # one 2-D tensor lost the index and the names and promoted y to float64, and was
    # chosen as the lesser loss, silently for two columns: its losses are counted now.
    index = pd.DatetimeIndex(["2020-01-01", "2020-01-02"], tz="UTC", name="t")
    frame = pd.DataFrame({"x": [1.5, 2.5], "y": [1, 2]}, index=index)[columns]
    with pytest.warns(ih.LossyConversionWarning) as caught:
        ds = hub.convert(frame, to=to)
    zone = "timestamp[us, tz=UTC] -> timestamp[us]: time zone UTC is dropped"
    said = [str(w.message).split(": ", 2)[1:] for w in caught]
    assert said == [["column 't'", f"{zone} (values stay UTC instants)"]]
    assert isinstance(ds, xr.Dataset) and list(ds.data_vars) == columns
    assert ds["t"].values.tolist() == index.tz_localize(None).as_unit("us").values.tolist()
    assert [str(ds[c].dtype) for c in columns] == [str(frame[c].dtype) for c in columns]
    # to=xr.DataArray asks for one array: its route's names are not counted as lost
    plan = hub.plan(pa.table({"x": [1.0], "y": [2.0]}), to=xr.DataArray)
    assert plan.lossless and plan.result.kind == ih.Kind.TABLE


def test_copy_true_of_chunked_data_is_writable(hub: ih.Hub) -> None:
    # Joining chunks makes new memory, but Arrow's, which numpy views read-only: a
    # copy=True result refused writes (a review helper's find).
    column = pa.chunked_array([np.arange(3.0), np.arange(3.0)])
    table = pa.Table.from_batches([pa.record_batch({"a": np.arange(3.0)})] * 2)
    frame = pl.concat([pl.DataFrame({"a": [1.0]}), pl.DataFrame({"a": [2.0]})], rechunk=False)
    for source in (column, table, frame):
        out = hub.convert(source, to="xarray", copy=True)
        values = (out if isinstance(out, xr.DataArray) else out["a"]).values
        assert values.flags.writeable and not hub.shared_bytes(source, out)
        values[0] = 42.0
    assert column.to_pylist()[0] == 0.0 and frame["a"].to_list() == [1.0, 2.0]


def test_pandas_views_and_copies(hub: ih.Hub) -> None:
    block = pd.DataFrame(np.arange(12.0).reshape(4, 3), columns=["p", "q", "r"])
    ds, plan = convert(hub, block.iloc[1:], "xarray")  # strided views of one block, sliced
    assert plan.zero_copy and ds["q"].values.tolist() == [4.0, 7.0, 10.0]
    copied, plan = convert(hub, block, "xarray", copy=True)
    assert plan.copies and not hub.shared_bytes(block, copied)
    copied["p"].values[0] = -1.0  # writable, and the frame keeps its values
    assert block["p"].iloc[0] == 0.0


def test_pandas_columns_the_one_step_leaves_to_the_arrow_route(hub: ih.Hub) -> None:
    frames = [
        pd.DataFrame({"s": ["a", "b"]}),  # strings
        pd.DataFrame({"t": pd.to_datetime(["2020-01-01", None])}),  # times
        pd.DataFrame({"m": pd.array([1, None], dtype="Int64")}),  # masked
        pd.DataFrame({"i": pd.array([1, None], dtype=pd.ArrowDtype(pa.int64()))}),  # nulls
        pd.DataFrame({"f": pd.array([1.5, None], dtype=pd.ArrowDtype(pa.float64()))}),
        pd.DataFrame({"b": pd.array([True, False], dtype=pd.ArrowDtype(pa.bool_()))}),  # bits
    ]
    for df in frames:
        plan = hub.plan(df, to="xarray")
        assert "xr.Dataset(Series.to_numpy)" not in str(plan), plan
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LossyConversionWarning)  # masked ints: float64
            assert isinstance(hub.convert(df, to="xarray"), xr.Dataset)


def test_pandas_arrow_backed_numbers_without_nulls_are_shared(hub: ih.Hub) -> None:
    df = pd.DataFrame(
        {
            "a": pd.array([1, 2, 3], dtype=pd.ArrowDtype(pa.int64())),
            "b": pd.array([1.5, 2.0, 3.0], dtype=pd.ArrowDtype(pa.float64())),
        }
    )
    ds, plan = convert(hub, df, "xarray")  # the claim is checked by address in convert()
    assert plan.zero_copy and len(plan.steps) == 1, plan
    assert ds["a"].values.tolist() == [1, 2, 3] and str(ds["a"].dtype) == "int64"


def test_arrow_nulls_into_xarray_still_warn_rather_than_pass_through_pandas(hub: ih.Hub) -> None:
    # pyarrow -> pandas -> xarray would make NaN of the nulls in to_pandas, which pandas
    # does not warn of; the one step takes only frames the conversion starts from.
    col = pa.chunked_array([pa.array([1.0, None, 3.0])])
    plan = hub.plan(col, to="xarray")
    assert [s.edge.target for s in plan.steps][-2:] != ["pandas", "xarray"], plan
    with pytest.warns(LossyConversionWarning, match="nulls become NaN"):
        hub.convert(col, to="xarray")


def _built_publicly(result: Any) -> Any:
    """``result`` rebuilt through xarray's public constructors, from its own variables."""
    if isinstance(result, xr.DataArray):
        return xr.DataArray(result.variable, coords=result.coords, name=result.name)
    return xr.Dataset(
        {k: v.variable for k, v in result.data_vars.items()},
        coords={k: v.variable for k, v in result.coords.items()},
    )


@pytest.mark.parametrize(
    ("source", "to"),
    [
        (pa.table({"a": [1.0, 2.0], "b": ["x", None], "t": pa.array([1, 2], pa.date32())}), None),
        (pa.table({"a": [1, 2]}).column(0), xr.DataArray),
        (pa.table({"a": [1, 2]}).column(0), xr.Dataset),
        (pa.chunked_array([[], [1.5, None]], pa.float64()), xr.DataArray),
        (pl.DataFrame({"a": [1, 2, 3], "b": [0.5, 1.5, None]}), None),
        (pd.DataFrame({"a": [1.0, np.nan], "b": [True, False]}), None),
        (pd.Series([1, 2], name="s"), xr.DataArray),
        (pd.Series([1, 2]), xr.Dataset),
        (np.arange(6.0).reshape(2, 3), xr.Dataset),
        (np.arange(6.0).reshape(2, 3), xr.DataArray),
        (torch.arange(4), xr.DataArray),
        (np.asarray(3.0), xr.DataArray),
        (pa.table({"index": [3, 4], "v": [1.0, 2.0]}), None),
        (pa.table({"dim_0": [3, 4]}), None),
    ],
)
def test_objects_built_directly_are_identical_to_the_public_constructors(
    hub: ih.Hub, source: Any, to: Any
) -> None:
    # The hub builds Datasets and DataArrays without coordinates directly (xarray's own
    # _construct_direct and the DataArray fastpath), skipping the constructors' merge:
    # the result must be what the public constructors make of the same variables.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LossyConversionWarning)
        result = hub.convert(source, to=to or "xarray")
    public = _built_publicly(result)
    assert result.identical(public)
    assert type(result) is type(public)
    assert dict(result.sizes) == dict(public.sizes)
    assert list(result.xindexes) == list(public.xindexes)
    assert set(result.coords) == set(public.coords)
    assert result.attrs == public.attrs == {}
    if isinstance(result, xr.Dataset):
        assert list(result.data_vars) == list(public.data_vars)
        for name in result.variables:  # encodings (the kept Arrow types) survive
            assert result[name].encoding == public[name].encoding
        result["new"] = result[next(iter(result.data_vars))] * 2  # a usable Dataset
        assert "new" in result.data_vars


def test_variables_of_different_lengths_get_xarray_s_own_error() -> None:
    from interchange_hub_xarray._import import dataset_of

    variables = {"a": xr.Variable(("x",), [1, 2]), "b": xr.Variable(("x",), [1, 2, 3])}
    with pytest.raises(ValueError, match="conflicting sizes"):
        dataset_of(xr, variables)
    assert dataset_of(xr, {}).identical(xr.Dataset())


def test_an_empty_categorical_of_no_categories_becomes_an_empty_variable(hub: ih.Hub) -> None:
    # pandas exports it as a dictionary of null values, of which pa.array([], type)
    # makes no empty array (found by the fuzzer; ConversionError mid-run)
    frame = pd.DataFrame({"c": pd.Categorical([]), "t": pd.Series([], dtype="timedelta64[us]")})
    out = hub.convert(frame, to=xr.Dataset)
    assert set(out.data_vars) == {"c", "t"} and out.sizes["index"] == 0


def test_a_dataarrays_kept_route_follows_its_data_name_and_coordinates(hub: ih.Hub) -> None:
    # A DataArray of one numpy array and no coordinates has a short route key of its own:
    # whatever the description reads of it must be in that key, or a kept route would
    # run for data it was not planned for.
    da = xr.DataArray(np.arange(6.0), name="a")
    first = hub.convert(da, to="pyarrow")
    assert first.type == pa.float64()
    da.data = np.arange(6, dtype=np.int32)  # the same DataArray, new data of another dtype
    out = hub.convert(da, to="numpy")
    assert out.dtype == np.int32 and np.shares_memory(out, da.data)
    assert hub.convert(da, to="pyarrow").type == pa.int32()
    da.data.flags.writeable = False  # read-only now: torch is warned about, as planned
    with pytest.warns(ih.WriteThroughWarning):
        hub.convert(da, to="torch")
    assert hub.convert(da, to="polars").name == "a"
    da.name = "renamed"  # the name is the polars Series' name: in the key
    assert hub.convert(da, to="polars").name == "renamed"
    with_coords = da.assign_coords(dim_0=np.arange(6) * 10)  # the general key
    assert hub.convert(with_coords, to="numpy").tolist() == list(range(6))
    assert interchange_hub_xarray._describe.route_key(with_coords) is not None
    # Names equal as keys but not as columns: 1, 1.0 and True are "1", "1.0", "True".
    for name in (1, 1.0, True):
        out = hub.convert(xr.DataArray(np.arange(3.0), name=name), to="polars")
        assert out.name == str(name), (name, out.name)
    assert interchange_hub_xarray._describe.route_key(xr.DataArray(np.array([], float))) is None


def test_numeric_columns_with_nulls_are_filled_side_by_side(
    hub: ih.Hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From PARALLEL_FROM values the numeric columns whose nulls become NaN are converted
    in threads (as pyarrow's to_pandas does): the same Dataset, the same warnings, one
    thread per such column; one after the other below it, or where pa.cpu_count() is 1."""
    import threading

    from interchange_hub_xarray import _import

    rows = 4096
    missing = np.arange(rows) % 7 == 2
    table = pa.table(
        {
            "i": pa.array(np.arange(rows), mask=missing),
            "f": pa.array(np.arange(rows) * 0.5, mask=missing),
            "s": pa.array([str(n) for n in range(rows)]),
            "g": pa.array(np.arange(rows) * 2.0),  # no nulls: shared, not a thread's work
        }
    )
    threads: list[str] = []
    convert = _import._to_numpy

    def recorded(data: Any, col: Any, copy: bool) -> Any:
        threads.append(threading.current_thread().name)
        return convert(data, col, copy)

    monkeypatch.setattr(_import, "_to_numpy", recorded)

    def run() -> tuple[xr.Dataset, list[str]]:
        threads.clear()
        with pytest.warns(ih.LossyConversionWarning) as caught:
            ds = hub.convert(table, to="xarray")
        return ds, sorted(str(w.message) for w in caught)

    alone, warned = run()
    assert not any(n.startswith("interchange_hub_xarray") for n in threads)
    monkeypatch.setattr(_import, "PARALLEL_FROM", rows)
    both, warned_both = run()
    if pa.cpu_count() > 1:
        side = [n for n in threads if n.startswith("interchange_hub_xarray")]
        assert len(side) == 2 and len(threads) == 4, threads
    assert both.identical(alone) and warned_both == warned and len(warned) >= 2
    assert np.isnan(both["i"].values[2]) and both["i"].values[3] == 3.0
    assert list(both.data_vars) == ["i", "f", "s", "g"]
    assert hub.shared_bytes(table, both) > 0  # "g" still shared
    before = pa.cpu_count()
    pa.set_cpu_count(1)
    try:
        _, warned_one = run()
        assert not any(n.startswith("interchange_hub_xarray") for n in threads)
        assert warned_one == warned
    finally:
        pa.set_cpu_count(before)


@pytest.mark.parametrize(
    "source",
    [
        pa.table({"s": pa.array(["a", None, "c"]), "x": [1.0, 2.0, 3.0]}),
        pl.DataFrame({"s": ["a", None, "c"], "x": [1.0, 2.0, 3.0]}),
        pd.DataFrame({"s": pd.array(["a", None, "c"], dtype="str"), "x": [1.0, 2.0, 3.0]}),
        pa.chunked_array([["a", None], ["c"]]),
    ],
    ids=["pyarrow", "polars", "pandas", "column"],
)
def test_strings_are_objects_with_none_for_nulls_as_the_plan_says(hub: ih.Hub, source: Any) -> None:
    """The object arrays the hub makes are taken by xarray as they are: its constructor
    would read them through pandas, which with pandas 3 makes strings Arrow strings and
    objects again (every value twice) and their nulls NaN, against the plan's word."""
    result, plan = convert(hub, source, "xarray")
    assert "nulls become None" in str(plan)
    var = result["s"] if isinstance(result, xr.Dataset) else result
    assert var.dtype == object and var.values.tolist() == ["a", None, "c"]
    assert var.values.flags.writeable and var.isnull().values.tolist() == [False, True, False]
    back = hub.convert(result, to="pyarrow")
    back = back.column("s") if isinstance(back, pa.Table) else back
    assert (
        pa.types.is_string(back.type)
        or pa.types.is_large_string(back.type)
        or (pa.types.is_string_view(back.type))
    )
    assert back.to_pylist() == ["a", None, "c"]
    # Without nulls, what xarray's own constructor makes of the same objects.
    full = pa.table({"s": ["a", "b"]})
    ds = hub.convert(full, to="xarray")
    assert ds.identical(xr.Dataset({"s": ("index", np.array(["a", "b"], dtype=object))}))


def text_dataset() -> xr.Dataset:
    """Text of every kind the long table encodes anew: str and bytes objects (a None, a
    NaN, a value past 12 bytes: the views point to it), numpy's fixed-width text, and a
    string index coordinate."""
    return xr.Dataset(
        {
            "o": ("i", np.array(["a", None, "a string of more than twelve", np.nan], dtype=object)),
            "b": ("i", np.array([b"x", None, b"bytes of more than twelve", b""], dtype=object)),
            "u": ("i", np.array(["u", "vv", "w" * 20, ""])),
            "s": ("i", np.array([b"s", b"tt", b"u" * 20, b""])),
        },
        coords={"i": np.array(["k0", "k1", "k2", "k3"], dtype=object)},
    )


def text_types(step: Any) -> tuple[str, str]:
    """The types ``step`` makes of :func:`text_dataset`'s strings ("o", "u" and the index
    "i") and of its bytes ("b", "s"); each kind must have one type."""
    types = {c.name: c.dtype for c in step.estimate.out.columns}
    strings = {types[n] for n in ("o", "u", "i")}
    binaries = {types[n] for n in ("b", "s")}
    assert len(strings) == len(binaries) == 1 and set(types) == set("oubsi"), types
    return strings.pop(), binaries.pop()


def test_text_for_polars_is_encoded_once_as_views_polars_shares(
    hub: ih.Hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """For a conversion ending in polars (which keeps text as Arrow views), text is
    encoded as string_view / binary_view, which polars shares (checked by address), where
    string / binary would be encoded and then rebuilt as views; the values are those of
    the plain types (nulls for None and NaN), and every other library still gets them."""
    from interchange_hub import arrowkit

    ds = text_dataset()
    frame, plan = convert(hub, ds, "polars")
    first, last = plan.steps
    assert text_types(first) == ("string_view", "binary_view")
    assert last.zero_copy, plan
    assert "as string_view, the type polars asks for" in str(plan)
    assert plan.request is not None and plan.request.string_type == "string_view"
    table = hub.convert(ds, to="pyarrow")  # the plain types, as before
    assert {f.name: str(f.type) for f in table.schema} == {
        "o": "string",
        "b": "binary",
        "u": "string",
        "s": "binary",
        "i": "string",
    }
    assert frame.to_arrow().to_pylist() == table.to_pylist()
    assert frame["o"].to_list() == ["a", None, "a string of more than twelve", None]
    # What the step gives polars is what polars holds: no byte of it copied again.
    step = first.edge.run(ds, plan.request.context(first.before, at_source=True))
    assert {str(f.type) for f in step.schema} == {"string_view", "binary_view"}
    shared = hub.convert(step, to="polars")
    assert hub.shared_bytes(step, shared) == sum(b.size for b in hub.buffers(step))
    # A pyarrow that cannot build views from Python values: the plain types, made so by
    # the step as its estimate says, and the polars step copies, as its plan says.
    monkeypatch.setattr(arrowkit, "builds_text", lambda name: False)
    fresh = ih.Hub(autoload=False, plugins=[*ih.builtin_plugins(), interchange_hub_xarray])
    again, plain = convert(fresh, ds, "polars")
    assert {c.dtype for c in plain.steps[0].estimate.out.columns} == {"string", "binary"}
    made = plain.steps[0].edge.run(ds, plain.request.context(plain.steps[0].before, at_source=True))
    assert {str(f.type) for f in made.schema} == {"string", "binary"}
    assert not plain.steps[1].zero_copy and again.equals(frame)


def test_strings_for_pandas_are_encoded_once_as_the_large_strings_pandas_shares(
    hub: ih.Hub,
) -> None:
    """For a conversion ending in pandas, whose str dtype keeps large_string's buffers,
    strings encoded anew are made large_string (binary stays binary, which pandas keeps
    as it is), and pandas shares them (checked by address); dtype="arrow" keeps the plain
    types, as the columns' ArrowDtype shows."""
    ds = text_dataset()
    frame, plan = convert(hub, ds, "pandas")
    first, last = plan.steps
    assert text_types(first) == ("large_string", "binary")
    assert "as large_string, the type pandas asks for" in str(plan)
    assert last.zero_copy, plan
    # The frame of before: a hub whose pandas keeps no text type (string, then cast).
    before = ih.Hub(autoload=False, plugins=[*ih.builtin_plugins(), interchange_hub_xarray])
    (pandas,) = (a for a in before.adapters() if a.name == "pandas")
    pandas.arrow_string_type = ""
    assert {c.dtype for c in before.plan(ds, to="pandas").steps[0].estimate.out.columns} == {
        "string",
        "binary",
    }
    pd.testing.assert_frame_equal(frame, before.convert(ds, to="pandas"))
    step = first.edge.run(ds, plan.request.context(first.before, at_source=True))  # type: ignore[union-attr]
    assert hub.shared_bytes(step, hub.convert(step, to="pandas")) > 0
    arrow = hub.convert(ds, to="pandas", dtype="arrow")
    assert (
        str(arrow.dtypes["o"]) == "string[pyarrow]" and str(arrow.dtypes["b"]) == "binary[pyarrow]"
    )


@pytest.mark.parametrize(
    "dtype",
    [pl.Int8, pl.Int16, pl.Int32, pl.Int64, pl.UInt8, pl.UInt16, pl.UInt32, pl.UInt64]
    + [pl.Float32, pl.Float64],
)
def test_a_polars_series_of_numbers_is_read_through_its_own_view(
    hub: ih.Hub, dtype: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A polars Series of numbers without nulls in one chunk: polars' own view of its
    buffer (taken: a spy sees it), the same DataArray (values, dtype, name, encoding,
    read-only) as the Arrow read of it gives, sharing the buffer (checked by address);
    copy=True shares nothing; with nulls: the Arrow read, as before; in chunks or with no
    rows, the same result as the Arrow read's."""
    from interchange_hub_xarray import _import

    views: list[bool] = []
    real = _import._polars_view

    def spy(value: Any, col: Any) -> Any:
        view = real(value, col)
        if isinstance(value, pl.Series):
            views.append(view is not None)
        return view

    monkeypatch.setattr(_import, "_polars_view", spy)
    values = (
        [0, 1, 2, 3, 100]
        if dtype not in (pl.Float32, pl.Float64)
        else [0.5, float("nan"), -1.0, 2.0, 3.0]
    )
    series = pl.Series("s", values, dtype=dtype)
    da, plan = convert(hub, series, "xarray")
    expected = hub.convert(pa.array(series.to_arrow()), to="xarray").rename("s")
    assert plan.zero_copy and da.identical(expected) and da.encoding == expected.encoding == {}
    assert da.values.dtype == expected.values.dtype and not da.values.flags.writeable
    assert da.values.ctypes.data == series.to_numpy().ctypes.data
    ds = hub.convert(series, to=xr.Dataset)
    assert ds["s"].values.ctypes.data == da.values.ctypes.data
    fresh = hub.convert(series, to="xarray", copy=True)
    assert fresh.identical(da) and no_shared_bytes(hub, series, fresh)
    assert views and all(views)  # (each conversion of the Series took the view)
    views.clear()
    for other in (
        pl.Series("s", [values[0], None, values[2]], dtype=dtype),
        pl.concat([series, series], rechunk=False),
        series.clear(),
    ):
        arrow = pa.chunked_array(other.to_arrow()) if len(other) else other.to_arrow()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", LossyConversionWarning)
            got, want = hub.convert(other, to="xarray"), hub.convert(arrow, to="xarray")
        np.testing.assert_array_equal(got.values, want.values)
        assert got.values.dtype == want.values.dtype
    # nulls: the Arrow read (chunks: the one the export made, through polars' view of it)
    assert views[0] is False


def test_a_column_named_nothing_and_a_table_of_no_columns(hub: ih.Hub) -> None:
    # Found by a review: a column named "" became the dimension coordinate (no data
    # variable left), and a table of rows but no columns became a Dataset of no rows.
    nameless = pa.Table.from_arrays([pa.array([1, 2])], names=[""])
    back = hub.convert(hub.convert(nameless, to="xarray"), to="pyarrow")
    assert back.column_names == [""] and back.column(0).to_pylist() == [1, 2]
    no_columns = pa.table({"a": [1, 2, 3]}).drop_columns(["a"])
    with pytest.raises(NoRouteError, match="3 rows and no column; add a column first"):
        hub.convert(no_columns, to="xarray")
    assert hub.convert(no_columns.slice(0, 0), to="xarray").sizes == {}  # nothing to keep


def test_an_object_variable_of_several_python_types_is_named_with_what_to_do(
    hub: ih.Hub,
) -> None:
    # (pyarrow's "Could not convert 'a' with type str: tried to convert to int64" came out
    # as a failed step)
    mixed = xr.DataArray(np.array([1, "a", None], dtype=object), dims="i", name="o")
    with pytest.raises(ih.ConversionError, match=r"variable 'o'.*2 Python types \(int, str\)"):
        hub.convert(mixed, to="polars")
    lists = xr.DataArray(np.array([[1, 2], [3], None], dtype=object), dims="i", name="l")
    assert hub.convert(lists, to="pyarrow").to_pylist() == [[1, 2], [3], None]
