"""Repeated conversions skip planning when the source adapter's route key matches.

The contract (Adapter.route_key): equal keys mean equal descriptions except for sizes.
These tests check that contract on many objects, and that the fast path gives the
results, sharing and warnings of a freshly planned conversion.
"""

from __future__ import annotations

import itertools
import warnings
from typing import Any

import nanoarrow as na
import numpy as np
import polars as pl
import pyarrow as pa
import pytest
import torch

import interchange_hub as ih
from tests.test_dtypes import CASES


def sizeless(info: ih.DataInfo) -> object:
    cols = tuple((c.name, c.dtype, c.nulls != 0, c.chunks, c.flags) for c in info.columns)
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
    return [*arrays, *tensors, *columns, *tables, *frames]


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
