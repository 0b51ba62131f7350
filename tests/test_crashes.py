"""Inputs that crash libraries the hub calls: run in a subprocess, so a crash is a failure."""

from __future__ import annotations

import subprocess
import sys

import pytest

NESTED_VIEWS = {
    "fixed_size_list": "pa.array([['a', 'b']], pa.list_(pa.string_view(), 2))",
    "map": "pa.array([[('a', 'x')]], pa.map_(pa.string_view(), pa.string_view()))",
    "list_view": "pa.array([['a'], ['b']], pa.list_view(pa.string_view()))",
    "polars_array": "pl.Series('a', [['x', 'y']], dtype=pl.Array(pl.String, 2))",
    "polars_struct": "pl.DataFrame({'s': [{'a': 'x'}]})",
}


def survives(code: str) -> str:
    """Run ``code`` in a fresh interpreter; it must exit 0 (a crash is a failure, not the
    end of the test run). Its standard output."""
    run = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout


@pytest.mark.parametrize("case", list(NESTED_VIEWS))
def test_nested_views_into_nanoarrow_do_not_crash(case: str) -> None:
    # nanoarrow 0.9 aborts the process on string_view, however deeply it is nested.
    code = (
        "import pyarrow as pa, polars as pl, interchange_hub as ih\n"
        f"out = ih.Hub(autoload=False).convert({NESTED_VIEWS[case]}, to='nanoarrow')\n"
        "import pyarrow as pa\n"
        "assert 'view' not in str(pa.chunked_array(out).type)\n"
        "print(len(out))"
    )
    survives(code)


EXTENSIONS_OVER_VIEWS = {
    "json from polars": "ih.convert(ih.convert(pa.table({'d': pa.array(['{}', None], pa.json_())}), "
    "to='polars'), to='pyarrow')",
    "json": "pa.table({'d': pa.array(['{}', None], pa.json_(pa.string_view()))})",
    "opaque": "pa.table({'d': pa.ExtensionArray.from_storage(pa.opaque(pa.binary_view(), 't', "
    "'v'), pa.array([b'x'], pa.binary_view()))})",
    "nested json": "pa.table({'d': pa.ListArray.from_arrays(pa.array([0, 1]), "
    "pa.ExtensionArray.from_storage(pa.json_(pa.string_view()), pa.array(['{}'], "
    "pa.string_view())))})",
}


@pytest.mark.parametrize("case", list(EXTENSIONS_OVER_VIEWS))
def test_extension_types_over_views_into_nanoarrow_do_not_crash(case: str) -> None:
    # An extension type's name leaves its storage out (extension<arrow.json>): its views
    # went to nanoarrow uncast, and reading the result crashed the process (a json column
    # of polars, which stores it over string_view, say).
    code = (
        "import pyarrow as pa, interchange_hub as ih\n"
        f"data = {EXTENSIONS_OVER_VIEWS[case]}\n"
        "try:\n"
        "    ih.plan(data, to='nanoarrow')\n"
        "except ih.NoRouteError as exc:\n"
        "    print(exc)\n"
        "else:\n"
        "    back = ih.convert(ih.convert(data, to='nanoarrow'), to='pyarrow')  # (it crashed)\n"
        "    assert back.column(0).type.storage_type in (pa.large_string(), pa.large_binary())\n"
        "    assert back.column(0).chunk(0).storage.to_pylist() == data.column(0).chunk(0).storage.to_pylist()\n"
        "    print('converted')\n"
    )
    out = survives(code)
    # arrow.json and arrow.opaque are made anew over large types; others are refused
    assert ("converted" if case != "nested json" else "extension type's storage") in out, out


UNION_FROM_IPC = """
import importlib.util, io, warnings
import pyarrow as pa
import interchange_hub as ih
warnings.simplefilter("ignore")
if KIND == "dense":
    empty = pa.UnionArray.from_dense(
        pa.array([], pa.int8()), pa.array([], pa.int32()), [pa.array([1])]
    )
    full = pa.UnionArray.from_dense(
        pa.array([0, 0], pa.int8()), pa.array([0, 1], pa.int32()), [pa.array([1, 2])]
    )
else:
    empty = pa.UnionArray.from_sparse(pa.array([], pa.int8()), [pa.array([], pa.int64())])
    full = pa.UnionArray.from_sparse(pa.array([0, 0], pa.int8()), [pa.array([1, 2])])
table = pa.table({"u": pa.chunked_array([empty, full])})
sink = io.BytesIO()
with pa.ipc.new_stream(sink, table.schema) as writer:
    writer.write_table(table)
data = pa.ipc.open_stream(sink.getvalue()).read_all()
assert data.column(0).chunk(0).buffers()[1] is None  # no type-ids buffer, as IPC gives it
plugins = [p for p in PLUGINS if importlib.util.find_spec(p) is not None]
hub = ih.Hub(autoload=False, plugins=plugins)
targets = ["pyarrow", "nanoarrow", "polars", "pandas", "numpy", "torch"]
for source in (data, data.column(0)):
    for target in targets + [p.split("_")[-1] for p in plugins]:
        try:
            hub.plan(source, to=target)
            out = hub.convert(source, to=target)
            hub.describe(out), hub.buffers(out)  # the result measured, as claims are checked
            print(target, "ok")
        except ih.InterchangeError as exc:
            print(target, "refused:", type(exc).__name__)
print("survived")
"""
PLUGINS = [f"interchange_hub_{name}" for name in ("arro3", "duckdb", "jax", "datasets", "xarray")]


