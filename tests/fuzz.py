"""A bounded, seeded fuzzer for ``Hub.convert``; run by tests/test_fuzz.py in a subprocess.

Each case builds random data, converts it and checks the outcome. The only acceptable
outcomes are a correct result or an :class:`interchange_hub.InterchangeError`:

- **tables and columns**: random schemas (integers of every width, floats with NaN and
  infinities, bool, string/large_string/string_view, binary, date32, timestamps with and
  without a time zone, durations, dictionaries, lists, structs), nulls, a random offset
  (the data is a slice), random chunking (each column its own), held by a random source
  (pyarrow Table/RecordBatch/RecordBatchReader/Array/ChunkedArray, nanoarrow Array and
  ArrayStream, polars DataFrame/LazyFrame/Series, pandas DataFrame/Series);
- **tensors**: random numpy arrays (dtypes, ndim 0-4, zero-size, Fortran order, negative
  strides, steps, transposes, broadcasts, read-only) and torch tensors made from them
  (plus bfloat16, conjugate views and tensors that require grad);

converted to a random target (every library name the hub knows, the installed plugins'
too, aliases, and every type a library offers as ``to=``) with random ``copy=`` and
``strict=``. The result is converted back with ``convert(result, to="pyarrow")`` (tensor
results are also read directly; a numpy object array, whose Python values carry no Arrow
type, and a pandas frame with repeated names, which the hub refuses by design, are read
with their library's API) and its values are compared with values read from the source
through the source library's own API. A value may change only when a
``LossyConversionWarning`` says so; then only the documented changes are allowed (nulls
-> NaN, integers -> float64, timestamps and durations -> int64 ticks, a time zone
dropped, nanoseconds cut to microseconds). Also checked: the result has the requested
library or type, ``copy=True`` shares no memory with the source, ``strict=True`` never
warns, no other warning is emitted, and the source is unchanged.

Cases that hit a known hub bug (``KNOWN_BUGS``, each reproduced by a strict xfail test in
tests/test_fuzz.py) are counted and not run, so that the fuzzer guards against new bugs;
``--include-known`` runs them too.

Every case is derived from ``(seed, number)`` alone. A crash kills the process (the
test sees a nonzero or negative return code); with ``--trace`` each case is printed
before it runs, so the last line names the culprit. By hand::

    python -m tests.fuzz --seconds 60 --seed 7            # as long as you like
    python -m tests.fuzz --seed 7 --only 1234 --verbose   # one case, in a fresh hub
    python -m tests.fuzz --seed 7 --cases 1235            # cases 0..1234 (same hub state)
"""

from __future__ import annotations

import argparse
import datetime as dt
import faulthandler
import functools
import itertools
import math
import random
import sys
import time
import traceback
import warnings
import zlib
from dataclasses import dataclass, field
from typing import Any

import nanoarrow as na
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import torch

import interchange_hub as ih
from interchange_hub import arrowkit

DEFAULT_SEED = 20240611
MAX_SHOWN = 2000  # characters of a value listing shown in a failure


class Skip(Exception):  # not an error: the case cannot be built
    """The fuzzer could not build this source with the library's own API."""


class Failure(Exception):  # a finding
    """A check failed."""


# -- random Arrow data --------------------------------------------------------------------
INT_TYPES = [
    pa.int8(),
    pa.int16(),
    pa.int32(),
    pa.int64(),
    pa.uint8(),
    pa.uint16(),
    pa.uint32(),
    pa.uint64(),
]
FLOAT_TYPES = [pa.float16(), pa.float32(), pa.float64()]
UNITS = ["s", "ms", "us", "ns"]
ZONES = [None, None, "UTC", "Europe/Paris", "America/New_York", "+05:30", "-02:00"]
STRINGS = ["", "a", "xyz", "héllo", "日本語", "🙂🙃", "a\x00b", "tab\tnew\nline", "x" * 40]
UNIT_PER_SECOND = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}


def random_type(r: random.Random, depth: int = 0) -> pa.DataType:
    roll = r.random()
    if roll < 0.25:
        return r.choice(INT_TYPES)
    if roll < 0.38:
        return r.choice(FLOAT_TYPES)
    if roll < 0.44:
        return pa.bool_()
    if roll < 0.55:
        return r.choice([pa.string(), pa.string(), pa.large_string(), pa.string_view()])
    if roll < 0.60:
        return r.choice([pa.binary(), pa.large_binary(), pa.binary_view()])
    if roll < 0.64:
        return pa.date32()
    if roll < 0.73:
        return pa.timestamp(r.choice(UNITS), r.choice(ZONES))
    if roll < 0.78:
        return pa.duration(r.choice(UNITS))
    if roll < 0.85:
        index = r.choice([pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint32()])
        value = r.choice([pa.string(), pa.string(), pa.large_string(), pa.int64()])
        return pa.dictionary(index, value)
    if depth >= 2:
        return r.choice(INT_TYPES + [pa.string(), pa.float64()])
    if roll < 0.93:
        child = random_type(r, depth + 1)
        return pa.list_(child) if r.random() < 0.8 else pa.large_list(child)
    fields = [pa.field(f"f{i}", random_type(r, depth + 1)) for i in range(r.randint(1, 3))]
    return pa.struct(fields)


def _mask(rng: np.random.Generator, n: int, p: float) -> np.ndarray | None:
    if p <= 0:
        return None
    return rng.random(n) < p


