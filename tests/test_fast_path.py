"""Repeated conversions skip planning when the source adapter's route key matches.

The contract (Adapter.route_key): equal keys mean equal descriptions except for sizes.
These tests check that contract on many objects, and that the fast path gives the
results, sharing and warnings of a freshly planned conversion.
"""

from __future__ import annotations

import dataclasses
import importlib
import itertools
import math
import warnings
from collections.abc import Hashable
from typing import Any
from unittest.mock import ANY

import nanoarrow as na
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
import torch

import interchange_hub as ih
from tests.test_dtypes import CASES


def sizeless(info: ih.DataInfo) -> object:
    # Left out of the keys on purpose, and checked by the bound runs (RouteChanged):
    # polars' ADJACENT, whether polars realigns a flat column's bitmap on export (checked
    # with copy=False, the only request it changes), and whether a pandas float column
    # holds NaN.
    cols = tuple(
        (
            c.name,
            c.dtype,
            c.nulls != 0 and ih.Flag.NAN_IS_NULL not in c.flags,
            c.chunks,
            c.flags - {ih.Flag.ADJACENT, ih.Flag.BITMAP_REBUILT_ON_EXPORT}
            if "<" not in c.dtype
            else c.flags - {ih.Flag.ADJACENT},
        )
        for c in info.columns
    )
    return (info.kind, cols, info.shape[1:], info.layout, info.device, info.readonly)


def objects() -> list[Any]:
    arrays = [np.arange(12.0), np.arange(30.0), np.arange(12), np.arange(12.0).reshape(3, 4)]
    arrays += [np.asfortranarray(np.arange(12.0).reshape(3, 4)), np.arange(12.0)[::-1]]
    readonly = np.arange(12.0)
    readonly.flags.writeable = False
    arrays += [
        readonly,
        np.arange(24.0)[::2],
        np.zeros(0),
        np.ma.masked_array([1.0, 2.0], [False, True]),
    ]
    tensors = [torch.arange(12.0), torch.arange(40.0), torch.arange(12.0).reshape(3, 4)]
    tensors += [torch.arange(12.0).reshape(3, 4).t(), torch.arange(5.0, requires_grad=True)]
    tensors += [torch.arange(4.0, dtype=torch.float64), torch.zeros(0)]
    columns = [make() for make in CASES.values()]
    columns += [c.slice(3) for c in columns[:4]] + [pa.array([1, 2, 3])]
    tables = [pa.table({"v": c}) for c in columns]
    tables += [pa.record_batch({"v": pa.array([1.0, 2.0])}), pa.table({"w": [1, 2]})]
    frames: list[Any] = [pl.DataFrame({"a": [1, 2, 3]}), pl.DataFrame({"a": [1, 2, 3, 4, 5]})]
    frames += [pl.DataFrame({"a": [1.0]}), pl.DataFrame({"b": [1, 2]}), pl.Series("a", [1, 2])]
    frames += [pl.concat([pl.DataFrame({"a": [1]}), pl.DataFrame({"a": [2]})], rechunk=False)]
    frames += [pl.DataFrame({"a": [1, None]}), pl.DataFrame({"c": ["x", "y"]}).cast(pl.Categorical)]
    frames += [adjacent_frame(), scattered_frame(), pl.DataFrame({"s": [{"x": 1}]})]
    frames += [pl.DataFrame({"s": [{"y": 1.0}]}), pl.DataFrame({"e": ["a"]}).cast(pl.Enum(["a"]))]
    frames += [pl.DataFrame({"e": ["a"]}).cast(pl.Enum(["a", "b"]))]
    frames += [pl.DataFrame({"a": [1.0, None]}), realigned_frame(), realigned_frame()["a"]]
    frames += [pl.Series("a", [1.0, None, 3.0]), pl.DataFrame({"a": [1.0, 2.0], "b": [None, 1]})]
    frames += [pl.DataFrame({"a": [None, 1.0], "b": [None, 1]}), pl.DataFrame({"s": [{"x": None}]})]
    nano = [na.Array(t) for t in tables[-6:]] + [na.Array(c) for c in columns[:6]]
    pandas = [pd.DataFrame({0: [1.0]}), pd.DataFrame({"0": [1.0]}), pd.DataFrame({"a": [1.0]})]
    pandas += [pd.DataFrame({0: [1.0], "0": [2.0]}), pd.DataFrame({0: [1], 1: [2.0]})]
    pandas += [pd.DataFrame(np.ones((3, 4))), pd.DataFrame(np.ones((5, 4)))]
    pandas += [pd.DataFrame({1: [1.0]}), pd.DataFrame({"1": [1.0, np.nan]})]
    pandas += [pd.Series([1.0], name=0), pd.Series([1.0], name="0"), pd.Series([2.0])]
    pandas += [pd.DataFrame({"a": [1.0]}, index=[7]), pd.DataFrame({"a": [1.0]}, index=["x"])]
    pandas += [pd.DataFrame({"a": [1.0, 2.0]}, index=pd.Index([3, 4], name="i"))]
    days = pd.date_range("2020", periods=2)
    pandas += [pd.DataFrame({"a": [1.0, 2.0]}, index=days), pd.Series([1.0, 2.0], index=days)]
    pandas += [pd.DataFrame({"a": [1.0, 2.0]}, index=pd.DatetimeIndex(["2020", None]))]
    pandas += [pd.DataFrame({"a": [1.0, 2.0], "b": [1, 2]}, index=pd.Index([True, False]))]
    return [*arrays, *tensors, *columns, *tables, *frames, *nano, *pandas]


def adjacent_frame(rows: int = 50) -> pl.DataFrame:
    """A frame whose two float columns lie side by side (from a column-major matrix)."""
    matrix = np.asfortranarray(np.arange(rows * 2.0).reshape(rows, 2))
    return pl.from_numpy(matrix, schema=["a", "b"])


def realigned_frame(rows: int = 40) -> pl.DataFrame:
    """A float column with nulls imported from a sliced Arrow array: polars holds its
    bitmap at an offset and realigns it on every export (a copy of rows / 8 bytes)."""
    column = pl.from_arrow(pa.array([1.0, None] * rows).slice(3))
    assert isinstance(column, pl.Series)
    return pl.DataFrame(column.alias("a"))


def scattered_frame(rows: int = 50) -> pl.DataFrame:
    """The same schema, columns allocated apart."""
    return pl.DataFrame({"a": np.arange(rows * 1.0), "b": np.arange(rows * 1.0) + 5})


def test_equal_route_keys_mean_equal_descriptions_but_sizes(hub: ih.Hub) -> None:
    keyed = []
    for obj in objects():
        adapter = hub.registry.owner(obj)
        assert adapter is not None
        key = adapter.route_key(obj)
        if key is not None:
            keyed.append((type(obj), key, sizeless(hub.describe(obj)), obj))
    assert len(keyed) > 40
    for (t1, k1, d1, o1), (t2, k2, d2, o2) in itertools.combinations(keyed, 2):
        if t1 is t2 and k1 == k2:
            assert d1 == d2, (o1, o2)


class _Ndarray(np.ndarray):
    pass


def test_the_fast_paths_key_functions_give_route_keys_own_keys(hub: ih.Hub) -> None:
    """Adapter.route_key_of(type(obj)) is what the fast path calls for each object of that
    type: made once per type (the type tests done there), it gives route_key's key."""
    others = [np.arange(3.0).view(_Ndarray), na.ArrayStream(pa.table({"a": [1]}))]
    specialised = 0
    for obj in [*objects(), *others]:
        adapter = hub.registry.owner(obj)
        assert adapter is not None
        fn = adapter.route_key_of(type(obj))
        assert fn(obj) == adapter.route_key(obj), obj
        specialised += getattr(fn, "__func__", None) is not type(adapter).route_key
    assert specialised > 60  # numpy, torch, pyarrow, polars, nanoarrow: functions of their own
    # another type than the one asked for: the method itself
    owner = hub.registry.owner(others[0])
    assert owner is not None and owner.route_key_of(type(others[0])) == owner.route_key


@pytest.mark.parametrize(
    ("module", "name", "obj"),
    [
        ("_numpy", "NumpyAdapter", np.arange(3.0)),
        ("_torch", "TorchAdapter", torch.arange(3.0)),
        ("_pyarrow", "PyArrowAdapter", pa.array([1.0])),
        ("_nanoarrow", "NanoarrowAdapter", na.Array(pa.array([1.0]))),
        ("_polars", "PolarsAdapter", pl.DataFrame({"a": [1.0]})),
        ("_polars", "PolarsAdapter", pl.Series("a", [1.0])),
    ],
)
def test_a_subclass_that_keys_its_own_way_is_keyed_its_way(
    module: str, name: str, obj: Any
) -> None:
    # A built-in adapter's key functions are its route_key's; a subclass's route_key is
    # not, so route_key_of gives the subclass's method (found in review).
    base = getattr(importlib.import_module(f"interchange_hub.adapters.{module}"), name)

    class Own(base):  # type: ignore[misc, valid-type]
        def route_key(self, obj: Any) -> Hashable | None:
            return ("own", type(obj).__name__)

    builtin, own = base(), Own()
    assert builtin.route_key_of(type(obj))(obj) == builtin.route_key(obj) != ("own", ANY)
    assert own.route_key_of(type(obj))(obj) == ("own", type(obj).__name__)


def test_a_kept_call_keys_its_objects_with_the_function_made_for_their_type() -> None:
    hub = ih.Hub(autoload=False)
    table = pa.table({"a": [1.0, 2.0]})
    hub.convert(table, to="numpy")
    kept = hub.planner.kept_route(table, "numpy")
    assert kept is not None
    key, run = kept
    adapter = hub.registry.owner(table)
    assert adapter is not None
    assert key is not adapter.route_key  # (the pyarrow adapter's own: no method frame)
    assert key(table) == adapter.route_key(table)
    assert np.shares_memory(run(table), hub.convert(table, to="numpy"))


@pytest.mark.parametrize(
    ("first", "second", "to"),
    [
        (np.arange(10.0), np.arange(1000.0), "torch"),
        (torch.arange(10.0), torch.arange(77.0), "numpy"),
        (pa.table({"a": [1, 2]}), pa.table({"a": list(range(500))}), "polars"),
        (pl.DataFrame({"a": [1.5]}), pl.DataFrame({"a": [2.5] * 300}), "pyarrow"),
        (pa.array([1, 2, 3]), pa.array(range(1000)), "pandas"),
    ],
)
def test_a_repeated_conversion_matches_a_planned_one(first: Any, second: Any, to: str) -> None:
    hub = ih.Hub(autoload=False)
    hub.convert(first, to=to)
    assert hub._cache.sizes()[0] == 1, "the first conversion should have been remembered"
    fast = hub.convert(second, to=to)
    planned = ih.Hub(autoload=False).convert(second, to=to)
    assert type(fast) is type(planned)
    assert len(fast) == len(planned)
    total = sum(b.size for b in hub.buffers(second))
    assert hub.shared_bytes(second, fast) == hub.shared_bytes(second, planned) == total
    copied = hub.convert(second, to=to, copy=True)
    copied_again = hub.convert(second, to=to, copy=True)
    assert hub.shared_bytes(second, copied) == hub.shared_bytes(second, copied_again) == 0


def test_a_change_of_layout_or_flags_is_planned_again(hub: ih.Hub) -> None:
    hub.convert(np.arange(8.0), to="torch")
    readonly = np.arange(8.0)
    readonly.flags.writeable = False
    assert hub.convert(readonly, to="torch").tolist() == readonly.tolist()
    backwards = np.arange(8.0)[::-1]
    result = hub.convert(backwards, to="torch")  # torch's own import aborts on these
    assert result.tolist() == backwards.tolist()
    assert hub.plan(backwards, to="torch").copied_bytes == 64


def test_lossy_conversions_warn_every_time(hub: ih.Hub) -> None:
    data = pa.array([1, None, 3])
    for _ in range(3):
        with pytest.warns(ih.LossyConversionWarning, match="nulls become NaN"):
            hub.convert(data, to="numpy")


def test_lossy_routes_are_remembered_with_their_warnings_repeated_on_each_call() -> None:
    # A lossy route was planned on every call (an Arrow table with nulls into numpy:
    # 242 us against 23 us kept). Built-in losses depend only on what route keys hold
    # (dtypes, names, whether columns hold nulls), so the kept route warns the same.
    hub = ih.Hub(autoload=False)
    few = pa.table({"x": [1.0, None, 3.0], "n": pa.array([1, None, 3])})
    many = pa.table({"x": [None] * 50 + [1.0] * 50, "n": pa.array([None] * 99 + [7])})
    messages = []
    for source in (few, many, many):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = hub.convert(source, to="numpy")
        messages.append(sorted(str(w.message) for w in caught))
        assert all(issubclass(w.category, ih.LossyConversionWarning) for w in caught)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            planned = ih.Hub(autoload=False).convert(source, to="numpy")
        assert np.array_equal(out, planned, equal_nan=True) and np.isnan(out[1, 0])
    assert hub._cache.sizes()[0] == 1
    assert messages[0] == messages[1] == messages[2] and len(messages[0]) == 2
    assert "column 'n': int64 with nulls -> float64" in " ".join(messages[0])
    for _ in range(2):  # strict=True is its own call: planned, and refused, each time
        with pytest.raises(ih.LossyConversionError):
            hub.convert(many, to="numpy", strict=True)


def test_a_remembered_lossy_route_planned_anew_warns_once() -> None:
    # Found in review: the remembered route warned before running, so a step raising
    # RouteChanged (pandas' NaN, which keys leave out) had the call warn twice.
    hub = ih.Hub(autoload=False)

    def frame(first: float) -> pd.DataFrame:
        return pd.DataFrame({"t": pd.to_timedelta([1, 2]), "f": [first, 2.0]})

    # (NaN, pandas' null, has no int64: refused, as pandas' to_numpy(dtype="int64") does,
    # after a remembered route for the frames without one)
    for first in (float("nan"), 1.0, float("nan"), 1.0):
        outcomes = []
        for each in (hub, ih.Hub(autoload=False)):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    each.convert(frame(first), to="numpy", dtype="int64")
                    error = ""
                except ih.NoRouteError as exc:
                    error = str(exc)
            outcomes.append((error, sorted(str(w.message) for w in caught)))
        assert outcomes[0] == outcomes[1]
        assert bool(outcomes[0][0]) == math.isnan(first), outcomes


