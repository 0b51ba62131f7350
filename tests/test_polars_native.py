"""polars' native constructors (``_bridge.polars_native``): the frame, series and numpy
imports the bound runs make without polars' Python in front, held to what polars' public
calls make of the same input (values, dtypes, names, chunks), to the memory they share
(by address), and handing every other input to the public calls."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import nanoarrow as na
import numpy as np
import polars as pl
import pyarrow as pa
import pytest

import interchange_hub as ih
from interchange_hub._bridge import polars_native
from tests.helpers import shared_memory


@pytest.fixture
def fresh_makers() -> Iterator[None]:
    """The makers found again (each is found once per process, then kept)."""
    found = (
        polars_native.arrow_makers,
        polars_native.numpy_series,
        polars_native._numpy_native,
        polars_native._numpy_frame_native,
    )
    for cached in found:
        cached.cache_clear()
    yield
    for cached in found:
        cached.cache_clear()


def _same_frame(made: pl.DataFrame, public: pl.DataFrame) -> None:
    assert type(made) is pl.DataFrame
    assert made.equals(public)
    assert made.schema == public.schema
    assert [s.n_chunks() for s in made.get_columns()] == [
        s.n_chunks() for s in public.get_columns()
    ]


def _same_series(made: pl.Series, public: pl.Series) -> None:
    assert type(made) is pl.Series
    assert made.equals(public)
    assert (made.name, made.dtype, made.n_chunks()) == (
        public.name,
        public.dtype,
        public.n_chunks(),
    )


def test_the_native_calls_are_found_on_this_polars() -> None:
    frame, series, capsule_series = polars_native.arrow_makers()
    assert frame is not pl.DataFrame and series is not pl.Series
    assert capsule_series is not pl.Series
    assert polars_native.numpy_series("float64") is not pl.Series


TABLES = {
    "numbers": lambda: pa.table({"a": [1, 2, None], "b": [0.5, None, 2.5]}),
    "strings": lambda: pa.table(
        {"s": ["x", None, "zzz"], "v": pa.array(["a", "b", "c"], pa.string_view())}
    ),
    "nested": lambda: pa.table({"l": [[1], None, [2, 3]], "t": [{"k": 1}, None, {"k": 3}]}),
    "metadata": lambda: pa.table({"a": [1, 2, 3]}).replace_schema_metadata({"m": "1"}),
    "no rows": lambda: pa.table({"a": pa.array([], pa.int64()), "s": pa.array([], pa.string())}),
    "several batches": lambda: pa.Table.from_batches(
        [pa.record_batch({"a": [1, 2]}), pa.record_batch({"a": [3]})]
    ),
    "no columns": lambda: pa.table({"a": [1, 2]}).drop_columns(["a"]),
    "a record batch": lambda: pa.record_batch({"a": [1, 2, 3]}),
    "a nanoarrow array": lambda: na.Array(pa.record_batch({"a": [1, 2, 3]})),
}


@pytest.mark.parametrize("case", TABLES)
def test_a_frame_is_the_one_pl_dataframe_makes(case: str) -> None:
    frame, _, _ = polars_native.arrow_makers()
    data = TABLES[case]()
    _same_frame(frame(data), pl.DataFrame(data))


def test_a_frame_shares_the_tables_buffers() -> None:
    frame, _, _ = polars_native.arrow_makers()
    table = pa.table({"a": np.arange(1000.0), "b": np.arange(1000)})
    made = frame(table)
    inside, total = shared_memory(ih.default_hub(), made, table)
    assert total > 0 and inside == total
    assert made["a"].to_numpy().ctypes.data == table.column(0).chunk(0).buffers()[1].address


class _StreamProducer:
    """Another library's producer of an Arrow stream alone (a pyarrow object inside)."""

    def __init__(self, data: object) -> None:
        self._data = data

    def __len__(self) -> int:
        return len(self._data)  # type: ignore[arg-type]

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        return self._data.__arrow_c_stream__(requested_schema)  # type: ignore[attr-defined]


class _Producer(_StreamProducer):
    """Another library's Arrow producer of an array and a stream."""

    def __arrow_c_array__(self, requested_schema: object = None) -> object:
        return self._data.__arrow_c_array__(requested_schema)  # type: ignore[attr-defined]