def random_array(
    r: random.Random, rng: np.random.Generator, typ: pa.DataType, n: int, p: float
) -> pa.Array:
    """``n`` random values of ``typ``, a fraction ``p`` of them null."""
    mask = _mask(rng, n, p)
    t = pa.types
    if t.is_integer(typ):
        info = np.iinfo(typ.to_pandas_dtype())
        values = rng.integers(info.min, info.max, n, dtype=info.dtype, endpoint=True)
        small = rng.integers(-3, 4, n).astype(info.dtype, casting="unsafe")
        values = np.where(rng.random(n) < 0.3, small, values)
        if n and r.random() < 0.3:
            values[r.randrange(n)] = r.choice([info.min, info.max])
        if n and r.random() < 0.2 and info.max > 2**53:
            values[r.randrange(n)] = 2**53 + 1
        return pa.array(values, type=typ, mask=mask)
    if t.is_floating(typ):
        np_type = typ.to_pandas_dtype()
        with np.errstate(over="ignore"):
            values = (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 6, n)).astype(np_type)
        for special in (math.nan, math.inf, -math.inf, -0.0):
            if n and r.random() < 0.15:
                values[r.randrange(n)] = special
        return pa.array(values, type=typ, mask=mask)
    if t.is_boolean(typ):
        return pa.array(rng.random(n) < 0.5, mask=mask)
    if t.is_string(typ) or t.is_large_string(typ) or t.is_string_view(typ):
        strings = [r.choice(STRINGS) + str(r.randrange(1000)) for _ in range(n)]
        return pa.array(strings, type=typ, mask=mask)
    if t.is_binary(typ) or t.is_large_binary(typ) or t.is_binary_view(typ):
        blobs = [bytes(r.randrange(256) for _ in range(r.randrange(6))) for _ in range(n)]
        return pa.array(blobs, type=typ, mask=mask)
    if t.is_date32(typ):
        days = rng.integers(-25_000, 80_000, n).astype("datetime64[D]")
        return pa.array(days, mask=mask)
    if t.is_timestamp(typ) or t.is_duration(typ):
        per_second = UNIT_PER_SECOND[typ.unit]
        if t.is_timestamp(typ):
            seconds = rng.integers(-2_000_000_000, 7_000_000_000, n)
        else:
            seconds = rng.integers(-1_000_000_000, 1_000_000_000, n)
        ticks = seconds * per_second + rng.integers(0, per_second, n)
        return pa.array(ticks, type=pa.int64(), mask=mask).view(typ)
    if t.is_dictionary(typ):
        size = r.choice([0, 1, 3, 10]) if p < 1 else r.choice([0, 2])
        if size == 0:
            mask = np.ones(n, dtype=bool)
        dictionary = random_array(r, rng, typ.value_type, size, 0.0)
        if r.random() < 0.8:  # pandas and polars expect unique categories
            dictionary = pa.array(list(dict.fromkeys(dictionary.to_pylist())), type=typ.value_type)
        indices = rng.integers(0, max(len(dictionary), 1), n)
        return pa.DictionaryArray.from_arrays(
            pa.array(indices, type=typ.index_type, mask=mask), dictionary
        )
    if t.is_list(typ) or t.is_large_list(typ):
        lengths = rng.integers(0, 4, n)
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        child = random_array(r, rng, typ.value_type, int(offsets[-1]), r.choice([0.0, 0.2]))
        cls = pa.ListArray if t.is_list(typ) else pa.LargeListArray
        offset_type = pa.int32() if t.is_list(typ) else pa.int64()
        return (
            cls.from_arrays(
                pa.array(offsets, type=offset_type),
                child,
                type=typ,
                mask=pa.array(mask, pa.bool_()),
            )
            if mask is not None
            else cls.from_arrays(pa.array(offsets, type=offset_type), child)
        )
    if t.is_struct(typ):
        children = [random_array(r, rng, f.type, n, r.choice([0.0, 0.2])) for f in typ]
        return pa.StructArray.from_arrays(
            children, fields=list(typ), mask=None if mask is None else pa.array(mask, pa.bool_())
        )
    raise AssertionError(f"no generator for {typ}")


def sliced(r: random.Random, rng: np.random.Generator, typ: pa.DataType, n: int, p: float):
    """Random values as a slice at a random offset (sometimes none) of a longer array."""
    offset = r.choice([0, 0, 1, 3, 7, 8, 13, 64]) if r.random() < 0.6 else 0
    tail = r.choice([0, 0, 5])
    return random_array(r, rng, typ, offset + n + tail, p).slice(offset, n), offset


def chunked(r: random.Random, arr: pa.Array) -> pa.ChunkedArray:
    """``arr`` cut into 1-4 chunks (some may be empty), all views of its buffers."""
    k = r.choice([1, 1, 1, 2, 3, 4])
    cuts = sorted(r.randint(0, len(arr)) for _ in range(k - 1))
    bounds = [0, *cuts, len(arr)]
    chunks = [arr.slice(a, b - a) for a, b in itertools.pairwise(bounds)]
    return pa.chunked_array(chunks, type=arr.type)


# -- sources --------------------------------------------------------------------------------
TABLE_SOURCES = [
    "pa.Table",
    "pa.RecordBatch",
    "pa.RecordBatchReader",
    "na.Array",
    "na.ArrayStream",
    "pl.DataFrame",
    "pl.LazyFrame",
    "pd.DataFrame",
    "pd.DataFrame[arrow]",
]
COLUMN_SOURCES = [
    "pa.Array",
    "pa.ChunkedArray",
    "na.Array",
    "na.ArrayStream",
    "pl.Series",
    "pd.Series",
    "pd.Series[arrow]",
]
ONE_SHOT = {"pa.RecordBatchReader", "na.ArrayStream"}


def has_views(typ: pa.DataType) -> bool:
    return "_view" in str(typ)


def fixed_offset(typ: pa.DataType) -> bool:
    """Whether ``typ`` holds a timestamp in a fixed-offset zone ("+05:30"), nested or not."""
    if pa.types.is_timestamp(typ):
        return typ.tz is not None and typ.tz[:1] in ("+", "-")
    return any(fixed_offset(typ.field(i).type) for i in range(typ.num_fields))


