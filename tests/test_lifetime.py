"""Results stay valid after their sources are deleted and their memory is reused.

test_matrix.py converts every ordered pair once (float tables, int columns) and reads the
result after ``del src; gc.collect()``. Freed memory often still holds the old values,
so that check can pass on a dangling result. Here every case, for every ordered pair of
the six built-in libraries:

- makes fresh random data (never zeros), and an independent copy of its values;
- converts (``copy=None`` and ``copy=True``), or converts twice in a chain;
- deletes the source, every intermediate and the data they were made of, collects
  garbage, then allocates and fills garbage through every allocator involved (Arrow's
  memory pool, numpy/malloc, torch, polars) so that freed buffers get overwritten;
- and only then compares the result with the copy.

Tables hold strings, nulls, a time zone, lists and a dictionary between the table
libraries; a numpy or torch table is a 2-D tensor, so pairs with them use float data.
"""

from __future__ import annotations

import gc
import zlib
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
import torch

import interchange_hub as ih
from tests.helpers import ALL_LIBS, TABLE_LIBS, TENSOR_LIBS, make_column, make_table, values

GARBAGE = 0x5A


def seed_of(*parts: object) -> int:
    return zlib.crc32(repr(parts).encode())


def nonzero(rng: np.random.Generator, n: int) -> np.ndarray:
    """Random floats, none of them zero (a freed buffer is often zeros)."""
    values: np.ndarray = rng.uniform(1.0, 1000.0, n) * rng.choice([-1.0, 1.0], n)
    return values


def rich_table(rng: np.random.Generator, rows: int) -> pa.Table:
    """Strings, nulls, a time zone, lists and a dictionary (for the table libraries)."""
    nulls = rng.random(rows) < 0.2
    words = np.array([f"w{i:06d}-{'é' * (i % 3)}" for i in rng.integers(1, 10**6, rows)])
    return pa.table(
        {
            "i": pa.array(rng.integers(1, 10**15, rows), mask=nulls),
            "f": pa.array(nonzero(rng, rows)),
            "s": pa.array(words, mask=rng.random(rows) < 0.2),
            "t": pa.array(rng.integers(1, 10**15, rows), pa.int64(), mask=nulls).view(
                pa.timestamp("us", "Europe/Paris")
            ),
            "l": pa.array([[int(x), int(x) + 1] for x in rng.integers(1, 10**6, rows)]),
            "d": pa.array(words).dictionary_encode(),
        }
    )


def float_table(rng: np.random.Generator, rows: int) -> pa.Table:
    return pa.table({f"c{i}": nonzero(rng, rows) for i in range(3)})


def rich_column(rng: np.random.Generator, rows: int) -> pa.Array:
    words = [f"v{i:08d}" for i in rng.integers(1, 10**8, rows)]
    return pa.array(words, mask=rng.random(rows) < 0.25)


def columns_of(obj: Any) -> list[list[Any]]:
    """The values of a table, column or tensor as a list of columns (names left out)."""
    got = values(obj)
    if isinstance(got, dict):
        return [list(v) for v in got.values()]
    if got and isinstance(got[0], list) and isinstance(obj, (np.ndarray, torch.Tensor)):
        return [list(c) for c in zip(*got, strict=True)] if obj.ndim == 2 else [got]
    return [got]


