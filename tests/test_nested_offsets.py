"""Nested Arrow arrays whose children sit at offsets of their own, converted to every
library: sliced structs whose fields have nulls, lists over sliced values, dictionaries
over sliced values, fixed-size lists at offsets, maps, unions, run-end encoded and list
view columns; nulls at each level; as Array, ChunkedArray, Table and a table whose
columns' chunks do not line up; from pyarrow, nanoarrow and polars.

Each plan that is made must run (a refusal belongs in the plan), a zero-copy claim must
hold by buffer address (every byte of the result inside the source's buffers: where a
library copies, the plan names the copy), and the values must come back through pyarrow
unchanged unless a LossyConversionWarning said otherwise."""

from __future__ import annotations

import functools
import math
import subprocess
import sys
import warnings
from collections.abc import Callable
from typing import Any

import nanoarrow as na
import polars as pl
import pyarrow as pa
import pytest

import interchange_hub as ih
from interchange_hub import arrowkit
from interchange_hub.adapter import Flag
from tests.helpers import every_target, installed_plugins, shared_memory

PLUGINS = installed_plugins()
HUB = ih.Hub(autoload=False, plugins=PLUGINS)
TARGETS = every_target(HUB)
N = 24  # rows of each array


# -- the arrays --------------------------------------------------------------------------
def leaf(kind: str, n: int, nulls: bool) -> pa.Array:
    if kind == "int":
        return pa.array([None if nulls and i % 5 == 2 else i for i in range(n)], pa.int64())
    if kind == "bool":
        return pa.array([None if nulls and i % 3 == 0 else bool(i % 2) for i in range(n)])
    strings = pa.array([None if nulls and i % 4 == 1 else str(i) for i in range(n)])
    return strings.cast(pa.string_view())  # "sv": polars' strings


def child(kind: str, n: int, nulls: bool, offset: int) -> pa.Array:
    """``n`` rows of a leaf starting at ``offset`` of its buffers."""
    return leaf(kind, n + offset + 5, nulls).slice(offset, n)


def mask(n: int, on: bool) -> pa.Array | None:
    return pa.array([i % 7 == 3 for i in range(n)]) if on else None


def offsets(n: int, step: int = 2, typ: pa.DataType = pa.int32()) -> pa.Array:
    return pa.array([step * i for i in range(n + 1)], typ)


def _struct(k: str, cn: bool, co: int, pn: bool) -> pa.Array:
    fields = [child(k, N, cn, co), child("int", N, False, co)]
    return pa.StructArray.from_arrays(fields, ["a", "b"], mask=mask(N, pn))


def _struct_of_struct(k: str, cn: bool, co: int, pn: bool) -> pa.Array:
    inner = pa.StructArray.from_arrays([child(k, N, cn, co)], ["x"])
    return pa.StructArray.from_arrays([inner], ["s"], mask=mask(N, pn))


def _struct_nested_sliced(k: str, cn: bool, co: int, pn: bool) -> pa.Array:
    inner = pa.StructArray.from_arrays([child(k, N + co, cn, 0)], ["x"]).slice(co, N)
    fields = [inner, child("int", N, False, 0)]
    return pa.StructArray.from_arrays(fields, ["s", "b"], mask=mask(N, pn))


def _large_list(k: str, cn: bool, co: int, pn: bool) -> pa.Array:
    values = child(k, 2 * N, cn, co)
    return pa.LargeListArray.from_arrays(offsets(N, typ=pa.int64()), values, mask=mask(N, pn))


def _list(k: str, cn: bool, co: int, pn: bool) -> pa.Array:
    return pa.ListArray.from_arrays(offsets(N), child(k, 2 * N, cn, co), mask=mask(N, pn))


def _list_of_struct(k: str, cn: bool, co: int, pn: bool) -> pa.Array:
    values = pa.StructArray.from_arrays([child(k, 2 * N, cn, co)], ["x"])
    return pa.LargeListArray.from_arrays(offsets(N, typ=pa.int64()), values, mask=mask(N, pn))