def make_source(kind: str, how: str, table: pa.Table) -> Any:
    """The source object, built with its library's own API (Skip if the library refuses)."""
    col = table.column(0) if kind == "column" else None
    try:
        if how == "pa.Table":
            return table
        if how == "pa.RecordBatch":
            arrays = [c.combine_chunks() for c in table.columns]
            return pa.RecordBatch.from_arrays(arrays, schema=table.schema)
        if how == "pa.RecordBatchReader":
            return pa.RecordBatchReader.from_batches(table.schema, table.to_batches())
        if how == "pa.Array":
            assert col is not None
            return col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)
        if how == "pa.ChunkedArray":
            return col
        if how.startswith("na."):
            if any(has_views(f.type) for f in table.schema):
                raise Skip("nanoarrow 0.9 aborts on view types")
            data = col if col is not None else table
            return na.Array(data) if how == "na.Array" else na.ArrayStream(data)
        if how.startswith("pl.") and any(fixed_offset(f.type) for f in table.schema):
            # (polars panics on them, and its panic prints a Rust backtrace to stderr)
            raise Skip("polars has no fixed-offset time zones")
        if how == "pl.Series":
            series = pl.from_arrow(col, rechunk=False)
            assert isinstance(series, pl.Series)
            return series.alias(table.column_names[0])
        if how in ("pl.DataFrame", "pl.LazyFrame"):
            frame = pl.from_arrow(table, rechunk=False)
            assert isinstance(frame, pl.DataFrame)
            return frame.lazy() if how == "pl.LazyFrame" else frame
        mapper = pd.ArrowDtype if how.endswith("[arrow]") else None
        if how.startswith("pd.Series"):
            assert col is not None
            return col.to_pandas(types_mapper=mapper).rename(table.column_names[0])
        return table.to_pandas(types_mapper=mapper)
    except Skip:
        raise
    except BaseException as exc:  # the library cannot hold this data (polars panics
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):  # are BaseExceptions)
            raise
        raise Skip(f"{how}: {type(exc).__name__}: {exc}") from None


def as_chunked(col: pa.Array | pa.ChunkedArray) -> pa.ChunkedArray:
    return col if isinstance(col, pa.ChunkedArray) else pa.chunked_array([col])


def source_view(hub: ih.Hub, src: Any, how: str, kind: str, table: pa.Table) -> Any:
    """The source's data as pyarrow, read with the source library's own API (not the hub).

    nanoarrow has no table type: a struct array or stream is a table, except that a struct
    array with null rows is a column (nulls are not rows of a table); the hub's
    ``describe`` says which, and only that is asked of the hub.
    """
    if how == "pa.RecordBatchReader":
        return table
    if how == "na.ArrayStream":  # read by the conversion: the data it was made of
        data = table.column(0) if kind == "column" else table
        if isinstance(data, pa.ChunkedArray) and pa.types.is_struct(data.type):
            return data if data.null_count else arrowkit.struct_table(data)
        return data
    if isinstance(src, pl.LazyFrame):
        return src.collect().to_arrow()
    if isinstance(src, (pl.DataFrame, pl.Series)):
        return src.to_arrow()
    if isinstance(src, pd.DataFrame):
        return pa.Table.from_pandas(src, preserve_index=False)
    if isinstance(src, pd.Series):
        return pa.Array.from_pandas(src)
    if isinstance(src, na.Array):
        data = pa.chunked_array(src)
        if pa.types.is_struct(data.type) and hub.describe(src).kind == ih.Kind.TABLE:
            return arrowkit.struct_table(data)
        return data
    return src


# -- values ---------------------------------------------------------------------------------
class _Nan:
    def __repr__(self) -> str:
        return "NaN"


NAN = _Nan()
NUMBER_TAGS = ("i", "f", "b")


@dataclass(frozen=True)
class Norm:
    """How values are made comparable.

    ``nan_is_null``: NaN and null are one value (pandas' missing value is NaN).
    ``loose``: a LossyConversionWarning allowed the documented changes: nulls may become
    NaN, integers float64, timestamps and durations their int64 ticks, a time zone may be
    dropped (the instants kept) and nanoseconds truncated to microseconds.
    """

    nan_is_null: bool = False
    loose: bool = False


def norm(v: Any, how: Norm, tick_ns: int = 1) -> Any:
    """A comparable form of one value (see :func:`same`); ``tick_ns``: the column's unit."""
    if v is None:
        return NAN if how.loose else None
    if isinstance(v, (bool, np.bool_)):
        return ("b", bool(v))
    if isinstance(v, (int, np.integer)):
        return ("i", int(v))
    if isinstance(v, (float, np.floating)):
        if math.isnan(v):
            return None if how.nan_is_null and not how.loose else NAN
        return ("f", float(v))
    if isinstance(v, (dt.datetime, pd.Timestamp, np.datetime64)):
        ts = pd.Timestamp(v)
        return ("ts", ts.value, ts.tzinfo is not None, tick_ns)
    if isinstance(v, (dt.timedelta, pd.Timedelta, np.timedelta64)):
        return ("td", pd.Timedelta(v).value, tick_ns)
    if isinstance(v, pa.MonthDayNano) and v.months == 0:  # duckdb reads durations so
        return ("td", v.days * 86_400 * 10**9 + v.nanoseconds, 1)
    if isinstance(v, dict):
        return {k: norm(x, how) for k, x in v.items()}
    if isinstance(v, (list, tuple, np.ndarray)):
        return [norm(x, how) for x in v]
    return v


def same(x: Any, y: Any, loose: bool) -> bool:
    """Whether expected ``x`` and actual ``y`` (both from :func:`norm`) are one value."""
    if loose and x is NAN and y == ("i", -(2**63)):
        return True  # a temporal null as int64 ticks: numpy's NaT (warned as int64 ticks)
    if loose and isinstance(x, dt.date) and type(y) is tuple and y[0] == "i":
        return bool((x - dt.date(1970, 1, 1)).days == y[1])  # a date as int64 days
    if type(x) is tuple and type(y) is tuple:
        tx, ty = x[0], y[0]
        if tx == "ts" and ty == "ts":
            close = x[1] == y[1] or (loose and abs(x[1] - y[1]) < 1000)
            return close and (loose or x[2] == y[2])
        if tx == "td" and ty == "td":
            return bool(x[1] == y[1] or (loose and abs(x[1] - y[1]) < 1000))
        if loose and tx in ("ts", "td") and ty in ("i", "f"):
            return bool(y[1] * x[-1] == x[1])  # stored as int64 ticks of its unit
        if loose and tx in NUMBER_TAGS and ty in NUMBER_TAGS:
            return float(x[1]) == float(y[1])
        return bool(x == y)
    if isinstance(x, list) and isinstance(y, list):
        return len(x) == len(y) and all(same(a, b, loose) for a, b in zip(x, y, strict=True))
    if isinstance(x, dict) and isinstance(y, dict):
        return x.keys() == y.keys() and all(same(x[k], y[k], loose) for k in x)
    return bool(x == y)