def scribble() -> list[Any]:
    """Allocate and fill garbage in every allocator, to overwrite freed buffers."""
    garbage: list[Any] = []
    small = range(16, 4097, 16)  # each of the allocators' small size classes
    large = [2**k for k in range(13, 18)] + [24_000, 48_000]
    for size in [*small, *large]:
        for _ in range(2 if size in small else 3):
            buf = pa.allocate_buffer(size)
            np.frombuffer(buf, dtype=np.uint8)[:] = GARBAGE
            garbage.append(buf)
            garbage.append(np.full(size, GARBAGE, dtype=np.uint8))
            if size not in small:
                garbage.append(torch.full((size,), GARBAGE, dtype=torch.uint8))
                garbage.append(pl.Series(np.full(size // 8 + 1, -7, dtype=np.int64)) * 3)
                garbage.append(pa.array(["garbage" * 8] * (size // 64 + 1)))
    return garbage


def rows_for(rng: np.random.Generator) -> int:
    return int(rng.integers(200, 2000))


def make_source(lib: str, kind: str, rich: bool, seed: int) -> tuple[Any, list[list[Any]]]:
    """(a fresh source, an independent copy of its values); nothing else refers to it."""
    rng = np.random.default_rng(seed)
    rows = rows_for(rng)
    if kind == "table":
        src = make_table(lib, rich_table(rng, rows) if rich else float_table(rng, rows))
    else:
        arr = rich_column(rng, rows) if rich else pa.array(nonzero(rng, rows))
        src = make_column(lib, arr)
    return src, columns_of(src)


def reuse_freed_memory() -> list[Any]:
    """Free what was deleted (cycles too), then overwrite it; keep the garbage alive."""
    gc.collect()
    return scribble()


def mismatches(results: list[tuple[str, Any, list[list[Any]]]]) -> list[str]:
    return [name for name, result, expected in results if columns_of(result) != expected]


def numeric_only(*libs: str) -> bool:
    return any(lib in TENSOR_LIBS for lib in libs)


@pytest.mark.parametrize("kind", ["table", "column"])
@pytest.mark.parametrize("copy", [None, True])
@pytest.mark.parametrize("src_lib", ALL_LIBS)
def test_results_outlive_their_sources(
    hub: ih.Hub, src_lib: str, copy: bool | None, kind: str
) -> None:
    """src_lib -> every library; all sources are gone before any result is read."""
    results = []
    for dst_lib in ALL_LIBS:
        rich = not numeric_only(src_lib, dst_lib)
        seed = seed_of(src_lib, dst_lib, copy, kind)
        src, expected = make_source(src_lib, kind, rich, seed)
        result = hub.convert(src, to=dst_lib, copy=copy)
        if copy:
            assert hub.shared_bytes(src, result) == 0, f"{src_lib}->{dst_lib} shares memory"
        results.append((f"{src_lib}->{dst_lib}", result, expected))
        del src, result
    garbage = reuse_freed_memory()
    assert not mismatches(results), "wrong values after the source was freed"
    del garbage


@pytest.mark.parametrize("src_lib", ALL_LIBS)
def test_chains_outlive_their_sources(hub: ih.Hub, src_lib: str) -> None:
    """src_lib -> every library -> the next library; the intermediates are freed too."""
    firsts: list[tuple[str, str, list[list[Any]], Any]] = []
    for mid_lib in ALL_LIBS:
        dst_lib = ALL_LIBS[(ALL_LIBS.index(mid_lib) + 1) % len(ALL_LIBS)]
        rich = not numeric_only(src_lib, mid_lib, dst_lib)
        for kind in ("table", "column"):
            src, expected = make_source(src_lib, kind, rich, seed_of(src_lib, mid_lib, kind))
            name = f"{src_lib}->{mid_lib}->{dst_lib} ({kind})"
            firsts.append((name, dst_lib, expected, hub.convert(src, to=mid_lib)))
            del src
    garbage = reuse_freed_memory()  # the intermediates must not depend on the sources
    results = []
    for name, dst_lib, expected, mid in firsts:
        results.append((name, hub.convert(mid, to=dst_lib), expected))
    del firsts, mid
    garbage += reuse_freed_memory()
    bad = mismatches(results)
    assert not bad, f"wrong values after the sources were freed: {bad}"
    del garbage


def test_stream_results_outlive_their_readers(hub: ih.Hub) -> None:
    """A reader's batches are freed as it is read: the result must own or share them."""
    results = []
    for dst_lib in TABLE_LIBS:
        rng = np.random.default_rng(seed_of("stream", dst_lib))
        table = rich_table(rng, rows_for(rng))
        expected = columns_of(table)
        batches = table.to_batches(max_chunksize=100)
        reader = pa.RecordBatchReader.from_batches(table.schema, batches)
        del table, batches
        result = hub.convert(reader, to=dst_lib)
        if isinstance(result, pl.LazyFrame):
            result = result.collect()
        results.append((f"reader->{dst_lib}", result, expected))
        del reader, result
    garbage = reuse_freed_memory()
    bad = mismatches(results)
    assert not bad, f"wrong values after the readers were freed: {bad}"
    del garbage


def strided_views(lib: str, base: np.ndarray) -> list[Any]:
    """Views of ``base`` (800 x 3): Fortran order, a step, negative strides, one column."""
    if lib == "numpy":
        return [np.asfortranarray(base), base[::2], base[::-1], base[:, 1]]
    t = torch.from_numpy(base)
    return [t.t().contiguous().t(), t[::2], t.flip(0), t[:, 1]]  # torch has no negative strides


@pytest.mark.parametrize("src_lib", TENSOR_LIBS)
def test_strided_tensor_results_outlive_their_base(hub: ih.Hub, src_lib: str) -> None:
    """Views keep their base alive through the result, or the result copies them."""
    results = []
    for dst_lib in ALL_LIBS:
        for which in range(4):
            rng = np.random.default_rng(seed_of("strided", src_lib, dst_lib, which))
            src = strided_views(src_lib, nonzero(rng, 2400).reshape(800, 3))[which]
            expected = columns_of(src)
            results.append(
                (f"{src_lib} view {which}->{dst_lib}", hub.convert(src, dst_lib), expected)
            )
            del src
    garbage = reuse_freed_memory()
    bad = mismatches(results)
    assert not bad, f"wrong values after the base was freed: {bad}"
    del garbage