PRODUCERS = {
    "nanoarrow table": lambda: na.Array(
        pa.record_batch({"a": [1, None, 3], "s": ["x", "y", None]})
    ),
    "nanoarrow stream": lambda: na.ArrayStream(pa.table({"a": [1, 2]})),
    "nanoarrow column": lambda: na.Array(pa.array([1.5, None, 3.0])),
    "a capsule producer": lambda: _Producer(pa.record_batch({"a": [1, 2], "b": [[1], None]})),
    "a stream producer": lambda: _StreamProducer(pa.table({"a": [1, 2]})),
}


def _outcome(make: Callable[[], object]) -> object:
    """What ``make()`` gives, or the type and message of what it raises."""
    try:
        return make()
    except Exception as exc:  # noqa: BLE001 - compared below
        return (type(exc), str(exc))


@pytest.mark.parametrize("case", PRODUCERS)
def test_another_producer_is_read_as_pl_dataframe_and_pl_series_read_it(case: str) -> None:
    frame, _, capsule_series = polars_native.arrow_makers()
    make = PRODUCERS[case]  # (a fresh producer each time: a stream is read once)
    made, public = _outcome(lambda: frame(make())), _outcome(lambda: pl.DataFrame(make()))
    if isinstance(public, tuple):  # (one column is no table: polars refuses it, as here)
        assert made == public
    else:
        _same_frame(made, public)  # type: ignore[arg-type]
    _same_series(capsule_series(make()), pl.Series(make()))


def test_a_producer_is_read_by_its_capsule_only_where_polars_does() -> None:
    assert polars_native._read_as_capsule(type(na.Array(pa.array([1]))))
    assert polars_native._read_as_capsule(_Producer)
    assert polars_native._read_as_capsule(_StreamProducer)
    for cls in (pl.DataFrame, pl.Series, pa.RecordBatch, pa.Table, dict, list, tuple, np.ndarray):
        assert not polars_native._read_as_capsule(cls), cls

    class Rows:  # an iterable of rows with an array capsule but no stream, no length
        def __iter__(self) -> Iterator[object]:
            return iter(())

        def __arrow_c_array__(self, requested_schema: object = None) -> object:
            raise AssertionError("polars reads it row by row")

    assert not polars_native._read_as_capsule(Rows)


def test_a_nanoarrow_source_is_shared_through_the_capsule_on_every_call() -> None:
    hub = ih.Hub()
    source = na.Array(pa.record_batch({"a": np.arange(100.0), "b": np.arange(100)}))
    assert hub.plan(source, to="polars").zero_copy
    for _ in range(3):  # planned, then the kept route
        out = hub.convert(source, to="polars")
        inside, total = shared_memory(hub, out, source)
        assert total > 0 and inside == total


ARRAYS = {
    "numbers": lambda: pa.array([1, None, 3]),
    "strings": lambda: pa.array(["x", None, "yy"]),
    "a dictionary": lambda: pa.array(["a", "b", "a"]).dictionary_encode(),
    "an empty dictionary": lambda: pa.array([], pa.string()).dictionary_encode(),
    "an empty array": lambda: pa.array([], pa.float64()),
    "nested": lambda: pa.array([[1, 2], None, []]),
    "a chunked array": lambda: pa.chunked_array([[1, 2], [3]]),
}


@pytest.mark.parametrize("case", ARRAYS)
def test_a_series_is_the_one_pl_series_makes(case: str) -> None:
    _, series, _ = polars_native.arrow_makers()
    data = ARRAYS[case]()
    _same_series(series("name", data), pl.Series("name", data))


NUMPY_DTYPES = sorted(polars_native._NUMPY_CONSTRUCTORS)


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
def test_a_numpy_series_shares_the_array_as_pl_series_does(dtype: str) -> None:
    array = np.arange(10).astype(dtype)
    series = polars_native.numpy_series(dtype)
    assert series is not pl.Series
    made = series("x", array)
    _same_series(made, pl.Series("x", array))
    assert made.to_numpy().ctypes.data == array.ctypes.data


def _misaligned() -> np.ndarray:
    raw = np.zeros(8 * 10 + 1, np.uint8)
    out = raw[1:].view(np.float64)
    assert not out.flags.aligned
    return out