def tick_of(typ: pa.DataType) -> int:
    if pa.types.is_timestamp(typ) or pa.types.is_duration(typ):
        return 10**9 // UNIT_PER_SECOND[typ.unit]
    return 1


def column_values(col: Any, how: Norm) -> list[Any]:
    tick = tick_of(col.type)
    return [norm(v, how, tick) for v in col.to_pylist()]


@dataclass
class Values:
    """The normalized values of a table (``names`` set) or a column (``names`` None)."""

    names: list[str] | None
    columns: list[list[Any]]
    types: list[pa.DataType]


def arrow_values(obj: Any, how: Norm) -> Values:
    if isinstance(obj, pa.RecordBatchReader):
        obj = obj.read_all()
    if isinstance(obj, (pa.Table, pa.RecordBatch)):
        cols = list(obj.columns)
        return Values(
            list(obj.column_names), [column_values(c, how) for c in cols], obj.schema.types
        )
    return Values(None, [column_values(obj, how)], [obj.type])


def object_values(arr: np.ndarray, how: Norm) -> Values:
    """The values of a numpy object array (1-D: a column, 2-D: columns)."""
    matrix = arr.reshape(-1, 1) if arr.ndim == 1 else arr
    columns = [[norm(v, how) for v in matrix[:, i].tolist()] for i in range(matrix.shape[1])]
    return Values(None, columns, [pa.null()] * len(columns))


def values_back(hub: ih.Hub, result: Any, how: Norm) -> Values:
    """The values of a result, read through ``hub.convert(result, "pyarrow")``.

    Two documented exceptions are read with the library's own API instead: a numpy object
    array (its Python values carry no Arrow type, which pyarrow infers: large integers
    fail, as do union values of mixed types; see docs/type-mapping.md), and a pandas
    DataFrame with repeated column names (the hub refuses them as a source, by design).
    """
    labelled = labelled_values(result)  # an xarray DataArray made from a tensor
    if labelled is not None:
        result = labelled
    if isinstance(result, np.ndarray) and result.dtype == object:
        try:
            hub.convert(result, "pyarrow")
        except ih.InterchangeError:
            pass
        return object_values(result, how)
    if isinstance(result, pd.DataFrame) and not result.columns.is_unique:
        columns = [pa.Array.from_pandas(result.iloc[:, i]) for i in range(result.shape[1])]
        names = [str(n) for n in result.columns]
        return Values(names, [column_values(c, how) for c in columns], [c.type for c in columns])
    try:
        back = hub.convert(result, "pyarrow")
    except ih.InterchangeError as exc:
        raise Failure(f"the result cannot be converted back to pyarrow: {exc}") from exc
    return arrow_values(back, how)


def short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN] + " ..."


def first_difference(a: list[Any], b: list[Any], loose: bool) -> str:
    if len(a) != len(b):
        return f"lengths differ: expected {len(a)}, got {len(b)}"
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if not same(x, y, loose):
            return f"row {i}: expected {short(x)}, got {short(y)}"
    return "equal"


def compare(
    expected: Values,
    got: Values,
    loose: bool,
    check_names: bool,
) -> None:
    """Compare columns by position; names only when both are tables and ``check_names``."""
    both_tables = expected.names is not None and got.names is not None
    if both_tables and check_names and expected.names != got.names:
        raise Failure(f"column names changed: expected {expected.names}, got {got.names}")
    if len(expected.columns) != len(got.columns):
        raise Failure(f"expected {len(expected.columns)} columns, got {len(got.columns)}")
    for i, (a, b) in enumerate(zip(expected.columns, got.columns, strict=True)):
        if not same(a, b, loose):
            difference = first_difference(a, b, loose)
            raise Failure(f"column {i} ({got.types[i]}) differs: {difference}")


# -- targets ----------------------------------------------------------------------------------
def targets(hub: ih.Hub) -> tuple[list[str], list[type]]:
    names = sorted(a.name for a in hub.adapters())
    aliases = ["pa", "pl", "pd", "np", "pt", "na", " Polars ", "PANDAS"]
    types: list[type] = []
    for adapter in hub.adapters():
        try:
            types += list(adapter.type_kinds())
        except ih.InterchangeError:  # its library is not installed
            continue
    return names + aliases, types


def target_label(to: object) -> str:
    if isinstance(to, type):
        return f"{to.__module__.split('.')[0]}.{to.__qualname__}"
    return repr(to)


def library_of(hub: ih.Hub, to: object) -> str:
    if isinstance(to, str):
        adapter = hub.registry.get(to.strip().lower())
        assert adapter is not None
        return adapter.name
    for adapter in hub.adapters():
        try:
            if to in adapter.type_kinds():
                return adapter.name
        except ih.InterchangeError:
            continue
    raise AssertionError(f"no library offers {to}")


# cupy is a target only where a GPU is (names come from the hub's adapters): its results are
# read back with ndarray.get(), its own copy to the host.
TENSOR_LIBRARIES = ("numpy", "torch", "jax", "cupy")
try:  # jax keeps 64-bit data only with x64 on (its default narrows it, with a warning);
    import jax  # run_cases turns it on for the fuzz run (not at import: other tests share it)
except ImportError:
    jax = None  # type: ignore[assignment]


# -- one case ---------------------------------------------------------------------------------
@dataclass
class Outcome:
    status: str  # "ok", "error" (an InterchangeError), "skip", "known" (detail: the bug)
    detail: str = ""
    warned: list[str] = field(default_factory=list)


