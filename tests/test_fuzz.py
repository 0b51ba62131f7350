"""The fuzzer (tests/fuzz.py) in a subprocess, and one reproducer per hub bug it found.

``test_fuzz_runs_clean`` runs ``python -m tests.fuzz`` for FUZZ_SECONDS: a crash (a
negative return code), an exception outside ``ih.InterchangeError``, a silent value
change or a broken promise (type, copy=True, strict=True) fails it, with the seed and the
case. Set ``INTERCHANGE_HUB_FUZZ_SEED`` / ``INTERCHANGE_HUB_FUZZ_SECONDS`` to explore;
by hand: ``python -m tests.fuzz --seconds 600 --seed N``.

The fuzzer skips cases that hit a known bug (``KNOWN_BUGS`` in tests/fuzz.py), so that it
stays a guard against new ones; each known bug has a strict xfail reproducer below (in a
subprocess where it crashes the process). When a fix makes one pass, strict xfail fails
the run: delete the test and its ``KNOWN_BUGS`` entry together.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any

import nanoarrow as na
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import torch

import interchange_hub as ih
from tests import fuzz

ROOT = Path(__file__).resolve().parents[1]
FUZZ_SECONDS = float(os.environ.get("INTERCHANGE_HUB_FUZZ_SECONDS", "45"))
FUZZ_SEED = int(os.environ.get("INTERCHANGE_HUB_FUZZ_SEED", str(fuzz.DEFAULT_SEED)))


def test_fuzz_runs_clean() -> None:
    command = [sys.executable, "-m", "tests.fuzz", "--seconds", str(FUZZ_SECONDS)]
    command += ["--seed", str(FUZZ_SEED), "--trace"]
    run = subprocess.run(
        command,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=FUZZ_SECONDS * 4 + 120,
        check=False,
    )
    print(run.stdout[-3000:])
    if run.returncode < 0 or run.returncode > 1:
        last = [line for line in run.stderr.splitlines() if " case " in line][-1:]
        pytest.fail(
            f"the fuzzer crashed (return code {run.returncode}) in:\n{''.join(last)}\n"
            f"{run.stderr[-3000:]}\nreplay: python -m tests.fuzz --seed {FUZZ_SEED} "
            "--only <case> --tables-only|--tensors-only"
        )
    assert run.returncode == 0, f"{run.stdout[-6000:]}\n{run.stderr[-1500:]}"


def known(bug: str) -> pytest.MarkDecorator:
    return pytest.mark.xfail(reason=f"hub bug: {fuzz.KNOWN_BUGS[bug]}", strict=True)


# -- a regression the fuzzer caught in uncommitted work (fixed before it was committed) ----
@pytest.mark.parametrize("case", ["2-D", "1-D strided"])
def test_nan_in_a_tensor_stays_nan_in_arrow(hub: ih.Hub, case: str) -> None:
    src = np.array([[1.0, np.nan]]) if case == "2-D" else np.array([1.0, 0.0, np.nan])[::2]
    out = hub.convert(src, to="pyarrow")
    values = out.column(1).to_pylist() if isinstance(out, pa.Table) else out.to_pylist()
    assert values[-1] is not None and math.isnan(values[-1])  # NaN is a value, not a null


def test_nulls_of_a_reader_into_a_tensor_are_reported(hub: ih.Hub) -> None:
    t = pa.table({"x": pa.array([1.0, None])})
    with pytest.raises(ih.LossyConversionError):
        hub.convert(
            pa.RecordBatchReader.from_batches(t.schema, t.to_batches()), "torch", strict=True
        )


# -- the reproducers of known bugs: each asserts the right behaviour -----------------------
@pytest.mark.parametrize("values", [[1.0, None], [True, None]], ids=["float", "bool"])
def test_nulls_of_a_column_stream_into_a_tensor_are_reported(
    hub: ih.Hub, values: list[Any]
) -> None:
    stream = na.ArrayStream(pa.chunked_array([pa.array(values)]))
    with pytest.raises(ih.InterchangeError):  # LossyConversionError, or NoRouteError (bool)
        hub.convert(stream, to="numpy", strict=True)  # NaN / pd.NA silently today


def test_stream_with_repeated_names_into_polars(hub: ih.Hub) -> None:
    t = pa.table([pa.array([1]), pa.array([2])], names=["a", "a"])
    reader = pa.RecordBatchReader.from_batches(t.schema, t.to_batches())
    try:
        lazy = hub.convert(reader, to="polars")
    except ih.InterchangeError:
        return  # as for a Table (ConversionError): the schema shows the names
    lazy.collect()  # polars.exceptions.DuplicateError today


def test_repeated_names_into_pandas_keep_each_column(hub: ih.Hub) -> None:
    strings = pa.array(["x", "y"], pa.large_string())
    t = pa.table([strings, pa.array([1, 2], pa.duration("us"))], names=["a", "a"])
    try:
        frame = hub.convert(t, to="pandas")
    except ih.InterchangeError:
        return  # refusing is fine
    assert frame.iloc[:, 1].tolist() == t.column(1).to_pylist()  # ['1', '2'] today


def test_chunked_integer_dictionary_into_polars_keeps_integers(hub: ih.Hub) -> None:
    d = pa.array([1, 2, 1]).dictionary_encode()
    out = hub.convert(pa.chunked_array([d.slice(0, 1), d.slice(1)]), to="polars")
    assert out.to_list() == [1, 2, 1]  # ['1', '2', '1'] today


def test_struct_column_with_null_rows_through_nanoarrow_converts_back(hub: ih.Hub) -> None:
    column = pa.array([{"a": 1}, None])
    back = hub.convert(hub.convert(column, to="nanoarrow"), to="pyarrow")
    assert back.to_pylist() == column.to_pylist()


def test_struct_column_at_an_offset_through_nanoarrow_converts_back(hub: ih.Hub) -> None:
    column = pa.array([{"a": 1}, {"a": 2}]).slice(1)
    out = hub.convert(column, to="nanoarrow")
    back = hub.convert(out, to="pyarrow")  # ConversionError: "struct has non-zero offset"
    assert back.to_pylist() == column.to_pylist()  # a Table's rows or the column's values


@pytest.mark.parametrize("to", [pa.Array, pa.ChunkedArray])
def test_one_column_stream_to_a_pyarrow_column_gives_the_column(hub: ih.Hub, to: type) -> None:
    t = pa.table({"x": [1, 2]})
    assert hub.convert(t, to=to).type == pa.int64()
    reader = pa.RecordBatchReader.from_batches(t.schema, t.to_batches())
    assert hub.convert(reader, to=to).type == pa.int64()  # struct<x: int64> today


def test_stream_of_sliced_structs_keeps_its_rows(hub: ih.Hub) -> None:
    struct = pa.array([{"a": i} for i in range(5)]).slice(0, 2)
    out = hub.convert(na.ArrayStream(pa.chunked_array([struct])), to=pa.Table)
    out.validate(full=True)  # "Column 0 named a expected length 2 but got length 5"
    assert out.to_pylist() == [{"a": 0}, {"a": 1}]


def test_struct_column_with_null_rows_through_a_nanoarrow_stream(hub: ih.Hub) -> None:
    column = pa.array([{"a": 1}, None])
    stream = hub.convert(column, to=na.ArrayStream)
    try:
        back = hub.convert(stream, to="pyarrow")
    except ih.InterchangeError:
        return  # refusing is fine
    if isinstance(back, pa.RecordBatchReader):  # ArrowInvalid "struct has non-zero null
        back = back.read_all()  # count, cannot be imported as RecordBatch" here, today
    assert back.to_pylist() == column.to_pylist()


def test_duration_with_pandas_nulls_through_duckdb() -> None:
    plugin = pytest.importorskip("interchange_hub_duckdb")
    hub = ih.Hub(plugins=[*ih.builtin_plugins(), plugin], autoload=False)
    frame = pd.DataFrame({"d": pd.to_timedelta([1, None], unit="ms").astype("timedelta64[ms]")})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ih.LossyConversionWarning)  # duration -> INTERVAL
        relation = hub.convert(frame, to="duckdb")
    back = hub.convert(relation, to="pyarrow")  # ConversionError until the null slots were zeroed
    assert back.column(0).null_count == 1


def test_nested_struct_through_arro3_does_not_crash() -> None:
    pytest.importorskip("interchange_hub_arro3")
    code = """
        import pyarrow as pa, arro3.core as a3, interchange_hub as ih, interchange_hub_arro3
        hub = ih.Hub(plugins=[*ih.builtin_plugins(), interchange_hub_arro3], autoload=False)
        inner = pa.StructArray.from_arrays([pa.array(["a", "b", "c", "d"])], names=["x"])
        t = pa.table({"c": pa.StructArray.from_arrays([inner], names=["f"])}).slice(1, 2)
        reader = pa.RecordBatchReader.from_batches(t.schema, t.to_batches())
        try:
            out = hub.convert(reader, to=a3.RecordBatchReader)
        except ih.InterchangeError:
            pass
        else:  # arrow-rs aborts the process here (assertion failed: end <= self.len())
            assert pa.RecordBatchReader.from_stream(out).read_all().equals(t)
    """
    run = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, f"return code {run.returncode}\n{run.stderr[-3000:]}"


@pytest.mark.parametrize("case", ["fortran-reversed", "one-row-transposed"])
def test_copy_true_from_a_tensor_never_aliases_it(hub: ih.Hub, case: str) -> None:
    if case == "fortran-reversed":
        src: Any = np.asfortranarray(np.arange(8.0).reshape(2, 4))[:, ::-1]
    else:
        src = torch.arange(6.0).reshape(6, 1).t()  # shape (1, 6), strides (1, 1)
    out = hub.convert(src, to="pyarrow", copy=True)
    before = out.to_pydict()
    src[0, 0] = 99.0
    assert out.to_pydict() == before, "the copy changed with its source"


def test_copy_true_of_a_numpy_string_array_keeps_its_dtype(hub: ih.Hub) -> None:
    out = hub.convert(np.array(["ab", "c"]), to="numpy", copy=True)
    assert out.dtype == np.dtype("<U2")  # object today


@pytest.mark.parametrize("typ", [pa.string_view(), pa.binary_view()], ids=str)
@pytest.mark.parametrize(
    "to", [pa.Table, pa.RecordBatch, pa.RecordBatchReader, pa.ChunkedArray, "pandas", "export"]
)
def test_empty_view_chunk_at_an_offset_stays_valid(hub: ih.Hub, to: Any, typ: Any) -> None:
    """pyarrow's C export drops the views buffer of an empty view chunk at an offset but
    keeps the offset; pandas exports through pyarrow: what the hub reads from pandas, and
    what it exports, holds such a chunk at offset 0 instead."""
    views = pa.array([b"x", b"yy", b"zzz"], typ)
    chunked = pa.chunked_array([views.slice(0, 1), views.slice(1, 0), views.slice(1, 2)])
    assert chunked.chunk(1).offset == 1
    frame = pd.DataFrame({"s": pd.arrays.ArrowExtensionArray(chunked)})
    src: Any = frame["s"] if to is pa.ChunkedArray else frame
    if to == "export":
        out: Any = pa.table(ih.export(frame))
        pa.chunked_array(ih.export(chunked)).validate(full=True)  # pyarrow data exported
    elif to == "pandas":  # a frame of the same chunks, converted back
        out = hub.convert(hub.convert(frame, to="pandas"), to=pa.Table)
    else:
        out = hub.convert(src, to=to)
    if isinstance(out, pa.RecordBatchReader):
        out = out.read_all()
    out.validate(full=True)  # "View buffer size (bytes): 0 isn't large enough ..."
    column = out if isinstance(out, pa.ChunkedArray) else out.column(0)
    assert column.to_pylist() == chunked.to_pylist()
    if to is pa.Table:  # the views are the source's, only the empty chunk is new
        assert hub.plan(frame, to=to).zero_copy
        views_of = [c.buffers()[1].address for c in (column.chunk(0), column.chunk(2))]
        assert views_of == [chunked.chunk(0).buffers()[1].address] * 2


def test_buffers_of_a_struct_with_nulls_are_its_own(hub: ih.Hub) -> None:
    arr = pa.array([{"a": None}, None, {"a": 3}])
    parts = [arr, *(arr.field(i) for i in range(arr.type.num_fields))]
    own = [(b.address, b.address + b.size) for p in parts for b in p.buffers() if b is not None]
    for buf in hub.buffers(arr):
        inside = any(lo <= buf.address and buf.address + buf.size <= hi for lo, hi in own)
        assert inside, f"{buf} is not memory of the array"


def test_nested_nanoseconds_survive_a_round_trip_through_numpy(hub: ih.Hub) -> None:
    # a numpy object array holding pd.Timestamp values with nanoseconds (what a nested
    # timestamp[ns] column becomes) converted to timestamp[us], the nanoseconds cut silently
    column = pa.array([[1_000_000_001]], pa.list_(pa.timestamp("ns")))
    objects = hub.convert(column, to="numpy")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        back = hub.convert(objects, to="pyarrow")
    assert not [w for w in caught if issubclass(w.category, ih.LossyConversionWarning)]
    assert back.type == column.type and back.to_pylist() == column.to_pylist()  # kept


def test_an_empty_table_of_any_type_becomes_a_record_batch(hub: ih.Hub) -> None:
    # A 0-row pandas frame's categorical of no categories exports as a dictionary of
    # null values, and polars' Categorical as one of string views: an empty RecordBatch
    # of them was built from Python objects, which pyarrow refuses for those types
    # (found by the fuzzer; ConversionError mid-run).
    import polars as pl

    frame = pd.DataFrame({"b": pd.Series([], dtype=object), "c": pd.Categorical([])})
    polars = pl.DataFrame({"s": pl.Series([], dtype=pl.Struct({"c": pl.Categorical}))})
    for source in (
        frame,
        polars,
        pa.table({"d": pa.chunked_array([], pa.dictionary(pa.int8(), pa.null()))}),
    ):
        batch = hub.convert(source, to=pa.RecordBatch)
        assert isinstance(batch, pa.RecordBatch) and batch.num_rows == 0
        names = source.column_names if isinstance(source, pa.Table) else list(source.columns)
        assert batch.schema.names == names


def test_bools_beside_float16_columns_become_a_float16_tensor(hub: ih.Hub) -> None:
    # numpy promotes bool and float16 to float16, which pyarrow cannot cast a bool to
    # (found by the fuzzer; ConversionError mid-run): cast through float32, exactly.
    frame = pd.DataFrame({"b": [True, False, True], "h": np.array([0.5, 1.5, -2.0], np.float16)})
    out = hub.convert(frame, to="numpy")
    assert out.dtype == np.float16 and out.tolist() == frame.to_numpy().tolist()
    assert hub.convert(pa.table(frame), to="numpy").tolist() == out.tolist()


def test_an_arrow_dictionary_column_of_pandas_comes_back_as_it_was(hub: ih.Hub) -> None:
    # Table.from_pandas writes pd.ArrowDtype(dictionary)'s name into the pandas metadata,
    # and to_pandas cannot read it back ("data type 'dictionary<...>[pyarrow]' not
    # understood"; found by the fuzzer, ConversionError mid-run): such a column is
    # wrapped in pd.ArrowDtype again, as it came.
    dtype = pd.ArrowDtype(pa.dictionary(pa.int32(), pa.string()))
    frame = pd.DataFrame({"d": pd.array(["a", "b", None], dtype=dtype), "x": [1, 2, 3]})
    for copy in (None, True):
        out = hub.convert(frame, to="pandas", copy=copy)
        assert out.equals(frame) and out.dtypes.to_dict() == frame.dtypes.to_dict()
        series = hub.convert(frame[["d"]], to=pd.Series, copy=copy)
        assert series.dtype == dtype and series.tolist() == frame["d"].tolist()
        if copy:
            assert hub.shared_bytes(frame, out) == 0