@pytest.mark.parametrize("kind", ["dense", "sparse"])
def test_a_union_with_an_empty_first_chunk_from_ipc_does_not_crash(kind: str) -> None:
    # pyarrow's Array.nbytes reads the missing type-ids buffer of an empty union chunk: a
    # table and a column, into every library, each result described and measured.
    code = f"KIND = {kind!r}\nPLUGINS = {PLUGINS!r}\n" + UNION_FROM_IPC
    out = survives(code)
    assert "survived" in out
    assert "pyarrow ok" in out and "nanoarrow ok" in out


CPU_DEVICE_ARRAY_WITH_EVENT = """
import pyarrow as pa
import interchange_hub as ih
from interchange_hub._c.arrow_device import set_device
from interchange_hub._core.device import CPU


class Producer:
    # A CPU device array whose sync_event points at unmapped memory (the spec asks NULL).
    def __init__(self, arr):
        self.arr = arr

    def __arrow_c_device_array__(self, requested_schema=None, **kwargs):
        schema, array = self.arr.__arrow_c_device_array__()
        set_device(array, CPU, sync_event=0x10)
        return schema, array


hub = ih.Hub(autoload=False)
for target in ("pyarrow", "numpy", "polars", "torch"):
    source = Producer(pa.array([1.0, 2.0, 3.0]))
    print(hub.plan(source, to=target).zero_copy)
    print(target, [float(x) for x in hub.convert(source, to=target)])
print("survived")
"""


def test_a_cpu_device_array_with_a_sync_event_is_not_waited_on() -> None:
    out = survives(CPU_DEVICE_ARRAY_WITH_EVENT)
    assert "survived" in out and "numpy [1.0, 2.0, 3.0]" in out, out


NARROW_DECIMALS_AND_EMPTY_VIEWS = """
import decimal, warnings
import pyarrow as pa
import interchange_hub as ih
warnings.simplefilter("ignore")
hub = ih.Hub(autoload=False)
values = [decimal.Decimal("1.50"), None, decimal.Decimal("-2.25")]
for typ in (pa.decimal32(7, 2), pa.decimal64(16, 2)):
    table = pa.table({"c": pa.array(values, typ)})
    for via in ("nanoarrow", "pandas", "pyarrow"):
        # polars 2.1 imports a narrow decimal from the C interface into a Series whose
        # Arrow export aborts the process: the hub widens it to decimal128 first
        frame = hub.convert(hub.convert(table, to=via), to="polars")
        back = hub.convert(frame, to="nanoarrow")
        assert hub.convert(back, to="pyarrow").column(0).to_pylist() == values, via
    assert "widened to decimal128" in str(hub.plan(table, to="polars"))
for typ in (pa.list_view(pa.int64()), pa.large_list_view(pa.int64())):
    # an empty column through nanoarrow has no chunks; pyarrow 26's to_pandas aborts on
    # that for list views ("cannot construct ChunkedArray from empty vector")
    empty = pa.table({"c": pa.array([], typ)})
    frame = hub.convert(hub.convert(empty, to="nanoarrow"), to="pandas")
    assert len(frame) == 0 and list(frame.columns) == ["c"]
    series = hub.convert(hub.convert(empty.column(0), to="nanoarrow"), to="pandas")
    assert len(series) == 0
print("ok")
"""


def test_narrow_decimals_into_polars_and_empty_list_views_into_pandas_do_not_crash() -> None:
    assert survives(NARROW_DECIMALS_AND_EMPTY_VIEWS).strip() == "ok"