def convert_checked(hub: ih.Hub, src: Any, to: object, copy: bool | None, strict: bool) -> Any:
    """Convert; (result, LossyConversionWarning messages). Other warnings are findings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = hub.convert(src, to, copy=copy, strict=strict)
    lossy = [str(w.message) for w in caught if issubclass(w.category, ih.LossyConversionWarning)]
    through = [w for w in caught if issubclass(w.category, ih.WriteThroughWarning)]
    other = [
        f"{w.category.__name__}: {w.message}"
        for w in caught
        if not issubclass(w.category, (ih.LossyConversionWarning, ih.WriteThroughWarning))
    ]
    if through and copy:  # (that the result shares memory: tests/test_safety.py, the kit)
        raise Failure("WriteThroughWarning under copy=True")
    if other:
        raise Failure(f"the conversion emitted unexpected warnings: {other}")
    if strict and lossy:
        raise Failure(f"strict=True, yet the conversion warned: {lossy}")
    return result, lossy


def check_type(hub: ih.Hub, result: Any, to: object) -> None:
    if isinstance(to, type):
        if not isinstance(result, to):
            raise Failure(f"asked for {target_label(to)}, got {type(result).__qualname__}")
        return
    wanted = library_of(hub, to)
    owner = hub.registry.owner(result)
    if owner is None or owner.name != wanted:
        raise Failure(f"asked for {wanted}, got a {type(result).__module__}.{type(result)}")


@functools.cache
def polars_static_addresses() -> frozenset[int]:
    """Buffers polars shares between all its all-null columns (a static zeroed region)."""
    found: list[set[int]] = []
    for _ in range(2):
        addresses = set()
        for dtype in (pl.Date, pl.Datetime("us"), pl.String, pl.Int64, pl.Boolean, pl.Float32):
            exported = pa.chunked_array(pl.Series([None] * 3, dtype=dtype))
            addresses |= {b.address for c in exported.chunks for b in c.buffers() if b}
        found.append(addresses)
    return frozenset(found[0] & found[1])


def check_no_sharing(hub: ih.Hub, src: Any, result: Any, how: str, to: object) -> None:
    if how in ONE_SHOT:
        return
    if src is result:
        raise Failure("copy=True returned the source itself")
    mine, theirs = hub.buffers(src), hub.buffers(result)
    static = polars_static_addresses()
    pairs = [(a, b) for a in mine for b in theirs if a.overlaps(b) and a.address not in static]
    if pairs:
        shared = hub.shared_bytes(src, result)
        raise Failure(
            f"copy=True, yet the result shares {shared} bytes with the source: "
            f"{pairs}\n{hub.plan(src, to, copy=True) if how not in ONE_SHOT else ''}"
        )


@dataclass
class TableCase:
    kind: str  # "table" or "column"
    how: str  # the source, one of TABLE_SOURCES or COLUMN_SOURCES
    table: pa.Table  # the data (a column case: its only column)
    to: object
    copy: bool | None
    strict: bool
    desc: str


def draw_table_case(seed: int, number: int, names: list[str], types: list[type]) -> TableCase:
    """Table/column case ``number`` of ``seed``: a function of these alone."""
    r = random.Random(zlib.crc32(f"{seed}:{number}".encode()))
    rng = np.random.default_rng([seed, number])
    kind = "column" if r.random() < 0.4 else "table"
    n = r.choice([0, 1, 2, 5, 8, 9, 17, 33, 64, 100, 257])
    ncols = 1 if kind == "column" else r.choice([1, 1, 2, 3, 4, 0 if r.random() < 0.05 else 2])
    col_names = [r.choice(["a", "b", "x y", "é", "0", ""]) + str(i) for i in range(ncols)]
    if ncols > 1 and r.random() < 0.03:
        col_names[1] = col_names[0]  # a repeated name
    how = r.choice(COLUMN_SOURCES if kind == "column" else TABLE_SOURCES)
    to: object = r.choice(names) if r.random() < 0.6 else r.choice(types)
    copy = r.choice([None, None, True, False])
    strict = r.random() < 0.15

    columns, parts = [], []
    for name in col_names:
        typ = random_type(r)
        p = r.choice([0.0, 0.0, 0.1, 0.5, 1.0])
        arr, offset = sliced(r, rng, typ, n, p)
        columns.append(chunked(r, arr))
        chunks = [len(c) for c in columns[-1].chunks]
        parts.append(f"{name!r}: {typ} nulls={p} offset={offset} chunks={chunks}")
    table = pa.table(columns, names=col_names) if columns else pa.table({})
    desc = (
        f"{kind} of {n} rows held by {how}, to={target_label(to)}, copy={copy}, "
        f"strict={strict}; columns: {'; '.join(parts) or 'none'}"
    )
    return TableCase(kind, how, table, to, copy, strict, desc)


def type_names(table: pa.Table) -> list[str]:
    return [str(f.type) for f in table.schema]


def nested(typ: str) -> bool:
    return typ.startswith(("struct<", "list<", "large_list<"))


# Known hub bugs (see the xfail tests in tests/test_fuzz.py, which reproduce each one):
# cases that would hit them are counted, not run, unless --include-known. When a bug is
# fixed its xfail test passes (strict xfail fails the run): delete both entries then.
KNOWN_BUGS: dict[str, str] = {}  # none left: the fixed ones have tests in tests/test_fuzz.py


def known_bug(case: TableCase, dst: str) -> str | None:
    return None


def struct_as_table(case: TableCase, dst: str) -> bool:
    """Whether the case's struct column comes back as a table of its fields: nanoarrow
    has no table type, so a struct without null rows that passes through it stands for a
    table (``typemap.struct_becomes_table``; one with null rows stays a column)."""
    if case.kind != "column" or not pa.types.is_struct(case.table.schema.types[0]):
        return False
    through = dst == "nanoarrow" or case.how.startswith("na.")
    return through and not case.table.column(0).null_count


def promoted(table: pa.Table, tensor: bool) -> bool:
    """Whether the documented promotion applies: numeric and bool columns of several types
    into one tensor share the dtype numpy's promotion gives (values compared as numbers)."""
    types = {t for t in type_names(table)}
    plain = all(
        t == "bool" or t.startswith(("int", "uint", "float", "double", "halffloat")) for t in types
    )
    return tensor and plain and len(types) > 1


