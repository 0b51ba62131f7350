"""Sample data for each built-in library, built with the library's own API.

Used by the demo and the command line; the values are random, never zeros, so that a
result reading freed memory would show.
"""

from __future__ import annotations

from typing import Any

from interchange_hub._core.deps import require
from interchange_hub._core.info import Kind

#: The libraries whose samples are built with their own API (on the CPU).
OWN_API = ("pyarrow", "nanoarrow", "polars", "pandas", "numpy", "torch")


def sample(library: str, kind: Kind, rows: int = 1000, seed: int = 0) -> Any:
    """A table (2-D tensor for numpy/torch) of two float64 columns, or a 1-D int64 column.

    :param library: one of :data:`OWN_API`.
    :param kind: ``Kind.TABLE`` or ``Kind.COLUMN``.
    """
    np = require("numpy", "to build samples")
    pa = require("pyarrow", "to build samples")
    rng = np.random.default_rng(seed)
    if kind == Kind.TABLE:
        data = pa.table({"x": rng.standard_normal(rows), "y": rng.standard_normal(rows)})
        return _table(library, data)
    if kind == Kind.COLUMN:
        return _column(library, pa.array(rng.integers(-(10**12), 10**12, rows)))
    raise ValueError(f"samples exist for tables and columns, not {kind.value}")


def _table(library: str, data: Any) -> Any:
    if library == "pyarrow":
        return data
    if library == "nanoarrow":
        return require("nanoarrow").Array(data)
    if library == "polars":
        return require("polars").from_arrow(data)
    if library == "pandas":
        return data.to_pandas()
    matrix = require("numpy").column_stack([c.to_numpy() for c in data.columns])
    return _tensor(library, matrix)


def _column(library: str, arr: Any) -> Any:
    if library == "pyarrow":
        return arr
    if library == "nanoarrow":
        return require("nanoarrow").Array(arr)
    if library == "polars":
        return require("polars").Series("values", arr)
    if library == "pandas":
        return arr.to_pandas().rename("values")
    return _tensor(library, arr.to_numpy().copy())


def _tensor(library: str, array: Any) -> Any:
    if library == "numpy":
        return array
    if library == "torch":
        return require("torch").from_numpy(array)
    raise ValueError(f"no sample for library {library!r}; choose from {', '.join(OWN_API)}")