UNION_IN_PANDAS = """
import pandas as pd, pyarrow as pa
import interchange_hub as ih
empty = pa.UnionArray.from_sparse(pa.array([], pa.int8()), [pa.array([], pa.int64())])
full = pa.UnionArray.from_sparse(pa.array([0, 0], pa.int8()), [pa.array([1, 2])])
sink = pa.BufferOutputStream()
table = pa.table({"u": pa.chunked_array([empty, full])})
with pa.ipc.new_stream(sink, table.schema) as writer:
    writer.write_table(table)
column = pa.ipc.open_stream(sink.getvalue()).read_all().column(0)  # no type-ids buffer
series = pd.Series(pd.arrays.ArrowExtensionArray(column))
info = ih.Hub(autoload=False).describe(series)  # pandas' nbytes reads a null pointer
print(info.rows, info.columns[0].nbytes > 0)
"""


def test_a_pandas_series_over_an_ipc_union_is_described_without_a_crash() -> None:
    assert survives(UNION_IN_PANDAS).split() == ["2", "True"]


NESTED_STRUCTS_INTO_ARRO3 = """
import pyarrow as pa, arro3.core as a3
import interchange_hub as ih, interchange_hub_arro3
hub = ih.Hub(plugins=[*ih.builtin_plugins(), interchange_hub_arro3], autoload=False)
inner = pa.StructArray.from_arrays([pa.array([f"v{i}" for i in range(20)])], names=["x"])
mask = pa.array([i % 3 == 1 for i in range(20)])
for outer in (
    pa.StructArray.from_arrays([inner], names=["f"]),
    pa.StructArray.from_arrays([inner], names=["f"], mask=mask),
    pa.StructArray.from_arrays([pa.StructArray.from_arrays([inner], ["g"])], ["h"]),
):
    table = pa.table({"c": outer})
    batches = [table.slice(1, 5).to_batches()[0], table.slice(11, 3).to_batches()[0]]
    want = pa.Table.from_batches(batches).to_pylist()
    for to in (a3.RecordBatchReader, a3.Table, a3.RecordBatch, a3.Array, a3.ChunkedArray):
        if to is a3.RecordBatchReader:  # read lazily by arrow-rs: a panic aborts the process
            src = pa.RecordBatchReader.from_batches(table.schema, batches)
        elif to in (a3.Array, a3.ChunkedArray):
            src = pa.chunked_array([b.column(0) for b in batches])
        else:
            src = pa.Table.from_batches(batches) if to is a3.Table else batches[0]
        out = hub.convert(src, to=to)
        if to is a3.RecordBatchReader:
            got = pa.RecordBatchReader.from_stream(out).read_all().to_pylist()
        elif to in (a3.Array, a3.ChunkedArray):
            got = [{"c": v} for v in pa.chunked_array(out).to_pylist()]
        else:
            got = pa.table(out).to_pylist()
        assert got == (want if to is not a3.RecordBatch else want[:5]), to
print("survived")
"""


def test_sliced_structs_of_structs_into_arro3_do_not_crash() -> None:
    # arrow-rs (arro3 0.9) panics importing a struct at an offset whose child is a struct;
    # from a lazy reader it aborted the process when read
    pytest.importorskip("interchange_hub_arro3")
    assert survives(NESTED_STRUCTS_INTO_ARRO3).split() == ["survived"]


NANOARROW_STRUCTS_INTO_ARRO3 = """
import nanoarrow as na, pyarrow as pa, arro3.core as a3
import interchange_hub as ih, interchange_hub_arro3
hub = ih.Hub(plugins=[*ih.builtin_plugins(), interchange_hub_arro3], autoload=False)
inner = pa.StructArray.from_arrays([pa.array([f"v{i}" for i in range(20)])], names=["x"])
outer = pa.StructArray.from_arrays([inner], names=["f"])
chunks = [outer.slice(0, 4), outer.slice(6, 5)]  # longer children; an offset
want = chunks[0].to_pylist() + chunks[1].to_pylist()
for to in (a3.RecordBatchReader, a3.Table, a3.RecordBatch):
    for make in (
        lambda: na.ArrayStream(pa.chunked_array(chunks)),  # a column's stream
        lambda: na.Array(pa.chunked_array(chunks)),  # a struct array: a table
    ):
        out = hub.convert(make(), to=to)
        if to is a3.RecordBatchReader:  # read lazily by arrow-rs: a panic aborts the process
            got = pa.RecordBatchReader.from_stream(out).read_all()
        else:
            got = pa.table(out) if to is a3.Table else pa.record_batch(out)
        got.validate(full=True)
        assert got.to_pylist() == want, (to, got.to_pylist())
print("survived")
"""


def test_sliced_structs_from_nanoarrow_into_arro3_do_not_crash() -> None:
    # nanoarrow holds a table as a struct array (or a stream of them): a slice of one
    # was handed to arrow-rs as it was, which reads a struct as a record batch
    pytest.importorskip("interchange_hub_arro3")
    assert survives(NANOARROW_STRUCTS_INTO_ARRO3).split() == ["survived"]