def table_case(hub: ih.Hub, seed: int, number: int, names: list[str], types: list[type]):
    """(description, run) for table/column case ``number``; run() returns an Outcome."""
    case = draw_table_case(seed, number, names, types)
    kind, how, table, to, copy, strict = (
        case.kind,
        case.how,
        case.table,
        case.to,
        case.copy,
        case.strict,
    )
    dst = library_of(hub, to)

    def run(include_known: bool) -> Outcome:
        bug = known_bug(case, dst)
        if bug and not include_known:
            return Outcome("known", bug)
        try:
            src = make_source(kind, how, table)
        except Skip as exc:
            return Outcome("skip", str(exc))
        try:
            before = source_view(hub, src, how, kind, table)
        except Exception as exc:  # noqa: BLE001 - the library cannot read its own data
            return Outcome("skip", f"the source library cannot read it: {exc}")
        try:
            result, lossy = convert_checked(hub, src, to, copy, strict)
        except ih.InterchangeError as exc:
            return Outcome("error", f"{type(exc).__name__}: {exc}")
        check_type(hub, result, to)
        # hub.buffers reports temporary memory for a struct with nulls (see test_fuzz.py)
        if copy and not any("struct<" in t for t in type_names(table)):
            check_no_sharing(hub, src, result, how, to)
        pandas_involved = how.startswith("pd.") or dst == "pandas"
        # A tensor result (or an xarray DataArray made from one: see labelled_values).
        tensor = dst in TENSOR_LIBRARIES or labelled_values(result) is not None
        fields = arrowkit.struct_table(table.column(0)) if struct_as_table(case, dst) else table
        loose = bool(lossy) or promoted(fields, tensor)
        norm_how = Norm(nan_is_null=pandas_involved, loose=loose)
        expected = arrow_values(before, norm_how)
        if how not in ONE_SHOT:  # the source must be unchanged
            again = arrow_values(source_view(hub, src, how, kind, table), norm_how)
            if again.columns != expected.columns:
                raise Failure("the conversion changed the source")
        column = isinstance(before, (pa.Array, pa.ChunkedArray))
        if struct_as_table(case, dst) and column and pa.types.is_struct(before.type):
            expected = arrow_values(arrowkit.struct_table(as_chunked(before)), norm_how)
        if result is src and how in ONE_SHOT:  # returned as it is, so claimed: read it here
            result = pa.chunked_array(result) if kind == "column" else pa.table(result)
            if struct_as_table(case, dst):
                result = arrowkit.struct_table(result)
        del src, before  # the result must not depend on the source staying alive
        got = values_back(hub, result, norm_how)
        renamed = any("name" in w for w in lossy)  # duckdb renames empty and repeated names
        check_names = not tensor and not renamed
        compare(expected, got, loose, check_names)
        return Outcome("ok", warned=lossy)

    return case.desc, run


# -- tensors ----------------------------------------------------------------------------------
NP_DTYPES = [
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
]
ODD_DTYPES = ["datetime64[ns]", "datetime64[s]", "datetime64[D]", "timedelta64[ms]", "<U3", ">i4"]
TENSOR_TARGETS = ["torch", "numpy", "pyarrow", "polars", "pandas", "nanoarrow", "jax"]


def random_ndarray(r: random.Random, rng: np.random.Generator) -> tuple[np.ndarray, str]:
    dtype = r.choice(NP_DTYPES) if r.random() < 0.9 else r.choice(ODD_DTYPES)
    ndim = r.choice([0, 1, 1, 1, 2, 2, 2, 3, 4])
    shape = tuple(
        r.choice([0, 1, 2, 3, 5, 7]) if r.random() < 0.1 else r.randint(1, 6) for _ in range(ndim)
    )
    size = int(np.prod(shape)) if shape else 1
    kind = np.dtype(dtype).kind
    base: np.ndarray
    if kind == "b":
        base = rng.random(size) < 0.5
    elif kind in "iu":
        info = np.iinfo(np.dtype(dtype))
        base = rng.integers(max(info.min, -(2**62)), min(info.max, 2**62), size, endpoint=True)
    elif kind == "f":
        base = rng.standard_normal(size) * 100
        if size and r.random() < 0.3:
            base[r.randrange(size)] = r.choice([math.nan, math.inf, -0.0])
    elif kind == "c":
        base = rng.standard_normal(size) + 1j * rng.standard_normal(size)
    elif kind in "Mm":  # days within Python's date range
        base = rng.integers(-(10**5), 10**5, size) * (1 if "[D]" in dtype else 10**4)
    else:
        base = np.array([r.choice(["", "ab", "xyz", "é"]) for _ in range(size)])
    arr = np.asarray(base).astype(dtype).reshape(shape)
    steps = []
    if ndim and r.random() < 0.2:
        arr = np.asfortranarray(arr)
        steps.append("fortran")
    if ndim and r.random() < 0.25:
        axis = r.randrange(ndim)
        arr = np.flip(arr, axis)
        steps.append(f"flip({axis})")
    if ndim and r.random() < 0.2:
        axis = r.randrange(ndim)
        index = [slice(None)] * ndim
        index[axis] = slice(None, None, 2)
        arr = arr[tuple(index)]
        steps.append(f"step2({axis})")
    if ndim >= 2 and r.random() < 0.2:
        arr = arr.T
        steps.append("T")
    if ndim and arr.shape[0] and r.random() < 0.05:
        arr = np.broadcast_to(arr[:1], (3, *arr.shape[1:]))
        steps.append("broadcast")
    if r.random() < 0.2 and arr.flags.writeable:
        arr.flags.writeable = False
        steps.append("readonly")
    return arr, f"ndarray {arr.dtype} shape={arr.shape} strides={arr.strides} {' '.join(steps)}"


TORCH_OK = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}
TORCH_OK |= {"float16", "float32", "float64", "complex64", "complex128"}


