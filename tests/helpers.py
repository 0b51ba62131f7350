"""Sample data for every library, and library-independent views of results."""

from __future__ import annotations

from collections import Counter
from typing import Any

import nanoarrow as na
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import torch

from interchange_hub import arrowkit

# What the corpus tests saw, case by case (printed at the end of the run by conftest):
# round trips "exact" (type and values), "documented" (a rule of the type mapping
# changed the type, values kept), "warned" (LossyConversionWarning), "refused" (in the
# plan, as documented); "claims" (zero-copy claims checked by address).
OUTCOMES: Counter[str] = Counter()

TABLE_LIBS = ["pyarrow", "nanoarrow", "polars", "pandas"]
TENSOR_LIBS = ["numpy", "torch"]
ALL_LIBS = TABLE_LIBS + TENSOR_LIBS

NATURAL_TABLE = {
    "pyarrow": pa.Table,
    "nanoarrow": na.Array,
    "polars": pl.DataFrame,
    "pandas": pd.DataFrame,
    "numpy": np.ndarray,
    "torch": torch.Tensor,
}
NATURAL_COLUMN = {
    "pyarrow": (pa.Array, pa.ChunkedArray),
    "nanoarrow": na.Array,
    "polars": pl.Series,
    "pandas": pd.Series,
    "numpy": np.ndarray,
    "torch": torch.Tensor,
}


def float_table(rows: int = 1000, seed: int = 0) -> pa.Table:
    """Fresh random float64 columns without nulls (a table that can become a tensor)."""
    rng = np.random.default_rng(seed)
    return pa.table({"x": rng.standard_normal(rows), "y": rng.standard_normal(rows)})


def int_column(rows: int = 1000, seed: int = 0) -> pa.Array:
    rng = np.random.default_rng(seed)
    return pa.array(rng.integers(-(10**12), 10**12, rows))


def make_table(lib: str, table: pa.Table) -> Any:
    """The library's table (or 2-D tensor) holding ``table``, built with its own API."""
    if lib == "pyarrow":
        return table
    if lib == "nanoarrow":
        return na.Array(table)
    if lib == "polars":
        return pl.from_arrow(table)
    if lib == "pandas":
        return table.to_pandas()
    matrix = np.column_stack([c.to_numpy() for c in table.columns])
    return matrix if lib == "numpy" else torch.from_numpy(matrix)


def make_column(lib: str, arr: pa.Array, name: str = "v") -> Any:
    """The library's column (or 1-D tensor) holding ``arr``, built with its own API."""
    if lib == "pyarrow":
        return arr
    if lib == "nanoarrow":
        return na.Array(arr)
    if lib == "polars":
        return pl.Series(name, arr)
    if lib == "pandas":
        return arr.to_pandas().rename(name)
    values = arr.to_numpy(zero_copy_only=False).copy()
    return values if lib == "numpy" else torch.from_numpy(values)


def canon(obj: Any) -> Any:
    """A pyarrow Table/ChunkedArray or numpy array with the values of ``obj``."""
    if isinstance(obj, torch.Tensor):
        return obj.numpy()
    if isinstance(obj, np.ndarray):
        return obj
    if isinstance(obj, pl.LazyFrame):
        obj = obj.collect()
    if isinstance(obj, (pl.DataFrame, pl.Series)):
        return (
            obj.to_arrow() if isinstance(obj, pl.DataFrame) else pa.chunked_array([obj.to_arrow()])
        )
    if isinstance(obj, pd.DataFrame):
        return pa.Table.from_pandas(obj, preserve_index=False)
    if isinstance(obj, pd.Series):
        return pa.chunked_array([pa.Array.from_pandas(obj)])
    if isinstance(obj, (na.Array, na.ArrayStream)):
        col = pa.chunked_array(obj)
        # arrowkit.struct_table: pyarrow 25's Table.from_struct_array refuses no chunks
        return arrowkit.struct_table(col) if pa.types.is_struct(col.type) else col
    if isinstance(obj, pa.Array):
        return pa.chunked_array([obj])
    if isinstance(obj, pa.RecordBatchReader):
        return obj.read_all()
    if isinstance(obj, pa.RecordBatch):
        return pa.Table.from_batches([obj])
    return obj


def values(obj: Any) -> Any:
    """Plain Python values of ``obj``: a dict of lists for tables, a list otherwise."""
    c = canon(obj)
    if isinstance(c, np.ndarray):
        return c.tolist()
    if isinstance(c, pa.Table):
        return {name: c.column(name).to_pylist() for name in c.column_names}
    return c.to_pylist()


def matrix_of(table: pa.Table) -> list[list[Any]]:
    rows: list[list[Any]] = np.column_stack([c.to_numpy() for c in table.columns]).tolist()
    return rows


def assert_claim_holds(hub: Any, plan: Any, src: Any, result: Any) -> None:
    """A zero-copy plan leaves every source byte inside the result; a copying plan not."""
    total = sum(b.size for b in hub.buffers(src))
    shared = hub.shared_bytes(src, result)
    if plan.zero_copy:
        assert shared >= total, f"plan claims zero-copy but {shared}/{total} bytes shared\n{plan}"
    elif total:
        assert shared < total, f"plan claims a copy but all {total} bytes are shared\n{plan}"


def memory_ranges(hub: Any, value: Any) -> list[tuple[int, int]]:
    """The memory ``value`` uses, as merged (start, end) ranges (chunks of one IPC body,
    or slices of one column, share their buffers: each byte counts once)."""
    spans = sorted((b.address, b.address + b.size) for b in hub.buffers(value) if b.size)
    merged: list[list[int]] = []
    for lo, hi in spans:
        if merged and lo <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    return [(lo, hi) for lo, hi in merged]


def shared_memory(hub: Any, result: Any, source: Any) -> tuple[int, int]:
    """(bytes of the result inside the source's memory, bytes of the result)."""
    mine, theirs = memory_ranges(hub, result), memory_ranges(hub, source)
    inside = sum(max(0, min(hi, b) - max(lo, a)) for lo, hi in mine for a, b in theirs)
    return inside, sum(hi - lo for lo, hi in mine)


# The plugins of this repository, for the tests that run every library as a target.
REPO_PLUGINS = ("arro3", "duckdb", "jax", "datasets", "xarray")


def installed_plugins() -> list[str]:
    """The modules of this repository's plugins whose libraries are installed."""
    import importlib.util

    modules = (f"interchange_hub_{name}" for name in REPO_PLUGINS)
    return [m for m in modules if importlib.util.find_spec(m) is not None]


def every_target(hub: Any) -> list[str]:
    """The built-in libraries and the plugins' that ``hub`` registered."""
    builtin = ["pyarrow", "nanoarrow", "polars", "pandas", "numpy", "torch"]
    return builtin + [name for name in REPO_PLUGINS if hub.registry.get(name)]