def _struct_of_list(k: str, cn: bool, co: int, pn: bool) -> pa.Array:
    values = child(k, 2 * N, cn, co)
    lists = pa.LargeListArray.from_arrays(offsets(N, typ=pa.int64()), values)
    return pa.StructArray.from_arrays([lists], ["l"], mask=mask(N, pn))


def _fixed_size_list(k: str, cn: bool, co: int, pn: bool) -> pa.Array:
    return pa.FixedSizeListArray.from_arrays(child(k, 2 * N, cn, co), 2, mask=mask(N, pn))


def _map(k: str, cn: bool, co: int, pn: bool) -> pa.Array:
    keys = pa.array([str(i) for i in range(2 * N + co)]).slice(co)
    values = child(k, 2 * N, cn, co)
    return pa.MapArray.from_arrays(offsets(N), keys, values, mask=mask(N, pn))


def _dictionary(k: str, cn: bool, co: int, pn: bool) -> pa.Array:
    indices = pa.array([None if pn and i % 7 == 3 else i % 10 for i in range(N)], pa.int32())
    return pa.DictionaryArray.from_arrays(indices, child(k, 10, cn, co))


def _dict_of_struct(k: str, cn: bool, co: int, pn: bool) -> pa.Array:
    values = pa.StructArray.from_arrays([child(k, 10, cn, co)], ["x"])
    indices = pa.array([None if pn and i % 7 == 3 else i % 10 for i in range(N)], pa.int32())
    return pa.DictionaryArray.from_arrays(indices, values)


def _sparse_union(k: str, cn: bool, co: int, pn: bool) -> pa.Array:
    ids = pa.array([i % 2 for i in range(N)], pa.int8())
    members = [child(k, N, cn, co), child("int", N, False, co)]
    return pa.UnionArray.from_sparse(ids, members, ["a", "b"])