@pytest.mark.parametrize("source", [pa.table, lambda data: na.Array(pa.table(data))])
def test_arrow_data_with_nulls_takes_no_detour_through_polars_or_pandas(source: Any) -> None:
    # Found in review: the polars fastpath's estimate counted no bitmap bytes, so Arrow
    # data with nulls looked cheaper through polars (into jax: 308-410 us, against 147).
    jax = pytest.importorskip("interchange_hub_jax")
    hub = ih.Hub(autoload=False, plugins=[*ih.builtin_plugins(), jax])
    data = source({"i": pa.array([1, None, 3]), "f": [1.0, 2.0, 3.0]})
    plain = source({"i": pa.array([1, 2, 3]), "f": [1.0, 2.0, 3.0]})
    for obj in (data, plain):
        for to, copy in (("torch", None), ("jax", None), ("jax", True)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                steps = [s.edge.protocol for s in hub.plan(obj, to=to, copy=copy).steps]
            assert not {"pl.DataFrame/pl.Series", "pa.Table.to_pandas"} & set(steps), steps


def test_only_edges_that_say_so_have_their_lossy_routes_kept() -> None:
    hub = ih.Hub(autoload=False)
    builtin = [e for e in hub.registry.edges() if e.adapter in ("numpy", "bridge", "fastpath")]
    assert builtin and all(hub.registry.losses_keyed(e) for e in builtin)
    numpy_edge = builtin[0]
    foreign = ih.Edge("numpy", "arrow", "someone", "x", numpy_edge.estimate, numpy_edge.run)
    assert not hub.registry.losses_keyed(foreign)  # not an edge of a keyed adapter
    assert hub.registry.losses_keyed(dataclasses.replace(foreign, keyed_losses=True))


def test_copy_false_is_refused_every_time(hub: ih.Hub) -> None:
    table = pa.table({"x": [1.0, 2.0], "y": [3.0, 4.0]})
    for _ in range(2):
        with pytest.raises(ih.CopyRequiredError):
            hub.convert(table, to="numpy", copy=False)


def test_one_shot_sources_are_never_replayed(hub: ih.Hub) -> None:
    table = pa.table({"a": [1, 2]})
    for _ in range(2):
        reader = pa.RecordBatchReader.from_batches(table.schema, table.to_batches())
        hub.convert(reader, to="polars")
        with pytest.raises(ih.ConsumedSourceError):
            hub.convert(reader, to="polars")


def _nullable_ints(names: list[str]) -> pa.Table:
    a = pa.chunked_array([pa.array([1, None], pa.int8()), pa.array([3, 4], pa.int8())])
    b = pa.array([1, None, 3, 4], pa.uint16())
    return pa.table([a, b], names=names)


def test_a_route_cached_for_repeated_names_does_not_serve_unique_ones() -> None:
    # pandas refuses repeated names, so they take the (lossy) tensor route; the route
    # cache must not hand that route to a table whose names are unique.
    hub = ih.Hub(autoload=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        hub.convert(na.Array(_nullable_ints(["a0", "a0"])), to="pandas")
    assert any("does not keep column names" in str(w.message) for w in caught)
    plan = hub.plan(na.Array(_nullable_ints(["a0", "a1"])), to="pandas")
    assert plan.lossless and [s.edge.target for s in plan.steps] == ["arrow", "pandas"]


def test_a_route_that_renames_columns_is_a_warned_loss() -> None:
    hub = ih.Hub(autoload=False)
    repeated = na.Array(_nullable_ints(["a0", "a0"]))
    plan = hub.plan(repeated, to="pandas")
    renamed = [loss for loss in plan.losses if "column names" in loss.lost]
    assert [(loss.source, loss.target) for loss in renamed] == [
        ("name 'a0'", "name 'column_0'"),
        ("name 'a0'", "name 'column_1'"),
    ]
    with pytest.raises(ih.LossyConversionError, match="does not keep column names"):
        hub.convert(repeated, to="pandas", strict=True)


def _polars_address(series: pl.Series) -> int:
    return int(series.to_numpy(allow_copy=False).ctypes.data)


def test_polars_frames_side_by_side_become_one_view_and_others_a_copy() -> None:
    hub = ih.Hub(autoload=False)
    adjacent, scattered = adjacent_frame(), scattered_frame()
    plan = hub.plan(adjacent, to="numpy")
    assert plan.zero_copy and [s.edge.target for s in plan.steps] == ["numpy"]
    view = hub.convert(adjacent, to="numpy")
    assert view.ctypes.data == _polars_address(adjacent.to_series(0))
    assert view.flags.f_contiguous and not view.flags.writeable
    # The route cached for the adjacent frame must not serve the scattered one as a view,
    # nor the other way round: each result is what its own plan says.
    assert not hub.plan(scattered, to="numpy").zero_copy
    copy = hub.convert(scattered, to="numpy")
    assert copy.flags.writeable and copy.ctypes.data != _polars_address(scattered.to_series(0))
    np.testing.assert_array_equal(copy, scattered.to_numpy())
    again = hub.convert(adjacent_frame(80), to="numpy")
    assert not again.flags.writeable and again.shape == (80, 2)
    with pytest.raises(ih.CopyRequiredError):
        hub.convert(scattered, to="numpy", copy=False)
    writable = hub.convert(adjacent, to="numpy", copy=True)
    assert writable.flags.writeable and hub.shared_bytes(adjacent, writable) == 0
    tensor = hub.convert(adjacent, to="torch")
    assert tensor.data_ptr() == view.ctypes.data


def test_fast_path_switches_between_adjacent_and_scattered_frames_by_route_changed() -> None:
    hub = ih.Hub(autoload=False)
    scattered = scattered_frame()
    assert hub.convert(scattered, to="numpy").flags.writeable  # cached: the copy route
    view = hub.convert(adjacent_frame(), to="numpy")  # same key: the copy run says so
    assert not view.flags.writeable  # ... and the view route was planned for it
    assert hub.convert(scattered, to="numpy").flags.writeable


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int16, np.uint64, np.int64])
def test_small_polars_frames_gathered_by_the_hub_equal_polars_own_array(dtype: Any) -> None:
    """Below the gather's size the hub copies a frame's columns into place itself, from
    polars' native columns; the array is polars' own, value for value, column-major and
    writable, and the frame is left as it was."""
    from interchange_hub.adapters import _fastpaths

    hub = ih.Hub(autoload=False)
    frame = pl.DataFrame({c: (np.arange(300) * (i + 1)).astype(dtype) for i, c in enumerate("abc")})
    for _ in range(2):  # planned, then the kept run
        out = hub.convert(frame, to="numpy")
        expected = frame.to_numpy()
        assert out.dtype == expected.dtype and out.flags.f_contiguous and out.flags.writeable
        np.testing.assert_array_equal(out, expected)
        out[0, 0] = 99
        assert frame[0, "a"] == 0
    # where polars changed its private handles, the public calls give the same columns
    public = type("Frame", (), {"get_columns": lambda self: frame.get_columns()})()
    ours, theirs = _fastpaths._column_arrays(frame), _fastpaths._column_arrays(public)
    assert len(ours) == len(theirs) == 3
    for mine, its in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(mine, its)


def test_identity_keys_compute_once_per_object_and_forget_dead_objects() -> None:
    calls: list[object] = []

    def compute(obj: object) -> object:
        calls.append(type(obj))  # not the object: that would keep it alive
        return "key"  # every object has an equal key

    keys = ih.adapter.IdentityKeys(compute)
    first, second = pa.array([1, 2]), pa.array([3, 4])
    token = keys(first)
    assert keys(first) == token and len(calls) == 1
    assert keys(second) == token and len(calls) == 2  # equal keys share one int token
    assert isinstance(token, int)
    assert len(keys) == 2
    del first
    assert len(keys) == 1
    plain = [1, 2]  # a list cannot be weakly referenced: computed every time
    keys(plain)
    keys(plain)
    assert len(calls) == 4


def test_a_failing_bound_step_names_its_step() -> None:
    from interchange_hub._core.info import RouteChanged
    from interchange_hub._engine.plans import compile_runs

    ctx = ih.adapter.Context(ih.DataInfo(ih.Kind.COLUMN))

    def boom(value: Any, ctx: Any) -> Any:
        raise ValueError("nope")

    edges = [
        ih.adapter.Edge("a", "b", "t", "pass", lambda c: None, ih.adapter.passthrough),  # type: ignore[arg-type, return-value]
        ih.adapter.Edge("b", "c", "t", "twice", lambda c: None, lambda v, c: v * 2),  # type: ignore[arg-type, return-value]
        ih.adapter.Edge("c", "d", "t", "boom", lambda c: None, boom),  # type: ignore[arg-type, return-value]
    ]
    run = compile_runs(tuple((e, ctx) for e in edges))
    with pytest.raises(ih.ConversionError, match=r"step 3 \(c -> d via boom"):
        run(2)
    assert compile_runs(tuple((e, ctx) for e in edges[:2]))(2) == 4
    assert compile_runs(((edges[0], ctx),))(2) == 2
    # two steps run (a route's usual length, written out without the loop): each named
    two = compile_runs(tuple((e, ctx) for e in edges[1:]))
    with pytest.raises(ih.ConversionError, match=r"step 2 \(c -> d via boom") as failed:
        two(2)
    assert isinstance(failed.value.__cause__, ValueError)
    first_fails = compile_runs(((edges[2], ctx), (edges[1], ctx)))
    with pytest.raises(ih.ConversionError, match=r"step 1 \(c -> d via boom"):
        first_fails(2)
    assert compile_runs(((edges[1], ctx), (edges[1], ctx)))(3) == 12

    def changed(value: Any, ctx: Any) -> Any:
        raise RouteChanged("another layout")

    moved = ih.adapter.Edge("d", "e", "t", "moved", lambda c: None, changed)  # type: ignore[arg-type, return-value]
    with pytest.raises(RouteChanged):  # passed on, for the planner to plan afresh
        compile_runs(((edges[1], ctx), (moved, ctx)))(2)


def test_pyarrow_table_to_numpy_is_one_column_major_copy(hub: ih.Hub) -> None:
    table = pa.table({k: np.arange(100.0) + i for i, k in enumerate("abc")})
    for _ in range(2):  # planned, then through the fast path
        out = hub.convert(table, to="numpy")
        np.testing.assert_array_equal(out, np.column_stack([c.to_numpy() for c in table.columns]))
        assert out.flags.f_contiguous and out.flags.writeable
        assert hub.shared_bytes(table, out) == 0
    ints = pa.table({"a": pa.array([1, 2], pa.int32()), "b": pa.array([3, 4], pa.int32())})
    assert hub.convert(ints, to="numpy").dtype == np.int32


def test_nanoarrow_arrays_take_the_fast_path() -> None:
    hub = ih.Hub(autoload=False)
    table = pa.table({"a": [1.0, 2.0], "b": [3, 4]})
    first = hub.convert(na.Array(table), to="pyarrow")
    assert first.equals(table)
    again = hub.convert(na.Array(pa.table({"a": [5.0], "b": [6]})), to="pyarrow")
    assert again.to_pydict() == {"a": [5.0], "b": [6]}
    assert hub._cache.sizes()[0] == 1


def test_pandas_nan_left_out_of_the_key_is_checked_by_the_export() -> None:
    import pandas as pd

    hub = ih.Hub(autoload=False)
    clean = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [4, 5, 6]})
    holes = pd.DataFrame({"a": [1.0, float("nan"), 3.0], "b": [4, 5, 6]})
    adapter = hub.registry.owner(clean)
    assert adapter is not None and adapter.route_key(clean) == adapter.route_key(holes)
    assert hub.convert(clean, to="pyarrow").column("a").null_count == 0
    # Same key, but the export makes a null of the NaN: planned afresh, as a plan would say.
    table = hub.convert(holes, to="pyarrow")
    assert table.column("a").null_count == 1 and table.column("a").to_pylist()[1] is None
    assert hub.convert(clean, to="pyarrow").column("a").null_count == 0
    # to numpy the NaN stay values and nothing is scanned: one view of the block.
    matrix = np.asfortranarray(np.arange(12.0).reshape(3, 4))
    block = pd.DataFrame(matrix, columns=list("wxyz"), copy=False)
    view = hub.convert(block, to="numpy")
    assert hub.shared_bytes(block, view) == block.to_numpy().nbytes
    block.iloc[1, 1] = np.nan
    assert np.isnan(hub.convert(block, to="numpy")[1, 1])


def test_pandas_keys_per_class_are_route_keys_and_leave_subclasses_out(hub: ih.Hub) -> None:
    import pandas as pd

    adapter = hub.registry.owner(pd.DataFrame({"a": [1]}))
    assert adapter is not None

    class Frame(pd.DataFrame):  # type: ignore[misc]
        pass

    class Series(pd.Series):  # type: ignore[misc]
        pass

    for sub in (Frame({"a": [1.0]}), Series([1.0])):
        assert adapter.route_key(sub) is None
        assert adapter.route_key_of(type(sub))(sub) is None
    keyed = [
        pd.DataFrame({"a": [1.0, 2.0], "b": [3, 4], "c": [5.0, 6.0]}),
        pd.DataFrame({"a": [1.0]}, index=pd.Index([7], name="i")),
        pd.DataFrame(np.ones((3, 2)), columns=[0, 1]),
        pd.Series([1.0, 2.0], name="x"),
        pd.Series([1, 2], index=pd.Index([5, 6], name="i")),
        pd.Series(["x", None], dtype="str"),
    ]
    for obj in keyed:
        key = adapter.route_key(obj)
        assert key is not None
        assert adapter.route_key_of(type(obj))(obj) == key
    # the index's name is read on each call (renamed in place)
    frame = keyed[1]
    before = adapter.route_key(frame)
    frame.index.name = "j"
    assert adapter.route_key_of(pd.DataFrame)(frame) != before


def test_pandas_keys_leave_out_what_they_cannot_see_cheaply(hub: ih.Hub) -> None:
    import pandas as pd

    adapter = hub.registry.owner(pd.DataFrame({"a": [1]}))
    assert adapter is not None
    # An index of its own is keyed by its type, name and values' key, except where
    # describe would need a scan the key cannot make (a float index's NaN) or more.
    assert adapter.route_key(pd.DataFrame({"a": [1]}, index=[5])) is not None
    assert adapter.route_key(pd.DataFrame({"a": [1]}, index=[5.0])) is None
    two_levels = pd.MultiIndex.from_tuples([(1, 2)])
    assert adapter.route_key(pd.DataFrame({"a": [1]}, index=two_levels)) is None
    zoned_index = pd.DatetimeIndex(["2020"]).tz_localize("UTC")
    assert adapter.route_key(pd.DataFrame({"a": [1]}, index=zoned_index)) is None
    assert adapter.route_key(pd.DataFrame({"a": [1]}, index=pd.Index([5], name="i"))) != (
        adapter.route_key(pd.DataFrame({"a": [1]}, index=[5]))
    )
    assert adapter.route_key(pd.DataFrame({"a": ["x"]}, dtype=object)) is None  # objects
    zoned = pd.DataFrame({"t": pd.to_datetime(["2020"]).tz_localize("UTC")})
    assert adapter.route_key(zoned) is None
    # Names are keyed as they are when they are strings or ints (equal tuples of them
    # have equal str(), the names Arrow gives them); floats and bools are not (1 == True).
    for name in (1.5, True, ("a", "b"), None):
        assert adapter.route_key(pd.DataFrame({name: [1.0]})) is None, name
    assert adapter.route_key(pd.DataFrame({0: [1.0]})) != adapter.route_key(
        pd.DataFrame({"0": [1.0]})
    )
    assert adapter.route_key(pd.Series([1.0], name=True)) is None
    assert adapter.route_key(pd.DataFrame([[1, 2]], columns=["a", "a"])) is None
    # Columns that are strided views of a row-major matrix: describe says STRIDED for
    # three rows but contiguous for one, which no O(1) key could tell apart: planned.
    for rows in (1, 3):
        strided = pd.DataFrame(np.arange(rows * 4.0).reshape(rows, 4), copy=False)
        strided.columns = list("abcd")
        assert adapter.route_key(strided) is None
    contiguous = pd.DataFrame(np.asfortranarray(np.ones((3, 4))), columns=list("abcd"))
    assert adapter.route_key(contiguous) is not None
    one, two = pd.DataFrame({"a": [1.0], "b": [2.0]}), pd.DataFrame({"a": [1.0], "b": [2]})
    assert adapter.route_key(one) != adapter.route_key(two)
    assert adapter.route_key(pd.Series([1.0], name="s")) != adapter.route_key(pd.Series([1.0]))


@pytest.mark.parametrize("to", ["numpy", "torch", "pyarrow", "polars"])
def test_a_frame_made_from_a_matrix_takes_the_fast_path(to: str) -> None:
    # pd.DataFrame(matrix) names its columns 0, 1, ...: those frames were planned on
    # every call (241 us instead of 12 for 1,000 x 4 into numpy) before ints were keyed.
    hub = ih.Hub(autoload=False)
    first = pd.DataFrame(np.arange(40.0).reshape(10, 4))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ih.WriteThroughWarning)
        hub.convert(first, to=to)
        assert hub._cache.sizes()[0] == 1, "the first conversion should have been remembered"
        second = pd.DataFrame(np.arange(400.0).reshape(100, 4))
        second.iloc[3, 2] = np.nan
        fast = hub.convert(second, to=to)
    planned = ih.Hub(autoload=False).convert(second, to=to)
    assert type(fast) is type(planned)
    if to in ("pyarrow", "polars"):
        assert fast.equals(planned) and list(
            fast.columns if to == "polars" else fast.column_names
        ) == ["0", "1", "2", "3"]
    else:
        assert np.array_equal(np.asarray(fast), np.asarray(planned), equal_nan=True)
    assert hub.shared_bytes(second, fast) == hub.shared_bytes(second, planned)


@pytest.mark.parametrize("to", ["pyarrow", "nanoarrow", "pandas", "numpy", "torch"])
@pytest.mark.parametrize("make", [lambda df: df, lambda df: df["a"]], ids=["frame", "series"])
def test_polars_data_with_nulls_takes_the_fast_path(to: str, make: Any) -> None:
    # Frames and Series with nulls were planned on every call (1,000 x 2 into pyarrow:
    # 185 us against 26 us once keyed); whether a column holds nulls is in the key.
    hub = ih.Hub(autoload=False)
    clean = make(pl.DataFrame({"a": [1.0, 2.0, 3.0], "b": [1, 2, 3]}))
    nullable = make(pl.DataFrame({"a": [1.0, None, 3.0], "b": [1, 2, 3]}))
    other = make(pl.DataFrame({"a": [None, 5.0] * 50, "b": list(range(100))}))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        hub.convert(nullable, to=to)
        assert hub._cache.sizes()[0] == 1  # lossy or not: built-in losses are keyed
        hub.convert(clean, to=to)  # another key: planned
        del caught[:]
        fast = hub.convert(other, to=to)
        again = [str(w.message) for w in caught]
        del caught[:]
        planned = ih.Hub(autoload=False).convert(other, to=to)
        assert again == [str(w.message) for w in caught]  # the same warnings, or none
    assert type(fast) is type(planned)
    assert hub.shared_bytes(other, fast) == hub.shared_bytes(other, planned)
    if to in ("numpy", "torch"):
        assert np.array_equal(np.asarray(fast), np.asarray(planned), equal_nan=True)
    else:
        assert str(fast) == str(planned)


def test_copy_false_refuses_a_realigned_bitmap_behind_a_cached_route() -> None:
    # Whether polars realigns a bitmap is left out of the key; with copy=False the
    # bound run probes it and the conversion is planned, and refused, as a fresh hub's.
    hub = ih.Hub(autoload=False)
    native = pl.DataFrame({"a": [1.0, None] * 40})
    realigned = realigned_frame()
    adapter = hub.registry.owner(native)
    assert adapter is not None
    assert adapter.route_key(native) == adapter.route_key(realigned)
    for make in (lambda df: df, lambda df: df["a"]):
        shared = hub.convert(make(native), to="pyarrow", copy=False)
        assert hub.shared_bytes(make(native), shared) == sum(
            b.size for b in hub.buffers(make(native))
        )
        for h in (hub, ih.Hub(autoload=False)):
            with pytest.raises(ih.CopyRequiredError, match="realigns a validity bitmap"):
                h.convert(make(realigned), to="pyarrow", copy=False)
        assert len(hub.convert(make(realigned), to="pyarrow")) == 77  # copy=None: a copy
        hub.convert(make(native), to="pyarrow", copy=False)  # still served


