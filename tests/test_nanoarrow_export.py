"""nanoarrow data read through its chunk's own C array (``arrowkit.register_c_array``,
registered by ``adapters._nanoarrow._register_c_array``): what pyarrow and polars read is
what they read through ``Array.__arrow_c_array__`` (values, types, metadata, the same
buffers), for an Array of one chunk on the CPU; any other Array goes to the method, and
so to its errors."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import nanoarrow as na
import nanoarrow.device
import numpy as np
import polars as pl
import pyarrow as pa
import pytest

import interchange_hub as ih
from interchange_hub import arrowkit
from interchange_hub._bridge.polars_native import arrow_makers
from interchange_hub.adapters._nanoarrow import _register_c_array
from tests.helpers import shared_memory
from tests.test_nanoarrow_import import _table


@pytest.fixture
def unregistered() -> Iterator[None]:
    """No export registered while the test runs (and the registration made again after)."""
    saved, streams = dict(arrowkit._C_ARRAYS), set(arrowkit._C_ARRAY_STREAMS)
    arrowkit._C_ARRAYS.clear()
    arrowkit._C_ARRAY_STREAMS.clear()
    _register_c_array.cache_clear()
    yield
    _register_c_array.cache_clear()
    arrowkit._C_ARRAYS.clear()
    arrowkit._C_ARRAYS.update(saved)
    arrowkit._C_ARRAY_STREAMS.clear()
    arrowkit._C_ARRAY_STREAMS.update(streams)
    arrow_makers.cache_clear()


TABLES: dict[str, Callable[[], na.Array]] = {
    "a table of one batch": lambda: na.Array(_table()),
    "a table of two batches": lambda: na.Array(pa.Table.from_batches(_table().to_batches() * 2)),
    "a table of no rows": lambda: na.Array(_table().slice(0, 0)),
    "a sliced table": lambda: na.Array(_table().to_batches()[0].slice(1, 2)),
}
COLUMNS: dict[str, Callable[[], na.Array]] = {
    "a float column": lambda: na.Array(pa.array([1.0, None, 3.0])),
    "a sliced column": lambda: na.Array(pa.array(np.arange(10)).slice(3, 4)),
    "a dictionary column": lambda: na.Array(pa.array(["a", None, "a"]).dictionary_encode()),
    "a nested column": lambda: na.Array(pa.array([{"k": [1]}, None])),
    "a column of two chunks": lambda: na.Array(pa.chunked_array([[1, 2], [3]])),
    "a column made by nanoarrow": lambda: na.Array([1, 2, 3], na.int64()),
    "an empty column": lambda: na.Array([], na.string()),
}


def _addresses(data: object) -> list[int]:
    if isinstance(data, pa.ChunkedArray):
        return [a for chunk in data.chunks for a in _addresses(chunk)]
    if isinstance(data, (pa.RecordBatch, pa.Table)):
        return [a for column in data.columns for a in _addresses(column)]
    assert isinstance(data, pa.Array)
    if not len(data):  # (pyarrow makes an empty string array's offsets on each import)
        return []
    return [b.address if b is not None else 0 for b in data.buffers()]


def _same(ours: object, theirs: object) -> None:
    assert type(ours) is type(theirs)
    assert ours.equals(theirs)  # type: ignore[attr-defined]
    if isinstance(ours, (pa.RecordBatch, pa.Table)):
        assert ours.schema.equals(theirs.schema, check_metadata=True)  # type: ignore[attr-defined]
    else:
        assert ours.type == theirs.type  # type: ignore[attr-defined]
    assert _addresses(ours) == _addresses(theirs)


def test_the_export_is_registered_on_this_nanoarrow() -> None:
    assert _register_c_array()
    assert arrowkit.c_array_export(na.Array) is not None
    assert arrowkit.c_array_export(pa.Array) is None


@pytest.mark.parametrize("case", TABLES)
def test_a_table_is_the_batch_pa_record_batch_reads(case: str) -> None:
    _register_c_array()
    value = TABLES[case]()
    if value.n_chunks > 1:  # the method refuses: so does batch_from, with its error
        with pytest.raises(ValueError, match="non-contiguous"):
            pa.record_batch(value)
        with pytest.raises(ValueError, match="non-contiguous"):
            arrowkit.batch_from(value)
        return
    _same(arrowkit.batch_from(value), pa.record_batch(value))
    _same(arrowkit.read_table(value), pa.Table.from_batches([pa.record_batch(value)]))


@pytest.mark.parametrize("case", COLUMNS)
def test_a_column_is_the_array_pa_array_reads(case: str) -> None:
    _register_c_array()
    value = COLUMNS[case]()
    if value.n_chunks > 1:
        with pytest.raises(ValueError, match="non-contiguous"):
            arrowkit.array_from(value)
    else:
        _same(arrowkit.array_from(value), pa.array(value))
    # read_column reads a stream producer as its stream: a ChunkedArray, as before
    _same(arrowkit.read_column(value), pa.chunked_array(value))
    _same(
        arrowkit.read_one_chunk(value),
        pa.chunked_array(value) if value.n_chunks > 1 else pa.array(value),
    )


def test_a_column_refused_as_a_batch_is_refused_alike() -> None:
    _register_c_array()
    value = COLUMNS["a float column"]()
    with pytest.raises(pa.ArrowInvalid) as theirs:
        pa.record_batch(value)
    with pytest.raises(pa.ArrowInvalid) as ours:
        arrowkit.batch_from(value)
    assert str(ours.value) == str(theirs.value)


def test_an_array_on_another_device_goes_to_the_method() -> None:
    _register_c_array()
    value = na.Array(pa.array([1.0, 2.0]))
    value._device = object()  # (not nanoarrow's CPU: the method refuses to export it)
    with pytest.raises(ValueError, match="non-CPU"):
        pa.array(value)
    with pytest.raises(ValueError, match="non-CPU"):
        arrowkit.array_from(value)
    with pytest.raises(ValueError, match="non-CPU"):
        arrowkit.batch_from(value)


def test_a_subclass_goes_to_the_method() -> None:
    _register_c_array()

    class Mine(na.Array):  # type: ignore[misc]
        calls = 0

        def __arrow_c_array__(self, requested_schema: object = None) -> object:
            Mine.calls += 1
            return super().__arrow_c_array__(requested_schema)

    value = Mine(pa.array([1, 2]))
    theirs = pa.array(value)
    Mine.calls = 0
    _same(arrowkit.array_from(value), theirs)
    assert Mine.calls == 1


def test_a_nanoarrow_whose_cpu_differs_registers_nothing(
    unregistered: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(nanoarrow.device, "DEVICE_CPU", object())
    assert _register_c_array() is False
    assert arrowkit.c_array_export(na.Array) is None
    value = COLUMNS["a float column"]()
    _same(arrowkit.array_from(value), pa.array(value))  # pa.array itself


@pytest.mark.parametrize("cls_dunder", ["__arrow_array__", "__arrow_c_device_array__"])
def test_a_class_pyarrow_reads_another_way_is_refused(cls_dunder: str) -> None:
    cls = type("Other", (), {"__arrow_c_array__": lambda self, s=None: None, cls_dunder: None})
    with pytest.raises(ValueError, match="not registered"):
        arrowkit.register_c_array(cls, lambda value: None)
    assert arrowkit.c_array_export(cls) is None


def _polars_same(make: Callable[[], object], public: Callable[[], object]) -> None:
    """What ``make`` gives is what ``public`` gives (values, types, names), or both raise
    the same kind of error."""
    try:
        theirs = public()
    except Exception as exc:  # noqa: BLE001 - polars refuses it: so must the native way
        with pytest.raises(type(exc)):
            make()
        return
    ours = make()
    assert type(ours) is type(theirs)
    assert ours.equals(theirs)  # type: ignore[attr-defined]
    assert str(getattr(ours, "schema", None)) == str(getattr(theirs, "schema", None))
    assert str(getattr(ours, "dtype", None)) == str(getattr(theirs, "dtype", None))


@pytest.mark.parametrize("case", [*COLUMNS, *TABLES])
def test_polars_reads_the_same_series_and_frame(case: str) -> None:
    _register_c_array()
    arrow_makers.cache_clear()
    frame, _, capsule_series = arrow_makers()
    value = {**COLUMNS, **TABLES}[case]()
    _polars_same(lambda: capsule_series(value), lambda: pl.Series(value))
    _polars_same(lambda: frame(value), lambda: pl.DataFrame(value))


@pytest.mark.parametrize(
    ("to", "shape"),
    [
        ("pyarrow", "table"),
        ("pyarrow", "column"),
        ("numpy", "column"),
        ("polars", "column"),
        ("polars", "table"),
        ("numpy", "table"),
    ],
)
def test_the_hub_shares_through_it_on_every_call(to: str, shape: str) -> None:
    hub = ih.Hub()
    data = {"a": np.arange(1000.0), "b": np.arange(1000.0) * 2}
    value = na.Array(pa.table(data) if shape == "table" else pa.array(data["a"]))
    for _ in range(3):  # planned, then kept
        out = hub.convert(value, to=to)
        inside, total = shared_memory(hub, out, value)
        if to == "numpy" and shape == "table":  # one 2-D array: the columns are copied
            assert inside == 0
        else:
            assert total > 0 and inside == total
        if to == "pyarrow" and shape == "table":
            assert out.to_pydict() == {k: v.tolist() for k, v in data.items()}
        elif to == "pyarrow":
            assert out.to_pylist() == data["a"].tolist()
    assert hub.planner.kept_route(value, to) is not None