ODD_ARRAYS = {
    "byte-swapped": lambda: np.arange(5.0).astype(">f8"),
    "misaligned": _misaligned,
    "strided": lambda: np.arange(10.0)[::2],
    "masked": lambda: np.ma.masked_array(np.arange(4.0), mask=[False, True, False, False]),
    "read-only": lambda: np.require(np.arange(4.0), requirements="C").view(),
    "a NaN": lambda: np.array([1.0, np.nan]),
    "another dtype": lambda: np.arange(4, dtype=np.int32),
}


@pytest.mark.parametrize("case", ODD_ARRAYS)
def test_every_other_numpy_array_is_pl_series_own(case: str) -> None:
    array = ODD_ARRAYS[case]()
    if case == "read-only":
        array.flags.writeable = False
    made = polars_native.numpy_series("float64")("x", array)
    _same_series(made, pl.Series("x", array))


def test_a_dtype_without_a_native_constructor_is_pl_series() -> None:
    assert polars_native.numpy_series("bool") is pl.Series
    assert polars_native.numpy_series("float16") is pl.Series


@pytest.mark.parametrize("dtype", ["float64", "int32", "uint8"])
@pytest.mark.parametrize("width", [1, 3])
def test_a_numpy_frame_is_the_one_from_numpy_makes(dtype: str, width: int) -> None:
    array = np.asfortranarray(np.arange(7 * width).astype(dtype).reshape(7, width))
    made = polars_native.numpy_frame(dtype, width)(array)
    _same_frame(made, pl.from_numpy(array, orient="row"))
    for i, column in enumerate(made.get_columns()):
        assert column.to_numpy().ctypes.data == array[:, i].ctypes.data


def test_a_numpy_frame_of_another_array_is_from_numpy_own() -> None:
    make = polars_native.numpy_frame("float64", 3)
    row_major = np.arange(12.0).reshape(4, 3)
    _same_frame(make(row_major), pl.from_numpy(row_major, orient="row"))
    narrower = np.asfortranarray(np.arange(8.0).reshape(4, 2))
    _same_frame(make(narrower), pl.from_numpy(narrower, orient="row"))


def test_a_polars_without_the_native_calls_gets_the_public_ones(
    monkeypatch: pytest.MonkeyPatch, fresh_makers: None
) -> None:
    monkeypatch.delattr(pl.DataFrame, "_from_pydf")
    monkeypatch.delattr(pl.Series, "_from_pyseries")
    assert polars_native.arrow_makers() == (pl.DataFrame, pl.Series, pl.Series)
    assert polars_native.numpy_series("float64") is pl.Series
    make = polars_native.numpy_frame("float64", 2)
    monkeypatch.undo()  # (polars' own calls need them back)
    array = np.asfortranarray(np.arange(6.0).reshape(3, 2))
    _same_frame(make(array), pl.from_numpy(array, orient="row"))


@pytest.mark.parametrize(
    "make",
    [
        lambda: pa.table({"a": np.arange(100.0), "b": np.arange(100)}),
        lambda: pa.chunked_array([np.arange(100.0)]),
        lambda: np.arange(100.0),
        lambda: np.asfortranarray(np.arange(300.0).reshape(100, 3)),
    ],
    ids=["table", "column", "numpy 1-D", "numpy 2-D"],
)
def test_the_hub_shares_through_the_native_calls_on_every_call(make: object) -> None:
    hub = ih.Hub()
    source = make()  # type: ignore[operator]
    plan = hub.plan(source, to="polars")
    assert plan.zero_copy
    for _ in range(3):  # planned, then the kept route
        out = hub.convert(source, to="polars")
        inside, total = shared_memory(hub, out, source)
        assert total > 0 and inside == total


def test_int128_is_refused_by_tensors_when_planned() -> None:
    # Found by a fuzzing review: polars -> numpy's fast path planned an Int128 frame (a
    # "numeric" dtype), and the run failed in polars ("numpy has no 128-bit integer
    # types"), a ConversionError asking for a bug report.
    s = pl.Series("c", [2**100, 5, -(2**120), 0], dtype=pl.Int128)
    for source, target in ((s.to_frame(), "numpy"), (s.to_frame(), "torch"), (s, "torch")):
        with pytest.raises(ih.NoRouteError):
            ih.plan(source, to=target)
    with pytest.warns(ih.LossyConversionWarning, match="int128 -> decimal128"):
        column = ih.convert(s, to="numpy")  # a column: Python Decimals, as planned
    assert [int(v) for v in column] == s.to_list()