@pytest.mark.parametrize(
    "index",
    [
        lambda rows: pd.Index(np.arange(0, 2 * rows, 2)),  # a filtered frame's
        lambda rows: pd.Index([f"r{i}" for i in range(rows)], name="key"),
        lambda rows: pd.date_range("2020", periods=rows, name="when"),
    ],
    ids=["ints", "strings", "datetimes"],
)
@pytest.mark.parametrize("to", ["pyarrow", "polars", "numpy", "nanoarrow"])
def test_frames_with_an_index_of_their_own_take_the_fast_path(index: Any, to: str) -> None:
    # They were planned on every call (a filtered 1,000-row frame into pyarrow: 1.8 ms
    # through pandas' own export and its thread pool, against 0.35 ms for from_pandas).
    hub = ih.Hub(autoload=False)
    first = pd.DataFrame({"x": np.arange(4.0), "n": np.arange(4)}, index=index(4))
    hub.convert(first, to=to)
    assert hub._cache.sizes()[0] == 1, "the first conversion should have been remembered"
    second = pd.DataFrame({"x": np.arange(50.0), "n": np.arange(50)}, index=index(50))
    second.iloc[3, 0] = np.nan
    fast = hub.convert(second, to=to)
    planned = ih.Hub(autoload=False).convert(second, to=to)
    assert type(fast) is type(planned)
    assert hub.shared_bytes(second, fast) == hub.shared_bytes(second, planned)
    if to == "numpy":
        assert np.array_equal(fast, second.to_numpy(), equal_nan=True)  # the index left out
        assert "its index is left out" in str(hub.plan(second, to=to))
    else:
        assert str(fast) == str(planned)
    if to == "pyarrow":
        assert fast.equals(pa.Table.from_pandas(second))  # the index kept as a column


def test_interleaving_leaves_nulls_and_arrow_backed_columns_to_the_arrow_route() -> None:
    # Found in review: a table of ints with nulls beside floats reached numpy through
    # pandas' masked Int64 and to_numpy (objects, unwarned, even with strict=True), and
    # pandas' int64[pyarrow] beside float64 interleaved into objects.
    hub = ih.Hub(autoload=False)
    for source in (
        pa.table({"x": [1, None, 3], "y": [1.0, 2.0, 3.0]}),
        pl.DataFrame({"x": [1, None, 3], "y": [1.0, 2.0, 3.0]}),
    ):
        for to in ("numpy", "torch"):
            with pytest.warns(ih.LossyConversionWarning, match="nulls become NaN"):
                out = np.asarray(hub.convert(source, to=to))
            assert out.dtype == np.float64 and np.isnan(out[1, 0])
            with pytest.raises(ih.LossyConversionError):
                hub.convert(source, to=to, strict=True)
    arrow_backed = pd.DataFrame({"x": pd.array([1, 2], dtype="int64[pyarrow]"), "y": [1.0, 2.0]})
    for _ in range(2):
        out = hub.convert(arrow_backed, to="numpy")
        assert out.dtype == np.float64 and out.tolist() == [[1.0, 1.0], [2.0, 2.0]]


@pytest.mark.parametrize(
    "data",
    [
        {"i": [1, None, 3], "f": [1.0, None, 3.0]},
        {"i": [1, 2, 3], "f": [1.0, None, 3.0]},  # an int column cast, checked when run
        {"i": [1, None, 3], "j": [4, 5, 6]},  # int64 alone: the other one promoted
        {"i": pl.Series([1, None, 3], dtype=pl.Int8), "f": [1.0, 2.0, 3.0]},
        {"f": [None, 2.0, 3.0]},
    ],
)
@pytest.mark.parametrize("to", ["numpy", "torch"])
def test_polars_nulls_reach_tensors_as_the_arrow_route_makes_them(data: Any, to: str) -> None:
    # polars' own to_numpy (the nulls NaN) instead of an export and the Arrow route:
    # the same dtype, values and plan losses as that route (the polars frame's Arrow
    # table, planned by a fresh hub, says what it is).
    frame = pl.DataFrame(data)
    hub = ih.Hub(autoload=False)
    plan = hub.plan(frame, to=to)
    assert [s.edge.protocol for s in plan.steps] == ["DataFrame.to_numpy"] + (
        ["torch.from_numpy"] if to == "torch" else []
    )
    arrow_plan = ih.Hub(autoload=False).plan(frame.to_arrow(), to=to)
    assert sorted(x.message() for x in plan.losses) == sorted(
        x.message() for x in arrow_plan.losses
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):  # planned, then kept
            out = np.asarray(hub.convert(frame, to=to))
        expected = np.asarray(ih.Hub(autoload=False).convert(frame.to_arrow(), to=to))
    assert out.dtype == expected.dtype == np.float64
    assert np.array_equal(out, expected, equal_nan=True)
    assert all(issubclass(w.category, ih.LossyConversionWarning) for w in caught)
    assert hub._cache.sizes()[0] == 1


def test_polars_integers_beyond_2_53_beside_floats_with_nulls_are_warned() -> None:
    hub = ih.Hub(autoload=False)
    frame = pl.DataFrame({"i": [2**53 + 1, 2, 3], "f": [1.0, None, 3.0]})
    for _ in range(2):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            hub.convert(frame, to="numpy")
        messages = [str(w.message) for w in caught]
        assert any("column 'i': int64 -> float64" in m for m in messages), messages
        assert any("column 'f': float64 with nulls" in m for m in messages), messages
    with pytest.raises(ih.LossyConversionError, match="column 'f'"):  # refused when planned
        hub.convert(frame, to="numpy", strict=True)
    small = pl.DataFrame({"i": pl.Series([1, None], dtype=pl.Int8)})  # polars: float32
    assert "DataFrame.to_numpy" not in [s.edge.protocol for s in hub.plan(small, to="numpy").steps]


def test_a_lazyframe_with_copy_false_is_collected_and_shared() -> None:
    # Found in review: the copy=False bitmap check read a LazyFrame's columns.
    hub = ih.Hub(autoload=False)
    for to in ("pyarrow", "nanoarrow"):
        out = hub.convert(pl.LazyFrame({"x": [1, 2, 3]}), to=to, copy=False)
        assert len(out) == 3


def test_an_index_renamed_in_place_is_keyed_with_its_new_name(hub: ih.Hub) -> None:
    # Found in review: the index's name was cached with the Index object, which
    # df.index.name = ... renames in place.
    frame = pd.DataFrame({"a": [1.0, 2.0]}, index=pd.Index([5, 6], name="i"))
    assert hub.convert(frame, to="pyarrow").column_names == ["a", "i"]
    frame.index.name = "j"
    assert hub.convert(frame, to="pyarrow").column_names == ["a", "j"]
    frame.index.name = "a"  # a column's name: pyarrow calls the index __index_level_0__
    for h in (hub, ih.Hub(autoload=False)):
        out = h.convert(frame, to="polars")
        assert out.columns == ["a", "__index_level_0__"] and out["a"].to_list() == [1.0, 2.0]
    adapter = hub.registry.owner(frame)
    assert adapter is not None
    mixed = pd.DataFrame({0: [1], "0": [2.0]})  # pyarrow warns of mixed names each time
    assert adapter.route_key(mixed) is None
    assert adapter.route_key(pd.DataFrame({0: [1]}, index=[3])) is None


def test_pandas_arrow_strings_are_keyed_with_their_nulls_and_shared(hub: ih.Hub) -> None:
    import pandas as pd

    clean = pd.DataFrame({"s": ["a", "b", "c"], "x": [1.0, 2.0, 3.0]})
    holes = pd.DataFrame({"s": ["a", None, "c"], "x": [1.0, 2.0, 3.0]})
    adapter = hub.registry.owner(clean)
    assert adapter is not None and adapter.route_key(clean) is not None
    assert adapter.route_key(clean) != adapter.route_key(holes)  # Arrow counts nulls: O(1)
    for frame, nulls in ((clean, 0), (holes, 1), (clean, 0)):
        table = hub.convert(frame, to="pyarrow")
        assert table.column("s").null_count == nulls
        assert table.column("s").type == pa.large_string()
        # the string buffers are pandas' own Arrow buffers
        assert hub.shared_bytes(frame["s"], table) == hub.shared_bytes(frame["s"], frame["s"])
    series = pd.concat([clean["s"], clean["s"]], ignore_index=True)  # two Arrow chunks
    column = hub.convert(series, to="pyarrow")
    assert column.num_chunks == 2 and column.to_pylist() == ["a", "b", "c"] * 2


@pytest.mark.parametrize(
    ("columns", "dtype"),
    [
        ({"x": np.float64, "n": np.int64}, "float64"),
        ({"x": np.float32, "n": np.int32}, "float64"),
        ({"x": np.int8, "n": np.int16}, "int16"),
        ({"x": np.int64, "n": np.uint64, "y": np.float16}, "float64"),
        ({"x": np.float64, "y": np.float64}, "float64"),  # two blocks of one dtype
    ],
)
def test_frames_of_several_numeric_dtypes_reach_numpy_in_one_interleaving_copy(
    hub: ih.Hub, columns: dict[str, Any], dtype: str
) -> None:
    # They took the Arrow route (a cast per column and a gather: 410 us for 1,000 x 2,
    # against 11 us for df.to_numpy()); pandas interleaves them into numpy's common dtype.
    frame = pd.DataFrame({"x": np.arange(50).astype(columns["x"])})
    for name, typ in list(columns.items())[1:]:
        frame[name] = np.arange(50).astype(typ)  # a block of its own
    assert len(frame._mgr.blocks) == len(columns)
    plan = hub.plan(frame, to="numpy")
    assert [s.edge.protocol for s in plan.steps] == ["DataFrame.to_numpy"]
    assert plan.copied_bytes == sum(frame[c].nbytes for c in frame.columns)
    for _ in range(2):  # planned, then from the route cache
        out = hub.convert(frame, to="numpy")
        assert out.dtype == frame.to_numpy().dtype == np.dtype(dtype)
        assert np.array_equal(out, frame.to_numpy())
        assert out.flags.f_contiguous and plan.steps[-1].estimate.out.layout == "F"
        assert hub.shared_bytes(frame, out) == 0 and out.flags.writeable


def test_integers_beyond_2_53_interleaved_into_float64_are_warned_each_time(
    hub: ih.Hub,
) -> None:
    frame = pd.DataFrame({"x": [1.0, 2.0], "n": np.array([2**53 + 1, 3], dtype=np.int64)})
    for _ in range(2):
        with pytest.warns(ih.LossyConversionWarning, match="column 'n': int64 -> float64"):
            out = hub.convert(frame, to="numpy")
        assert out[0, 1] == float(2**53 + 1)
    with pytest.raises(ih.LossyConversionError, match="beyond"):
        hub.convert(frame, to="numpy", strict=True)
    exact = pd.DataFrame({"x": [1.0, 2.0], "n": np.array([2**53, -(2**53)], dtype=np.int64)})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert hub.convert(exact, to="numpy")[1, 1] == -(2.0**53)
    # booleans among numbers (pandas would make objects) and dtype= keep the Arrow route
    bools = pd.DataFrame({"x": [1.0, 2.0], "b": [True, False]})
    assert "DataFrame.to_numpy" not in [s.edge.protocol for s in hub.plan(bools, to="numpy").steps]
    plan = hub.plan(exact, to="numpy", dtype="float32")
    assert "DataFrame.to_numpy" not in [s.edge.protocol for s in plan.steps]


def test_numeric_pandas_to_polars_is_one_from_pandas_call_sharing_memory(hub: ih.Hub) -> None:
    frame = pd.DataFrame(
        {
            "a": np.arange(5),
            "b": [1.0, np.nan, 3.0, 4.0, 5.0],
            "c": np.arange(5, dtype=np.int32),
            "u": np.arange(5, dtype=np.uint8),
        }
    )
    plan = hub.plan(frame, to="polars")
    assert [s.edge.protocol for s in plan.steps] == ["pl.from_pandas"] and plan.zero_copy
    out = hub.convert(frame, to="polars")
    assert out.equals(pl.from_pandas(frame))
    assert out["b"].null_count() == 1  # pandas' NaN is its missing value, as the Arrow route
    total = sum(b.size for b in hub.buffers(frame))
    assert hub.shared_bytes(out, frame) == total
    again = hub.convert(frame, to="polars")  # the bound run
    assert again.equals(out)


