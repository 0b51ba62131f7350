"""pyarrow data into nanoarrow through its C array (``adapters._nanoarrow._array_maker``):
the same ``na.Array`` as ``na.Array(value)`` makes through the C stream (chunks, values,
schema with its metadata, device), sharing the same buffers, and ``na.Array`` itself for
everything else."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import nanoarrow as na
import nanoarrow._array_stream
import numpy as np
import pyarrow as pa
import pytest

import interchange_hub as ih
from interchange_hub.adapters._nanoarrow import _array_maker
from tests.helpers import shared_memory


@pytest.fixture
def fresh_maker() -> Iterator[None]:
    _array_maker.cache_clear()
    yield
    _array_maker.cache_clear()


def _same(made: na.Array, public: na.Array) -> None:
    assert type(made) is na.Array
    assert made.n_chunks == public.n_chunks
    assert made.to_pylist() == public.to_pylist()
    assert repr(na.c_schema(made.schema)) == repr(na.c_schema(public.schema))
    assert repr(made.device) == repr(public.device)


def _table() -> pa.Table:
    return pa.table(
        {
            "i": pa.array([1, None, 3], pa.int32()),
            "s": ["x", None, "zz"],
            "l": [[1.5], None, []],
            "d": pa.array(["a", "b", "a"]).dictionary_encode(),
            "t": pa.array([0, 1, 2], pa.timestamp("us", tz="UTC")),
        }
    ).replace_schema_metadata({"origin": "test"})


VALUES: dict[str, Callable[[], object]] = {
    "a table of one batch": _table,
    "a table of two batches": lambda: pa.Table.from_batches(_table().to_batches() * 2),
    "a table of no rows": lambda: _table().slice(0, 0),
    "a record batch": lambda: _table().to_batches()[0],
    "an array": lambda: pa.array([1.0, None, 3.0]),
    "a sliced array": lambda: pa.array(np.arange(10)).slice(3, 4),
    "a dictionary array": lambda: pa.array(["a", None, "a"]).dictionary_encode(),
    "a nested array": lambda: pa.array([{"k": [1]}, None]),
    "a chunked array": lambda: pa.chunked_array([[1, 2], [3]]),
    "a nanoarrow array": lambda: na.Array(pa.array([1, 2])),
}


def test_the_c_array_way_is_found_on_this_nanoarrow() -> None:
    assert _array_maker() is not na.Array


@pytest.mark.parametrize("case", VALUES)
def test_the_array_is_the_one_na_array_makes(case: str) -> None:
    _same(_array_maker()(VALUES[case]()), na.Array(VALUES[case]()))


def test_a_table_shares_its_buffers() -> None:
    table = pa.table({"a": np.arange(1000.0), "s": [str(i) for i in range(1000)]})
    made = _array_maker()(table)
    inside, total = shared_memory(ih.default_hub(), made, table)
    assert total > 0 and inside == total


def test_a_nanoarrow_without_those_calls_gets_na_array(
    monkeypatch: pytest.MonkeyPatch, fresh_maker: None
) -> None:
    monkeypatch.setattr(nanoarrow._array_stream, "CMaterializedArrayStream", None)
    assert _array_maker() is na.Array


@pytest.mark.parametrize("case", ["a table of one batch", "an array", "a record batch"])
def test_the_hub_shares_through_it_on_every_call(case: str) -> None:
    hub = ih.Hub()
    source = VALUES[case]()
    assert hub.plan(source, to="nanoarrow").zero_copy
    for _ in range(3):  # planned, then the kept route
        out = hub.convert(source, to="nanoarrow")
        assert out.n_chunks == 1
        inside, total = shared_memory(hub, out, source)
        assert total > 0 and inside == total


def test_an_extension_type_stored_as_a_struct_is_a_column() -> None:
    # Found by a fuzzing review: its C schema's format is a struct's, so describe took it
    # for a table and pyarrow refused the extension array as a struct (a ProtocolError
    # asking for a bug report), after pyarrow -> nanoarrow had worked.
    storage = pa.array([{"a": 1}, {"a": 2}], pa.struct([("a", pa.int64())]))
    typ = pa.opaque(storage.type, "point", "vendor")
    arr = na.Array(pa.ExtensionArray.from_storage(typ, storage))
    back = ih.convert(arr, to="pyarrow")
    assert back.type == typ and back.to_pylist() == [{"a": 1}, {"a": 2}]
    assert ih.convert(arr, to="polars").to_list() == [{"a": 1}, {"a": 2}]