def _dense_union(k: str, cn: bool, co: int, pn: bool) -> pa.Array:
    ids = pa.array([i % 2 for i in range(N)], pa.int8())
    where = pa.array([i // 2 for i in range(N)], pa.int32())
    members = [child(k, N, cn, co), child("int", N, False, co)]
    return pa.UnionArray.from_dense(ids, where, members, ["a", "b"])


def _list_view(k: str, cn: bool, co: int, pn: bool) -> pa.Array:
    starts = pa.array([2 * i for i in range(N)], pa.int32())
    sizes = pa.array([2] * N, pa.int32())
    return pa.ListViewArray.from_arrays(starts, sizes, child(k, 2 * N, cn, co), mask=mask(N, pn))


def _run_end_encoded(k: str, cn: bool, co: int, pn: bool) -> pa.Array:
    ends = pa.array(range(1, N + 1), pa.int32())
    return pa.RunEndEncodedArray.from_arrays(ends, child(k, N, cn, co))


def _struct_of_list_view(k: str, cn: bool, co: int, pn: bool) -> pa.Array:
    views = _list_view(k, cn, co, False)
    return pa.StructArray.from_arrays(
        [views, child("int", N, False, co)], ["v", "b"], mask=mask(N, pn)
    )


def _list_of_run_end_encoded(k: str, cn: bool, co: int, pn: bool) -> pa.Array:
    ends = pa.array([3 * i + 1 + i % 2 for i in range(N)], pa.int32())  # runs of 2 to 4
    runs = pa.RunEndEncodedArray.from_arrays(ends, child(k, N, cn, co))
    return pa.ListArray.from_arrays(offsets(N), runs.slice(co % 4), mask=mask(N, pn))


def _struct_of_fixed_size_list(k: str, cn: bool, co: int, pn: bool) -> pa.Array:
    values = child(k, 2 * N + 10, cn, 0)
    lists = pa.FixedSizeListArray.from_arrays(values, 2, mask=mask(N + 5, True))
    lists = lists.slice(co % 5, N)  # (a slice of its own)
    return pa.StructArray.from_arrays(
        [lists, child("int", N, False, 0)], ["f", "b"], mask=mask(N, pn)
    )


def _list_of_fixed_size_list(k: str, cn: bool, co: int, pn: bool) -> pa.Array:
    lists = pa.FixedSizeListArray.from_arrays(child(k, 2 * N + 8, cn, 0), 2, mask=mask(N + 4, True))
    return pa.ListArray.from_arrays(offsets(N, step=1), lists.slice(co % 5), mask=mask(N, pn))


CONTAINERS: dict[str, Callable[[str, bool, int, bool], pa.Array]] = {
    "struct": _struct,
    "struct_of_struct": _struct_of_struct,
    "struct_nested_sliced": _struct_nested_sliced,
    "large_list": _large_list,
    "list": _list,
    "list_of_struct": _list_of_struct,
    "struct_of_list": _struct_of_list,
    "fixed_size_list": _fixed_size_list,
    "map": _map,
    "dictionary": _dictionary,
    "dict_of_struct": _dict_of_struct,
    "sparse_union": _sparse_union,
    "dense_union": _dense_union,
    "list_view": _list_view,
    "run_end_encoded": _run_end_encoded,
    "struct_of_list_view": _struct_of_list_view,  # (nested layouts: rebuilt, decoded)
    "list_of_run_end_encoded": _list_of_run_end_encoded,
    "struct_of_fixed_size_list": _struct_of_fixed_size_list,  # (polars checks no offset)
    "list_of_fixed_size_list": _list_of_fixed_size_list,
}

# (leaf, nulls in the leaf, the leaf's own offset, nulls in the container, a slice of the
# container): own offsets inside and at a byte, parents' nulls over children's, slices.
VARIANTS = [
    ("int", True, 3, False, 0),
    ("int", True, 8, True, 0),
    ("sv", True, 13, True, 3),
    ("bool", False, 3, True, 8),
    ("int", False, 0, True, 13),
    ("sv", False, 0, False, 0),
]


def column(container: str, variant: tuple[str, bool, int, bool, int]) -> pa.Array:
    kind, cn, co, pn, sl = variant
    arr = CONTAINERS[container](kind, cn, co, pn)
    return arr.slice(sl) if sl else arr


def source(shape: str, arr: pa.Array) -> Any:
    """``arr`` as pyarrow, nanoarrow or polars data of one shape (None: polars cannot
    hold it)."""
    if shape == "pa-array":
        return arr
    if shape == "pa-chunked":
        return pa.chunked_array([arr, arr.slice(1, 9)])
    if shape == "pa-table":
        return pa.table({"c": pa.chunked_array([arr, arr.slice(1, 9)])})
    if shape == "pa-misaligned":  # chunks that do not line up
        rest = pa.chunked_array([list(range(5)), list(range(5, len(arr)))], pa.int64())
        return pa.table({"c": pa.chunked_array([arr]), "x": rest})
    if shape == "na-table":
        return na.Array(pa.table({"c": arr}))
    if shape == "na-chunked":
        return na.Array(pa.chunked_array([arr, arr.slice(1, 9)]))
    try:
        if shape == "pl-series":
            return pl.from_arrow(pa.chunked_array([arr, arr.slice(2, 7)]), rechunk=False)
        return pl.from_arrow(pa.table({"c": arr}), rechunk=False)  # pl-frame
    except Exception:  # noqa: BLE001 - a type polars cannot hold (unions)
        return None


def case(shape: str, arr: pa.Array) -> tuple[Any, Any]:
    """The source of a shape, and what its values and memory are read from: a stream's
    own table (reading the stream would consume it)."""
    if shape in ("pa-reader", "na-stream"):
        table = pa.table({"c": pa.chunked_array([arr, arr.slice(1, 9)])})
        if shape == "na-stream":
            return na.ArrayStream(table), table
        return pa.RecordBatchReader.from_batches(table.schema, table.to_batches()), table
    src = source(shape, arr)
    return src, src


STREAMS = ["pa-reader", "na-stream"]
SHAPES = [
    "pa-array",
    "pa-chunked",
    "pa-table",
    "pa-misaligned",
    "na-table",
    "na-chunked",
    "pl-series",
    "pl-frame",
]


# -- what is checked ---------------------------------------------------------------------
def _outside(result: Any, src: Any) -> int:
    """Bytes of the result outside the source's memory (as tests/test_claims.py counts)."""
    inside, size = shared_memory(HUB, result, src)
    return size - inside


def _plain(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return [_plain(v) for v in value.values()]  # (by position: names may change)
    return value


def rows(data: Any) -> list[list[Any]]:
    """The values of pyarrow data, row by row, the field names left out: a table's rows
    and a struct column's alike (nanoarrow gives a table as structs, and a struct column
    without null rows as a table of its fields), a one-column table's also as the rows of
    its column (a column converted to a table, or back)."""
    if isinstance(data, pa.RecordBatchReader):
        data = data.read_all()
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    found = [_plain(data.to_pylist())]
    if isinstance(data, pa.Table) and data.num_columns == 1:
        found.append(_plain(data.column(0).to_pylist()))
    return found


def expected(src: Any) -> list[list[Any]]:
    if isinstance(src, na.Array):
        return rows(pa.chunked_array(src))
    if isinstance(src, pl.DataFrame):
        return rows(pa.table(src))
    if isinstance(src, pl.Series):
        return rows(pa.chunked_array(src))
    return rows(src)


def problem(src: Any, target: str, ref: Any = None) -> str:
    """What is wrong with converting ``src`` to ``target`` ("": nothing); ``ref``: what
    its values and memory are read from, when not ``src`` itself (a stream's table)."""
    ref = src if ref is None else ref
    try:
        plan = HUB.plan(src, to=target)
    except ih.InterchangeError:
        return ""  # refused before anything runs: no claim made
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = HUB.convert(src, to=target)
        except ih.InterchangeError as exc:
            return f"planned, but refused when run: {exc}"
        except Exception as exc:  # noqa: BLE001 - the finding
            return f"planned, but failed when run: {type(exc).__name__}: {exc}"
    if result is src:
        return ""  # (a stream into its own library: the stream itself, consumed)
    lossy = [w for w in caught if issubclass(w.category, ih.LossyConversionWarning)]
    if result is not src and plan.zero_copy:
        outside = _outside(result, ref)
        if outside:
            return f"planned zero-copy, but {outside} bytes of the result are new:\n{plan}"
    if lossy:
        return ""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            back = result if target == "pyarrow" else HUB.convert(result, to="pyarrow")
        got = rows(back)
    except ih.InterchangeError as exc:
        return f"no LossyConversionWarning, but the result does not come back: {exc}"
    want = expected(ref)
    if not any(g == w for g in got for w in want):
        return f"values changed without a LossyConversionWarning:\n{want[-1]}\n{got[-1]}"
    return ""


# nanoarrow on a list view of string views crashed the process (pyarrow's cast of a list
# view to a list gave an invalid array): those run in a subprocess (test below).
def crashes(target: str, container: str, variant: tuple[str, bool, int, bool, int]) -> bool:
    return target == "nanoarrow" and container == "list_view" and variant[0] == "sv"


@functools.cache
def _column(container: str, index: int) -> pa.Array:
    return column(container, VARIANTS[index])


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("shape", SHAPES + STREAMS)
def test_nested_offsets_keep_claims_and_values(shape: str, target: str) -> None:
    problems = []
    for container in CONTAINERS:
        for i, variant in enumerate(VARIANTS):
            if crashes(target, container, variant):
                continue
            src, ref = case(shape, _column(container, i))
            if src is not None and (found := problem(src, target, ref)):
                problems.append(f"{container} {variant}: {found}")
    assert not problems, f"{len(problems)} problem(s):\n" + "\n".join(problems)


CRASH = """
import warnings
import pyarrow as pa
import interchange_hub as ih
from tests import test_nested_offsets as t
warnings.simplefilter("ignore")
found = []
for i, variant in enumerate(t.VARIANTS):
    for shape in t.SHAPES + t.STREAMS:
        src, ref = t.case(shape, t.column("list_view", variant))
        if src is not None and (p := t.problem(src, "nanoarrow", ref)):
            found.append(f"{shape} {variant}: {p}")
print("\\n".join(found))
"""


def test_list_views_of_string_views_into_nanoarrow_do_not_crash() -> None:
    run = subprocess.run(
        [sys.executable, "-c", CRASH], check=False, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert not run.stdout.strip(), run.stdout


# -- the flags the plans read ------------------------------------------------------------
def nulls(n: int, offset: int = 0) -> pa.Array:
    return pa.array([None if i % 3 == 0 else i for i in range(n + offset)], pa.int64()).slice(
        offset
    )


def flags(arr: Any) -> frozenset[str]:
    return arrowkit.describe_column(arr).columns[0].flags


@pytest.mark.parametrize(
    ("arr", "flag", "present"),
    [
        (pa.StructArray.from_arrays([nulls(20, 8)], ["a"]), Flag.NESTED_OWN_OFFSET, True),
        (pa.StructArray.from_arrays([nulls(20)], ["a"]).slice(8), Flag.NESTED_OWN_OFFSET, False),
        (pa.StructArray.from_arrays([pa.array(range(20))], ["a"]).slice(3), Flag.SLICED, True),
        (
            pa.LargeListArray.from_arrays(offsets(10, typ=pa.int64()), nulls(20, 3)),
            Flag.NESTED_OWN_OFFSET,
            True,
        ),
        (  # bools: polars keeps their bitmap at any offset
            pa.StructArray.from_arrays([pa.array([None, True] * 12).slice(3)], ["a"]),
            Flag.NESTED_OWN_OFFSET,
            False,
        ),
        (
            pa.StructArray.from_arrays([nulls(20)], ["a"], mask=mask(20, True)),
            Flag.STRUCT_NULLS_OVER_FIELDS,
            True,
        ),
        (
            pa.StructArray.from_arrays([pa.array(range(20))], ["a"], mask=mask(20, True)),
            Flag.STRUCT_NULLS_OVER_FIELDS,
            False,
        ),
        (
            pa.StructArray.from_arrays(
                [pa.StructArray.from_arrays([pa.array(range(20))], ["x"])],
                ["s"],
                mask=mask(20, True),
            ),
            Flag.STRUCT_NULLS_OVER_FIELDS,
            True,
        ),
        (
            pa.FixedSizeListArray.from_arrays(pa.array(range(40)), 2, mask=mask(20, True)).slice(
                0, 10
            ),
            Flag.FIXED_SIZE_TAIL,
            True,
        ),
        (
            pa.FixedSizeListArray.from_arrays(pa.array(range(40)), 2).slice(0, 10),
            Flag.FIXED_SIZE_TAIL,
            False,
        ),
    ],
)
def test_nested_arrays_are_flagged_from_offsets_and_null_counts(
    arr: pa.Array, flag: Flag, present: bool
) -> None:
    assert (flag in flags(arr)) is present
    assert (flag in flags(pa.chunked_array([arr, arr]))) is present


def test_route_keys_tell_the_flags_apart() -> None:
    own = pa.StructArray.from_arrays([nulls(20, 8)], ["a"])
    plain = pa.StructArray.from_arrays([nulls(20)], ["a"])
    assert arrowkit.route_key(own) != arrowkit.route_key(plain)
    rest = pa.chunked_array([list(range(5)), list(range(5, 20))], pa.int64())
    split = pa.table({"c": pa.chunked_array([plain]), "x": rest})
    aligned = pa.table({"c": pa.chunked_array([plain.slice(0, 5), plain.slice(5)]), "x": rest})
    assert Flag.CHUNKS_SPLIT in arrowkit.describe_table(split).columns[0].flags
    assert Flag.CHUNKS_SPLIT not in arrowkit.describe_table(aligned).columns[0].flags
    assert arrowkit.route_key(split) != arrowkit.route_key(aligned)


def test_polars_names_the_bitmaps_it_rebuilds() -> None:
    own = pa.StructArray.from_arrays([nulls(20, 8)], ["a"])
    plan = HUB.plan(own, to="polars")
    assert not plan.zero_copy
    assert any("offset of its own" in c.reason for c in plan.copies), plan
    masked = pa.StructArray.from_arrays([nulls(20)], ["a"], mask=mask(20, True))
    assert any("pushes a struct's nulls" in c.reason for c in HUB.plan(masked, to="polars").copies)
    # ... and the same data, once polars holds it, on every export (a route of its own)
    series = pl.Series(own)
    assert not HUB.plan(series, to="pyarrow").zero_copy
    plain = pl.Series(pa.StructArray.from_arrays([nulls(20)], ["a"]))
    assert series.dtype == plain.dtype and HUB.plan(plain, to="pyarrow").zero_copy
    polars = HUB.registry.get("polars")
    assert polars is not None and polars.route_key(series) != polars.route_key(plain)
    out = HUB.convert(plain, to="pyarrow")
    assert not _outside(out, plain)
    frame = pl.from_arrow(pa.table({"m": _map("int", False, 0, False)}))
    reasons = [c.reason for c in HUB.plan(frame, to="pyarrow").copies]
    assert any("Map's offsets" in r for r in reasons), reasons


def test_a_struct_chunked_array_keeps_its_chunks_in_polars() -> None:
    arr = pa.StructArray.from_arrays([pa.array(range(20))], ["a"])
    col = pa.chunked_array([arr, arr.slice(3)])
    plan = HUB.plan(col, to="polars")
    out = HUB.convert(col, to="polars")
    assert plan.zero_copy and out.n_chunks() == 2
    assert not _outside(out, col)


# -- runs pyarrow cannot decode --------------------------------------------------------------
@pytest.mark.parametrize(("offset", "length"), [(0, 10), (1, 6), (3, 5), (4, 0), (9, 1)])
def test_runs_are_taken_row_by_row_where_pyarrow_cannot_decode_them(
    offset: int, length: int
) -> None:
    # pyarrow 25 (found on the GPU machine's image) has no run_end_decode kernel for
    # nested values (a struct of lists of lists): arrowkit.decode_runs takes each row's
    # value by its run's number instead. Checked against the runs written out by hand.
    pc = pytest.importorskip("pyarrow.compute")
    typ = pa.struct([("a", pa.list_(pa.list_(pa.int64())))])
    values = pa.array([{"a": [[1, None]]}, None, {"a": []}, {"a": [[3], None]}], typ)
    runs = pa.RunEndEncodedArray.from_arrays(pa.array([2, 5, 6, 10], pa.int32()), values)
    runs = runs.slice(offset, length)
    rows = arrowkit._run_of_each_row(pa, pc, runs)
    assert rows.type == pa.int64() and len(rows) == length
    v = values.to_pylist()
    expected = [v[0]] * 2 + [v[1]] * 3 + [v[2]] + [v[3]] * 4
    assert values.take(rows).to_pylist() == expected[offset : offset + length]
    decoded = arrowkit.decode_runs(runs)
    assert decoded.type == typ and decoded.to_pylist() == expected[offset : offset + length]