@pytest.mark.parametrize("rows", [60, 10_000])
def test_small_pandas_frames_reach_polars_as_from_pandas_makes_them_column_by_column(
    hub: ih.Hub, rows: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Under 10,000 rows the from_pandas edge gives polars the columns as pyarrow arrays
    # (pl.from_pandas costs 156 us for 1,000 x 4 floats, 0.9-1 ms from 3,000 rows on 2
    # cores; this 48 us and 121): the frame pl.from_pandas makes, for every dtype it takes.
    floats = np.linspace(0.0, 1.0, rows)
    floats[3] = np.nan
    frame = pd.DataFrame(
        {
            "i8": np.arange(rows, dtype="int8"),
            "u64": np.arange(rows, dtype="uint64"),
            "f16": np.ones(rows, dtype="float16"),
            "f32": floats.astype("float32"),
            "f64": floats,
            "b": np.arange(rows) % 2 == 0,
            "s": pd.array([None if i % 5 == 0 else str(i) for i in range(rows)], dtype="str"),
        }
    )
    plan = hub.plan(frame, to="polars")
    assert [s.edge.protocol for s in plan.steps] == ["pl.from_pandas"]
    assert ("each column through pa.array" in str(plan)) == (rows < 10_000)
    hub.convert(frame, to="polars")  # planned (describe reads the columns)
    read = _count_column_reads(monkeypatch)
    out = hub.convert(frame, to="polars")  # the bound run
    assert len(read) == (7 if rows < 10_000 else 0)
    expected = pl.from_pandas(frame)
    assert out.schema == expected.schema and out.equals(expected)
    assert out["f64"].null_count() == 1 and out["s"].null_count() == rows // 5
    for name, size in (("u64", 8), ("f32", 4), ("f64", 8)):  # shared
        assert hub.shared_bytes(out[name], frame[name]) == rows * size
    assert plan.copied_columns == ("b", "s")
    matrix = pd.DataFrame(np.ones((rows, 3)))  # names 0, 1, 2: polars' "0", "1", "2"
    assert hub.convert(matrix, to="polars").equals(pl.from_pandas(matrix))


@pytest.mark.parametrize(
    "frame",
    [
        pd.DataFrame({"a": [1, 2]}, index=[10, 20]),  # the index travels as a column
        pd.DataFrame({"a": pd.array([1, None], dtype="Int64")}),
        pd.DataFrame({"t": np.arange(2).astype("datetime64[us]")}),
        pd.DataFrame({"s": ["x", "y"]}, dtype=object),
    ],
    ids=["index", "masked", "datetime", "objects"],
)
def test_other_pandas_frames_take_the_arrow_route_to_polars(
    hub: ih.Hub, frame: pd.DataFrame
) -> None:
    plan = hub.plan(frame, to="polars")
    assert "pl.from_pandas" not in [s.edge.protocol for s in plan.steps]
    assert hub.convert(frame, to="polars").height == 2


def test_pandas_datetimes_reach_polars_shared_through_arrow(hub: ih.Hub) -> None:
    # pl.from_pandas copies numpy-made datetimes (polars 2.1); the Arrow route shares them.
    frame = pd.DataFrame({"t": np.arange(100).astype("datetime64[us]")})
    assert hub.shared_bytes(pl.from_pandas(frame), frame) == 0
    plan = hub.plan(frame, to="polars")
    out = hub.convert(frame, to="polars")
    assert plan.zero_copy and hub.shared_bytes(out, frame) == 800


@pytest.mark.parametrize("copies", [True, False])
def test_pandas_strings_bools_and_series_to_polars_are_one_from_pandas_call(
    hub: ih.Hub, copies: bool
) -> None:
    frame = pd.DataFrame({"x": np.arange(4.0), "s": ["a", None, "c", "d"], "b": [True] * 4})
    data: Any = frame if copies else frame["x"]
    plan = hub.plan(data, to="polars")
    assert [s.edge.protocol for s in plan.steps] == ["pl.from_pandas"]
    out = hub.convert(data, to="polars")
    assert out.equals(pl.from_pandas(data))
    assert hub.shared_bytes(out, frame["x"]) == 32  # the float column is shared
    if copies:  # the strings are rebuilt as views, the bools bit-packed: both planned
        assert sorted(plan.copied_columns) == ["b", "s"]
        assert hub.shared_bytes(out["s"], frame["s"]) <= 1  # polars keeps the validity bitmap
        assert out["s"].null_count() == 1
    else:
        assert plan.zero_copy and isinstance(out, pl.Series)


def _mixed_pandas_frame(rows: int, zoned: bool = False) -> pd.DataFrame:
    """int, float (a NaN), str (nulls), bool, datetime and duration columns; ``zoned``:
    a zoned datetime too (which leaves the frame without a route key: planned anew)."""
    floats = np.linspace(0.0, 1.0, rows)
    floats[1] = np.nan
    frame = pd.DataFrame(
        {
            "i": np.arange(rows, dtype="int32"),
            "f": floats,
            "s": pd.array([None if i % 5 == 0 else str(i) for i in range(rows)], dtype="str"),
            "b": np.arange(rows) % 3 == 0,
            "t": np.arange(rows).astype("datetime64[us]"),
            "d": (np.arange(rows) * 1_000_000).astype("timedelta64[us]"),  # (seconds)
        }
    )
    if zoned:
        frame["z"] = pd.date_range("2020", periods=rows, freq="h", tz="Europe/Paris")
    return frame


def _count_column_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The columns read through ``DataFrame._get_column_array`` from now on."""
    read: list[int] = []
    real = pd.DataFrame._get_column_array

    def counted(self: pd.DataFrame, i: int) -> Any:
        read.append(i)
        return real(self, i)

    monkeypatch.setattr(pd.DataFrame, "_get_column_array", counted)
    return read


@pytest.mark.parametrize("to", ["polars", "pyarrow"])
def test_small_pandas_frames_reach_arrow_column_by_column(
    hub: ih.Hub, to: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Table.from_pandas spends 190 of its 240 us (1,000 rows, 5 columns) on pandas'
    # metadata and its own bookkeeping. The hub converts the columns as from_pandas
    # converts each (pa.array(..., from_pandas=True)), read without a Series each: for
    # polars without metadata (dropped), for pyarrow with the metadata from_pandas gave
    # the last frame where it holds for this one.
    read = _count_column_reads(monkeypatch)
    first, second = _mixed_pandas_frame(4), _mixed_pandas_frame(60)
    hub.convert(first, to=to)
    read.clear()
    hub.convert(second, to=to)  # pyarrow: another RangeIndex, from_pandas' metadata kept
    hub.convert(second, to=to)
    assert len(read) == (12 if to == "polars" else 6)
    for frame in (second, _mixed_pandas_frame(60, zoned=True)):  # (zoned: planned anew)
        out = hub.convert(frame, to=to)
        reference = pa.Table.from_pandas(frame)
        if to == "pyarrow":
            assert out.equals(reference) and out.schema.metadata == reference.schema.metadata
        else:
            expected = pl.DataFrame(reference)
            assert out.equals(expected) and out.schema == expected.schema
        # the numbers and datetimes are shared, as the plan says; the NaN became a null
        for name, size in (("i", 4), ("f", 8), ("t", 8), ("d", 8)):
            column = out.column(name) if to == "pyarrow" else out[name]
            assert hub.shared_bytes(column, frame[name]) == 60 * size
        nulls = [out.column(n).null_count if to == "pyarrow" else out[n].null_count() for n in "fs"]
        assert nulls == [1, 12]
        # booleans are bit-packed; pandas' Arrow strings are pyarrow's own, polars' views
        copied = ["b"] if to == "pyarrow" else ["b", "s"]
        assert sorted(hub.plan(frame, to=to).copied_columns) == copied
        if to == "pyarrow":
            assert hub.shared_bytes(out.column("s"), frame["s"]) > 0


def _renamed_columns(frame: pd.DataFrame) -> pd.DataFrame:
    frame.columns.name = "fields"
    return frame


def _with_attrs(frame: pd.DataFrame) -> pd.DataFrame:
    frame.attrs["source"] = "sensor 4"
    return frame


@pytest.mark.parametrize(
    "change",
    [
        lambda f: f,
        lambda f: f.set_axis(pd.RangeIndex(5, 65)),  # another start (the blocks as they are)
        lambda f: f.set_axis(pd.RangeIndex(0, 120, 2)),  # another step
        lambda f: f.rename_axis("row"),  # the index named
        _renamed_columns,  # the columns' index named
        lambda f: f.set_axis(pd.Index(list(f.columns), dtype=object), axis=1),  # object names
        _with_attrs,  # attrs, kept in the metadata: from_pandas itself
    ],
    ids=["same", "start", "step", "index-name", "columns-name", "object-names", "attrs"],
)
def test_pandas_metadata_kept_for_pyarrow_is_what_from_pandas_makes(
    hub: ih.Hub, change: Any
) -> None:
    # Each frame has the route key of the one before (names, dtypes, blocks): what the
    # metadata holds besides is read on each call, the metadata taken anew when it differs.
    for frame in (_mixed_pandas_frame(60), change(_mixed_pandas_frame(60))):
        for _ in range(2):
            out = hub.convert(frame, to="pyarrow")
            reference = pa.Table.from_pandas(frame, nthreads=1)
            assert out.equals(reference)
            assert out.schema.metadata == reference.schema.metadata
            assert reference.to_pandas().equals(frame) and out.to_pandas().equals(frame)


def _large_times_frame() -> pd.DataFrame:
    """Over the rows from which a frame's export runs on pyarrow's threads: an int column,
    two datetime columns (one pandas block) and a duration, no NaT (the route key says)."""
    rows = 300_000  # (5 columns pyarrow works on: threads from 200,000 rows)
    return pd.DataFrame(
        {
            "i": np.arange(rows),
            "t": np.arange(rows).astype("datetime64[us]"),
            "f": np.linspace(0.0, 1.0, rows),
            "u": np.arange(rows).astype("datetime64[ns]") + np.timedelta64(5, "s"),
            "d": np.arange(rows).astype("timedelta64[ms]"),
        }
    )


@pytest.mark.parametrize(
    "change",
    [
        lambda f: f,
        lambda f: f.set_axis(pd.RangeIndex(5, 300_005)),
        lambda f: f.rename_axis("row"),
        _renamed_columns,
        _with_attrs,
        lambda f: f.set_axis(pd.Index(list(f.columns), dtype=object), axis=1),
    ],
    ids=["same", "start", "index-name", "columns-name", "attrs", "object-names"],
)
def test_large_frames_times_without_nat_are_shared_unread_as_from_pandas_makes_them(
    hub: ih.Hub, change: Any
) -> None:
    # The route key reads each time column's minimum (NaT?); a large frame's export then
    # leaves them out of Table.from_pandas (which reads them again) and shares their
    # buffers as they are, with the metadata from_pandas gave the whole frame.
    for frame in (_large_times_frame(), change(_large_times_frame())):
        for _ in range(2):
            out = hub.convert(frame, to="pyarrow")
            reference = pa.Table.from_pandas(frame)
            assert out.equals(reference)
            assert out.schema == reference.schema
            assert out.schema.metadata == reference.schema.metadata
            for name in ("t", "u", "d", "i"):
                shared = out.column(name).chunks[0].buffers()[1].address
                assert shared == frame[name].to_numpy().ctypes.data, name
            assert out.to_pandas().equals(frame)


@pytest.mark.parametrize("rows", [8, 600_000])
@pytest.mark.parametrize("dtype", ["float64", "float32", "float16"])
def test_pandas_floats_reach_arrow_shared_unless_they_hold_nan(
    hub: ih.Hub, rows: int, dtype: str
) -> None:
    # numpy's minimum says whether a float column holds NaN (pandas' missing value):
    # without, the column is its numpy buffer as it is; with, pyarrow makes the nulls, as
    # Table.from_pandas does (two such columns of a large frame on its threads). A frame
    # whose NaN differ from the planned one's is planned anew, both ways.
    def frame(nan_at: int | None) -> pd.DataFrame:
        floats = {f"x{j}": np.linspace(0, 1, rows).astype(dtype) for j in range(3)}
        data = pd.DataFrame(floats | {"b": np.arange(rows) % 3 == 0, "i": np.arange(rows)})
        if nan_at is not None:
            data.loc[nan_at, "x1"] = np.nan
        return data

    for nan_at in (None, rows // 2, None, 0, 0):
        data = frame(nan_at)
        out = hub.convert(data, to="pyarrow")
        reference = pa.Table.from_pandas(data)
        assert out.equals(reference) and out.schema == reference.schema
        assert out.schema.metadata == reference.schema.metadata
        assert out.column("x1").null_count == (nan_at is not None)
        shared = ("x0", "x2", "i") if nan_at is not None else ("x0", "x1", "x2", "i")
        for name in shared:
            (chunk,) = out.column(name).chunks
            assert chunk.buffers()[0] is None, name  # no bitmap made
            assert chunk.buffers()[1].address == data[name].to_numpy().ctypes.data, name
        series = data["x1"]
        column = hub.convert(series, to="pyarrow")
        assert column.equals(pa.chunked_array([pa.array(series)]))
        assert column.null_count == (nan_at is not None)
        if nan_at is None:
            assert column.chunks[0].buffers()[1].address == series.to_numpy().ctypes.data


def test_large_frames_of_several_times_with_nat_are_read_on_pyarrows_threads(
    hub: ih.Hub,
) -> None:
    # Datetimes planned with NaT (or zoned) are left to pyarrow: two of a large frame
    # side by side (from_pandas of those columns), the rest read by numpy.
    rows = 600_000
    stamps = np.arange(rows).astype("datetime64[us]")
    frame = pd.DataFrame(
        {
            "t": stamps,
            "u": pd.Series(stamps).dt.tz_localize("UTC"),
            "d": stamps - stamps[0],
            "x": np.linspace(0, 1, rows),
            "b": np.arange(rows) % 2 == 0,
        }
    )
    frame.loc[3, "t"] = pd.NaT
    frame.loc[5, "d"] = pd.NaT
    for _ in range(3):
        out = hub.convert(frame, to="pyarrow")
        reference = pa.Table.from_pandas(frame)
        assert out.equals(reference) and out.schema.metadata == reference.schema.metadata
        assert [out.column(c).null_count for c in ("t", "u", "d", "x", "b")] == [1, 0, 1, 0, 0]


def test_large_frames_times_with_nat_are_read_for_nulls(hub: ih.Hub) -> None:
    frame = _large_times_frame()
    hub.convert(frame, to="pyarrow")
    with_nat = _large_times_frame()
    with_nat.loc[7, "u"] = pd.NaT
    for _ in range(2):
        out = hub.convert(with_nat, to="pyarrow")
        assert out.equals(pa.Table.from_pandas(with_nat))
        assert out.column("u").null_count == 1 and out.column("t").null_count == 0


@pytest.mark.parametrize(
    ("first", "second"),
    [(1, True), (1, 1.0), ("1", 1)],
    ids=["int-bool", "int-float", "str-int"],
)
@pytest.mark.parametrize("where", ["index", "columns"])
def test_pandas_metadata_kept_for_pyarrow_tells_equal_names_of_other_types_apart(
    hub: ih.Hub, first: Any, second: Any, where: str
) -> None:
    # 1 == 1.0 == True, but the metadata writes each its own way (1, 1.0, true; "1",
    # "1.0", "True" for an index): the names are compared with their types.
    for name in (first, second, first):
        frame = _mixed_pandas_frame(60)
        if where == "index":
            frame.index.name = name
        else:
            frame.columns.name = name
        out = hub.convert(frame, to="pyarrow")
        assert out.schema.metadata == pa.Table.from_pandas(frame, nthreads=1).schema.metadata


def test_pandas_frames_named_otherwise_reach_polars_named_as_from_pandas_names_them(
    hub: ih.Hub,
) -> None:
    # Names neither all strings nor all integers (tuples, bytes): Table.from_pandas names
    # them its own way (a tuple's items each a string, bytes decoded), and converts them.
    times = np.arange(3).astype("datetime64[us]")  # (the Arrow route, not pl.from_pandas)
    for columns in ([("v", 2020), ("t", 1)], [b"v", b"t"]):
        frame = pd.DataFrame(dict(zip(columns, [np.arange(3.0), times], strict=True)))
        for _ in range(2):
            out = hub.convert(frame, to="polars")
            assert out.columns == pl.DataFrame(pa.Table.from_pandas(frame)).columns


def test_pandas_frames_with_an_index_reach_polars_through_from_pandas(
    hub: ih.Hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    read = _count_column_reads(monkeypatch)
    indexed = _mixed_pandas_frame(8).set_index(pd.Index([f"r{i}" for i in range(8)], name="k"))
    hub.convert(indexed, to="polars")
    read.clear()
    out = hub.convert(indexed, to="polars")  # the index travels as a column
    assert not read and out.columns[-1] == "k" and out["k"].to_list() == list(indexed.index)


def test_large_pandas_frames_reach_polars_column_by_column_their_floats_shared(
    hub: ih.Hub, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A large frame's floats are looked at by numpy's minimum (no NaN: the buffer as it
    # is), not by pyarrow's threads, whose scan is 10-20x slower: each column read once.
    read = _count_column_reads(monkeypatch)
    big = pd.DataFrame(
        {"t": np.arange(200_000).astype("datetime64[us]")}
        | {f"x{j}": np.arange(200_000.0) for j in range(5)}
    )
    hub.convert(big.iloc[:8], to="polars")
    hub.convert(big, to="polars")
    read.clear()
    out = hub.convert(big, to="polars")
    assert sorted(read) == list(range(6))
    assert out.equals(pl.from_arrow(pa.Table.from_pandas(big)))
    assert hub.shared_bytes(out, big) == big.memory_usage(index=False).sum()


def test_copy_true_pandas_to_polars_shares_nothing(hub: ih.Hub) -> None:
    frame = pd.DataFrame({"a": np.arange(4.0)})
    out = hub.convert(frame, to="polars", copy=True)
    assert hub.shared_bytes(out, frame) == 0


def test_as_dict_keeps_the_way_to_the_columns_per_route_key() -> None:
    """The second as_dict=True conversion of a table of the same schema and layout reuses
    the way to its columns; each result still shares its own table's memory."""
    hub = ih.Hub(autoload=False)
    one = pa.table({"x": np.arange(8.0), "n": np.arange(8)})
    two = pa.table({"x": np.arange(8.0) + 1, "n": np.arange(8) + 1})
    for table in (one, two, one):
        got = hub.convert(table, to="numpy", as_dict=True)
        assert got["x"].tolist() == table.column("x").to_pylist()
        assert hub.shared_bytes(got["n"], table) == 64
    chunked = pa.Table.from_batches(one.to_batches(max_chunksize=3))  # another route key
    got = hub.convert(chunked, to="numpy", as_dict=True)
    assert got["n"].tolist() == list(range(8)) and hub.shared_bytes(got["n"], chunked) == 0
    with_nulls = pa.table({"x": pa.array([1.0, None]), "n": pa.array([1, 2])})
    with pytest.warns(ih.LossyConversionWarning):
        got = hub.convert(with_nulls, to="numpy", as_dict=True)
    assert np.isnan(got["x"][1])


def test_arrow_columns_into_pandas_keep_checks_on_the_bound_run(hub: ih.Hub) -> None:
    # The bound import of a numeric column still names the Series, masks integer nulls and
    # warns NaN beside null on every call, cached route or not.
    named = pl.Series("v", [1.0, 2.0, 3.0])
    for _ in range(2):
        out = hub.convert(named, to="pandas")
        assert out.name == "v" and hub.shared_bytes(out, named) == 24
    ints = pa.chunked_array([pa.array([1, None, 3])])
    for _ in range(2):
        assert str(hub.convert(ints, to="pandas").dtype) == "Int64"
    floats = pa.array([1.0, None, 3.0])
    for _ in range(2):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert hub.convert(floats, to="pandas").isna().sum() == 1
    both = pa.array([float("nan"), None, 3.0])
    for _ in range(2):
        with pytest.warns(ih.LossyConversionWarning, match="NaN"):
            hub.convert(both, to="pandas")
    with pytest.raises(ih.LossyConversionError):
        hub.convert(both, to="pandas", strict=True)
    out = hub.convert(pa.chunked_array([], pa.float64()), to="pandas")
    assert len(out) == 0 and str(out.dtype) == "float64"


def test_plain_arrow_columns_into_tensors_are_views_on_the_bound_run(hub: ih.Hub) -> None:
    for _ in range(2):
        col = pa.array(np.arange(6.0))
        out = hub.convert(col, to="numpy")
        assert hub.shared_bytes(out, col) == 48 and out.tolist() == list(range(6))
    two = pa.chunked_array([pa.array([1.0, 2.0]), pa.array([3.0])])  # joined: a planned copy
    plan = hub.plan(two, to="numpy")
    assert not plan.zero_copy and hub.convert(two, to="numpy").tolist() == [1.0, 2.0, 3.0]
    sliced = pa.array(np.arange(6, dtype=np.int32)).slice(2)
    for _ in range(2):
        out = hub.convert(sliced, to="numpy")
        assert out.tolist() == [2, 3, 4, 5] and hub.shared_bytes(out, sliced) == 16


def _count_calls(m: pytest.MonkeyPatch, module: Any, name: str) -> list[object]:
    """The calls of ``module.name``, patched through ``m`` to count them."""
    calls: list[object] = []
    real = getattr(module, name)

    def counted(*args: Any) -> Any:
        calls.append(args)
        return real(*args)

    m.setattr(module, name, counted)
    return calls


@pytest.mark.parametrize(
    "columns",
    [
        {"i": pa.array([1, None, 3]), "f": pa.array([1.0, None, 3.0])},
        {"u": pa.array([1, None, 255], pa.uint8()), "f": pa.array([0.5, 2.0, None])},
        {"i": pa.array([None, 2, 3], pa.int32())},  # one column: a (3, 1) float64
        {"f": pa.array([1.0, None, 3.0], pa.float32()), "g": pa.array([1, None, 2], pa.float32())},
        {"i": pa.array([2**53 + 1, None, 3]), "j": pa.array([None, 5, 6])},
    ],
)
@pytest.mark.parametrize("to", ["numpy", "torch"])
@pytest.mark.parametrize("copy", [None, True])
@pytest.mark.parametrize("written", ["stacked", "in place", "on threads"])
def test_numeric_arrow_tables_with_nulls_reach_tensors_as_the_general_run_makes_them(
    columns: dict[str, Any],
    to: str,
    copy: bool | None,
    written: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The bound run of a numeric table with nulls (each column's to_numpy, stacked
    # column-major; from FILL_FROM_ROWS rows, written into place, on threads from
    # PARALLEL_FILL_BYTES) gives what the general arrow_to_tensor gives: dtype, values,
    # order, the same warnings, and memory of its own.
    from interchange_hub._bridge import tensors

    if written != "stacked":
        monkeypatch.setattr(tensors, "FILL_FROM_ROWS", 0)
        big = 0 if written == "on threads" else 1 << 62
        monkeypatch.setattr(tensors, "PARALLEL_FILL_BYTES", big)
    table = pa.table(columns)

    def run(hub: ih.Hub) -> tuple[list[Any], list[str]]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            outs = [np.asarray(hub.convert(table, to=to, copy=copy)) for _ in range(2)]
        return outs, [str(w.message) for w in caught]

    bound = ih.Hub(autoload=False)
    with monkeypatch.context() as m:
        binds = _count_calls(m, tensors, "_bind_numeric_table")
        fast, fast_warned = run(bound)
    assert len(binds) == 1  # bound once, when planned
    with monkeypatch.context() as m:
        m.setattr(tensors, "_numeric_table", lambda ctx: False)
        general, general_warned = run(ih.Hub(autoload=False))
    assert fast_warned == general_warned and fast_warned  # every call warns of the nulls
    for out, expected in zip(fast, general, strict=True):
        assert out.dtype == expected.dtype and out.shape == expected.shape == (3, len(columns))
        assert np.array_equal(out, expected, equal_nan=True)
        assert out.flags.f_contiguous == expected.flags.f_contiguous
        assert out.flags.writeable and bound.shared_bytes(out, table) == 0
    assert bound._cache.sizes()[0] == 1  # kept: the second call took the bound run


def test_a_numeric_table_bound_for_one_chunk_takes_several_the_general_way(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from interchange_hub._bridge import tensors

    bound: list[Any] = []
    bind = tensors._bind_numeric_table

    def kept(*args: Any) -> Any:
        bound.append(bind(*args))
        return bound[-1]

    monkeypatch.setattr(tensors, "_bind_numeric_table", kept)
    one = pa.table({"i": pa.array([1, None, 3]), "f": pa.array([1.0, 2.0, None])})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ih.LossyConversionWarning)
        ih.Hub(autoload=False).convert(one, to="numpy")
    (run,) = bound  # the numeric table's bound run
    two = pa.concat_tables([one.slice(0, 1), one.slice(1)])
    assert two.column(0).num_chunks == 2
    assert np.array_equal(run(two), run(one), equal_nan=True)
    assert np.array_equal(run(one), [[1.0, 1.0], [np.nan, 2.0], [3.0, np.nan]], equal_nan=True)


def test_numpy_to_polars_is_one_call_sharing_what_polars_shares(hub: ih.Hub) -> None:
    vector = np.arange(5.0)
    matrix = np.asfortranarray(np.arange(12.0).reshape(3, 4))
    rows = np.ascontiguousarray(matrix)
    for data, shared in ((vector, 40), (matrix, 96), (rows, 0)):
        plan = hub.plan(data, to="polars")
        assert [s.edge.protocol for s in plan.steps] == ["pl.Series/pl.from_numpy"]
        assert plan.zero_copy == bool(shared)
        for _ in range(2):  # planned, then the bound run
            out = hub.convert(data, to="polars")
            assert hub.shared_bytes(out, data) == shared
    frame = hub.convert(matrix, to="polars")
    assert (
        frame.columns == [f"column_{i}" for i in range(4)]
        and list(frame.row(1)) == matrix[1].tolist()
    )
    # A row-major array is copied column-major first (one pass), then shared by polars:
    # the frame pl.from_numpy makes of it, a copy as planned; a single row (C- and
    # F-contiguous at once) and int32 too.
    for data in (rows, rows[:1], np.arange(12, dtype="int32").reshape(3, 4)):
        plan = hub.plan(data, to="polars")
        for _ in range(2):
            out = hub.convert(data, to="polars")
            assert out.equals(pl.from_numpy(data, orient="row"))
            assert (hub.shared_bytes(out, data) > 0) == plan.zero_copy
    assert hub.convert(vector, to="polars").to_list() == vector.tolist()
    for other in (
        np.array([True, False]),
        np.arange(6.0)[::2],
        np.ma.masked_array([1, 2], [False, True]),
    ):
        steps = [s.edge.protocol for s in hub.plan(other, to="polars").steps]
        assert "pl.Series/pl.from_numpy" not in steps  # the Arrow route (bits, gathers, masks)
    table = pa.table({"a": [1.0], "b": [2.0]})  # a table's detour through a tensor: not this
    assert "pl.Series/pl.from_numpy" not in [
        s.edge.protocol for s in hub.plan(table, to="polars").steps
    ]


def test_pandas_datetimes_are_keyed_with_their_nat(hub: ih.Hub) -> None:
    # NaT decides Arrow nulls and losses into tensors: a frame with NaT is planned apart
    # from one without, whichever came first, and every result says what it holds.
    times = np.arange(4).astype("datetime64[us]")
    holes = times.copy()
    holes[1] = np.datetime64("NaT")
    clean = pd.DataFrame({"t": times, "x": np.arange(4.0)})
    nat = pd.DataFrame({"t": holes, "x": np.arange(4.0)})
    adapter = hub.registry.owner(clean)
    assert adapter is not None
    assert None not in (adapter.route_key(clean), adapter.route_key(nat))
    assert adapter.route_key(clean) != adapter.route_key(nat)
    for frame, nulls in ((clean, 0), (nat, 1), (clean, 0), (nat, 1)):
        table = hub.convert(frame, to="pyarrow")
        assert table.column("t").null_count == nulls
        assert hub.shared_bytes(table, frame["t"]) == 32  # the ticks are shared
        assert hub.convert(frame, to="polars")["t"].null_count() == nulls
    series = pd.Series(holes)
    for _ in range(2):
        with pytest.warns(ih.LossyConversionWarning, match="NaT"):
            hub.convert(series, to="torch")


def test_nat_is_found_in_datetimes_and_durations_of_either_byte_order() -> None:
    # The route key's NaT check reads the int64 view's minimum: NaT is INT64_MIN, and a
    # real time one tick later is not NaT (nor is the epoch, nor a negative duration).
    from interchange_hub.adapters._pandas import _nat_min

    for unit in ("datetime64[ns]", "timedelta64[s]"):
        values = np.array([-(2**63) + 1, -5, 0, 2**63 - 1], dtype="int64").view(unit)
        assert not _nat_min(values)
        holes = values.copy()
        holes[2] = np.array("NaT", dtype=unit)
        assert _nat_min(holes)
        assert _nat_min(holes.astype(holes.dtype.newbyteorder(">")))  # the other order
        assert not _nat_min(values.astype(values.dtype.newbyteorder(">")))
        rows = np.stack([values, holes])  # a block: one column per row
        assert _nat_min(rows).tolist() == [False, True]


def test_plain_arrow_tables_into_pandas_keep_checks_on_the_bound_run(hub: ih.Hub) -> None:
    floats = pa.table({"x": [1.0, None, 3.0], "t": pa.array([1, 2, 3], pa.timestamp("us"))})
    both = pa.table({"x": [float("nan"), None, 3.0], "t": floats.column("t")})
    low = pa.table({"x": [1.0, None, 3.0], "t": pa.array([-(2**63), 2, 3], pa.timestamp("us"))})
    for _ in range(2):  # planned, then the bound run of the cached route
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            frame = hub.convert(floats, to="pandas")
        assert frame["x"].isna().sum() == 1 and str(frame["t"].dtype) == "datetime64[us]"
        assert hub.shared_bytes(frame, floats.select(["t"])) == 24
        with pytest.warns(ih.LossyConversionWarning, match="NaN"):
            hub.convert(both, to="pandas")
        with pytest.warns(ih.LossyConversionWarning, match="INT64_MIN"):
            hub.convert(low, to="pandas")
    frame = hub.convert(floats, to="pandas")
    frame.loc[0, "x"] = 99.0  # copy-on-write: the Arrow source never changes
    assert floats.column("x").to_pylist() == [1.0, None, 3.0]


def test_plans_name_the_columns_a_nan_scan_reads(hub: ih.Hub) -> None:
    frame = pd.DataFrame({"x": np.arange(3.0), "n": np.arange(3), "s": ["a", "b", "c"]})
    for target, call in (("pyarrow", "the export reads"), ("polars", "pl.from_pandas reads")):
        plan = hub.plan(frame, to=target)
        assert [s.column for s in plan.scans] == ["x"]  # numpy floats only: NaN is missing
        assert call in plan.scans[0].reason and "scans column 'x'" in str(plan)
    assert hub.plan(np.arange(3.0), to="pyarrow").scans == ()  # numpy keeps NaN a value


def test_plans_name_the_time_columns_whose_nat_export_reads(hub: ih.Hub) -> None:
    """pandas' datetimes and durations (numpy-backed, or zoned) mark missing values with
    NaT, which their export reads every value to make nulls of: the plan says so, as
    for NaN. Arrow-backed times (pd.ArrowDtype) are exported as they are: no scan."""
    stamps = pd.to_datetime(["2024-01-01", None, "2024-01-03"])
    frame = pd.DataFrame(
        {
            "t": stamps,
            "z": stamps.tz_localize("UTC"),
            "d": pd.to_timedelta([1, None, 3], unit="s"),
            "a": pd.array(stamps, dtype=pd.ArrowDtype(pa.timestamp("ns"))),
            "n": np.arange(3),
        }
    )
    plan = hub.plan(frame, to="pyarrow")
    assert [s.column for s in plan.scans] == ["t", "z", "d"]
    assert all("NaT is pandas' missing value" in s.reason for s in plan.scans)
    assert "scans column 't': NaT" in str(plan)
    table = hub.convert(frame, to="pyarrow")
    assert [table.column(c).null_count for c in ("t", "z", "d", "a")] == [1, 1, 1, 1]
    indexed = pd.DataFrame({"n": np.arange(3)}, index=pd.DatetimeIndex(stamps, name="when"))
    assert [s.column for s in hub.plan(indexed, to="pyarrow").scans] == ["when"]


def _integer_columns() -> list[Any]:
    """Integer columns with nulls as Arrow holds them: every width, slices starting
    within a validity byte, chunks with and without nulls (and without a validity
    buffer), empty chunks, a column of nulls only."""
    rng = np.random.default_rng(7)
    out: list[Any] = []
    for typ in (pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint64()):
        info = np.iinfo(typ.to_pandas_dtype())
        values = rng.integers(info.min, info.max, 37, dtype=typ.to_pandas_dtype(), endpoint=True)
        out.append(pa.array(values, mask=np.arange(37) % 5 == 1, type=typ))
    base = out[3]
    out += [base.slice(offset) for offset in (1, 3, 7, 8, 9)]
    out.append(base.slice(3, 20))
    out.append(pa.chunked_array([base.slice(0, 11), pa.array([5, 6], pa.int64()), base.slice(13)]))
    out.append(
        pa.chunked_array([pa.array([], pa.int64()), base.slice(2, 9), pa.array([], pa.int64())])
    )
    out.append(pa.array([None, None, None], pa.int32()))
    return out


@pytest.mark.parametrize("col", _integer_columns(), ids=lambda c: f"{c.type}-{len(c)}")
def test_masked_integers_are_the_arrays_pandas_makes(col: Any) -> None:
    from interchange_hub.adapters._pandas import _masked_integers, _nullable_mapper

    made = _masked_integers(col)
    expected = pa.chunked_array([col] if isinstance(col, pa.Array) else col.chunks, col.type)
    expected = expected.to_pandas(types_mapper=_nullable_mapper).array
    assert type(made) is type(expected) and made.dtype == expected.dtype
    assert np.array_equal(made._mask, expected._mask)
    kept = ~made._mask
    assert np.array_equal(made._data[kept], expected._data[kept])
    assert made._data.flags.writeable and made._mask.flags.writeable
    for buf in (b for chunk in getattr(col, "chunks", [col]) for b in chunk.buffers() if b):
        here = np.frombuffer(buf, np.uint8)
        assert not np.shares_memory(made._data, here) and not np.shares_memory(made._mask, here)
    shared = _masked_integers(col, share=True)  # one chunk: a read-only view of the values
    assert np.array_equal(shared._mask, made._mask)
    assert np.array_equal(shared._data[kept], made._data[kept])
    chunks = [c for c in getattr(col, "chunks", [col]) if len(c)]
    if len(chunks) == 1 and chunks[0].null_count:
        assert not shared._data.flags.writeable
        assert np.shares_memory(shared._data, np.frombuffer(chunks[0].buffers()[1], np.uint8))


NUMERIC_TABLES_WITH_NULLS = {
    "int64 and float64": {
        "i": pa.array([1, None, 3, 4]),
        "f": pa.array([1.5, None, 2.5, 3.5]),
    },
    "every width": {
        "a": pa.array([1, None, 3, 4], pa.int8()),
        "b": pa.array([None, 2, 3, 4], pa.uint32()),
        "c": pa.array([1.0, 2.0, 3.0, 4.0], pa.float32()),
        "d": pa.array([True, False, True, True]),
        "e": pa.array([7, 8, 9, 10], pa.uint64()),
    },
    "sliced and chunked": {
        "i": pa.chunked_array([pa.array([9, 1, None, 3]).slice(1), pa.array([4, None])]),
        "f": pa.chunked_array([pa.array([0.5, 1.5]), pa.array([None, 3.5, 4.5])]),
    },
}


@pytest.mark.parametrize(
    "columns", NUMERIC_TABLES_WITH_NULLS.values(), ids=list(NUMERIC_TABLES_WITH_NULLS)
)
def test_numeric_tables_with_integer_nulls_reach_pandas_as_to_pandas_makes_them(
    columns: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The bound run (a column at a time, one pd.DataFrame) gives the general run's frame:
    # dtypes, values, names, index; and shares what it shares, copy-on-write.
    from interchange_hub.adapters import _pandas

    table = pa.table(columns)
    bound = ih.Hub(autoload=False)
    with monkeypatch.context() as m:
        binds = _count_calls(m, _pandas, "_bind_numeric_frame")
        fast = [bound.convert(table, to="pandas") for _ in range(2)]
    assert len(binds) == 1  # bound once, when planned
    with monkeypatch.context() as m:
        m.setattr(_pandas, "_numeric_frame", lambda info: False)
        general = ih.Hub(autoload=False).convert(table, to="pandas")
    for frame in fast:
        pd.testing.assert_frame_equal(frame, general)
        assert list(frame.dtypes) == list(general.dtypes)
    assert bound.plan(table, to="pandas").zero_copy is False
    frame = fast[0]
    plain = [n for n in table.column_names if not table.column(n).null_count]
    assert bound.shared_bytes(frame, table.select(plain)) == bound.shared_bytes(
        general, table.select(plain)
    )
    before = table.to_pydict()
    for name in table.column_names:  # every column written: the source never changes
        frame.loc[1, name] = frame[name].iloc[0]
    assert table.to_pydict() == before


def test_numeric_frames_have_labels_of_their_own_as_pandas_options_make_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The column labels are made once per tuple of names and options; each frame gets an
    # Index of its own (its name set apart), of the dtype pd.DataFrame gives them now.
    from interchange_hub.adapters import _pandas

    table = pa.table(NUMERIC_TABLES_WITH_NULLS["int64 and float64"])
    hub = ih.Hub(autoload=False)
    first, second = (hub.convert(table, to="pandas") for _ in range(2))
    first.columns.name = "renamed"
    assert second.columns.name is None
    assert hub.convert(table, to="pandas").columns.name is None
    default = pd.DataFrame({"i": [0]}).columns.dtype
    assert first.columns.dtype == default
    with pd.option_context("mode.string_storage", "python"):
        python = pd.DataFrame({"i": [0]}).columns.dtype
        assert python != default
        assert hub.convert(table, to="pandas").columns.dtype == python
    assert hub.convert(table, to="pandas").columns.dtype == default
    # Where pandas has no constructor of frames from blocks: pd.DataFrame, the same frame
    monkeypatch.setattr(_pandas, "_blocks_frame_maker", lambda: None)
    made = hub.convert(table, to="pandas")
    pd.testing.assert_frame_equal(made, second)
    assert made._mgr.nblocks == second._mgr.nblocks == 2


@pytest.mark.parametrize("infer_string", [True, False])
def test_frames_share_no_labels_a_write_could_change(infer_string: bool) -> None:
    # Frames of the same names share their labels' values (made once): those values are
    # read-only, so that a write through one frame's labels cannot rename another's.
    table = pa.table({"i": pa.array([1, None]), "f": pa.array([0.5, 1.5])})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (pandas 3.1 deprecates future.infer_string)
        with pd.option_context("future.infer_string", infer_string):
            hub = ih.Hub(autoload=False)
            first, second = (hub.convert(table, to="pandas") for _ in range(2))
            assert first.columns.dtype == pd.DataFrame({"i": [0]}).columns.dtype
            writes = (
                lambda: first.columns.values.__setitem__(0, "z"),
                lambda: first.columns.array.__setitem__(0, "z"),
                lambda: np.asarray(first.columns).__setitem__(0, "z"),
            )
            for write in writes:
                try:
                    write()
                except (ValueError, TypeError):
                    pass
            assert list(second.columns) == ["i", "f"]
            assert list(hub.convert(table, to="pandas").columns) == ["i", "f"]
            assert list(first.columns) == ["i", "f"]


def test_pandas_string_options_read_without_pandas_store_of_options(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from interchange_hub.adapters import _pandas

    stored = _pandas._string_options()
    monkeypatch.setattr(_pandas, "_option_store", lambda: None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (pandas' deprecation of future.infer_string)
        assert _pandas._string_options() == stored
        with pd.option_context("mode.string_storage", "python"):
            assert _pandas._string_options() != stored


def _plain_tables() -> dict[str, pa.Table]:
    ts = [1_600_000_000_000_000 + i for i in range(4)]
    return {
        "mixed": pa.table(
            {
                "i": pa.array([1, 2, 3, 4]),
                "f": pa.array([1.5, None, 2.5, 3.5]),
                "n": pa.array([float("nan"), 1.0, 2.0, 3.0]),  # (NaN, no nulls: no loss)
                "s": pa.array(["a", None, "ccc", ""]),
                "b": pa.array([True, False, True, True]),
                "ts": pa.array(ts, pa.timestamp("us")),
            }
        ),
        "every width": pa.table(
            {
                "a": pa.array([1, 2, 3, 4], pa.int8()),
                "b": pa.array([1, 2, 3, 4], pa.uint64()),
                "c": pa.array([1.0, None, 3.0, 4.0], pa.float32()),
                "d": pa.array(np.array([1, 2, 3, 4], np.float16)),
                "e": pa.array(["x", "y", None, "z"], pa.large_string()),
            }
        ),
        "temporal": pa.table(
            {
                "s": pa.array([1, None, 3, 4], pa.timestamp("s")),
                "ns": pa.array([1, 2, 3, None], pa.timestamp("ns")),
                "d": pa.array([5, None, 7, 8], pa.duration("ms")),
                "v": pa.array(["p", "q", None, "r"], pa.string_view()),
            }
        ),
        "sliced and chunked": pa.table(
            {
                "i": pa.chunked_array([pa.array([9, 1, 2, 3]).slice(1), pa.array([4, 5])]),
                "s": pa.chunked_array([pa.array(["a", "b"]), pa.array([None, "d", "e"])]),
                # (one chunk at an offset: shared from its offset on)
                "f": pa.chunked_array([pa.array([9.5, 0.5, 1.5, 2.5, 3.5, 4.5]).slice(1)]),
            }
        ),
        "no rows": pa.table({"i": pa.array([], pa.int64()), "s": pa.array([], pa.string())}),
    }


@pytest.mark.parametrize("name", list(_plain_tables()))
def test_plain_tables_made_a_column_at_a_time_are_the_frames_to_pandas_makes(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The bound run makes the frame a column at a time; it is to_pandas' (dtypes,
    # values, labels and their dtype, index, blocks), shares what it shares, and leaves
    # the source alone when written to.
    from interchange_hub.adapters import _pandas

    table = _plain_tables()[name]
    hub = ih.Hub(autoload=False)
    made: list[object] = []
    real = _pandas._frame_by_columns

    def recorded(*args: Any) -> Any:
        made.append(real(*args))
        return made[-1]

    with monkeypatch.context() as m:
        m.setattr(_pandas, "_frame_by_columns", recorded)
        fast = [hub.convert(table, to="pandas") for _ in range(2)]
    assert len(made) == 2 and all(out is not None for out in made)  # made each call
    with monkeypatch.context() as m:
        m.setattr(_pandas, "_column_strings", lambda info: None)
        general = ih.Hub(autoload=False).convert(table, to="pandas")
    expected = table.to_pandas(split_blocks=True)
    for frame in fast:
        pd.testing.assert_frame_equal(frame, general)
        pd.testing.assert_frame_equal(frame, expected)
        assert list(frame.dtypes) == list(general.dtypes)
        assert frame.columns.dtype == general.columns.dtype
        assert frame._mgr.nblocks == general._mgr.nblocks
        assert hub.shared_bytes(frame, table) == hub.shared_bytes(general, table)
    before = repr(table.to_pydict())  # (as text: NaN equals no NaN)
    frame = fast[0]
    for column in frame.columns:
        if len(frame):
            frame.loc[0, column] = frame[column].iloc[-1]
    assert repr(table.to_pydict()) == before


def test_polars_frames_of_strings_reach_pandas_a_column_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # polars exports string_view: read as large strings, made a column at a time
    from interchange_hub.adapters import _pandas

    frame = pl.DataFrame({"s": ["a", None, "ccc"], "i": [1, 2, 3], "f": [0.5, None, 1.5]})
    hub = ih.Hub(autoload=False)
    with monkeypatch.context() as m:
        made = _count_calls(m, _pandas, "_frame_by_columns")
        out = [hub.convert(frame, to="pandas") for _ in range(2)]
    assert len(made) == 2
    for got in out:
        pd.testing.assert_frame_equal(got, frame.to_pandas())
        assert str(got["s"].dtype) == "str"
    with pd.option_context("mode.string_storage", "python"):  # the dtype follows pandas
        got = hub.convert(frame, to="pandas")
        assert got["s"].dtype == pd.DataFrame({"s": ["x"]})["s"].dtype
        assert got.columns.dtype == pd.DataFrame({"s": ["x"]}).columns.dtype


def test_the_bound_numeric_frame_leaves_pandas_metadata_and_boolean_nulls_to_the_general_run(
    hub: ih.Hub,
) -> None:
    frame = pd.DataFrame({"i": pd.array([1, None, 3], "Int64"), "f": [1.0, 2.0, 3.0]})
    frame.index = pd.Index([10, 20, 30], name="row")
    table = pa.Table.from_pandas(frame)  # pandas metadata: the index is rebuilt
    plain = pa.table({"i": table.column("i"), "f": table.column("f"), "row": table.column("row")})
    for _ in range(2):
        assert "row" in hub.convert(plain, to="pandas").columns
        back = hub.convert(table, to="pandas")
        pd.testing.assert_frame_equal(back, frame)
    # The same schema (the route key's), a boolean column holding nulls in this one.
    clean = pa.table({"i": pa.array([1, None]), "b": pa.array([True, False])})
    holes = pa.table({"i": pa.array([1, None]), "b": pa.array([True, None])})
    hub.convert(clean, to="pandas")
    assert str(hub.convert(holes, to="pandas")["b"].dtype) == "boolean"


def test_nan_beside_nulls_is_reported_by_the_bound_numeric_frame(hub: ih.Hub) -> None:
    both = pa.table({"i": pa.array([1, None, 3]), "f": pa.array([float("nan"), None, 1.0])})
    for _ in range(2):
        with pytest.warns(ih.LossyConversionWarning, match="NaN"):
            out = hub.convert(both, to="pandas")
        assert out["f"].isna().tolist() == [True, True, False]
        assert str(out["i"].dtype) == "Int64" and out["i"].isna().tolist() == [False, True, False]


@pytest.mark.parametrize("col", _integer_columns()[:8], ids=lambda c: f"{c.type}-{c.offset}")
def test_integer_columns_with_nulls_reach_pandas_series_as_to_pandas_makes_them(
    col: Any, hub: ih.Hub
) -> None:
    from interchange_hub.adapters._pandas import _nullable_mapper

    expected = col.to_pandas(types_mapper=_nullable_mapper)
    for _ in range(2):  # planned, then the bound run
        series = hub.convert(col, to="pandas")
        pd.testing.assert_series_equal(series, expected)
    series.iloc[0] = 1  # its own values: the source never changes
    assert col.to_pylist() == expected.astype(object).where(expected.notna(), None).tolist()


def _values_of(col: Any) -> Any:
    chunk = col.chunk(0) if isinstance(col, pa.ChunkedArray) else col
    return np.frombuffer(chunk.buffers()[1], np.uint8)


def _with_integer_nulls(rows: int) -> pa.Table:
    ints = pa.array([None if i % 10 == 3 else i * 7 for i in range(rows)], pa.int64())
    floats = pa.array([None if i % 10 == 5 else i / 4 for i in range(rows)])
    return pa.table({"i": ints, "f": floats})


_WRITES: dict[str, Any] = {
    "loc": lambda out: out.loc.__setitem__((0, "i"), 5),
    "iloc": lambda out: out.iloc.__setitem__((1, 0), 6),
    "at": lambda out: out.at.__setitem__((2, "i"), 7),
    "fillna inplace": lambda out: out.fillna(0, inplace=True),
    "column +=": lambda out: out["i"].__iadd__(1),
    "clip inplace": lambda out: out.clip(0, 10, inplace=True),
    "where inplace": lambda out: out.where(out > 50, 0, inplace=True),
    "series iloc": lambda out: out.iloc.__setitem__(0, 5),
    "series fillna inplace": lambda out: out.fillna(0, inplace=True),
    "series replace inplace": lambda out: out.replace(7, 9, inplace=True),
}


@pytest.mark.parametrize(
    "source",
    [
        "pyarrow table",
        "polars frame",
        "arrow column",
        "table with pandas metadata",
        "one column with pandas metadata",
    ],
)
def test_integer_nulls_reach_pandas_with_their_values_shared_copy_on_write(
    source: str, hub: ih.Hub
) -> None:
    # pandas' masked Int64 needs a mask of its own (a byte a row, from the bitmap); the
    # values are Arrow's, shared read-only and checked by address; the plan says so (the
    # mask's bytes, not the values'), and each write through pandas copies the column.
    rows = 1000
    table = _with_integer_nulls(rows)
    if source.endswith("with pandas metadata"):  # (the general run: index from metadata)
        if source.startswith("one column"):  # (every column apart: none sets the rows)
            table = table.select(["i"])
        masked = {pa.int64(): pd.Int64Dtype()}.get
        table = pa.Table.from_pandas(table.to_pandas(types_mapper=masked))
    obj: Any = {"polars frame": pl.from_arrow(table), "arrow column": table.column("i")}.get(
        source, table
    )
    arrow = pa.table(obj) if source == "polars frame" else table  # polars' own buffers
    before = arrow.column("i").to_pylist()

    def converted(**options: Any) -> Any:
        out = hub.convert(obj, to="pandas", **options)
        return out, (out if source == "arrow column" else out["i"])

    for _ in range(2):  # planned, then the bound run
        plan = hub.plan(obj, to="pandas")
        out, column = converted()
        assert str(column.dtype) == "Int64" and column.isna().sum() == 100
        assert np.shares_memory(column.array._data, _values_of(arrow.column("i")))
        assert not column.array._data.flags.writeable
        assert column.array._mask.flags.writeable  # the mask is pandas' own
    (mask,) = [c for c in plan.copies if c.column in ("i", "")]
    assert mask.nbytes == rows and "values are shared" in mask.reason
    with pytest.raises(ValueError, match="read-only"):
        column.array[0] = 5  # the array itself: numpy refuses, as for the float columns
    for name, write in _WRITES.items():
        if name.startswith("series") != (source == "arrow column"):
            continue
        out, _ = converted()  # a fresh result each: each write is the first
        write(out)
        assert arrow.column("i").to_pylist() == before, name  # pandas copied, then wrote
    _, own = converted(copy=True)
    assert own.array._data.flags.writeable
    assert not np.shares_memory(own.array._data, _values_of(arrow.column("i")))


def test_an_integer_column_with_nulls_into_a_dataframe_copies_as_its_plan_says(
    hub: ih.Hub,
) -> None:
    # A column asked for as a table goes through to_pandas, which copies the values: the
    # plan says the values are copied, not only the mask.
    col = _with_integer_nulls(100).column("i")
    for _ in range(2):
        plan = hub.plan(col, to=pd.DataFrame)
        frame = hub.convert(col, to=pd.DataFrame)
        assert not np.shares_memory(frame.iloc[:, 0].array._data, _values_of(col))
        (copy,) = plan.copies
        assert copy.nbytes > 100 and "data and mask are copied" in copy.reason


def test_an_arrow_column_into_a_series_is_named_by_its_plan_bound_or_not(hub: ih.Hub) -> None:
    # Table.column sets pyarrow's own name on the column, which to_pandas would give the
    # Series; the bound run names it as the general run does.
    from interchange_hub.adapters._pandas import _import

    table = pa.table({"x": [1.0, 2.0], "k": pa.array([1, None])})
    for name in ("x", "k"):
        col = table.column(name)
        info = hub.describe(col)
        expected = _import(col, ih.adapter.Context(info, kind=ih.Kind.COLUMN)).name
        names = [hub.convert(col, to="pandas").name for _ in range(2)]
        assert names == [expected, expected]
    assert hub.convert(pa.array([1.0, 2.0]), to="pandas").name is None


def test_the_torch_route_key_finds_column_major_tensors_as_transposing_would() -> None:
    # The route key reads a 2-D tensor's strides instead of making its transposed view:
    # the same answer as t().is_contiguous() for every layout, size-1 dimensions included
    # (a tensor neither row- nor column-major has no key: it is planned), and the key
    # calls a tensor row-major exactly where is_contiguous() does.
    from interchange_hub.adapters._torch import _tensor_key

    checked = 0
    for rows, cols in itertools.product([1, 2, 3, 5], [1, 2, 4]):
        base = torch.arange(200.0)  # room for every stride below
        for strides in itertools.product([0, 1, 2, 3, 4, 5, 8, 20], repeat=2):
            tensor = torch.as_strided(base, (rows, cols), strides)
            checked += 1
            key = _tensor_key(tensor)
            if tensor.is_contiguous():  # row-major, as torch says, whatever else holds
                assert key == (tensor.dtype, cols, 2, True, "C")
            elif tensor.t().is_contiguous():
                assert key == (tensor.dtype, cols, 2, True, "F")
            else:
                assert key is None
    assert checked > 700
    assert _tensor_key(torch.zeros(0, 3)) is None and _tensor_key(torch.zeros(3, 0)) is None


class _NamedArray:
    """An Arrow array producer whose field has a name (as a table's column has)."""

    def __init__(self, name: str, data: Any) -> None:
        self.field, self.data = pa.field(name, data.type), data

    def __arrow_c_array__(self, requested_schema: object = None) -> tuple[object, object]:
        return self.field.__arrow_c_schema__(), self.data.__arrow_c_array__()[1]


@pytest.mark.parametrize(
    "data",
    [
        pa.array([1.5, None, 2.5, 4.0]),
        pa.array(range(20), pa.int8()).slice(3, 9),
        pa.array([1, None, 2**64 - 1], pa.uint64()),
        pa.array([True, None, False, True, True, False, True, False, True]).slice(1),
        pa.array([0.5, 1.5], pa.float32()),
    ],
    ids=["float64 nulls", "int8 sliced", "uint64", "bool sliced", "float32"],
)
def test_one_array_of_numbers_from_another_producer_reaches_polars_through_its_capsule(
    data: Any, hub: ih.Hub
) -> None:
    # polars reads the producer's capsule itself: the Series the pyarrow way gives (the
    # name of the hub's description, dtype, values), sharing what it shares; a name in
    # the producer's schema that the description leaves out (a child array's, a bare
    # producer's field) is left out as that way leaves it.
    from polars.testing import assert_series_equal

    child = na.Array(pa.record_batch({"x": data})).child(0)
    for source in (na.Array(data), _NamedArray("v", data), child):
        name = hub.plan(source, to="polars").steps[-1].before.columns[0].name
        expected = pl.Series(name, pa.array(data))
        for _ in range(2):  # planned, then the bound run
            out = hub.convert(source, to="polars")
            assert_series_equal(out, expected)
            assert hub.shared_bytes(out, data) == hub.shared_bytes(expected, data)


class _Point(pa.ExtensionType):  # type: ignore[misc]  # (pyarrow has no stubs)
    """A Python extension type: pyarrow gives it __eq__ and no __hash__."""

    def __init__(self) -> None:
        super().__init__(pa.int64(), "test.point")

    def __arrow_ext_serialize__(self) -> bytes:
        return b""

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type: pa.DataType, serialized: bytes) -> _Point:
        return cls()


def _large(schema: pa.Schema) -> pa.Schema:
    """``schema`` with its views as large types, written out (what without_views casts to)."""
    large = {pa.string_view(): pa.large_string(), pa.binary_view(): pa.large_binary()}
    fields = []
    for f in schema:
        typ = f.type
        if pa.types.is_list(typ):
            typ = pa.list_(large.get(typ.value_type, typ.value_type))
        fields.append(f.with_type(large.get(typ, typ)))
    return pa.schema(fields, metadata=schema.metadata)


@pytest.mark.parametrize("threads", [True, False], ids=["on threads", "column by column"])
def test_columns_cast_on_threads_are_the_table_cast(
    threads: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Over PARALLEL_CAST_BYTES (0 here), the columns to cast are cast on threads; below
    # it, only they are cast, set into the table one by one: either way the table
    # pyarrow's own cast gives (its schema's metadata too), its errors too.
    from interchange_hub import arrowkit

    if threads:
        monkeypatch.setattr(arrowkit, "PARALLEL_CAST_BYTES", 0)
    views = pa.table(
        {
            "s": pa.array(["a", None, "a longer string than twelve"], pa.string_view()),
            "i": pa.array([1, 2, None]),
            "b": pa.array([b"x", b"", None], pa.binary_view()),
            "l": pa.array([["p"], None, ["q", None]], pa.list_(pa.string_view())),
        }
    ).replace_schema_metadata({"k": "v"})
    target = pa.schema(
        [
            pa.field("s", pa.large_string()),
            pa.field("i", pa.int64()),
            pa.field("b", pa.large_binary()),
            pa.field("l", pa.list_(pa.large_string())),
        ],
        metadata={"k": "v"},
    )
    made = arrowkit.cast_columns(views, target)
    assert made.equals(views.cast(target)) and made.schema.equals(target, check_metadata=True)
    # A list's field name is part of the cast (== between the types ignores it).
    renamed = views.append_column(
        "n", pa.array([[1], None, []], pa.list_(pa.field("a", pa.int64())))
    )
    onto = target.append(pa.field("n", pa.list_(pa.int64())))
    made = arrowkit.cast_columns(renamed, onto)
    assert str(made.schema) == str(renamed.cast(onto).schema) == str(onto)
    assert arrowkit.without_views(views).equals(views.cast(target))
    # without_views keeps what it works out per schema, told apart by their metadata,
    # which it keeps (as it does where there is nothing to cast)
    other = views.replace_schema_metadata({"k": "w"})
    for table in (views, other, views, other, pa.table({"n": [1]}, metadata={"m": "1"})):
        made = arrowkit.without_views(table)
        assert made.equals(table.cast(_large(table.schema)))
        assert made.schema.metadata == table.schema.metadata
    # a layout a cast cannot make plain (a list view): the table is rebuilt, and the
    # fields left alone keep their nullability and metadata, as a cast keeps them
    kept = pa.field("i", pa.int64(), nullable=False, metadata={"u": "m"})
    rebuilt = pa.table(
        [pa.array([1, 2]), pa.array([[1], [2, 3]], pa.list_view(pa.int64())), views["s"][:2]],
        schema=pa.schema([kept, pa.field("l", pa.list_view(pa.int64())), views.field("s")]),
    )
    made = arrowkit.without_views(rebuilt)
    assert made.schema.field("i").equals(kept, check_metadata=True)
    assert made.column("l").to_pylist() == [[1], [2, 3]] and made.column("s").type == "large_string"
    # a schema that cannot be hashed (a Python extension type's) is worked out each time
    point = _Point()
    odd = pa.table(
        {"p": pa.ExtensionArray.from_storage(point, pa.array([1, 2])), "s": views["s"][:2]}
    )
    with pytest.raises(TypeError):
        hash(odd.schema)
    for _ in range(2):
        made = arrowkit.without_views(odd)
        assert made.schema.field("p").type == point and made.column("s").type == "large_string"
    strict = pa.schema([target.field(0), target.field(1).with_nullable(False), *list(target)[2:]])
    with pytest.raises(ValueError, match="non-nullable"):
        arrowkit.cast_columns(views, strict)
    frame = pl.from_arrow(views.select(["s", "i", "b"]))
    assert isinstance(frame, pl.DataFrame)
    out = ih.Hub(autoload=False).convert(frame, to="nanoarrow")
    assert pa.table(out).equals(frame.to_arrow(compat_level=pl.CompatLevel.oldest()))


def test_columns_are_cast_in_slices_of_rows_with_the_table_casts_values(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # cast_columns casts slices of rows side by side (the scratch memory of a string cast
    # stays small): chunks at offsets, empty chunks, nulls and one long column give the
    # values and types of pyarrow's own cast, in chunks of at most the slice's rows.
    from interchange_hub import arrowkit

    monkeypatch.setattr(arrowkit, "PARALLEL_CAST_BYTES", 0)
    slice_rows = arrowkit._cast_slice_rows
    monkeypatch.setattr(arrowkit, "_cast_slice_rows", lambda nbytes, threads: 7)
    words = [None if i % 5 == 0 else f"word {i} " * (i % 4) for i in range(40)]
    long = pa.chunked_array(
        [
            pa.array(words, pa.string_view()).slice(3, 30),
            pa.array([], pa.string_view()),
            pa.array(words[:9], pa.string_view()),
        ]
    )
    table = pa.table({"s": long, "n": pa.chunked_array([pa.array(range(39))])})
    target = pa.schema([("s", pa.large_string()), ("n", pa.int64())])
    made = arrowkit.cast_columns(table, target)
    assert made.equals(table.cast(target)) and made.schema == target
    assert made.column("s").to_pylist() == words[3:33] + words[:9]
    assert [len(c) for c in made.column("s").chunks] == [7, 7, 7, 7, 2, 7, 2]
    assert made.column("n").num_chunks == 1  # not cast: as it was
    one = pa.table({"s": long})  # one column alone is cast in slices too
    assert arrowkit.cast_columns(one, target.remove(1)).column(0).num_chunks == 7
    # Dictionaries and lists whole: a slice would cast the whole dictionary, or the rest
    # of the list's child, each time (found in review).
    nested = pa.table(
        {
            "d": pa.array(words[:39], pa.string_view()).dictionary_encode(),
            "l": pa.array([[w] for w in words[:39]], pa.list_(pa.string_view())),
        }
    )
    onto = pa.schema(
        [
            ("d", pa.dictionary(pa.int32(), pa.large_string())),
            ("l", pa.list_(pa.large_string())),
        ]
    )
    made = arrowkit.cast_columns(nested, onto)
    assert made.equals(nested.cast(onto))
    assert [c.num_chunks for c in made.columns] == [1, 1]
    # The slice: scratch of 8 bytes a row on each thread held to 5% of the columns' bytes.
    assert slice_rows(0, 2) == 1 << 14
    assert slice_rows(10**12, 2) == 1 << 18
    assert slice_rows(160 * 2 * 50_000, 2) == 50_000


def test_strings_for_pandas_are_cast_at_once_and_give_the_same_frame(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # string / string_view columns over PARALLEL_CAST_BYTES (0 here) are cast to
    # large_string in slices of rows on threads before to_pandas, which would cast each
    # whole column itself: the same frame as pyarrow's own to_pandas, the casts counted.
    import pandas as pd
    from pandas.testing import assert_frame_equal

    from interchange_hub import arrowkit
    from interchange_hub.adapters import _pandas

    monkeypatch.setattr(arrowkit, "PARALLEL_CAST_BYTES", 0)
    cast: list[list[str]] = []
    real = arrowkit.cast_columns

    def counted(table: pa.Table, schema: pa.Schema) -> pa.Table:
        cast.append([str(t) for t in schema.types])
        return real(table, schema)

    monkeypatch.setattr(arrowkit, "cast_columns", counted)
    hub = ih.Hub(autoload=False)
    pyarrow_strings = _pandas._default_string_storage() == "pyarrow"
    table = pa.table(
        {
            "v": pa.array(["a", None, "a longer string than twelve"], pa.string_view()),
            "i": pa.array([1, 2, 3]),
            "s": pa.array(["x", "", None], pa.string()),
            "l": pa.array(["p", "q", None], pa.large_string()),
        }
    )
    out = hub.convert(table, to="pandas")
    assert_frame_equal(out, table.to_pandas())
    if not pyarrow_strings:  # pandas 2 without its str dtype: objects, nothing cast first
        assert cast == []
        return
    assert cast == [["large_string", "int64", "large_string", "large_string"]]
    assert all(str(out[c].dtype) == "str" for c in "vsl")
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    assert_frame_equal(hub.convert(frame, to="pandas"), frame.to_pandas())
    assert len(cast) == 2
    # One column to cast: cast in slices of rows too.
    assert_frame_equal(
        hub.convert(table.select(["v", "i", "l"]), to="pandas"),
        table.select(["v", "i", "l"]).to_pandas(),
    )
    assert len(cast) == 3 and cast[2] == ["large_string", "int64", "large_string"]
    # A table from pandas: its metadata may name another dtype for the strings (object,
    # "string[python]"), which pyarrow's to_pandas honours; it is left as it is.
    python = pd.DataFrame({"a": ["x", None], "b": ["y", "z"]}, dtype="string[python]")
    back = pa.Table.from_pandas(python).cast(
        pa.schema([("a", pa.string_view()), ("b", pa.string())]).with_metadata(
            pa.Table.from_pandas(python).schema.metadata
        )
    )
    assert_frame_equal(hub.convert(back, to="pandas"), back.to_pandas())
    assert str(hub.convert(back, to="pandas")["a"].dtype) == "string"
    assert len(cast) == 3
    assert _pandas._default_string_storage() == "pyarrow"
    # pandas' strings kept in Python objects: a cast to large_string first is no help.
    with pd.option_context("mode.string_storage", "python"):
        assert _pandas._default_string_storage() == "python"
        assert_frame_equal(hub.convert(table, to="pandas"), table.to_pandas())
    assert len(cast) == 3


def _stacked_to_numpy(table: pa.Table) -> np.ndarray:
    return np.column_stack([c.to_numpy() for c in table.columns])


@pytest.mark.parametrize("mask_rows", [None, 13], ids=["one mask", "masks of 13 rows"])
@pytest.mark.parametrize("threads", [False, True])
def test_numeric_columns_written_in_place_are_the_stacked_to_numpy(
    threads: bool, mask_rows: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # filled_columns: every integer and float type, with nulls and without, at offsets
    # inside a validity byte and past it, gives what stacking each column's to_numpy()
    # gives (dtype by numpy's promotion, NaN where null, the values beneath too); with
    # its NaN written a few rows at a time too, from row numbers that are no multiple of 8.
    from interchange_hub._bridge import tensors
    from interchange_hub._core import threads as pool

    if mask_rows is not None:
        monkeypatch.setattr(tensors, "MASK_ROWS", mask_rows)
    monkeypatch.setattr(tensors, "PARALLEL_FILL_BYTES", 0 if threads else 1 << 62)
    monkeypatch.setattr(pool, "workers", lambda: 2)
    on_threads = _count_calls(monkeypatch, pool, "side_by_side")
    rng = np.random.default_rng(7)
    types = [pa.int8(), pa.uint8(), pa.int16(), pa.uint16(), pa.int32(), pa.uint32()]
    types += [pa.int64(), pa.uint64(), pa.float32(), pa.float64()]
    rows = 203
    made_count = 0
    for first, second in itertools.product(types, repeat=2):
        # nulls: none, some, all, or a validity bitmap that marks none
        for nulls in itertools.product(("none", "some", "all", "bitmap"), repeat=2):
            cols = {}
            for name, typ, holed in (("a", first, nulls[0]), ("b", second, nulls[1])):
                info = np.iinfo(typ.to_pandas_dtype()) if pa.types.is_integer(typ) else None
                high = min(int(info.max), 2**62 + 1) if info else 100
                values = rng.integers(0, high, rows, dtype=np.uint64 if high > 2**62 else np.int64)
                values = values.astype(typ.to_pandas_dtype())
                if info is not None and info.max == 2**64 - 1:
                    values[:2] = [2**64 - 1, 2**63 + 1]  # beyond int64, beside others
                mask = {
                    "none": None,
                    "some": rng.random(rows) < 0.2,
                    "all": np.ones(rows, bool),
                    "bitmap": np.zeros(rows, bool),
                }[holed]
                array = pa.array(values, typ, mask=mask)
                if holed == "bitmap":  # a validity buffer whose bits are all set
                    bits = pa.py_buffer(np.full((rows + 7) // 8, 255, np.uint8).tobytes())
                    array = pa.Array.from_buffers(typ, rows, [bits, array.buffers()[1]], -1)
                    assert array.buffers()[0] is not None and array.null_count == 0
                cols[name] = array
            table = pa.table(cols)
            for start in (0, 3, 8, 13):
                part = table.slice(start, rows - start - 5)
                chunks = [c.chunk(0) for c in part.columns]
                made = tensors.filled_columns(chunks, part.num_rows)
                made_count += 1
                expected = _stacked_to_numpy(part)
                assert made.dtype == expected.dtype, (first, second, nulls)
                assert made.flags.f_contiguous and made.shape == expected.shape
                assert np.array_equal(made, expected, equal_nan=True), (first, second, start)
    assert len(on_threads) == (made_count if threads else 0)


def test_large_polars_frames_with_nulls_reach_numpy_as_polars_makes_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The fast path of polars frames with nulls: from FILL_FROM_ROWS rows (0 here), the
    # frame's Arrow export written into place; the array polars' to_numpy gives, sliced
    # frames and frames of several chunks (polars' own call) too, the losses warned.
    from interchange_hub._bridge import tensors

    monkeypatch.setattr(tensors, "FILL_FROM_ROWS", 0)
    monkeypatch.setattr(tensors, "PARALLEL_FILL_BYTES", 0)
    filled = _count_calls(monkeypatch, tensors, "filled_columns")
    hub = ih.Hub(autoload=False)
    frames = [
        pl.DataFrame({"i": [1, None, 3, 4] * 50, "f": [0.5, 1.5, None, 2.5] * 50}),
        pl.DataFrame(
            {"i": pl.Series([1, None, 3, 4] * 50, dtype=pl.Int16), "j": [2**53 + 1, 2, 3, 4] * 50}
        ).with_columns(f=pl.lit(1.0)),
        pl.DataFrame({"i": [1, None, 3, 4] * 50, "j": [None, 2, 3, 4] * 50}),
    ]
    frames += [f.slice(3, 150) for f in frames]
    for frame in frames:
        plan = hub.plan(frame, to="numpy")
        assert plan.steps[0].edge.adapter == "fastpath", plan
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = hub.convert(frame, to="numpy")
        expected = frame.to_numpy()
        assert out.dtype == expected.dtype == np.float64
        assert np.array_equal(out, expected, equal_nan=True)
        assert out.flags.writeable and hub.shared_bytes(out, frame) == 0
        assert any(isinstance(w.message, ih.LossyConversionWarning) for w in caught)
    assert len(filled) == len(frames)
    chunked = pl.concat([frames[0], frames[0]], rechunk=False)
    assert chunked.n_chunks() == 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ih.LossyConversionWarning)
        out = hub.convert(chunked, to="numpy")
    assert np.array_equal(out, chunked.to_numpy(), equal_nan=True)
    # (polars 2.1 exports it as one batch; a column of several chunks takes to_numpy)
    one_batch = all(c.num_chunks == 1 for c in pa.table(chunked).columns)
    assert len(filled) == len(frames) + one_batch


@pytest.mark.parametrize("to", ["numpy", "torch"])
def test_nanoarrow_columns_reach_tensors_through_the_c_array_interface(
    hub: ih.Hub, to: str
) -> None:
    # One chunk, as planned: pa.array reads it (2.9 us, pa.chunked_array 3.6), shared.
    one = na.Array(pa.array(np.arange(100.0)))
    for _ in range(2):  # planned, then the kept run
        out = hub.convert(one, to=to)
        assert hub.shared_bytes(out, one) == 800
        assert np.asarray(out).tolist() == list(np.arange(100.0))
    # A column of two chunks has a key of its own (planned: a copy, as the plan says)
    two = na.Array(pa.chunked_array([np.arange(3.0), np.arange(3.0, 5.0)]))
    for _ in range(2):
        out = hub.convert(two, to=to)
        assert np.asarray(out).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
        assert not hub.plan(two, to=to).zero_copy


@pytest.mark.parametrize("to", ["numpy", "torch"])
def test_nanoarrow_tables_with_nulls_reach_tensors_through_the_c_array_interface(
    hub: ih.Hub, to: str
) -> None:
    # One batch: pa.record_batch reads its C array (4.4 us, the stream 6). A table of two
    # batches (planned as two chunks) and a struct at an offset (flagged sliced: read
    # into pyarrow by the nanoarrow export) take other runs; both give the same values.
    table = pa.table({"i": [1, None, 3, 4], "f": [0.5, 1.5, None, 3.5]})
    expected = np.array([[1.0, 0.5], [np.nan, 1.5], [3.0, np.nan], [4.0, 3.5]])
    sources = [
        na.Array(table.to_batches()[0]),
        na.Array(pa.Table.from_batches([table.slice(0, 2).to_batches()[0]] * 2)),
        na.Array(
            pa.StructArray.from_arrays(
                [c.combine_chunks() for c in table.columns], names=["i", "f"]
            ).slice(1, 3)
        ),
    ]
    wants = [expected, np.vstack([expected[:2], expected[:2]]), expected[1:]]
    for source, want in zip(sources, wants, strict=True):
        for _ in range(3):  # planned, then the kept run (twice)
            with pytest.warns(ih.LossyConversionWarning):
                out = hub.convert(source, to=to)
            assert np.array_equal(np.asarray(out), want, equal_nan=True)


class _ArrayRefused:
    """An Arrow producer whose C array is refused (as nanoarrow refuses one of several
    chunks) and whose stream gives the table: read through the stream."""

    def __init__(self, table: pa.Table) -> None:
        self._table = table

    def __arrow_c_schema__(self) -> object:
        return self._table.schema.__arrow_c_schema__()

    def __arrow_c_array__(self, requested_schema: object = None) -> object:
        raise ValueError("no C array of this one")

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        return self._table.__arrow_c_stream__(requested_schema)


@pytest.mark.parametrize("to", ["numpy", "torch"])
def test_tables_whose_c_array_is_refused_reach_tensors_through_their_stream(
    hub: ih.Hub, to: str
) -> None:
    table = pa.table({"i": [1, None, 3], "f": [0.5, 1.5, None]})
    expected = np.array([[1.0, 0.5], [np.nan, 1.5], [3.0, np.nan]])
    batch = table.to_batches()[0]
    for source in (_ArrayRefused(table), batch):  # (a RecordBatch: its own run)
        for _ in range(3):
            with pytest.warns(ih.LossyConversionWarning):
                out = hub.convert(source, to=to)
            assert np.array_equal(np.asarray(out), expected, equal_nan=True)


def test_kept_route_gives_the_calls_a_repeated_conversion_makes() -> None:
    # The benchmark times the kept run and the route key apart from the whole call
    # (benchmarks/bench.py measure_parts): they must be what convert calls.
    hub = ih.Hub(autoload=False)
    table = pa.table({"x": [1.0, 2.0, 3.0]})
    assert hub.planner.kept_route(table, "numpy") is None  # nothing kept yet
    first = hub.convert(table, to="numpy")
    kept = hub.planner.kept_route(table, "numpy")
    assert kept is not None
    key, run = kept
    assert key(table) is not None
    out = run(table)
    assert np.array_equal(out, first)
    assert np.shares_memory(out, first)  # the same zero-copy route, by address
    assert hub.planner.kept_route(table, "numpy", copy=True) is None  # another request
    assert hub.planner.kept_route(pa.table({"y": [1, None]}), "numpy") is None  # another key
    assert hub.planner.kept_route(table, ["numpy"]) is None  # unhashable: never kept
    # A kept lossy route warns as convert does.
    nulls = pa.table({"n": pa.array([1, None, 3])})
    with pytest.warns(ih.LossyConversionWarning):
        hub.convert(nulls, to="numpy")
    kept = hub.planner.kept_route(nulls, "numpy")
    assert kept is not None
    with pytest.warns(ih.LossyConversionWarning, match="nulls become NaN"):
        kept[1](nulls)
    # ...and marks the route's steps it wraps (the benchmark times them alone, to tell
    # the warning's cost from the route's), which give the same values without it.
    steps = kept[1].__wrapped__  # type: ignore[attr-defined]
    assert not hasattr(steps, "__wrapped__")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.array_equal(steps(nulls), np.array([[1.0], [np.nan], [3.0]]), equal_nan=True)
    assert not hasattr(run, "__wrapped__")  # (the lossless route above: its steps, unwrapped)


def test_kept_route_of_a_result_that_writes_through_marks_its_steps() -> None:
    # torch ignores read-only flags: the kept run checks its call site for the
    # write-through warning on every call, around the route's steps, which it marks.
    hub = ih.Hub(autoload=False)
    source = pa.array([1.0, 2.0, 3.0])
    with pytest.warns(ih.WriteThroughWarning):
        hub.convert(source, to="torch")
    kept = hub.planner.kept_route(source, "torch")
    assert kept is not None
    steps = kept[1].__wrapped__  # type: ignore[attr-defined]
    with warnings.catch_warnings():
        warnings.simplefilter("error", ih.WriteThroughWarning)
        out = steps(source)
    assert out.data_ptr() == source.buffers()[1].address  # shared, by address


def test_polars_series_keys_tell_every_dtype_apart_and_keep_the_class_of_plain_ones() -> None:
    """A Series' route key holds the dtype's class where the class says all (Float64,
    String, Date), hashed and compared by identity, and the dtype itself where it holds
    parameters (a unit, a time zone, a precision, categories, an inner type)."""
    hub = ih.Hub(autoload=False)
    adapter = hub.registry.owner(pl.Series([1.0]))
    assert adapter is not None
    dtypes: list[Any] = [
        pl.Int64, pl.Int32, pl.UInt8, pl.Float64, pl.Float32, pl.String, pl.Binary,
        pl.Boolean, pl.Date, pl.Time, pl.Null, pl.Categorical,
        pl.Datetime("us"), pl.Datetime("ns"), pl.Datetime("us", "UTC"),
        pl.Datetime("us", "Europe/Paris"), pl.Duration("ms"), pl.Duration("us"),
        pl.Decimal(10, 2), pl.Decimal(12, 2), pl.Decimal(12, 3),
        pl.List(pl.Int64), pl.List(pl.Int32), pl.Array(pl.Int64, 2), pl.Array(pl.Int64, 3),
        pl.Enum(["a", "b"]), pl.Enum(["a", "c"]),
        pl.Struct({"x": pl.Int64}), pl.Struct({"y": pl.Int64}),
    ]  # fmt: skip
    keys = []
    for dtype in dtypes:
        first = pl.Series("v", [None, None], dtype=dtype)
        again = pl.Series("v", [None, None], dtype=dtype)
        key = adapter.route_key(first)
        assert isinstance(key, tuple) and key == adapter.route_key(again), dtype
        hash(key)
        keys.append(key)
        plain = type(first.dtype)
        holds_class = any(part is plain for part in key)  # (a dtype == its class)
        parameterless = not first.dtype.__dict__ and not plain.is_nested()
        assert holds_class is parameterless, dtype
    assert len(set(keys)) == len(keys)
    # a plain dtype's Series meets the run kept for it, converted as a fresh plan makes it
    hub.convert(pl.Series("v", [1.0, 2.0]), to="numpy")
    assert hub.planner.kept_route(pl.Series("v", [3.0, 4.0]), "numpy") is not None
    out = hub.convert(pl.Series("v", [3.0, 4.0]), to="numpy")
    assert out.dtype == np.float64 and out.tolist() == [3.0, 4.0]
    assert hub.planner.kept_route(pl.Series("v", [3, 4]), "numpy") is None  # Int64: planned


def test_torch_keys_leave_out_rows_only_and_plan_lazy_bits_each_time() -> None:
    hub = ih.Hub(autoload=False)
    adapter = hub.registry.owner(torch.zeros(1))
    assert adapter is not None
    key = adapter.route_key
    same = [
        (torch.zeros(3, 4), torch.zeros(7, 4)),
        (torch.zeros(3, 4).t().contiguous().t(), torch.zeros(9, 4).t().contiguous().t()),
        (torch.zeros(2, 3, 4), torch.zeros(5, 3, 4)),
        (torch.zeros(3), torch.zeros(8)),
    ]
    for a, b in same:
        assert key(a) is not None and key(a) == key(b), (a.shape, b.shape)
    differ = [
        torch.zeros(3, 4),
        torch.zeros(3, 5),
        torch.zeros(3, 4).t().contiguous().t(),  # column-major
        torch.zeros(3, 4, 1),
        torch.zeros(3, 1, 4),
        torch.zeros(12),
        torch.zeros(()),
        torch.zeros(3, 4, dtype=torch.float64),
        torch.zeros(3, 4, dtype=torch.complex64),
    ]
    keys = [key(t) for t in differ]
    assert None not in keys and len(set(keys)) == len(keys)
    lazy = [torch.tensor([1 + 2j, 3 - 4j]).conj(), torch.tensor([1.0, -2.0])._neg_view()]
    for t in lazy:  # their bits are resolved by a planned copy, never by a kept run
        assert key(t) is None
        plain = t.resolve_conj().resolve_neg()
        hub.convert(plain, to="numpy")
        assert hub.convert(t, to="numpy").tolist() == plain.tolist()
    for t in (torch.zeros(0), torch.zeros(3, 0), torch.arange(10.0)[::2]):
        assert key(t) is None


MATRICES = {
    "C": lambda: np.arange(12.0).reshape(3, 4),
    "C one row": lambda: np.arange(4.0).reshape(1, 4),
    "C no rows": lambda: np.zeros((0, 4)),
    "C one column": lambda: np.arange(3.0).reshape(3, 1),
    "F": lambda: np.asfortranarray(np.arange(12.0).reshape(3, 4)),
    "every other row": lambda: np.arange(24.0).reshape(6, 4)[::2],
    "first column of C": lambda: np.arange(12.0).reshape(3, 4)[:, :1],
    "reversed rows": lambda: np.arange(12.0).reshape(3, 4)[::-1],
    "one row of F": lambda: np.asfortranarray(np.arange(12.0).reshape(3, 4))[:1],
}


@pytest.mark.parametrize("name", list(MATRICES))
def test_a_matrix_to_arrow_shares_exactly_what_its_plan_says(name: str) -> None:
    """ndarray_to_arrow reads whether a 2-D tensor's columns are contiguous once, from
    its strides, where it read each column's flags: a column is shared only where the
    plan says the conversion is zero-copy (F order, or a C-ordered single column), and
    copied otherwise, a contiguous one too (one row), checked by address."""
    matrix = MATRICES[name]()
    plan = ih.plan(matrix, to="pyarrow")
    table = ih.convert(matrix, to="pyarrow")
    assert table.column_names == [f"column_{i}" for i in range(matrix.shape[1])]
    for i, column in enumerate(table.columns):
        assert column.to_numpy().tolist() == matrix[:, i].tolist()
    shared = ih.default_hub().shared_bytes(table, matrix)
    assert shared == (matrix.nbytes if plan.zero_copy else 0)
    assert plan.zero_copy == (name in ("C one column", "F"))


def _entry(which: str, hub: ih.Hub, monkeypatch: pytest.MonkeyPatch) -> Any:
    """``ih.convert`` (its default hub made ``hub``) or ``hub.convert``: the two entry
    points, each with the fast path written out in it."""
    if which == "hub":
        return hub.convert
    monkeypatch.setattr(ih, "_default", hub)
    return ih.convert


def _planned_calls(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The objects the planner is asked to convert (what the entry points' fast path
    leaves to it), recorded around Planner.convert."""
    from interchange_hub._engine.planner import Planner

    planned: list[object] = []
    plan = Planner.convert

    def spy(self: Any, obj: object, *args: Any, **kwargs: Any) -> Any:
        planned.append(obj)
        return plan(self, obj, *args, **kwargs)

    monkeypatch.setattr(Planner, "convert", spy)
    return planned


@pytest.fixture(params=["ih", "hub"])
def entry(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> tuple[ih.Hub, Any]:
    """A hub of its own and one of the two entry points converting with it."""
    hub = ih.Hub(autoload=False)
    return hub, _entry(request.param, hub, monkeypatch)


def test_both_entry_points_run_a_kept_route_without_the_planner(
    entry: tuple[ih.Hub, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    _, convert = entry
    planned = _planned_calls(monkeypatch)
    table = pa.table({"x": [1.0, 2.0, 3.0]})
    first = convert(table, to="numpy")
    assert planned == [table]  # the first call plans
    again = convert(pa.table({"x": [4.0, 5.0]}), to="numpy")  # the same route key
    assert planned == [table]  # the kept run, no plan
    assert again.tolist() == [[4.0], [5.0]] and np.shares_memory(first, convert(table, to="numpy"))
    convert(table, to="numpy", copy=True)  # another call: planned
    convert(pa.table({"y": [1, None]}), to="polars")  # another key: planned
    assert len(planned) == 3
    # A lossy kept route warns from the entry point, at the user's line, every call
    nulls = pa.table({"n": pa.array([1, None, 3])})
    for _ in range(2):
        with pytest.warns(ih.LossyConversionWarning, match="nulls become NaN") as seen:
            convert(nulls, to="numpy")
        assert seen[0].filename == __file__
    assert len(planned) == 4


def test_both_entry_points_plan_once_where_the_kept_run_does_not_fit(
    entry: tuple[ih.Hub, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from interchange_hub._core.info import RouteChanged

    hub, convert = entry
    table = pa.table({"x": [1.0, 2.0, 3.0]})
    convert(table, to="numpy")
    (fast,) = hub._calls.values()
    ((key, run),) = fast.runs.items()
    refusals: list[object] = []

    def refusing(value: Any) -> Any:  # as a bound run does for an object it cannot take
        refusals.append(value)
        raise RouteChanged("not the layout planned")

    fast.runs[key] = refusing
    planned = _planned_calls(monkeypatch)
    out = convert(table, to="numpy")
    assert refusals == [table] and planned == [table]  # tried once, then planned once
    assert out.tolist() == [[1.0], [2.0], [3.0]]
    assert fast.runs[key] is not refusing  # the plan keeps its own run again
    # A route key that raises: the planner describes the object and says what failed
    fast.runs[key] = run

    def broken(value: Any) -> Any:
        raise RuntimeError("a broken key")

    monkeypatch.setattr(fast, "key", broken)
    assert convert(table, to="numpy").tolist() == out.tolist()
    assert planned == [table, table]
    # An unhashable target or device: the planner's own error
    with pytest.raises(ih.InterchangeError):
        convert(table, to=["numpy"])
    with pytest.raises(ih.InterchangeError):
        convert(table, to="numpy", device=["cpu"])


def test_the_entry_points_fast_paths_are_the_same_lines() -> None:
    # ih.convert and Hub.convert each hold the fast path written out (a call less per
    # repeated conversion): the same statements, but for the hub's name and the lazy
    # read of RouteChanged in the package's __init__ (no import of the engine there).
    import ast
    import inspect
    import textwrap

    def fast_path(fn: Any) -> list[str]:
        """The statements from the lookup of ``fast`` to the end of their block."""
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if not isinstance(body, list):
                continue
            for i, statement in enumerate(body):
                if isinstance(statement, ast.Try) and "fast = " in ast.unparse(statement):
                    return [
                        ast.unparse(s)
                        .replace("self.", "hub.")
                        .replace("_route_changed()", "RouteChanged")
                        for s in body[i:]
                    ]
        return []

    from interchange_hub import hub as hub_module

    ours, theirs = fast_path(ih.convert), fast_path(hub_module.Hub.convert)
    assert len(ours) == 3 and ours == theirs  # the lookup, the run, the planner


def test_pandas_route_keys_read_values_and_rows_from_the_blocks() -> None:
    # The key reads a Series' values from its one block (what Series._values gives) and
    # a frame's rows from its blocks' last axis (not the index's len): frames without
    # rows are planned each call, whatever their columns; a frame of rows and no columns
    # is keyed, one of neither is not.
    objs = [o for o in objects() if isinstance(o, (pd.DataFrame, pd.Series))]
    for s in [o for o in objs if isinstance(o, pd.Series)]:
        assert s._mgr.blocks[0].values is s._values
    hub = ih.Hub(autoload=False)
    adapter = hub.registry.owner(pd.DataFrame())
    assert adapter is not None
    empty = [
        pd.DataFrame({"a": np.array([], float)}),
        pd.DataFrame({"s": pd.Series([], dtype="str")}),
        pd.DataFrame({"t": pd.to_datetime([]), "a": np.array([], np.int64)}),
        pd.DataFrame(),
        pd.DataFrame({"a": [1.0, 2.0]}).iloc[:0],
    ]
    assert [adapter.route_key(f) for f in empty] == [None] * len(empty)
    assert adapter.route_key(pd.DataFrame(index=range(3))) is not None
    # rows, in blocks of each kind: keyed
    mixed = pd.DataFrame({"a": [1.0, 2.0], "s": ["x", None], "t": pd.to_datetime(["2020", None])})
    assert adapter.route_key(mixed) is not None
    assert adapter.route_key(mixed) == adapter.route_key(mixed.copy())


def test_one_dimensional_arrays_into_arrow_are_bound_to_array_of() -> None:
    # The numpy -> Arrow edge binds a 1-D array of anything but objects to array_of,
    # what ndarray_to_arrow does for one without its dispatch: the same Array for every
    # dtype and layout, planned and kept (a strided or masked array takes pa.array).
    from interchange_hub._bridge.arrow_native import array_of
    from interchange_hub._bridge.tensors import ndarray_to_arrow

    strided = np.arange(10.0)[::2]
    masked = np.ma.masked_array([1.0, 2.0, 3.0], [False, True, False])
    arrays = [
        np.arange(5.0), np.arange(5, dtype=np.int8), np.array([True, False]),
        np.arange(3.0, dtype=np.float16), np.array(["ab", "c"]), np.array([b"x", b"yz"]),
        np.array([1, 2], "datetime64[ms]"), np.array([3], "timedelta64[s]"),
        strided, masked, np.arange(4.0)[1:], np.arange(3, dtype=np.uint64),
    ]  # fmt: skip
    hub = ih.Hub(autoload=False)
    for arr in arrays:
        expected = ndarray_to_arrow(arr)
        assert array_of(arr).equals(expected), arr.dtype
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (lossy dtypes warn as ever)
            for _ in range(2):  # planned, then kept where the array has a route key
                out = hub.convert(arr, to="pyarrow")
                assert out.equals(expected) and out.type == expected.type, arr.dtype
    kept = hub.planner.kept_route(np.arange(5.0), "pyarrow")
    assert kept is not None
    cells = {
        n: c.cell_contents
        for n, c in zip(kept[1].__code__.co_freevars, kept[1].__closure__ or (), strict=True)
    }
    steps = cells.get("fns") or tuple(cells[n] for n in ("only", "first", "second") if n in cells)
    assert array_of in steps
    # never silent: an array the route was not planned for is refused, by pyarrow
    with pytest.raises(ih.ConversionError, match="1-dimensional|ndim"):
        kept[1](np.ones((2, 2)))


@pytest.mark.parametrize("to", ["torch", "numpy"])
def test_a_frame_whose_block_runs_backwards_goes_to_torch_as_planned(to: str) -> None:
    # df[["b", "a"]] holds one block with a negative stride: to_numpy gives a view of it
    # (numpy's, zero-copy), which torch.from_numpy refused after a plan that said
    # zero-copy (a review's find): to torch, DLPack's route makes it contiguous, planned.
    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [4.0, 5.0, 6.0]})
    hub = ih.default_hub()
    for reordered in (frame[["b", "a"]], frame.iloc[:, ::-1]):
        for _ in range(2):  # planned, then the kept route
            plan = hub.plan(reordered, to=to)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ih.WriteThroughWarning)
                out = hub.convert(reordered, to=to)
            shared = hub.shared_bytes(reordered, out)
            assert plan.zero_copy == (to == "numpy") == (shared == 48), (plan, shared)
            assert out.tolist() == [[4.0, 1.0], [5.0, 2.0], [6.0, 3.0]]
    assert hub.plan(frame, to=to).zero_copy  # the block in order stays a view