def random_tensor(r: random.Random, rng: np.random.Generator) -> tuple[Any, np.ndarray, str]:
    """(source, the expected values as an independent ndarray, description)."""
    arr, desc = random_ndarray(r, rng)
    expected = np.array(arr, copy=True)
    if r.random() < 0.6 or arr.dtype.name not in TORCH_OK or not arr.dtype.isnative:
        return arr, expected, desc
    t = torch.from_numpy(np.array(arr, order="C", copy=True))
    steps = []
    if t.dim() >= 2 and r.random() < 0.3:
        t = t.transpose(0, 1)
        expected = np.ascontiguousarray(np.swapaxes(expected, 0, 1))
        steps.append("transpose")
    if t.dim() and r.random() < 0.2 and t.shape[0] > 1:
        t = t[::2]
        expected = expected[::2].copy()
        steps.append("step2")
    if t.is_complex() and r.random() < 0.4:
        t = t.conj()
        expected = np.conj(expected)
        steps.append("conj")
    if t.is_floating_point() and r.random() < 0.15:
        t = t.clone().requires_grad_(True)
        steps.append("requires_grad")
    if t.dtype == torch.float32 and r.random() < 0.15:
        t = t.to(torch.bfloat16)
        expected = t.detach().float().numpy().copy()
        steps.append("bfloat16")
    return t, expected, f"torch from {desc} {' '.join(steps)} stride={t.stride()}"


def labelled_values(obj: Any) -> np.ndarray | None:
    """The values of what the xarray plugin makes of a tensor (a DataArray over dims
    ``dim_0``, ``dim_1``, ..., or a Dataset of that one variable, ``values``), read with
    xarray's API: its Arrow form is the long table, the dims as columns
    (plugins/interchange-hub-xarray). None for anything else."""
    if not type(obj).__module__.startswith("xarray."):
        return None
    if hasattr(obj, "data_vars"):  # a Dataset
        if list(obj.data_vars) != ["values"]:
            return None
        obj = obj["values"]
    if tuple(obj.dims) != tuple(f"dim_{i}" for i in range(obj.ndim)):
        return None
    return np.asarray(obj.values)


def tensor_values(obj: Any) -> np.ndarray:
    """The values of a tensor, read with its library's own API (bfloat16 as float32)."""
    labelled = labelled_values(obj)
    if labelled is not None:
        return labelled
    if isinstance(obj, torch.Tensor):
        t = obj.detach().resolve_conj().resolve_neg()
        if t.dtype == torch.bfloat16:
            t = t.float()
        return np.array(t.numpy(), copy=True)
    if type(obj).__module__.startswith("cupy") and hasattr(obj, "get"):
        return np.array(obj.get(), copy=True)  # a cupy.ndarray: its own copy to the host
    if jax is not None and isinstance(obj, jax.Array):
        arr = np.asarray(obj)
        return np.array(arr.astype(np.float32) if arr.dtype.name == "bfloat16" else arr, copy=True)
    assert isinstance(obj, np.ndarray)
    return obj


def flat(v: Any) -> list[Any]:
    """The leaves of nested lists, in order (a tensor row, however a library nests it)."""
    if isinstance(v, list):
        return [leaf for x in v for leaf in flat(x)]
    return [v]


def arrays_equal(a: np.ndarray, b: np.ndarray) -> bool:
    if a.shape != b.shape:
        return False
    if a.dtype.kind in "fc":
        return bool(np.array_equal(a, b, equal_nan=True))
    return bool(np.array_equal(a, b))


def tensor_known_bug(src: Any, copy: bool | None, dst: str) -> str | None:
    return None  # none left: the fixed ones have regression tests in tests/test_fuzz.py


def tensor_case(hub: ih.Hub, seed: int, number: int, names: list[str], types: list[type]):
    r = random.Random(zlib.crc32(f"tensor:{seed}:{number}".encode()))
    rng = np.random.default_rng([seed, number, 1])
    src, expected, desc = random_tensor(r, rng)
    roll = r.random()
    # jax's adapter is a plugin: a machine with jax but not the plugin (the GPU image) has none
    targets = [t for t in TENSOR_TARGETS if t in names]
    to: object = r.choice(targets) if roll < 0.75 else r.choice(names)
    if roll > 0.9:
        to = r.choice(types)
    copy = r.choice([None, None, True, False])
    strict = r.random() < 0.1
    desc += f", to={target_label(to)}, copy={copy}, strict={strict}"
    dst = library_of(hub, to)

    def run(include_known: bool) -> Outcome:
        nonlocal src
        bug = tensor_known_bug(src, copy, dst)
        if bug and not include_known:
            return Outcome("known", bug)
        try:
            result, lossy = convert_checked(hub, src, to, copy, strict)
        except ih.InterchangeError as exc:
            return Outcome("error", f"{type(exc).__name__}: {exc}")
        check_type(hub, result, to)
        if copy:
            check_no_sharing(hub, src, result, "", to)
        if not arrays_equal(tensor_values(src), expected):
            raise Failure("the conversion changed the source")
        del src
        want = expected
        if dst in TENSOR_LIBRARIES or labelled_values(result) is not None:
            if lossy and expected.dtype.kind in "Mm":  # documented: int64 ticks of its unit
                want = expected.view("int64")
            got = tensor_values(result)
            if got.dtype != want.dtype:
                raise Failure(f"dtype changed without a warning: {want.dtype} -> {got.dtype}")
            if not arrays_equal(want, got):
                raise Failure(f"values differ:\nexpected {short(expected)}\ngot {short(got)}")
            return Outcome("ok", warned=lossy)
        if dst == "pandas" and expected.dtype.kind == "c":
            # complex numbers have no Arrow type (pandas holds them, as numpy does): read
            # through pandas' own to_numpy
            got = np.asarray(result.to_numpy())
            # (a frame of no columns holds no dtype: pandas gives float64)
            columns = result.ndim == 1 or result.shape[1] > 0
            if columns and got.dtype != want.dtype:
                raise Failure(f"dtype changed without a warning: {want.dtype} -> {got.dtype}")
            if not arrays_equal(want, got):
                raise Failure(f"values differ:\nexpected {short(expected)}\ngot {short(got)}")
            return Outcome("ok", warned=lossy)
        loose = bool(lossy)
        norm_how = Norm(nan_is_null=dst == "pandas", loose=loose)
        got_values = values_back(hub, result, norm_how)
        if expected.ndim in (1, 2):
            matrix = want.reshape(-1, 1) if want.ndim == 1 else want
            columns = [pa.array(np.ascontiguousarray(matrix[:, i])) for i in range(matrix.shape[1])]
            want_values = Values(None, [column_values(c, norm_how) for c in columns], [])
            compare(want_values, got_values, loose, check_names=False)
        else:  # a fixed-shape tensor column (or what a library makes of it): rows of values
            leaves = column_values(pa.array(np.ascontiguousarray(want).reshape(-1)), norm_how)
            k = math.prod(want.shape[1:])
            rows = [leaves[i * k : (i + 1) * k] for i in range(want.shape[0])]
            if len(got_values.columns) != 1:
                raise Failure(f"expected one column, got {got_values.names}")
            compare(
                Values(None, [rows], []),
                Values(None, [[flat(row) for row in got_values.columns[0]]], got_values.types),
                loose,
                check_names=False,
            )
        return Outcome("ok", warned=lossy)

    return desc, run


# -- the driver -------------------------------------------------------------------------------
@dataclass
class Tally:
    ok: int = 0
    error: int = 0
    skip: int = 0
    warned: int = 0
    failures: list[str] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)
    known: dict[str, int] = field(default_factory=dict)


def make_hub(plugins: bool) -> ih.Hub:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ih.PluginWarning)
        hub = ih.Hub(autoload=plugins)
        hub.adapters()  # load the plugins now
    return hub


def run_cases(
    hub: ih.Hub,
    maker: Any,
    label: str,
    seed: int,
    numbers: range,
    deadline: float,
    tally: Tally,
    args: argparse.Namespace,
) -> None:
    names, types = targets(hub)
    for number in numbers:
        if time.monotonic() > deadline or len(tally.failures) >= args.max_failures:
            return
        desc, run = maker(hub, seed, number, names, types)
        header = f"{label} case {number} (seed {seed}): {desc}"
        if args.trace:
            print(header, file=sys.stderr, flush=True)
        try:
            outcome = run(args.include_known)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # noqa: BLE001 - anything else is a finding (polars
            # panics derive from BaseException)
            kind = "check failed" if isinstance(exc, Failure) else "unexpected exception"
            tb = "".join(traceback.format_exception(exc, limit=-8 if not args.verbose else None))
            if isinstance(exc, Failure):
                tb = str(exc)
            only = f"--{'tensors' if label == 'tensor' else 'tables'}-only"
            tally.failures.append(
                f"FAILURE ({kind}) in {header}\n{tb}\n"
                f"reproduce: python -m tests.fuzz --seed {seed} {only} --only {number} --verbose"
                f"  (or --cases {number + 1} to replay the hub's history)"
            )
            print(tally.failures[-1], flush=True)
            continue
        if outcome.status == "ok":
            tally.ok += 1
            tally.warned += bool(outcome.warned)
        elif outcome.status == "skip":
            tally.skip += 1
        elif outcome.status == "known":
            tally.known[outcome.detail] = tally.known.get(outcome.detail, 0) + 1
        else:
            tally.error += 1
            name = outcome.detail.split(":", 1)[0]
            tally.errors[name] = tally.errors.get(name, 0) + 1
        if args.verbose:
            print(f"{header}\n  -> {outcome.status} {outcome.detail[:300]} {outcome.warned}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.fuzz", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--seconds", type=float, default=30.0, help="time budget (both kinds)")
    parser.add_argument("--cases", type=int, default=10**9, help="at most this many per kind")
    parser.add_argument("--only", type=int, default=None, help="run only this case number")
    parser.add_argument("--tables-only", action="store_true")
    parser.add_argument("--tensors-only", action="store_true")
    parser.add_argument("--no-plugins", action="store_true", help="built-in adapters only")
    parser.add_argument("--max-failures", type=int, default=5)
    parser.add_argument(
        "--include-known", action="store_true", help="also run cases that hit known hub bugs"
    )
    parser.add_argument("--trace", action="store_true", help="print each case before it runs")
    parser.add_argument("--verbose", action="store_true")
    if jax is not None:  # this process runs the fuzz alone: 64-bit jax arrays, as elsewhere
        jax.config.update("jax_enable_x64", True)
    args = parser.parse_args(argv)
    faulthandler.enable()
    warnings.simplefilter("default")
    hub = make_hub(plugins=not args.no_plugins)
    numbers = range(args.only, args.only + 1) if args.only is not None else range(args.cases)
    start = time.monotonic()
    do_tables, do_tensors = not args.tensors_only, not args.tables_only
    share = 0.7 if do_tables and do_tensors else 1.0
    tables, tensors = Tally(), Tally()
    if do_tables:
        deadline = start + args.seconds * share
        run_cases(hub, table_case, "table", args.seed, numbers, deadline, tables, args)
    if do_tensors:
        deadline = start + args.seconds
        run_cases(hub, tensor_case, "tensor", args.seed, numbers, deadline, tensors, args)
    elapsed = time.monotonic() - start
    adapters = ", ".join(sorted(a.name for a in hub.adapters()))
    print(f"fuzz seed {args.seed}, {elapsed:.1f} s, adapters: {adapters}")
    for label, t in (("tables/columns", tables), ("tensors", tensors)):
        print(
            f"  {label}: {t.ok} correct ({t.warned} with a lossy warning), {t.error} refused "
            f"with an InterchangeError {dict(sorted(t.errors.items()))}, {t.skip} not built, "
            f"{len(t.failures)} failures"
        )
        if t.known:
            print(f"    not run, known hub bugs: {dict(sorted(t.known.items()))}")
    failures = tables.failures + tensors.failures
    if failures:
        print(f"{len(failures)} FAILURES (seed {args.seed}); the first:\n{failures[0]}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
