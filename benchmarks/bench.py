"""Measurement library for the interchange_hub benchmarks (used by ``run.py`` and the notebook).

Everything runs in one process. For each ordered pair of installed libraries, data shape
and size it times ``Hub.convert`` (plan cached), the fastest direct call a user would
write, narwhals where it offers the pair, and the naive route through pandas; it checks
the zero-copy verdict by buffer address and measures the peak extra memory. The libraries
are the six the hub has built in and, where they and their plugin import, jax, datasets
and xarray (``PLUGIN_LIBRARIES``; importing this module turns on ``jax_enable_x64``).
"""

from __future__ import annotations

import contextlib
import ctypes
import datetime as _dt
import faulthandler
import gc
import importlib
import importlib.metadata
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import threading
import time
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import interchange_hub as ih

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence


def _optional(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


na = _optional("nanoarrow")
pl = _optional("polars")
pd = _optional("pandas")
torch = _optional("torch")
nw = _optional("narwhals")

BUILTIN_LIBRARIES = ("pyarrow", "nanoarrow", "polars", "pandas", "numpy", "torch")
# Libraries the hub reaches through a plugin package in plugins/ (issue 16): measured when
# the library and its plugin both import. name: (library module, plugin module).
PLUGIN_LIBRARIES = {
    "jax": ("jax", "interchange_hub_jax"),
    "datasets": ("datasets", "interchange_hub_datasets"),
    "xarray": ("xarray", "interchange_hub_xarray"),
}
KNOWN_LIBRARIES = (*BUILTIN_LIBRARIES, *PLUGIN_LIBRARIES)
TENSOR_LIBS = ("numpy", "torch", "jax")  # they hold only the tensor shapes


def _load_plugins() -> tuple[dict[str, Any], dict[str, Any], dict[str, str]]:
    """The plugin libraries usable here: ({name: library module}, {name: plugin module},
    {name: why not} for the others). A plugin counts only if a hub loads it: one being
    edited that fails to import or to register is skipped, with the reason."""
    libs: dict[str, Any] = {}
    plugins: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    for name, (lib_name, plugin_name) in PLUGIN_LIBRARIES.items():
        try:
            with warnings.catch_warnings():
                # datasets imports tqdm.auto, which warns in a kernel without ipywidgets.
                warnings.filterwarnings("ignore", message="IProgress not found")
                lib = importlib.import_module(lib_name)
            plugin = importlib.import_module(plugin_name)
            ih.Hub(autoload=False, plugins=[plugin]).adapters()
        except Exception as exc:  # noqa: BLE001 - any failure means "not measured here"
            skipped[name] = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
            continue
        libs[name], plugins[name] = lib, plugin
    return libs, plugins, skipped


_PLUGIN_LIBS, PLUGINS, SKIPPED_LIBRARIES = _load_plugins()
jax: Any = _PLUGIN_LIBS.get("jax")
jnp: Any = _optional("jax.numpy") if jax is not None else None
datasets: Any = _PLUGIN_LIBS.get("datasets")
xr: Any = _PLUGIN_LIBS.get("xarray")
if jax is not None:
    # The data is float64; jax narrows 64-bit data to 32 bits (a lossy copy) unless x64 is on.
    jax.config.update("jax_enable_x64", True)

LIBRARIES = (*BUILTIN_LIBRARIES, *PLUGINS)  # the libraries measured in this interpreter
SHAPES = ("numeric", "string", "mixed", "column", "tensor2d", "nulls")
SHAPE_DOC = {
    "numeric": "4 float64 columns (numpy/torch/jax: a C-ordered (n, 4) float64 tensor; "
    "xarray: a DataArray of it)",
    "string": "2 string columns, ~9 and ~3 characters (numpy/torch/jax cannot hold it; "
    "xarray: a Dataset of object arrays)",
    "mixed": "int64, float64, string, bool, timestamp[us] columns (numpy/torch/jax cannot "
    "hold it; xarray: a Dataset of 1-D variables)",
    "column": "one float64 column (numpy/torch/jax: a 1-D tensor; xarray: a 1-D DataArray; "
    "datasets: a one-column Dataset)",
    "tensor2d": "a Fortran-ordered (n, 4) float64 tensor; tables hold its columns in place "
    "(pandas: one 2-D block; jax: a column-major Array over a copy)",
    "nulls": "int64 and float64 columns, every tenth value null (pandas: both float64, "
    "nulls as NaN; xarray: a Dataset of 1-D float variables; numpy/torch/jax cannot hold "
    "it, and as targets get the nulls as NaN, a warned loss)",
}
FULL_SIZES = (1_000, 1_000_000, 10_000_000)
QUICK_SIZES = (1_000, 100_000)
HEAVY_MODULES = (*KNOWN_LIBRARIES, "narwhals", "matplotlib", "scipy")
DISPATCH_CASES = (
    ("numpy", "torch", "column"),
    ("torch", "numpy", "column"),
    ("pyarrow", "polars", "numeric"),
    ("polars", "pyarrow", "numeric"),
    ("pandas", "pyarrow", "numeric"),
)
DISPATCH_ROWS = 8

# Targets (reported PASS/MISS, never asserted).
DISPATCH_TARGET_US = 3.0
OVERHEAD_TARGET_US = 3.0  # per call, beyond COPY_SPEED_TARGET x the direct call
ZERO_COPY_SCALING_TARGET = 1.5
COPY_SPEED_TARGET = 1.05
HEADLINE_SHARE = 0.95  # of the cells at <= COPY_SPEED_TARGET x the fastest direct call
HEADLINE_CAP = 1.5  # no cell above this
COPY_MEMORY_TARGET = 1.1
ZERO_COPY_MEMORY_TARGET = 1 << 20
COPY_MEMORY_MIN_RESULT = 1 << 20  # below this, page granularity decides the ratio
# A copy's speed is timed only where the result's own bytes are at least this share of
# its bytes: a result that shares nearly all its memory (pandas -> pyarrow of the mixed
# shape: 1.2 MiB of booleans beside 390 MiB of shared columns at 1e7 rows) spends its
# time on the rest of the conversion, and its numpy copy runs from the cache
COPY_SPEED_MIN_SHARE = 0.1
IMPORT_TARGET_MS = 10.0
COLD_START_TARGET_MS = 20.0  # the first ih.convert in a fresh process, libraries imported
REGRESSION_THRESHOLD = 0.25  # on hub ÷ direct ratios (Conbench-like): machines differ
# A ratio that grew past the threshold is a regression only when the hub also takes this
# much longer than the baseline's ratio predicts for today's direct call: a 2 µs call
# that swings by 0.5 µs (a cache miss, a timer tick) is 25% but no regression.
REGRESSION_FLOOR_NS = 1_000.0
SLOW_FACTOR = 10

# The built-in adapters and the plugins of the libraries measured (no entry points).
HUB = ih.Hub(autoload=False, plugins=list(PLUGINS.values()))


@dataclass(frozen=True)
class Settings:
    """How long to measure: ``budget_s`` per measurement at full size, samples per median."""

    budget_s: float = 0.2
    min_reps: int = 3
    max_samples: int = 50
    import_runs: int = 10
    dispatch_budget_s: float = 0.3
    memory: bool = True
    # (smallest, largest) rows of the run: a zero-copy case at the largest is timed again
    # beside the same source at the smallest (measure_scaling). None: not timed so.
    scaling_rows: tuple[int, int] | None = None
    # The rows of the run's largest size: a copy at it is timed beside a plain numpy copy
    # of its result's own bytes (``copy_speed``). None: the largest size of the cases.
    largest_rows: int | None = None
    # A case still running after this long dumps every thread's stack and ends the process
    # (exit status 1; ``faulthandler``): a hang in a library fails a CI run instead of
    # stalling it. None: no watchdog (the notebook's kernel).
    case_timeout_s: float | None = None

    @classmethod
    def quick(cls) -> Settings:
        return cls(budget_s=0.01, min_reps=3, max_samples=15, import_runs=5, dispatch_budget_s=0.05)


def installed_libraries() -> list[str]:
    return [lib for lib in LIBRARIES if _module(lib) is not None]


# Targets that are one library's result of another kind, asked with options: pandas of
# pd.ArrowDtype columns (dtype="arrow"), which only the direct calls giving such frames
# are compared with (``same_kind``), as the default pandas result is only with those
# giving numpy-backed frames. Cases name them as their target ("polars:pandas[arrow]").
ARROW_PANDAS = "pandas[arrow]"
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {ARROW_PANDAS: ("pandas", {"dtype": "arrow"})}


def target_of(dst: str) -> tuple[str, dict[str, Any]]:
    """The library and the convert options of a case's target (a library or a VARIANT)."""
    return VARIANTS.get(dst, (dst, {}))


def targets() -> list[str]:
    """The installed libraries and the VARIANTS of them."""
    libs = installed_libraries()
    return libs + [v for v, (lib, _) in VARIANTS.items() if lib in libs]


def _module(lib: str) -> Any:
    modules = {"pyarrow": pa, "nanoarrow": na, "polars": pl, "pandas": pd, "numpy": np}
    return modules.get(lib, torch if lib == "torch" else _PLUGIN_LIBS.get(lib))


def holds(lib: str, shape: str) -> bool:
    """Whether ``lib`` can hold the shape's data (the tensor libraries hold no strings)."""
    return not (lib in TENSOR_LIBS and shape in ("string", "mixed", "nulls"))


def all_pairs(libs: Sequence[str] | None = None) -> list[tuple[str, str]]:
    libs = installed_libraries() if libs is None else list(libs)
    return [(a, b) for a in libs for b in libs if a != b]


# The built-in libraries each plugin library is most used with: the notebook's pairs.
SAMPLE_PARTNERS = {
    "jax": ("numpy", "torch"),
    "datasets": ("polars", "pandas"),
    "xarray": ("pandas", "numpy"),
}


def sample_pairs(
    partners: Mapping[str, Sequence[str]] = SAMPLE_PARTNERS,
) -> list[tuple[str, str]]:
    """Every ordered pair of the built-in libraries, and each plugin library to and from
    its ``partners``, in ``all_pairs`` order: the notebook's matrix (every pair of the
    nine libraries takes twice as long as the built-in pairs)."""

    def kept(lib: str, other: str) -> bool:
        return lib in BUILTIN_LIBRARIES or other in partners.get(lib, ())

    return [(a, b) for a, b in all_pairs() if kept(a, b) and kept(b, a)]


def parse_pairs(text: str) -> list[tuple[str, str]]:
    """``"pandas:polars,numpy:torch"`` -> pairs; ``*`` matches every installed library."""
    libs = installed_libraries()
    pairs: list[tuple[str, str]] = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        src, sep, dst = item.partition(":")
        if not sep:
            raise ValueError(f"pairs look like SRC:DST, got {item!r}")
        srcs = libs if src == "*" else [src]
        dsts = libs if dst == "*" else [dst]
        for s in srcs:
            for d in dsts:
                if s not in libs or d not in targets():
                    raise ValueError(
                        f"{s}:{d}: installed libraries are {', '.join(libs)} "
                        f"(and targets {', '.join(VARIANTS)})"
                    )
                if s != d and (s, d) not in pairs:
                    pairs.append((s, d))
    return pairs


# -- data ------------------------------------------------------------------------------------
def arrow_data(shape: str, rows: int, seed: int = 0) -> Any:
    """The shape's data in Arrow: a ``pa.Table``, or a ``pa.Array`` for ``column``.

    For ``tensor2d`` the table's columns are views of one Fortran-ordered numpy array
    (kept alive by the table), so every library can hold the same memory.
    """
    rng = np.random.default_rng(seed)
    if shape == "numeric":
        return pa.table({k: _aligned(rng.standard_normal(rows)) for k in "abcd"})
    if shape == "tensor2d":
        matrix = _aligned(np.asfortranarray(rng.standard_normal((rows, 4))))
        return pa.table({f"column_{i}": matrix[:, i] for i in range(4)})
    if shape == "string":
        return pa.table(
            {"s1": _strings(rng, rows, 10**8, 10**9), "s2": _strings(rng, rows, 0, 999)}
        )
    if shape == "mixed":
        stamps = _aligned(rng.integers(0, 2 * 10**15, rows).astype("datetime64[us]"))
        return pa.table(
            {
                "i": _aligned(rng.integers(-(10**12), 10**12, rows)),
                "f": _aligned(rng.standard_normal(rows)),
                "s": _strings(rng, rows, 10**8, 10**9),
                "b": rng.random(rows) > 0.5,
                "ts": pa.array(stamps, pa.timestamp("us")),
            }
        )
    if shape == "column":
        return pa.array(_aligned(rng.standard_normal(rows)))
    if shape == "nulls":  # data as files deliver it: values missing here and there
        missing = np.arange(rows) % 10 == 3
        return pa.table(
            {
                "i": pa.array(rng.integers(-(10**12), 10**12, rows), mask=missing),
                "f": pa.array(rng.standard_normal(rows), mask=missing),
            }
        )
    raise ValueError(f"unknown shape {shape!r}; choose from {', '.join(SHAPES)}")


def _aligned(arr: Any) -> Any:
    """``arr`` copied to memory placed where numpy's allocator usually puts it, always
    there: below glibc's mmap threshold (128 KiB) at 16 bytes past a 64-byte boundary
    (malloc aligns to 16, and by chance to 64 a quarter of the time), above it at a page.
    jax views memory only at 64-byte boundaries (elsewhere the route copies), so a case
    must not flip between its two routes run to run (pyarrow -> jax columns of 1,000 rows
    took 20 or 54 us as the allocator placed them), now that the comparison gates CI."""
    size = arr.nbytes
    raw = np.empty(size + 128, dtype=np.uint8)
    start = -raw.ctypes.data % 64 + (16 if size < _MMAP_THRESHOLD else 0)
    order = "F" if arr.flags.f_contiguous and not arr.flags.c_contiguous else "C"
    out = raw[start : start + size].view(arr.dtype).reshape(arr.shape, order=order)
    out[...] = arr
    return out


_MMAP_THRESHOLD = 128 * 1024


def _strings(rng: Any, rows: int, lo: int, hi: int) -> Any:
    """Decimal strings of random integers (built in C++: fast even for 1e7 rows)."""
    return pc.cast(pa.array(rng.integers(lo, hi, rows)), pa.string())


def make_source(lib: str, shape: str, data: Any) -> Any:
    """The shape's data as ``lib``'s natural object; None when ``lib`` cannot hold it."""
    column = shape == "column"
    if lib == "pyarrow":
        return data
    if lib == "nanoarrow":
        return na.Array(data)
    if lib == "polars":
        return pl.Series("values", data) if column else pl.from_arrow(data)
    if lib == "pandas":
        if column:
            return data.to_pandas().rename("values")
        if shape == "tensor2d":  # one 2-D block viewing the Fortran-ordered matrix
            matrix = _matrix(data)
            return pd.DataFrame(matrix, columns=data.column_names, copy=False)
        return data.to_pandas()
    if lib == "datasets":  # a Dataset over the table; "column": a one-column Dataset
        table = pa.table({"values": data}) if column else data
        # A fingerprint of our own: Dataset() would otherwise hash every byte to make one.
        return datasets.Dataset(table, fingerprint=f"bench-{shape}-{len(table)}")
    if lib == "xarray" and shape in ("string", "mixed", "nulls"):  # a Dataset of 1-D variables
        return xr.Dataset({name: ("index", data[name].to_numpy()) for name in data.column_names})
    if lib in (*TENSOR_LIBS, "xarray"):
        if not holds(lib, shape):
            return None
        if column:
            array = data.to_numpy()
        elif shape == "tensor2d":
            array = _matrix(data)
        else:
            array = np.column_stack([c.to_numpy() for c in data.columns])
        if lib == "torch":
            return torch.from_numpy(array)
        if lib == "jax":
            if shape == "tensor2d":  # column-major: jnp.asarray would make it row-major
                return jax.dlpack.from_dlpack(_aligned_copy(array)).block_until_ready()
            return jnp.asarray(array).block_until_ready()
        if lib == "xarray":
            return xr.DataArray(array, name="values" if column else None)
        return array
    raise ValueError(f"unknown library {lib!r}")


def _aligned_copy(array: Any, alignment: int = 64) -> Any:
    """A writable copy of ``array`` in the same order (C or F) starting at an
    ``alignment``-byte boundary: jax shares only 64-byte-aligned memory."""
    raw = np.empty(array.nbytes + alignment, np.uint8)
    start = -raw.ctypes.data % alignment
    order = "F" if array.flags.f_contiguous and not array.flags.c_contiguous else "C"
    out = raw[start : start + array.nbytes].view(array.dtype).reshape(array.shape, order=order)
    out[...] = array
    return out


def _matrix(table: Any) -> Any:
    """The Fortran-ordered matrix a ``tensor2d`` table's columns view (no copy)."""
    cols = [c.chunk(0).to_numpy() for c in table.columns]
    base = cols[0]
    rows = len(base)
    matrix = np.lib.stride_tricks.as_strided(
        base, shape=(rows, len(cols)), strides=(8, 8 * rows), writeable=False
    )
    if any(c.ctypes.data != base.ctypes.data + 8 * rows * i for i, c in enumerate(cols)):
        raise RuntimeError("tensor2d columns are not adjacent")  # pragma: no cover
    return matrix


# -- the calls compared ---------------------------------------------------------------------
# Each call is Python source with ``x`` the input: the label recorded is the code timed.
# The first call of a list is the library's own call (used for the route through pandas).
_T = "x.columns"
_STACK = f"np.column_stack([c.to_numpy() for c in {_T}])"
_COLS = "{f'column_{i}': x[:, i] for i in range(x.shape[1])}"
_TCOLS = "{f'column_{i}': x.numpy()[:, i] for i in range(x.shape[1])}"
DIRECT: dict[tuple[str, str], tuple[str, ...]] = {
    ("pyarrow", "nanoarrow"): ("na.Array(x)",),
    ("pyarrow", "polars"): ("pl.from_arrow(x)", "pl.DataFrame(x)", "pl.Series(x)"),
    ("pyarrow", "pandas"): (
        "x.to_pandas()",
        "pd.DataFrame.from_arrow(x)",
        "pd.Series.from_arrow(x)",
    ),
    ("pyarrow", "numpy"): (
        "x.to_numpy()",
        "np.asarray(x)",
        _STACK,
        "np.asarray(x.to_batches()[0].to_tensor())",
        "np.asarray(x.to_batches()[0].to_tensor(row_major=False))",
    ),
    ("pyarrow", "torch"): (
        "torch.from_dlpack(x)",
        "torch.from_numpy(x.to_numpy())",
        f"torch.from_numpy({_STACK})",
        "torch.from_numpy(np.asarray(x.to_batches()[0].to_tensor(row_major=False)))",
    ),
    ("nanoarrow", "pyarrow"): ("pa.table(x)", "pa.array(x)", "pa.record_batch(x)"),
    ("nanoarrow", "polars"): ("pl.from_arrow(x)", "pl.DataFrame(x)", "pl.Series(x)"),
    ("nanoarrow", "pandas"): (
        "pa.table(x).to_pandas()",
        "pa.array(x).to_pandas()",
        "pd.DataFrame.from_arrow(x)",
        "pd.Series.from_arrow(x)",
    ),
    ("nanoarrow", "numpy"): (
        "pa.array(x).to_numpy()",
        "np.from_dlpack(pa.array(x))",
        "np.column_stack([c.to_numpy() for c in pa.table(x).columns])",
        "np.asarray(pa.record_batch(x).to_tensor(row_major=False))",
    ),
    ("nanoarrow", "torch"): (
        "torch.from_dlpack(pa.array(x))",
        "torch.from_numpy(pa.array(x).to_numpy())",
        "torch.from_numpy(np.column_stack([c.to_numpy() for c in pa.table(x).columns]))",
    ),
    ("polars", "pyarrow"): ("x.to_arrow()", "pa.table(x)", "pa.array(x)"),
    ("polars", "nanoarrow"): (
        "na.Array(x)",
        "na.Array(x.to_arrow(compat_level=pl.CompatLevel.oldest()))",
    ),
    ("polars", "pandas"): (
        "x.to_pandas()",
        "pd.DataFrame.from_arrow(x)",
        "pd.Series.from_arrow(x)",
    ),
    # pandas of pd.ArrowDtype columns, what the hub gives with dtype="arrow" (VARIANTS)
    ("pyarrow", ARROW_PANDAS): (
        "x.to_pandas(types_mapper=pd.ArrowDtype)",
        "x.to_pandas(split_blocks=True, types_mapper=pd.ArrowDtype)",
    ),
    ("nanoarrow", ARROW_PANDAS): (
        "pa.table(x).to_pandas(types_mapper=pd.ArrowDtype)",
        "pa.array(x).to_pandas(types_mapper=pd.ArrowDtype)",
    ),
    ("polars", ARROW_PANDAS): ("x.to_pandas(use_pyarrow_extension_array=True)",),
    ("polars", "numpy"): ("x.to_numpy()", "np.asarray(x)"),
    ("polars", "torch"): ("x.to_torch()", "torch.from_numpy(x.to_numpy())"),
    ("pandas", "pyarrow"): (
        "pa.Table.from_pandas(x)",
        "pa.Array.from_pandas(x)",
        "pa.Table.from_pandas(x, nthreads=1)",
        "pa.table(x)",
        "pa.array(x)",
    ),
    ("pandas", "nanoarrow"): ("na.Array(x)", "na.Array(pa.Table.from_pandas(x))"),
    ("pandas", "polars"): ("pl.from_pandas(x)", "pl.DataFrame(x)", "pl.Series(x)"),
    ("pandas", "numpy"): ("x.to_numpy()", "np.asarray(x)"),
    ("pandas", "torch"): ("torch.from_numpy(x.to_numpy())", "torch.as_tensor(x.to_numpy())"),
    ("numpy", "pyarrow"): ("pa.array(x)", f"pa.table({_COLS})"),
    ("numpy", "nanoarrow"): ("na.Array(x)", f"na.Array(pa.table({_COLS}))"),
    ("numpy", "polars"): ("pl.from_numpy(x)", "pl.Series(x)", "pl.DataFrame(x)"),
    ("numpy", "pandas"): (
        "pd.DataFrame(x)",
        "pd.Series(x)",
        "pd.DataFrame(x, copy=False)",
        "pd.Series(x, copy=False)",
    ),
    ("numpy", "torch"): ("torch.from_numpy(x)", "torch.as_tensor(x)"),
    ("torch", "pyarrow"): ("pa.array(x.numpy())", f"pa.table({_TCOLS})"),
    ("torch", "nanoarrow"): ("na.Array(x.numpy())", f"na.Array(pa.table({_TCOLS}))"),
    ("torch", "polars"): (
        "pl.from_torch(x)",
        "pl.Series(x)",
        "pl.DataFrame(x)",
        "pl.from_numpy(x.numpy())",
        "pl.Series(x.numpy())",
    ),
    ("torch", "pandas"): (
        "pd.DataFrame(x.numpy())",
        "pd.Series(x.numpy())",
        "pd.DataFrame(x.numpy(), copy=False)",
        "pd.Series(x.numpy(), copy=False)",
    ),
    ("torch", "numpy"): ("x.numpy()", "np.asarray(x)", "np.from_dlpack(x)"),
}
# The plugin libraries' pairs. jax's own calls: jnp.asarray, jax.dlpack.from_dlpack and
# jax.device_put in, np.asarray / __dlpack__ out. datasets: Dataset(table) and the
# from_* constructors in (they hash the data to fingerprint it), ds.data.table (the
# pyarrow Table) and to_pandas / to_polars out. xarray: DataArray(values),
# Dataset.from_dataframe and a Dataset of the columns in; .values, to_series and
# to_dataframe out (a 2-D DataArray's long table: to_dataframe(...).reset_index(), since
# its own __arrow_c_stream__ leaves the positions out).
_J = "np.asarray(x)"
_JCOLS = "{f'column_{i}': np.asarray(x)[:, i] for i in range(x.shape[1])}"
_DT = "x.data.table"
_DSTACK = f"np.column_stack([c.to_numpy() for c in {_DT}.columns])"
_LONG = "x.to_dataframe(name='values').reset_index()"
_PLUGIN_DIRECT: dict[tuple[str, str], tuple[str, ...]] = {
    # -> jax
    ("pyarrow", "jax"): (
        "jnp.asarray(x.to_numpy())",
        "jax.dlpack.from_dlpack(x)",
        f"jnp.asarray({_STACK})",
        "jnp.asarray(np.asarray(x.to_batches()[0].to_tensor(row_major=False)))",
    ),
    ("nanoarrow", "jax"): (
        "jnp.asarray(pa.array(x).to_numpy())",
        "jax.dlpack.from_dlpack(pa.array(x))",
        "jnp.asarray(np.column_stack([c.to_numpy() for c in pa.table(x).columns]))",
    ),
    ("polars", "jax"): ("x.to_jax()", "jnp.asarray(x.to_numpy())"),
    ("pandas", "jax"): ("jnp.asarray(x.to_numpy())",),
    ("numpy", "jax"): ("jnp.asarray(x)", "jax.dlpack.from_dlpack(x)", "jax.device_put(x)"),
    ("torch", "jax"): ("jax.dlpack.from_dlpack(x)", "jnp.asarray(x.numpy())", "jnp.from_dlpack(x)"),
    ("datasets", "jax"): (f"jnp.asarray({_DSTACK})", "jnp.asarray(x.to_pandas().to_numpy())"),
    ("xarray", "jax"): ("jnp.asarray(x.values)", "jax.dlpack.from_dlpack(x.values)"),
    # jax ->
    ("jax", "pyarrow"): (f"pa.array({_J})", f"pa.table({_JCOLS})"),
    ("jax", "nanoarrow"): (f"na.Array({_J})", f"na.Array(pa.table({_JCOLS}))"),
    ("jax", "polars"): (f"pl.from_numpy({_J})", f"pl.Series({_J})", f"pl.DataFrame({_J})"),
    ("jax", "pandas"): (
        f"pd.DataFrame({_J})",
        f"pd.Series({_J})",
        f"pd.DataFrame({_J}, copy=False)",
        f"pd.Series({_J}, copy=False)",
    ),
    ("jax", "numpy"): ("np.asarray(x)", "np.from_dlpack(x)"),
    ("jax", "torch"): ("torch.from_dlpack(x)", "torch.from_numpy(np.asarray(x))"),
    ("jax", "datasets"): (
        f"datasets.Dataset(pa.table({_JCOLS}))",
        f"datasets.Dataset.from_dict({_JCOLS})",
        f"datasets.Dataset.from_dict({{'values': {_J}}})",
    ),
    ("jax", "xarray"): (f"xr.DataArray({_J})",),
    # -> datasets
    ("pyarrow", "datasets"): (
        "datasets.Dataset(x)",
        "datasets.Dataset(pa.table({'values': x}))",
        "datasets.Dataset.from_dict({'values': x})",
    ),
    ("nanoarrow", "datasets"): (
        "datasets.Dataset(pa.table(x))",
        "datasets.Dataset(pa.table({'values': pa.array(x)}))",
    ),
    ("polars", "datasets"): (
        "datasets.Dataset.from_polars(x)",
        "datasets.Dataset.from_polars(x.to_frame())",
    ),
    ("pandas", "datasets"): (
        "datasets.Dataset.from_pandas(x)",
        "datasets.Dataset.from_pandas(x.to_frame())",
    ),
    ("numpy", "datasets"): (
        f"datasets.Dataset(pa.table({_COLS}))",
        f"datasets.Dataset.from_dict({_COLS})",
        "datasets.Dataset.from_dict({'values': x})",
    ),
    ("torch", "datasets"): (
        f"datasets.Dataset(pa.table({_TCOLS}))",
        f"datasets.Dataset.from_dict({_TCOLS})",
        "datasets.Dataset.from_dict({'values': x.numpy()})",
    ),
    ("xarray", "datasets"): (
        "datasets.Dataset.from_pandas(x.to_dataframe())",
        f"datasets.Dataset.from_pandas({_LONG})",
        "datasets.Dataset.from_dict({'values': x.values})",
    ),
    # datasets ->
    ("datasets", "pyarrow"): (_DT, "x.with_format('arrow')[:]"),
    ("datasets", "nanoarrow"): (f"na.Array({_DT})",),
    ("datasets", "polars"): ("x.to_polars()", f"pl.from_arrow({_DT})"),
    ("datasets", "pandas"): ("x.to_pandas()", f"{_DT}.to_pandas()"),
    ("datasets", "numpy"): (_DSTACK, "x.to_pandas().to_numpy()"),
    ("datasets", "torch"): (
        f"torch.from_numpy({_DSTACK})",
        "torch.from_numpy(x.to_pandas().to_numpy())",
    ),
    ("datasets", "xarray"): (
        "xr.Dataset.from_dataframe(x.to_pandas())",
        "x.to_pandas().to_xarray()",
        f"xr.Dataset({{n: ('index', {_DT}[n].to_numpy()) for n in x.column_names}})",
    ),
    # -> xarray
    ("pyarrow", "xarray"): (
        "xr.Dataset.from_dataframe(x.to_pandas())",
        "xr.Dataset({n: ('index', x[n].to_numpy()) for n in x.column_names})",
        "xr.DataArray(x.to_numpy())",
    ),
    ("nanoarrow", "xarray"): (
        "xr.Dataset.from_dataframe(pa.table(x).to_pandas())",
        "xr.DataArray(pa.array(x).to_numpy())",
    ),
    ("polars", "xarray"): (
        "xr.Dataset.from_dataframe(x.to_pandas())",
        "x.to_pandas().to_xarray()",
        "xr.Dataset({n: ('index', x[n].to_numpy()) for n in x.columns})",
        "xr.DataArray(x.to_numpy())",
    ),
    ("pandas", "xarray"): (
        "xr.Dataset.from_dataframe(x)",
        "x.to_xarray()",
        "xr.Dataset({n: ('index', x[n].to_numpy()) for n in x.columns})",
        "xr.DataArray(x.to_numpy())",
    ),
    ("numpy", "xarray"): ("xr.DataArray(x)",),
    ("torch", "xarray"): ("xr.DataArray(x.numpy())",),
    # xarray -> (a 2-D DataArray into a table: the long table, a row per element)
    ("xarray", "pyarrow"): (
        "pa.Table.from_pandas(x.to_dataframe())",
        f"pa.Table.from_pandas({_LONG})",
        "pa.array(x.values)",
    ),
    ("xarray", "nanoarrow"): (
        "na.Array(pa.Table.from_pandas(x.to_dataframe()))",
        f"na.Array(pa.Table.from_pandas({_LONG}))",
        "na.Array(x.values)",
    ),
    ("xarray", "polars"): (
        "pl.from_pandas(x.to_dataframe())",
        f"pl.from_pandas({_LONG})",
        "pl.Series(x.values)",
    ),
    ("xarray", "pandas"): ("x.to_dataframe()", _LONG, "x.to_pandas()", "x.to_series()"),
    ("xarray", "numpy"): ("x.values", "x.to_numpy()", "np.asarray(x)"),
    ("xarray", "torch"): ("torch.from_numpy(x.values)", "torch.as_tensor(x.values)"),
}
DIRECT.update(
    (pair, calls)
    for pair, calls in _PLUGIN_DIRECT.items()
    if all(lib in (*BUILTIN_LIBRARIES, *PLUGINS) for lib in pair)
)
_NW_TO = {"pyarrow": "to_arrow", "pandas": "to_pandas", "polars": "to_polars", "numpy": "to_numpy"}


def narwhals_calls(src: str, dst: str) -> tuple[str, ...]:
    """How narwhals converts ``src`` data to ``dst`` (empty where it does not offer it)."""
    if nw is None or dst not in _NW_TO:
        return ()
    if src in ("pyarrow", "polars", "pandas"):  # narwhals' native backends
        return (f"nw.from_native(x, allow_series=True).{_NW_TO[dst]}()",)
    if src == "numpy" and dst in ("pyarrow", "pandas", "polars"):
        return (
            f"nw.from_numpy(x, backend='{dst}').to_native()",
            f"nw.new_series('values', x, backend='{dst}').to_native()",
        )
    return ()


_NAMESPACE = {
    "np": np,
    "pa": pa,
    "pl": pl,
    "pd": pd,
    "na": na,
    "torch": torch,
    "nw": nw,
    "jax": jax,
    "jnp": jnp,
    "datasets": datasets,
    "xr": xr,
}


# Libraries whose results are computed asynchronously: a call into them is timed until its
# result is ready (``block_until_ready``), and no result is described before it is: jax's
# ``unsafe_buffer_pointer`` waits for a pending array holding the GIL, which deadlocks
# when the pending work is a copy out of a numpy DLPack capsule (numpy's deleter, run on a
# jax thread, takes the GIL: seen in jax 0.10.2 with `jax.dlpack.from_dlpack(ndarray)`).
ASYNC_LIBS = ("jax",)


def compile_call(code: str, ready: bool = False) -> Callable[[Any], Any]:
    """``lambda x: <code>``; ``ready``: the result's ``block_until_ready()`` (jax)."""
    body = f"({code}).block_until_ready()" if ready else code
    fn: Callable[[Any], Any] = eval(f"lambda x: {body}", dict(_NAMESPACE))
    return fn


def unused_direct_calls(rows: int = 8) -> list[str]:
    """The direct calls (``DIRECT``) of the installed pairs that run on no shape, or never
    give what the hub gives: each should be the call a user writes for some shape."""
    ran: set[tuple[str, str, str]] = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for shape in SHAPES:
            data = arrow_data(shape, rows)
            for src in installed_libraries():
                x = make_source(src, shape, data)
                if x is None:
                    continue
                for dst in targets():
                    codes = DIRECT.get((src, dst), ())
                    if not codes:
                        continue
                    lib, options = target_of(dst)
                    try:
                        reference = _ready(HUB.convert(x, to=lib, **options), dst)
                    except ih.InterchangeError:
                        continue
                    for code, _, _ in _working(codes, x, reference, dst in ASYNC_LIBS):
                        ran.add((src, dst, code))
    libs, known = installed_libraries(), targets()
    return [
        f"{src} -> {dst}: {code}"
        for (src, dst), codes in DIRECT.items()
        if src in libs and dst in known
        for code in codes
        if (src, dst, code) not in ran
    ]


# -- checks on results -------------------------------------------------------------------
def _shape_of(obj: object) -> tuple[str, int, int]:
    """(kind, rows, columns or ndim) of a value as the hub describes it."""
    info = HUB.describe(obj)
    kind = info.kind.value
    if kind == "tensor":
        return kind, info.shape[0] if info.shape else -1, len(info.shape)
    return kind, info.rows, len(info.data_columns)


def same_kind(result: object, reference: object) -> bool:
    """Whether ``result`` holds what ``reference`` (the hub's result) holds: same kind and
    shape, and for pandas the same columns' backend (pd.ArrowDtype or not, see VARIANTS)."""
    try:
        same = _shape_of(result) == _shape_of(reference)
    except ih.InterchangeError:
        return False
    return same and arrow_backed_pandas(result) == arrow_backed_pandas(reference)


def arrow_backed_pandas(obj: object) -> bool:
    """Whether ``obj`` is a pandas Series or DataFrame with pd.ArrowDtype columns only."""
    if pd is None or not isinstance(obj, (pd.Series, pd.DataFrame)):
        return False
    dtypes = [obj.dtype] if isinstance(obj, pd.Series) else list(obj.dtypes)
    return bool(dtypes) and all(isinstance(t, pd.ArrowDtype) for t in dtypes)


def buffer_bytes(obj: object) -> int:
    """Bytes of the distinct memory ranges ``obj`` uses."""
    seen = {(b.address, b.size) for b in HUB.buffers(obj)}
    return sum(size for _, size in seen)


def _object_arrays(obj: object) -> list[Any]:
    """The numpy object arrays ``obj`` holds: itself (a numpy array), an xarray object's
    variables, a pandas object's object columns."""
    if isinstance(obj, np.ndarray):
        return [obj] if obj.dtype == object else []
    if xr is not None and isinstance(obj, (xr.Dataset, xr.DataArray)):
        found = (
            list(obj.variables.values())  # (a Dataset's coordinates are among them)
            if isinstance(obj, xr.Dataset)
            else [obj.variable, *obj.coords.variables.values()]
        )
        return [v.values for v in found if v.dtype == object]
    if pd is not None and isinstance(obj, pd.Series):
        return [obj.to_numpy()] if obj.dtype == object else []
    if pd is not None and isinstance(obj, pd.DataFrame):
        return [obj[c].to_numpy() for c, t in obj.dtypes.items() if t == object]
    return []


def object_bytes(result: object, source: object) -> int:
    """Bytes of the Python objects the object arrays of ``result`` hold (strings, bytes,
    Python values), each counted once, leaving out the objects of ``source``'s own object
    arrays: memory a conversion made for its result beside the arrays of pointers that
    :func:`buffer_bytes` counts (``sys.getsizeof``: 50 to 60 bytes a short ``str``, where
    its pointer is 8)."""
    kept = {id(v) for a in _object_arrays(source) for v in a.ravel()}
    seen: set[int] = set()
    total = 0
    for array in _object_arrays(result):
        for value in array.ravel():
            key = id(value)
            if value is None or key in kept or key in seen:
                continue
            seen.add(key)
            total += sys.getsizeof(value)
    return total


def verified_zero_copy(src: object, result: object, nulls_made: int = 0) -> tuple[bool, int, int]:
    """(zero-copy, shared bytes, source bytes), by buffer address. Zero-copy: the result
    shares every source byte and holds no memory of its own (an xarray DataArray's long
    table shares the values but writes its position columns: not zero-copy), except
    ``nulls_made`` bytes: the validity bitmaps of the columns whose NaN the plan says are
    scanned into nulls (pandas' missing value; the direct calls build them too). A bitmap
    made of NaN is no copy of the source's bytes, and the plan declares the scan."""
    total = sum(b.size for b in HUB.buffers(src))
    shared = HUB.shared_bytes(src, result)
    new = buffer_bytes(result) - HUB.shared_bytes(result, src)
    return shared >= total and new <= nulls_made, shared, total


def gives_its_memory_again(call: Callable[[], Any], out: object) -> bool:
    """Whether ``call``, which gave ``out``, gives the same memory again: a copy the source
    made once and cached (a jax Array's ``np.asarray`` keeps its first call's copy in
    ``_npy_value``), by buffer address."""
    again = call()
    return HUB.shared_bytes(out, again) >= buffer_bytes(out) > 0


def nulls_made(plan: Any, rows: int) -> int:
    """The bytes of the validity bitmaps a plan's NaN scans make (a bit a row each)."""
    return len(plan.scans) * ((rows + 7) // 8)


# -- timing --------------------------------------------------------------------------------
@dataclass
class Timing:
    """Median nanoseconds per call over ``samples`` samples of ``number`` calls each."""

    median_ns: float
    samples: int
    number: int
    min_ns: float = 0.0

    def as_dict(self) -> dict[str, float]:
        return {
            "median_ns": self.median_ns,
            "min_ns": self.min_ns,
            "samples": self.samples,
            "number": self.number,
        }


# A first call that took at least a sample's budget but less than this is timed once more
# before it decides how the call is sampled (slower ones are sampled one call at a time
# whatever they cost later).
_RETIME_FIRST_BELOW_NS = 1_000_000_000


def _once_ns(fn: Callable[[], Any]) -> int:
    start = time.perf_counter_ns()
    fn()
    return time.perf_counter_ns() - start


# A call that may be spared (``time_calls``' ``spare``) is timed in one sample when its
# estimate is at least this long and this many times another call's: it is not the
# fastest, and its samples cost minutes a cell (xarray's strings through pandas at 1e7
# rows: 10-14 s a call, three or four such calls a cell, each called seven times).
SPARE_ABOVE_NS = 1_000_000_000
SPARE_FACTOR = 2.0


def time_calls(
    calls: dict[str, Callable[[], Any]],
    settings: Settings,
    budget_s: float | None = None,
    first_ns: Mapping[str, int] | None = None,
    spare: Collection[str] = (),
) -> dict[str, Timing]:
    """Median time per call of each function, measured in interleaved rounds.

    Each function is warmed up, then timed in samples of ``number`` calls (enough for a
    sample to last ``budget / max_samples``); the sample count is adapted so that the
    measurement lasts about ``budget`` seconds, with at least ``min_reps`` samples.
    Samples of the different functions alternate, so drift affects them alike, and each
    sample begins with one untimed call of its own function, so that what a call leaves
    behind (freed memory, the allocator's thresholds, caches) is paid for by the call
    itself, as when a user repeats it, and not by whichever call comes next: timed in a
    fixed order, polars -> pandas strings, 10,000,000 rows, measured 1.40x, the hub
    taking 65-87 ms right after ``pd.DataFrame.from_arrow`` against 58.3-59.1 ms timed
    alone, beside ``x.to_pandas()``'s 58.3-59.7.
    ``first_ns``: how long each call already took once; a call slower than 1 s needs no
    further warm-up or estimate (a sample per call), a faster one is timed once more.
    ``spare``: calls that are timed in one sample (after its untimed call) where their
    estimate is :data:`SPARE_ABOVE_NS` or more and :data:`SPARE_FACTOR` times another
    call's or more (a direct call far slower than the hub or another direct call: its
    median is one sample's, and says so in its ``samples``).
    """
    budget = settings.budget_s if budget_s is None else budget_s
    slow = budget * 1e9 / settings.min_reps
    plans: dict[str, tuple[int, int]] = {}
    estimates: dict[str, int] = {}
    for name, fn in calls.items():
        # The first call warms up (the hub caches its route); a slow one is its own estimate.
        first = (first_ns or {}).get(name)
        estimate = max(1, first or _once_ns(fn))
        if first and slow <= estimate < _RETIME_FIRST_BELOW_NS:
            # A first call may have paid once for what later calls do not (a plugin's
            # import, the hub's planning): taken as the estimate, it timed a 57 us call
            # one call a sample, 3 samples, at 152 us (pyarrow -> xarray, 1,000 rows).
            estimate = max(1, _once_ns(fn))
        if estimate < slow:
            estimate = max(1, min(_once_ns(fn), _once_ns(fn)))
        per_sample = budget * 1e9 / settings.max_samples
        number = max(1, math.ceil(per_sample / estimate))
        reps = int(budget * 1e9 // (number * estimate))
        plans[name] = (number, max(settings.min_reps, min(settings.max_samples, reps)))
        estimates[name] = estimate
    for name in spare:
        others = [ns for other, ns in estimates.items() if other != name]
        estimate = estimates.get(name, 0)
        if others and estimate >= SPARE_ABOVE_NS and estimate >= SPARE_FACTOR * min(others):
            plans[name] = (1, 1)
    samples: dict[str, list[float]] = {name: [] for name in calls}
    rounds = max(reps for _, reps in plans.values())
    gc_was_enabled = gc.isenabled()
    try:
        for r in range(rounds):
            for name, fn in calls.items():
                number, reps = plans[name]
                if r >= reps:
                    continue
                fn()
                gc.disable()
                start = time.perf_counter_ns()
                for _ in range(number):
                    fn()
                elapsed = time.perf_counter_ns() - start
                if gc_was_enabled:
                    gc.enable()
                samples[name].append(elapsed / number)
    finally:
        if gc_was_enabled:
            gc.enable()
    return {
        name: Timing(statistics.median(s), len(s), plans[name][0], min(s))
        for name, s in samples.items()
    }


# -- memory ------------------------------------------------------------------------------------
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
try:
    _LIBC: Any = ctypes.CDLL("libc.so.6")
except OSError:  # pragma: no cover - not glibc
    _LIBC = None


def _rss_bytes() -> int:
    with open("/proc/self/statm", "rb") as f:
        return int(f.read().split()[1]) * _PAGE


def _hwm_bytes() -> int:
    with open("/proc/self/status", "rb") as f:
        for line in f:
            if line.startswith(b"VmHWM:"):
                return int(line.split()[1]) * 1024
    raise OSError("no VmHWM in /proc/self/status")


def _reset_hwm() -> bool:
    """Reset the kernel's peak-RSS counter (VmHWM); False where that is not allowed."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _settle() -> None:
    """Return freed memory to the OS so that the next allocation shows in RSS."""
    gc.collect()
    pa.default_memory_pool().release_unused()
    if _LIBC is not None:
        with contextlib.suppress(AttributeError):
            _LIBC.malloc_trim(0)


class _Sampler(threading.Thread):
    """Fallback peak-RSS meter: samples /proc/self/statm about every millisecond."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak = _rss_bytes()
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.wait(0.001):
            self.peak = max(self.peak, _rss_bytes())

    def stop(self) -> int:
        self._stop_event.set()
        self.join()
        return max(self.peak, _rss_bytes())


def _immortal(obj: object) -> None:
    """Keep ``obj`` alive until the process ends, past the interpreter's teardown (one
    reference no one drops). A proxy pool freed at teardown, while a cache still holds a
    buffer allocated through it, crashed the process as it exited (SIGSEGV): the first
    ``ih.convert(pa.table, to="pandas")`` measured keeps pandas' column labels, an Arrow
    string Index, made in the measured pool; its buffer was freed after a module list
    that had held the pools."""
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))


def measure_memory(fn: Callable[[], Any]) -> tuple[dict[str, Any], Any]:
    """Run ``fn`` once; return its peak extra memory (RSS and Arrow's allocator) and result.

    RSS: the kernel's high-water mark (VmHWM, reset through /proc/self/clear_refs) minus
    the resident size before, or a 1 ms sampling thread where the reset is not allowed.
    Arrow: the peak of a proxy pool, installed as pyarrow's default pool for the call, and
    the bytes still allocated afterwards. Freed memory is returned to the OS beforehand,
    but memory an allocator reuses without the OS seeing it is not counted.
    """
    _settle()
    parent = pa.default_memory_pool()
    arrow_before = parent.bytes_allocated()
    proxy = pa.proxy_memory_pool(parent)
    _immortal(proxy)  # buffers allocated through it point to it: never free it
    rss_before = _rss_bytes()
    exact = _reset_hwm()
    sampler = None
    if not exact:
        sampler = _Sampler()
        sampler.start()
    pa.set_memory_pool(proxy)
    try:
        result = fn()
    finally:
        pa.set_memory_pool(parent)
        peak = sampler.stop() if sampler is not None else _hwm_bytes()
    rss_peak = max(0, peak - rss_before)
    arrow_peak = proxy.max_memory()
    return {
        "rss_peak_extra": rss_peak,
        "arrow_peak": arrow_peak,
        "arrow_retained": parent.bytes_allocated() - arrow_before,
        "peak_extra": max(rss_peak, arrow_peak),
        "rss_method": "VmHWM" if exact else "sampling",
    }, result


# -- one case ----------------------------------------------------------------------------------
@dataclass
class Case:
    src: str
    dst: str
    shape: str
    rows: int

    @property
    def pair(self) -> str:
        return f"{self.src}:{self.dst}"

    @property
    def key(self) -> str:
        return f"{self.pair}/{self.shape}/{self.rows}"


_FAILED = object()


def _attempt(fn: Callable[[Any], Any], x: object) -> Any:
    """``fn(x)``, or ``_FAILED`` when the call cannot handle this data."""
    try:
        return fn(x)
    except Exception:  # noqa: BLE001 - any library error means "not this call"
        return _FAILED


def _ready(obj: Any, lib: str) -> Any:
    """``obj`` once computed, for a result in an ``ASYNC_LIBS`` library."""
    return obj.block_until_ready() if lib in ASYNC_LIBS else obj


def _working(
    codes: Iterable[str], x: object, reference: object, ready: bool = False
) -> list[tuple[str, Callable[[], Any], int]]:
    """The calls that run on ``x`` and give what ``reference`` holds: (code, thunk, ns taken).
    ``ready``: each call waits for its result (``compile_call``).

    A call more than ``SLOW_FACTOR`` times slower than the fastest on its first run (and
    slower than half a second) cannot be the fastest: it is left out, not timed further.
    """
    found = []
    for code in codes:
        fn = compile_call(code, ready)
        start = time.perf_counter_ns()
        result = _attempt(fn, x)
        elapsed = time.perf_counter_ns() - start
        if result is not _FAILED and not unusable(result) and same_kind(result, reference):
            found.append((code, _bind(fn, x), elapsed))
        del result
    fastest = min((t for _, _, t in found), default=0)
    return [c for c in found if c[2] < 0.5e9 or c[2] <= SLOW_FACTOR * fastest]


def unusable(result: object) -> bool:
    """Whether a direct call's result crashes the process when read, so that it cannot be
    the call a user writes: nanoarrow 0.9 imports string_view/binary_view arrays (polars'
    strings) but segfaults reading any value kept out of line (``iter_py``, ``repr``,
    ``pa.array`` of it). Only the schema is read here, which is safe."""
    if na is None or not isinstance(result, (na.Array, na.ArrayStream)):
        return False
    return bool(re.search(r"(?:string|binary)_view", str(result.schema)))


def _bind(fn: Callable[[Any], Any], x: object) -> Callable[[], Any]:
    return lambda: fn(x)


def pandas_route(
    case: Case, x: object, reference: object
) -> list[tuple[str, Callable[[], Any], int]]:
    """x -> pandas -> target with each library's own first call (as ``_working`` gives
    calls); empty if pandas is an end of the pair or the route fails."""
    if pd is None or "pandas" in (case.src, case.dst):
        return []
    wanted = pd.Series if case.shape == "column" else pd.DataFrame
    for to_pd in DIRECT.get((case.src, "pandas"), ()):
        first = compile_call(to_pd)
        start = time.perf_counter_ns()
        mid = _attempt(first, x)
        to_ns = time.perf_counter_ns() - start
        if not isinstance(mid, wanted):
            continue
        for from_pd in DIRECT.get(("pandas", case.dst), ()):
            second = compile_call(from_pd, case.dst in ASYNC_LIBS)
            start = time.perf_counter_ns()
            result = _attempt(second, mid)
            from_ns = time.perf_counter_ns() - start
            if result is not _FAILED and same_kind(result, reference):
                label = _substitute(from_pd, to_pd)
                return [(label, _chain(first, second, x), to_ns + from_ns)]
        return []
    return []


def _substitute(code: str, text: str) -> str:
    """``code`` with its first ``x`` replaced by ``text`` (taken literally)."""
    return re.sub(r"\bx\b", lambda _m: text, code, count=1)


def _chain(
    first: Callable[[Any], Any], second: Callable[[Any], Any], x: object
) -> Callable[[], Any]:
    return lambda: second(first(x))


def _route_text(plan: ih.Plan) -> str:
    return " > ".join(f"{s.edge.adapter}:{s.edge.source}->{s.edge.target}" for s in plan.steps)


def run_case(case: Case, x: object, settings: Settings) -> dict[str, Any]:
    """Measure one (pair, shape, size) case on the source object ``x``.

    Warnings are silenced: the libraries' own (torch on read-only arrays, for one) would
    only interleave with the progress lines.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return _run_case(case, x, settings)
        except Exception as exc:
            if not _plugin_case(case):
                raise
            return _error_record(case, exc)


def _plugin_case(case: Case) -> bool:
    return case.src in PLUGINS or case.dst in PLUGINS


def _error_record(case: Case, exc: BaseException) -> dict[str, Any]:
    """A case of a plugin library that raised something other than an InterchangeError:
    recorded (``status: error``), reported, and an exit status of 1 from ``run.py``,
    rather than the end of the run (a plugin being written should not stop the others)."""
    message = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
    return {
        "pair": case.pair,
        "src": case.src,
        "dst": case.dst,
        "shape": case.shape,
        "rows": case.rows,
        "status": "error",
        "error": message,
    }


def _run_case(case: Case, x: object, settings: Settings) -> dict[str, Any]:
    record: dict[str, Any] = {
        "pair": case.pair,
        "src": case.src,
        "dst": case.dst,
        "shape": case.shape,
        "rows": case.rows,
        "source_type": f"{type(x).__module__}.{type(x).__qualname__}",
    }
    lib, options = target_of(case.dst)
    try:
        plan = HUB.plan(x, to=lib, **options)
        start = time.perf_counter_ns()
        reference = _ready(HUB.convert(x, to=lib, **options), case.dst)
        hub_first = time.perf_counter_ns() - start
    except ih.InterchangeError as exc:
        record.update(status="no route", error=f"{type(exc).__name__}: {exc}")
        return record
    made = nulls_made(plan, case.rows)
    zero, shared, total = verified_zero_copy(x, reference, made)
    record.update(
        status="ok",
        result_type=f"{type(reference).__module__}.{type(reference).__qualname__}",
        plan_zero_copy=plan.zero_copy,
        plan_copied_bytes=plan.copied_bytes,
        plan_scans=[x.column for x in plan.scans],
        # what the hub does on every call that the direct calls do not: a warning per
        # lossy column, and the check of the call site of a write-through warning
        plan_losses=len(plan.losses),
        plan_write_through=plan.write_through,
        route=_route_text(plan),
        verified_zero_copy=zero,
        shared_bytes=shared,
        source_bytes=total,
    )
    result_bytes = buffer_bytes(reference)
    record["result_bytes"] = result_bytes
    record["result_new_bytes"] = result_bytes - HUB.shared_bytes(reference, x)
    # (the Python objects of its object arrays: a result's own memory, beside its pointers)
    record["result_object_bytes"] = object_bytes(reference, x)

    ready = case.dst in ASYNC_LIBS
    direct = _working(DIRECT.get((case.src, case.dst), ()), x, reference, ready)
    nw_calls = _working(narwhals_calls(case.src, case.dst), x, reference, ready)[:1]
    pd_route = pandas_route(case, x, reference)
    del reference

    hub_call = _hub_call(x, lib, options, ready)

    calls: dict[str, Callable[[], Any]] = {"hub": hub_call}
    first = {"hub": hub_first}
    for prefix, found in (("direct", direct), ("narwhals", nw_calls), ("pandas_route", pd_route)):
        for code, fn, ns in found:
            calls[f"{prefix}:{code}"] = fn
            first[f"{prefix}:{code}"] = ns
    # A copy at the run's largest size: a plain numpy copy of as many bytes as the result
    # holds of its own, timed in the same rounds (the copy speed beside memory's); not
    # where that is under 1 MiB or under a tenth of the result (a result sharing most of
    # its memory: pandas -> pyarrow of the mixed shape copies only its booleans)
    written = record["result_new_bytes"] + record["result_object_bytes"]
    if not zero and case.rows == settings.largest_rows and copies_enough(record, written):
        calls[NUMPY_COPY] = np.ones(written, np.uint8).copy  # (its pages written once)
    # (the calls compared with the hub's, where one is far slower: sampled once)
    spared = [name for name in calls if name != "hub" and name != NUMPY_COPY]
    timings = time_calls(calls, settings, first_ns=first, spare=spared)
    if calls.pop(NUMPY_COPY, None) is not None:
        record["copy_speed"] = {"bytes": written, "numpy_copy_ns": timings[NUMPY_COPY].median_ns}
    record["hub"] = timings["hub"].as_dict()
    record["direct"] = {code: timings[f"direct:{code}"].as_dict() for code, _, _ in direct}
    best = min(direct, key=lambda c: timings[f"direct:{c[0]}"].median_ns, default=None)
    record["best_direct"] = best[0] if best else None
    record["best_direct_ns"] = timings[f"direct:{best[0]}"].median_ns if best else None
    record["narwhals"] = (
        {"call": nw_calls[0][0], **timings[f"narwhals:{nw_calls[0][0]}"].as_dict()}
        if nw_calls
        else None
    )
    record["pandas_route"] = (
        {"call": pd_route[0][0], **timings[f"pandas_route:{pd_route[0][0]}"].as_dict()}
        if pd_route
        else None
    )
    if (
        best is not None
        and record["hub"]["median_ns"] > COPY_SPEED_TARGET * record["best_direct_ns"]
    ):
        record["parts"] = measure_parts(case, x, hub_call, best[1], settings, best[0])
    if not zero:  # a copy slower than narwhals or the route through pandas: timed again
        for name, found in (("narwhals", nw_calls), ("pandas_route", pd_route)):
            other = record[name]
            if other is not None and record["hub"]["median_ns"] > other["median_ns"]:
                other["again"] = time_again(hub_call, found[0][1], settings)
    scaling = settings.scaling_rows
    if zero and scaling is not None and case.rows == scaling[1] > scaling[0]:
        record["scaling"] = measure_scaling(case, hub_call, best, scaling[0], settings)
    if settings.memory:
        record["memory"] = _memory_of(hub_call, best[1] if best is not None else None)
    if best is not None:
        out = best[1]()
        record["direct_zero_copy"] = verified_zero_copy(x, out, made)[0] if _knows(out) else None
        if record["direct_zero_copy"] is False and record.get("parts"):
            record["direct_cached"] = gives_its_memory_again(best[1], out)
        del out
    return record


# The name of the plain numpy copy among a case's timed calls (``copy_speed``)
NUMPY_COPY = "numpy_copy"


def copies_enough(record: dict[str, Any], own: int) -> bool:
    """Whether a copy's result holds enough bytes of its own (``own``) for a copy speed:
    :data:`COPY_MEMORY_MIN_RESULT` or more, and :data:`COPY_SPEED_MIN_SHARE` or more of
    the result's bytes (where the record has them)."""
    total = record.get("result_bytes") or 0
    return own >= COPY_MEMORY_MIN_RESULT and own >= COPY_SPEED_MIN_SHARE * total


def copy_speeds(record: dict[str, Any]) -> dict[str, float] | None:
    """A copy's speed at the run's largest size, GB/s of the bytes the hub's result holds
    of its own (its buffers and the Python objects of its object arrays): in the hub's
    time, in the fastest direct call's (NaN without one) and in that of a plain
    ``ndarray.copy()`` of as many bytes timed in the same rounds (None for a case not
    timed so: zero-copy, a smaller size, a record from before)."""
    speed = record.get("copy_speed")
    if not speed or not speed["numpy_copy_ns"] or not copies_enough(record, speed["bytes"]):
        return None  # (not timed so, or a result holding little of its own)
    n = speed["bytes"]  # (bytes per ns: GB/s)
    direct = record.get("best_direct_ns")
    return {
        "bytes": n,
        "hub": n / record["hub"]["median_ns"],
        "direct": n / direct if direct else math.nan,
        "numpy_copy": n / speed["numpy_copy_ns"],
    }


def _hub_call(
    x: object, lib: str, options: dict[str, Any], ready: bool, hub: Any = None
) -> Callable[[], Any]:
    """The hub's call timed for a case (``hub``: another object with a ``convert`` of the
    same signature, called the same way). Without options it passes none: an empty
    ``**options`` costs about 180 ns a call (1.76 against 1.58 us for numpy -> torch)."""
    hub = HUB if hub is None else hub
    if options and ready:
        return lambda: hub.convert(x, to=lib, **options).block_until_ready()
    if options:
        return lambda: hub.convert(x, to=lib, **options)
    if ready:
        return lambda: hub.convert(x, to=lib).block_until_ready()
    return lambda: hub.convert(x, to=lib)


class BareWrapper:
    """The least any hub written in Python adds to a direct call: a ``convert`` with the
    hub's signature that looks the direct call up by the source's type and the target and
    makes it, checking nothing (no route key, no zero-copy or loss claim, no warning).
    Timed beside the hub and the direct call for each miss (:func:`measure_parts`): where
    it is itself above the target ratio, no hub in Python can reach the target."""

    def __init__(self) -> None:
        self.calls: dict[tuple[Any, ...], Callable[[Any], Any]] = {}

    def convert(
        self,
        obj: object,
        to: object,
        *,
        copy: bool | None = None,
        device: object = None,
        strict: bool = False,
        dtype: object = None,
        as_dict: bool = False,
    ) -> Any:
        return self.calls[(type(obj), to)](obj)


class KeyedWrapper(BareWrapper):
    """A :class:`BareWrapper` that checks what the hub checks on every call: it looks the
    direct call up by the source's type, the target and the source adapter's route key
    (nulls, chunks, dtypes, strides, read from metadata), as the hub's fast path finds its
    kept run, and makes it. Where it is above the target ratio, a hub that checks each
    call (as issue #12 asks) cannot reach the target in Python."""

    def __init__(self, key: Callable[[Any], Any]) -> None:
        super().__init__()
        self.key = key

    def convert(
        self,
        obj: object,
        to: object,
        *,
        copy: bool | None = None,
        device: object = None,
        strict: bool = False,
        dtype: object = None,
        as_dict: bool = False,
    ) -> Any:
        return self.calls[(type(obj), to, self.key(obj))](obj)


def measure_scaling(
    case: Case,
    hub_call: Callable[[], Any],
    best: tuple[str, Callable[[], Any], int] | None,
    rows: int,
    settings: Settings,
) -> dict[str, Any] | None:
    """A zero-copy case's hub call (and fastest direct call) timed again, interleaved with
    the same call on the same pair's source of ``rows`` rows (the run's smallest): what
    t(largest)/t(smallest) says without the drift of the minutes between the two cells
    (a run whose 1e7 phase ran twice as slow, direct calls alike, failed 26 such checks).
    None where the hub does not share the small source's memory (no zero-copy to time)."""
    lib, options = target_of(case.dst)
    ready = case.dst in ASYNC_LIBS
    small = make_source(case.src, case.shape, arrow_data(case.shape, rows))
    plan = HUB.plan(small, to=lib, **options)
    reference = _ready(HUB.convert(small, to=lib, **options), case.dst)
    zero = verified_zero_copy(small, reference, nulls_made(plan, rows))[0]
    del reference
    if not zero:
        return None
    calls = {"hub": hub_call, "hub_small": _hub_call(small, lib, options, ready)}
    if best is not None:
        direct_small = compile_call(best[0], ready)
        calls["direct"] = best[1]
        calls["direct_small"] = lambda: direct_small(small)
    timings = time_calls(calls, settings, settings.budget_s / 2)
    found: dict[str, Any] = {"rows": rows}
    found.update({f"{name}_ns": t.median_ns for name, t in timings.items()})
    return found


def time_again(
    hub_call: Callable[[], Any], other: Callable[[], Any], settings: Settings
) -> dict[str, float]:
    """The hub's call and ``other`` (narwhals' call, the route through pandas) timed again,
    interleaved, for a copy that was slower than ``other`` in its cell: whether the miss
    repeats (medians of as many samples again; the cell's own medians stay the verdict's,
    as the headline's misses that did not repeat stay misses)."""
    timings = time_calls({"hub": hub_call, "other": other}, settings, settings.budget_s / 2)
    return {"hub_ns": timings["hub"].median_ns, "other_ns": timings["other"].median_ns}


def measure_parts(
    case: Case,
    x: object,
    hub_call: Callable[[], Any],
    direct: Callable[[], Any],
    settings: Settings,
    code: str | None = None,
) -> dict[str, float] | None:
    """Where the time of a hub conversion goes: the whole call (``hub_call``, as the case
    timed it), the run the hub keeps for ``x``'s route alone, the source adapter's route
    key alone, and the fastest direct call, timed again, interleaved (``time_calls``).
    The dispatch is the rest: hub - run - key. With the direct call's ``code``, also that
    call made through a :class:`BareWrapper` (``floor``) and a :class:`KeyedWrapper`
    (``keyed``), called as the hub is: what any hub in Python adds, and what one that
    checks each call adds. Where the kept run is a warning's layer around the route's
    steps (``__wrapped__``: the per-call warning of lossy columns, the write-through
    warning's check of the call site), the steps alone too (``steps``). None where the
    hub keeps no run for ``x`` (it plans each call)."""
    lib, options = target_of(case.dst)
    kept = HUB.planner.kept_route(x, lib, **options)
    if kept is None:
        return None
    key, run = kept
    ready = case.dst in ASYNC_LIBS
    steps = run
    while hasattr(steps, "__wrapped__"):  # a warning's layer around the route's steps
        steps = steps.__wrapped__

    def run_call() -> Any:
        return _ready(run(x), case.dst) if ready else run(x)

    def key_call() -> Any:
        return key(x)

    def steps_call() -> Any:
        return _ready(steps(x), case.dst) if ready else steps(x)

    calls = {"hub": hub_call, "run": run_call, "key": key_call, "direct": direct}
    if steps is not run:
        calls["steps"] = steps_call
    if code is not None:
        fn = compile_call(code)
        bare, keyed = BareWrapper(), KeyedWrapper(key)
        bare.calls[(type(x), lib)] = fn
        keyed.calls[(type(x), lib, key(x))] = fn
        calls["floor"] = _hub_call(x, lib, options, ready, bare)
        calls["keyed"] = _hub_call(x, lib, options, ready, keyed)
    try:
        timings = time_calls(calls, settings, settings.budget_s / 2)
    except Exception:  # noqa: BLE001 - a kept run that raises (RouteChanged): convert
        return None  # plans such an object again; it has no parts to time

    parts = {f"{name}_ns": t.median_ns for name, t in timings.items()}
    parts["dispatch_ns"] = parts["hub_ns"] - parts["run_ns"] - parts["key_ns"]
    return parts


def _memory_of(
    hub_call: Callable[[], Any], direct: Callable[[], Any] | None
) -> dict[str, dict[str, Any]]:
    """Peak extra memory of the hub's call and the direct call, each measured twice in
    the order hub, direct, direct, hub, the lower of each pair kept: whichever runs first
    after the timing rounds pays for memory the allocator then keeps (1.5 MiB of 3.2 MB
    for pyarrow -> numpy at 1e5 rows, seen for the hub and the direct call alike)."""
    calls = {"hub": hub_call} if direct is None else {"hub": hub_call, "direct": direct}
    order = ["hub"] if direct is None else ["hub", "direct", "direct", "hub"]
    found: dict[str, dict[str, Any]] = {}
    for name in order:
        memory, out = measure_memory(calls[name])
        del out
        if name not in found or memory["peak_extra"] < found[name]["peak_extra"]:
            found[name] = memory
    return found


def _knows(obj: object) -> bool:
    try:
        HUB.buffers(obj)
    except ih.InterchangeError:
        return False
    return True


# -- the whole matrix ----------------------------------------------------------------------
def plan_cases(
    sizes: Sequence[int],
    shapes: Sequence[str] = SHAPES,
    pairs: Sequence[tuple[str, str]] | None = None,
) -> list[Case]:
    pairs = all_pairs() if pairs is None else list(pairs)
    cases = []
    for rows in sizes:
        for shape in shapes:
            for src, dst in pairs:
                if not holds(src, shape):
                    continue  # numpy/torch/jax cannot hold the source data at all
                cases.append(Case(src, dst, shape, rows))
                for variant, (lib, _) in VARIANTS.items():
                    if lib == dst and (src, variant) in DIRECT and (src, variant) not in pairs:
                        cases.append(Case(src, variant, shape, rows))
    return cases


def run_matrix(
    cases: Sequence[Case],
    settings: Settings,
    progress: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """Measure every case, building each source once; ``progress`` gets a line per case.
    With several sizes, a zero-copy case of the largest is timed beside the smallest too
    (``Settings.scaling_rows``, unless set); a copy of the largest size (``largest_rows``,
    unless set) beside a numpy copy of its result's bytes."""
    started = time.perf_counter()
    sizes = sorted({case.rows for case in cases})
    if settings.scaling_rows is None and len(sizes) > 1:
        settings = replace(settings, scaling_rows=(sizes[0], sizes[-1]))
    if settings.largest_rows is None and sizes:
        settings = replace(settings, largest_rows=sizes[-1])
    records: list[dict[str, Any]] = []
    data_key: tuple[str, int] | None = None
    data: Any = None
    sources: dict[str, Any] = {}
    for i, case in enumerate(cases, 1):
        if (case.shape, case.rows) != data_key:
            data = None
            sources = {}
            _settle()
            data_key = (case.shape, case.rows)
            data = arrow_data(case.shape, case.rows)
            sources = {}
        if case.src not in sources:
            try:
                sources = {case.src: make_source(case.src, case.shape, data)}
            except Exception as exc:
                if not _plugin_case(case):
                    raise
                sources = {case.src: exc}
        source = sources[case.src]
        if isinstance(source, Exception):
            record = _error_record(case, source)
        else:
            if settings.case_timeout_s:
                faulthandler.dump_traceback_later(settings.case_timeout_s, exit=True)
            try:
                record = run_case(case, source, settings)
            finally:
                if settings.case_timeout_s:
                    faulthandler.cancel_dump_traceback_later()
        records.append(record)
        if progress is not None:
            elapsed = time.perf_counter() - started
            progress(f"[{i}/{len(cases)}] {elapsed:7.1f}s  {case.key:<40} {_summary(record)}")
    return records


def _summary(record: dict[str, Any]) -> str:
    if record["status"] == "error":
        return f"ERROR {record['error']}"
    if record["status"] != "ok":
        return "no route"
    hub = record["hub"]["median_ns"] / 1e3
    text = f"hub {fmt_us(hub)} us"
    if record["best_direct_ns"]:
        ratio = record["hub"]["median_ns"] / record["best_direct_ns"]
        text += f", direct {fmt_us(record['best_direct_ns'] / 1e3)} us ({ratio:.2f}x)"
    return text + (" Z" if record["verified_zero_copy"] else "")


def fmt_us(us: float | None) -> str:
    if us is None:
        return "-"
    if us >= 1000:
        return f"{us:,.0f}"
    if us >= 10:
        return f"{us:.1f}"
    return f"{us:.2f}"


# -- dispatch overhead -------------------------------------------------------------------------
def measure_dispatch(
    settings: Settings, cases: Sequence[tuple[str, str, str]] = DISPATCH_CASES
) -> list[dict[str, Any]]:
    """Hub vs the fastest direct call on tiny inputs: the cost of dispatch with a cached plan."""
    out = []
    libs = installed_libraries()
    for src, dst, shape in cases:
        if src not in libs or dst not in libs:
            continue
        x = make_source(src, shape, arrow_data(shape, DISPATCH_ROWS))
        reference = _ready(HUB.convert(x, to=dst), dst)
        direct = _working(DIRECT.get((src, dst), ()), x, reference, dst in ASYNC_LIBS)

        def hub_call(x: object = x, dst: str = dst) -> Any:
            return HUB.convert(x, to=dst)

        calls = {"hub": hub_call, **{code: fn for code, fn, _ in direct}}
        kept = HUB.planner.kept_route(x, dst)
        if kept is not None:  # each direct call through a wrapper that checks the route key
            key = kept[0]
            for code, _fn, _ in direct:
                keyed = KeyedWrapper(key)
                keyed.calls[(type(x), dst, key(x))] = compile_call(code)
                calls[_KEYED + code] = _hub_call(x, dst, {}, dst in ASYNC_LIBS, keyed)
        timings = time_calls(calls, settings, settings.dispatch_budget_s)
        best = min(direct, key=lambda c: timings[c[0]].median_ns)[0]
        hub_ns, direct_ns = timings["hub"].median_ns, timings[best].median_ns
        found = {
            "pair": f"{src}:{dst}",
            "shape": shape,
            "rows": DISPATCH_ROWS,
            "hub_ns": hub_ns,
            "direct_ns": direct_ns,
            "direct": best,
            "overhead_us": (hub_ns - direct_ns) / 1e3,
        }
        if _KEYED + best in timings:
            found["keyed_ns"] = timings[_KEYED + best].median_ns
        out.append(found)
    return out


# (the name of a direct call's timing through a KeyedWrapper, in measure_dispatch)
_KEYED = "keyed: "


def profile_dispatch(
    src: str, dst: str, shape: str, calls: int = 20_000, top: int = 12
) -> dict[str, Any]:
    """cProfile of repeated hub conversions of a tiny input: where the dispatch time goes."""
    import cProfile
    import pstats

    x = make_source(src, shape, arrow_data(shape, DISPATCH_ROWS))
    HUB.convert(x, to=dst)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        HUB.convert(x, to=dst)
    profiler.disable()
    stats = pstats.Stats(profiler)
    rows = []
    for (filename, line, func), (_cc, nc, tt, ct, _) in stats.stats.items():  # type: ignore[attr-defined]
        rows.append(
            {
                "function": f"{_short_path(filename)}:{line}({func})",
                "calls_per_convert": nc / calls,
                "tottime_us": tt / calls * 1e6,
                "cumtime_us": ct / calls * 1e6,
            }
        )
    by_self = sorted(rows, key=lambda r: -r["tottime_us"])[:top]
    ours = [r for r in rows if r["function"].startswith("interchange_hub/")]
    by_cum = sorted(ours, key=lambda r: -r["cumtime_us"])[:top]
    total = sum(r["tottime_us"] for r in rows)
    return {
        "pair": f"{src}:{dst}",
        "shape": shape,
        "calls": calls,
        "profiled_us_per_convert": total,
        "by_self_time": by_self,
        "interchange_hub_by_cumulative_time": by_cum,
    }


def _short_path(filename: str) -> str:
    marker = "interchange_hub" + os.sep
    if marker in filename:
        return "interchange_hub/" + filename.split(marker, 1)[1]
    return filename.rsplit(os.sep, 2)[-1] if os.sep in filename else filename


# -- import time -------------------------------------------------------------------------------
_IMPORT_BASE = (
    "import time; t = time.perf_counter_ns(); import pluggy, importlib.metadata; "
    "print(time.perf_counter_ns() - t)"
)
_IMPORT_HUB = (
    "import sys, json, time; {pre}t = time.perf_counter_ns(); import interchange_hub; "
    "t = time.perf_counter_ns() - t; heavy = [m for m in {heavy!r} if m in sys.modules]; "
    "u = time.perf_counter_ns(); interchange_hub.Hub(autoload=False).adapters(); "
    "u = time.perf_counter_ns() - u; "
    "print(json.dumps([t, u, heavy, [m for m in {heavy!r} if m in sys.modules]]))"
)


# The first conversion in a fresh interpreter, pyarrow and polars imported and used once
# (their own first-use costs are not the hub's), with the environment's plugins (entry
# points) as a user has them.
_COLD_START = (
    "import json, time, pyarrow as pa, polars as pl; t = pa.table({{'a': [1, 2, 3]}}); "
    "pl.from_arrow(t); s = time.perf_counter_ns(); import interchange_hub as ih; "
    "ih.convert(t, to='polars'); s = time.perf_counter_ns() - s; "
    "print(json.dumps([s, sorted(m for m in {plugins!r} if m in __import__('sys').modules)]))"
)


_REPO_PLUGINS = ("arro3", "dask", "datasets", "duckdb", "jax", "ray", "xarray")


def measure_cold_start(runs: int = 7) -> dict[str, Any]:
    """The first ``ih.convert(pa.table, to="polars")`` in fresh interpreters (medians of
    ``runs``, after one run that compiles the .pyc files), and which plugin modules it
    imported (none: entry points are read on first need)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("INTERCHANGE_HUB_DISABLE_PLUGIN_AUTOLOAD", "PYTHONPROFILEIMPORTTIME")
    }
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    plugins = [f"interchange_hub_{name}" for name in _REPO_PLUGINS]
    code = _COLD_START.format(plugins=plugins)
    root = Path(__file__).resolve().parent.parent

    def run() -> tuple[float, list[str]]:
        done = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env=env,
            cwd=root,
        )
        ns, imported = json.loads(done.stdout.strip().splitlines()[-1])
        return ns / 1e6, imported

    run()
    times, imported = [], set()
    for _ in range(runs):
        ms, found = run()
        times.append(ms)
        imported.update(found)
    return {
        "runs": runs,
        "first_convert_ms": statistics.median(times),
        "plugin_modules_imported": sorted(imported),
    }


def measure_import(runs: int = 10) -> dict[str, Any]:
    """The cost of ``import interchange_hub``, timed inside fresh interpreters.

    Three interpreters per run, alternating (medians of ``runs``): ``import pluggy,
    importlib.metadata`` alone (the required dependencies); ``import interchange_hub``
    cold; and ``import interchange_hub`` after pluggy and importlib.metadata are imported,
    which is the hub's own cost (``overhead_ms``) whether it imports them eagerly or not.
    The cold interpreter also times the first use (``Hub(autoload=False).adapters()``)
    and reports the heavy modules imported by the import and by that first use.
    """
    env = {**os.environ, "INTERCHANGE_HUB_DISABLE_PLUGIN_AUTOLOAD": "1"}
    env.pop("PYTHONPROFILEIMPORTTIME", None)
    cold = _IMPORT_HUB.format(pre="", heavy=HEAVY_MODULES)
    warm = _IMPORT_HUB.format(pre="import pluggy, importlib.metadata; ", heavy=HEAVY_MODULES)

    def run(code: str, *flags: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, *flags, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env=env,
            cwd=Path(__file__).resolve().parent.parent,
        )

    run(cold)  # compile .pyc files first
    base, hub, own, first_use = [], [], [], []
    heavy: set[str] = set()
    heavy_used: set[str] = set()
    for _ in range(runs):
        base.append(int(run(_IMPORT_BASE).stdout) / 1e6)
        t, u, found, found_used = json.loads(run(cold).stdout)
        hub.append(t / 1e6)
        first_use.append(u / 1e6)
        heavy.update(found)
        heavy_used.update(found_used)
        own.append(json.loads(run(warm).stdout)[0] / 1e6)
    return {
        "runs": runs,
        "base_ms": statistics.median(base),
        "hub_ms": statistics.median(hub),
        "overhead_ms": statistics.median(own),
        "first_use_ms": statistics.median(first_use),
        "heavy_modules": sorted(heavy),
        "heavy_after_first_use": sorted(heavy_used),
        "top_modules": _importtime_top(run("import interchange_hub", "-X", "importtime").stderr),
    }


def _importtime_top(stderr: str, top: int = 10) -> list[dict[str, Any]]:
    """The modules with the largest self time in ``python -X importtime`` output."""
    rows: list[dict[str, Any]] = []
    for line in stderr.splitlines():
        m = re.match(r"import time:\s+(\d+)\s+\|\s+(\d+)\s+\|(\s*)(\S+)", line)
        if m:
            rows.append(
                {"module": m[4], "self_ms": int(m[1]) / 1e3, "cumulative_ms": int(m[2]) / 1e3}
            )
    return sorted(rows, key=lambda r: -r["self_ms"])[:top]


# -- targets -------------------------------------------------------------------------------------
def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a and b else None


def evaluate(records: Sequence[dict[str, Any]]) -> None:
    """Annotate each ok record with ``targets``: {name: {"ok": bool, "value": ..., "limit": ...}}."""
    ok = [r for r in records if r["status"] == "ok"]
    by_key = {(r["pair"], r["shape"], r["rows"]): r for r in ok}
    for r in ok:
        targets: dict[str, dict[str, Any]] = {}
        hub = r["hub"]["median_ns"]
        zero = r["verified_zero_copy"]
        mem = r.get("memory", {}).get("hub")
        direct_mem = r.get("memory", {}).get("direct")
        if zero:
            sizes = sorted(rr for (p, s, rr) in by_key if p == r["pair"] and s == r["shape"])
            small = by_key[(r["pair"], r["shape"], sizes[0])]
            scans = r.get("plan_scans") or []
            if r["rows"] == sizes[-1] and len(sizes) > 1 and scans and r["best_direct_ns"]:
                # The plan says the semantics force a scan (pandas' NaN into nulls): O(n)
                # by nature, so it is held to the direct call, which scans as well.
                gbs = r["source_bytes"] / hub
                direct_gbs = r["source_bytes"] / r["best_direct_ns"]
                targets["zero_copy_scaling"] = {
                    "ok": overhead_ok(r),
                    "value": hub / r["best_direct_ns"],
                    "limit": COPY_SPEED_TARGET,
                    "text": f"scans {len(scans)} column(s), as the plan says: {gbs:.1f} GB/s "
                    f"(direct call {direct_gbs:.1f} GB/s)",
                }
            elif r["rows"] == sizes[-1] and len(sizes) > 1 and small["verified_zero_copy"]:
                scale = hub / small["hub"]["median_ns"]
                text = f"t({size_label(r['rows'])})/t({size_label(sizes[0])}) = {scale:.2f}"
                side = r.get("scaling")
                if side and side["rows"] == sizes[0]:
                    # the two sizes timed side by side (measure_scaling): drift left out
                    cells = scale
                    scale = side["hub_ns"] / side["hub_small_ns"]
                    direct = (
                        f"; the direct call's, side by side: "
                        f"{side['direct_ns'] / side['direct_small_ns']:.2f}"
                        if "direct_ns" in side
                        else ""
                    )
                    text = (
                        f"t({size_label(r['rows'])})/t({size_label(sizes[0])}) = {scale:.2f} "
                        f"timed side by side (the cells' medians: {cells:.2f}{direct})"
                    )
                targets["zero_copy_scaling"] = {
                    "ok": scale <= ZERO_COPY_SCALING_TARGET,
                    "value": scale,
                    "limit": ZERO_COPY_SCALING_TARGET,
                    "text": text,
                }
            if mem is not None:
                targets["memory"] = _zero_copy_memory(r, mem, direct_mem)
        else:
            direct = ratio(hub, r["best_direct_ns"])
            if direct is not None:
                targets["vs_direct"] = {
                    "ok": direct <= COPY_SPEED_TARGET,
                    "value": direct,
                    "limit": COPY_SPEED_TARGET,
                    "text": f"hub/direct {direct:.2f}",
                }
                parts = r.get("parts")
                if parts and parts["direct_ns"]:  # (a miss's parts: the two timed again)
                    value = parts["hub_ns"] / parts["direct_ns"]
                    targets["vs_direct"]["again"] = value
                    targets["vs_direct"]["text"] += f"; timed again {value:.2f}"
            for name in ("narwhals", "pandas_route"):
                other = r.get(name)
                if other:
                    value = hub / other["median_ns"]
                    targets[f"vs_{name}"] = {
                        "ok": value <= 1.0,
                        "value": value,
                        "limit": 1.0,
                        "text": f"hub/{name} {value:.2f}",
                    }
                    again = other.get("again")
                    if again and again["other_ns"]:
                        # (timed again, interleaved: whether the miss repeats)
                        value = again["hub_ns"] / again["other_ns"]
                        targets[f"vs_{name}"]["again"] = value
                        targets[f"vs_{name}"]["text"] += f"; timed again {value:.2f}"
            size = result_size(r)
            if mem is not None and size >= COPY_MEMORY_MIN_RESULT:
                rel = mem["peak_extra"] / size
                targets["memory"] = {
                    "ok": rel <= COPY_MEMORY_TARGET,
                    "value": rel,
                    "limit": COPY_MEMORY_TARGET,
                    "text": f"peak extra {rel:.2f}x result"
                    + _direct_memory(direct_mem and f"{direct_mem['peak_extra'] / size:.2f}x"),
                }
        r["targets"] = targets
        r["beats_every_direct"] = bool(r["direct"]) and all(
            hub < d["median_ns"] for d in r["direct"].values()
        )
        r["plan_matches"] = r["plan_zero_copy"] == r["verified_zero_copy"]


def _zero_copy_memory(
    record: dict[str, Any], mem: dict[str, Any], direct_mem: dict[str, Any] | None
) -> dict[str, Any]:
    """The zero-copy memory target: the peak extra memory, less the bytes the result holds
    of its own, under 1 MiB. A verified zero-copy result holds no memory of its own but the
    validity bitmaps its plan's NaN scans make (pandas' missing value into Arrow nulls: a
    bit a row and column, 2.4 MiB for two columns of 1e7 rows, which the direct calls make
    too; ``verified_zero_copy`` allows those bytes and no more): they are the result, not
    what the conversion costs beside it."""
    own = int(record.get("result_new_bytes", 0))
    # (no credit below zero: a peak under the bitmaps' bytes is an allocator's reuse that
    # hid them, which would hide as much of anything else)
    over = max(mem["peak_extra"] - own, 0)
    text = f"peak extra {fmt_bytes(mem['peak_extra'])}"
    if own and over > 0:
        text += f": the result's own {fmt_bytes(own)} of validity bitmaps, {fmt_bytes(over)} more"
    elif own:
        text += f", no more than the result's own {fmt_bytes(own)} of validity bitmaps"
    return {
        "ok": over < ZERO_COPY_MEMORY_TARGET,
        "value": over,
        "limit": ZERO_COPY_MEMORY_TARGET,
        "text": text
        + " (< 1 MiB)"
        + _direct_memory(fmt_bytes(direct_mem["peak_extra"]) if direct_mem else None),
    }


def _direct_memory(shown: str | None) -> str:
    """What a memory target's text adds: the fastest direct call's own peak extra memory,
    measured beside the hub's (``shown`` as the target writes it), where it was measured."""
    return f"; the fastest direct call's: {shown}" if shown else ""


def result_size(record: dict[str, Any]) -> int:
    """The memory a case's result holds: its buffers, and the Python objects its object
    arrays point to (a result of strings in xarray: 8 bytes a pointer and about 55 a
    ``str``; counted only by the peak extra memory before, 15x "the result")."""
    return int(record["result_bytes"] + record.get("result_object_bytes", 0))


def overhead_ok(record: dict[str, Any]) -> bool:
    """The issue's per-call target: the hub costs at most ``OVERHEAD_TARGET_US`` plus
    ``COPY_SPEED_TARGET`` times the fastest direct call (3 us + 5 %)."""
    limit = COPY_SPEED_TARGET * record["best_direct_ns"] + OVERHEAD_TARGET_US * 1e3
    return bool(record["hub"]["median_ns"] <= limit)


# Why a cell misses the headline's ratio, from its parts (``measure_parts``), in order:
# the first that holds names it.
MISS_REASONS: dict[str, str] = {
    "again": "timed again, the hub is within the ratio (the miss did not repeat)",
    "floor": "a bare wrapper of the direct call (no checks) is itself above the ratio (and "
    "the hub within 1 µs or 5% of a wrapper that checks the route key)",
    "checks": "a wrapper that checks the route key, as the hub does each call, is above it "
    "(and the hub within 1 µs or 5% of it)",
    "dispatch": "the kept run is within the ratio: the miss is the hub's dispatch",
    "warns": "the route's steps alone are within the ratio (or no slower than the bare "
    "wrapper): the rest is its warning of lossy columns, on every call (the direct calls "
    "change those values silently)",
    "writes": "the route's steps alone are within the ratio (or no slower than the bare "
    "wrapper): the rest is its check of the call site for the write-through warning, on "
    "every call (the direct calls share the read-only source's memory silently)",
    "cached": "the kept run is slower, and shares the source's memory where the fastest "
    "direct call returns a copy the source cached on its first call (the same memory "
    "every call: O(1) after it, and a second copy of the data)",
    "run": "the kept run is slower than the direct call",
    "unparted": "no parts: planned on each call, or its kept run raised",
}


# The same reasons, said of the overhead target (3 µs + 5 %) where the headline's words
# name its ratio: a wrapper's miss is one above the allowance.
OVERHEAD_REASONS: dict[str, str] = {
    "again": "timed again, the hub is within the allowance (the miss did not repeat)",
    "floor": "a bare wrapper of the direct call (no checks) is itself above the allowance",
    "checks": "a wrapper that checks the route key, as the hub does each call, is above "
    "the allowance (the route key's calls into the source's library)",
    "warns": "without its warning of lossy columns, on every call, the hub's call is within "
    "the allowance",
    "writes": "without its check of the call site for the write-through warning, the hub's "
    "call is within the allowance",
    "cached": "without the kept run's excess over the direct call (which returns a copy the "
    "source cached on its first call), the hub's call is within the allowance",
    "run": "without the kept run's excess over the direct call, the hub's call is within the "
    "allowance",
    "dispatch": "the kept run and the route key together are within the allowance: the "
    "hub's dispatch takes the call above it",
    "several": "no one part alone explains it: the warning's layer, the run's excess, the "
    "route key and the dispatch together take the call above the allowance",
    "unparted": MISS_REASONS["unparted"],
}


# A wrapper adds a few µs to a call at most (the bare one 0.2 µs, the keyed one its route
# key and about as much again); a larger excess over the direct call, in calls of
# milliseconds, is noise between the samples and explains nothing.
WRAPPER_MAX_NS = 10_000


# The hub's call explains no more than the keyed wrapper's when it is within this much of
# it (or within the headline's ratio of it): beyond, the excess is the hub's own, even
# where a wrapper misses too (1,000 rows with nulls into numpy: the keyed wrapper 1.05x
# the direct call, the hub 1.36x, the lossy warnings 2.3 us of its 5).
WRAPPER_EXPLAINS_NS = 1_000


def wrapper_misses(record: dict[str, Any], slack_ns: float = 0.0) -> str | None:
    """``"floor"`` where a bare wrapper of the direct call is itself above the headline's
    ratio, ``"checks"`` where a wrapper that checks the route key is (None otherwise, or
    where the parts were timed without the wrappers): a cell no hub written in Python
    that checks each call reaches in this run, whatever its own time. ``slack_ns``: the
    per-call allowance's fixed part, for the overhead target (3 µs + 5 %)."""
    parts = record.get("parts")
    if not parts:
        return None
    direct = parts["direct_ns"]
    limit = COPY_SPEED_TARGET * direct + slack_ns
    for reason, name in (("floor", "floor_ns"), ("checks", "keyed_ns")):
        wrapped = parts.get(name, 0.0)
        if limit < wrapped <= direct + WRAPPER_MAX_NS:
            return reason
    return None


def miss_reason(record: dict[str, Any], slack_ns: float = 0.0) -> str | None:
    """The key of ``MISS_REASONS`` that explains a cell above the headline's ratio (None
    for a cell within it). The parts' calls were timed together, interleaved, so each
    test compares calls of one sample; records from before the wrappers were timed have
    no ``floor_ns``, and go to the later reasons. A wrapper's miss explains the cell only
    where the hub's call is within :data:`WRAPPER_EXPLAINS_NS` (or the ratio) of the
    keyed wrapper's; a hub slower than that is explained by its own parts. A kept run
    that is a warning's layer explains its miss by the warning only where its steps,
    timed alone (``steps_ns``), are within the ratio or the bare wrapper's time; records
    from before the steps were timed blame the lossy warnings for any slower run.
    ``slack_ns``: the same for the overhead target (the ratio plus that many ns: a cell
    above 3 µs + 5 %, with ``OVERHEAD_TARGET_US``)."""
    target = COPY_SPEED_TARGET
    if record["hub"]["median_ns"] <= target * record["best_direct_ns"] + slack_ns:
        return None
    parts = record.get("parts")
    if not parts:
        return "unparted"
    limit = target * parts["direct_ns"] + slack_ns
    if parts["hub_ns"] <= limit:  # (first: a miss that did not repeat needs no wrapper)
        return "again"
    floor = wrapper_misses(record, slack_ns)
    if floor is not None:
        keyed = parts.get("keyed_ns", parts.get("floor_ns", 0.0))  # (both, where timed)
        if parts["hub_ns"] <= max(keyed + WRAPPER_EXPLAINS_NS, target * keyed):
            return floor
    # A slower run: a view where the direct call gives a copy it cached, or the run's own
    slower = "cached" if record.get("direct_cached") and record["verified_zero_copy"] else "run"
    steps = parts.get("steps_ns")
    if slack_ns:  # the allowance: the part whose removal brings the hub's call within it
        hub, run = parts["hub_ns"], parts["run_ns"]
        if steps is None and record.get("plan_losses"):  # (a record from before the steps
            return "warns"  # were timed: as the headline's reasons say of it)
        if steps is not None and hub - (run - steps) <= limit:
            return "warns" if record.get("plan_losses") else "writes"
        if run > target * parts["direct_ns"] and hub - run + parts["direct_ns"] <= limit:
            return slower
        if run + parts["key_ns"] <= limit:  # all but the dispatch within the allowance
            return "dispatch"
        return "several"
    if parts["run_ns"] <= limit:
        return "dispatch"
    if steps is None:  # no warning's layer (or a record from before the steps were timed)
        return "warns" if record.get("plan_losses") else slower
    bare = parts.get("floor_ns", 0.0)  # (the steps are called through a frame, as it is)
    if steps <= max(limit, bare if bare <= parts["direct_ns"] + WRAPPER_MAX_NS else 0.0):
        return "warns" if record.get("plan_losses") else "writes"
    return slower


def builtin_pair(record: dict[str, Any]) -> bool:
    """Whether a case's source and target are both built-in adapters' libraries."""
    return record["src"] in BUILTIN_LIBRARIES and target_of(record["dst"])[0] in BUILTIN_LIBRARIES


def headline(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The wave's headline: how many cells are within 1.05x of the fastest direct call,
    how many above 1.5x, and the cells where a direct call shares memory the hub copies."""
    cells = [r for r in records if r["status"] == "ok" and r["best_direct_ns"]]
    ratios = [(r["hub"]["median_ns"] / r["best_direct_ns"], r) for r in cells]
    within = [r for q, r in ratios if q <= COPY_SPEED_TARGET]
    above = sorted(((q, r) for q, r in ratios if q > HEADLINE_CAP), key=lambda x: -x[0])
    lost = [r for r in cells if not r["verified_zero_copy"] and r.get("direct_zero_copy")]
    builtin = [r for r in cells if builtin_pair(r)]
    reasons: dict[str, list[dict[str, Any]]] = {}
    for r in cells:
        reason = miss_reason(r)
        if reason is not None:
            reasons.setdefault(reason, []).append(r)
    unreachable = sum(wrapper_misses(r) is not None for m in reasons.values() for r in m)
    # the same for the overhead target: the cells above 3 us + 5 %, by what explains each
    slack = OVERHEAD_TARGET_US * 1e3
    overhead_reasons: dict[str, list[dict[str, Any]]] = {}
    for r in cells:
        reason = miss_reason(r, slack)
        if reason is not None:
            overhead_reasons.setdefault(reason, []).append(r)
    return {
        "cells": len(cells),
        # (what a hub in Python that checks each call can reach at most in this run)
        "reachable": len(cells) - unreachable,
        "within": len(within),
        "reasons": reasons,
        "overhead_reasons": overhead_reasons,
        "overhead_ok": sum(overhead_ok(r) for r in cells),
        "builtin": len(builtin),
        "builtin_overhead_ok": sum(overhead_ok(r) for r in builtin),
        "above_cap": above,
        "zero_copy_lost": lost,
        "ok": bool(cells) and len(within) >= HEADLINE_SHARE * len(cells) and not above and not lost,
    }


def size_label(n: int) -> str:
    """1e3 for 1000, 1e7 for 10_000_000; other counts with separators."""
    exp = math.log10(n) if n > 0 else 0.5
    return f"1e{exp:.0f}" if exp.is_integer() else f"{n:,}"


def fmt_bytes(n: float | None) -> str:
    if n is None:
        return "-"
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"


# -- running everything ------------------------------------------------------------------------
def environment() -> dict[str, Any]:
    versions = {}
    plugin_dists = [f"interchange-hub-{lib}" for lib in PLUGINS]
    extra = ["jaxlib"] if "jax" in PLUGINS else []
    names = ("interchange-hub", "pluggy", *LIBRARIES, *extra, *plugin_dists)
    for name in (*names, "narwhals", "matplotlib"):
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            versions[name] = importlib.metadata.version(name)
    commit, dirty = None, None
    root = Path(__file__).resolve().parent.parent
    with contextlib.suppress(OSError, subprocess.CalledProcessError):
        commit = _git(root, "rev-parse", "HEAD").strip()
        # Uncommitted changes to the measured code make a run hard to reproduce: name them.
        dirty = _git(root, "status", "--porcelain", "--", "interchange_hub").splitlines()
    return {
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "commit": commit,
        "uncommitted": dirty,
        "versions": versions,
        "libraries": list(LIBRARIES),
        # Plugin libraries not measured here, and why (not installed, or the plugin broke).
        "skipped_libraries": dict(SKIPPED_LIBRARIES),
        "arrow_pool": pa.default_memory_pool().backend_name,
        # Other work on the machine skews times: the 1-minute load average at the start.
        "loadavg": round(os.getloadavg()[0], 2),
    }


def prepare() -> None:
    """Load the hub's plugins, then freeze the objects alive now out of the collector's
    reach: with torch and pandas imported a full collection costs ~0.1 s, and the memory
    measurements collect before every call."""
    HUB.adapters()
    gc.collect()
    gc.freeze()


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], capture_output=True, text=True, check=True, cwd=root
    ).stdout


def run_all(
    sizes: Sequence[int],
    settings: Settings,
    shapes: Sequence[str] = SHAPES,
    pairs: Sequence[tuple[str, str]] | None = None,
    dispatch: bool = True,
    imports: bool = True,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run the benchmark; the result is what ``results.json`` holds."""
    started = time.perf_counter()
    prepare()
    cases = plan_cases(sizes, shapes, pairs)
    results: dict[str, Any] = {
        "meta": {
            **environment(),
            "sizes": list(sizes),
            "shapes": {s: SHAPE_DOC[s] for s in shapes},
            "settings": settings.__dict__.copy(),
        }
    }
    results["cases"] = run_matrix(cases, settings, progress)
    evaluate(results["cases"])
    if dispatch:
        if progress:
            progress("dispatch overhead on tiny inputs ...")
        results["dispatch"] = measure_dispatch(settings)
        worst = max(results["dispatch"], key=lambda d: d["overhead_us"], default=None)
        if worst is not None and worst["overhead_us"] > DISPATCH_TARGET_US:
            src, dst = worst["pair"].split(":")
            results["dispatch_profile"] = profile_dispatch(
                src, dst, worst["shape"], calls=2_000 if settings.budget_s < 0.1 else 20_000
            )
    if imports:
        if progress:
            progress("import time in fresh interpreters ...")
        results["import"] = measure_import(settings.import_runs)
        results["cold_start"] = measure_cold_start()
    results["meta"]["duration_s"] = round(time.perf_counter() - started, 1)
    results["meta"]["loadavg_end"] = round(os.getloadavg()[0], 2)
    return results


def save(results: dict[str, Any], path: Path) -> None:
    path.write_text(json.dumps(results, indent=1, default=str) + "\n")


def load(path: Path | str) -> dict[str, Any]:
    results: dict[str, Any] = json.loads(Path(path).read_text())
    return results


def ok_cases(results: dict[str, Any]) -> Iterator[dict[str, Any]]:
    return (r for r in results["cases"] if r["status"] == "ok")


@dataclass
class Comparison:
    """Hub medians per (pair, shape, size) against a baseline."""

    regressions: list[dict[str, Any]] = field(default_factory=list)
    improvements: list[dict[str, Any]] = field(default_factory=list)
    unchanged: int = 0
    missing: list[str] = field(default_factory=list)
    # Cases the baseline has no measurement of (a library or shape added since): listed,
    # never a regression.
    new: list[str] = field(default_factory=list)
    new_libraries: list[str] = field(default_factory=list)  # in no baseline case
    # Cases that looked regressed against the baseline but not against the baseline's
    # commit measured on this machine (``apply_recheck``), each with ``recheck_then`` and
    # ``recheck_now``, the two ratios measured here.
    cleared: list[dict[str, Any]] = field(default_factory=list)
    recheck_commit: str | None = None
    recheck_error: str | None = None


def case_key(case: dict[str, Any]) -> str:
    return f"{case['pair']}/{case['shape']}/{case['rows']}"


def apply_recheck(cmp: Comparison, recheck: dict[str, Any] | None) -> None:
    """Move the regressions that the same-machine measurement of the baseline's commit
    clears (``run.py``'s ``_recheck``: ``{"commit", "cases": {key: {"then", "now",
    "regressed"}}, "error"}``) to ``cmp.cleared``; a case it did not measure stays."""
    if not recheck:
        return
    cmp.recheck_commit, cmp.recheck_error = recheck.get("commit"), recheck.get("error")
    kept = []
    for row in cmp.regressions:
        seen = recheck.get("cases", {}).get(case_key(row))
        if seen is None or seen["regressed"]:
            kept.append(row)
        else:
            cmp.cleared.append({**row, "recheck_then": seen["then"], "recheck_now": seen["now"]})
    cmp.regressions = kept


def compare(
    current: dict[str, Any],
    baseline: dict[str, Any],
    threshold: float = REGRESSION_THRESHOLD,
    absolute: bool = False,
    floor_ns: float = REGRESSION_FLOOR_NS,
) -> Comparison:
    """Flag cases whose hub ÷ best-direct ratio grew more than ``threshold`` over the
    baseline's (the ratio is timed interleaved in one process, so it travels between
    machines where absolute times do not), whose hub median grew more than ``threshold``
    too (not only the direct call's got faster) and is more than ``floor_ns`` above what
    the baseline's ratio predicts (``excess_ns``). A case without a direct
    call compares hub medians. ``absolute``: compare hub medians everywhere (same
    machine, same load).
    """
    base = {(r["pair"], r["shape"], r["rows"]): r for r in ok_cases(baseline)}
    result = Comparison()
    for r in ok_cases(current):
        key = (r["pair"], r["shape"], r["rows"])
        old = base.pop(key, None)
        if old is None:
            result.new.append(f"{r['pair']}/{r['shape']}/{r['rows']}")
            continue
        change = r["hub"]["median_ns"] / old["hub"]["median_ns"] - 1
        direct_change = None
        if r["best_direct_ns"] and old["best_direct_ns"]:
            direct_change = r["best_direct_ns"] / old["best_direct_ns"] - 1
        row = {
            "pair": r["pair"],
            "shape": r["shape"],
            "rows": r["rows"],
            "baseline_ns": old["hub"]["median_ns"],
            "current_ns": r["hub"]["median_ns"],
            "change": change,
            "direct_change": direct_change,
            "baseline_ratio": ratio(old["hub"]["median_ns"], old["best_direct_ns"]),
            "current_ratio": ratio(r["hub"]["median_ns"], r["best_direct_ns"]),
        }
        row["relative_change"] = None
        if direct_change is not None:
            row["relative_change"] = (1 + change) / (1 + direct_change) - 1
        by_ratio = not absolute and row["relative_change"] is not None
        measure = row["relative_change"] if by_ratio else change
        expected = (
            old["hub"]["median_ns"] / old["best_direct_ns"] * r["best_direct_ns"]
            if by_ratio
            else old["hub"]["median_ns"]
        )
        row["excess_ns"] = r["hub"]["median_ns"] - expected
        # By ratio, the hub's own median must have grown too: a ratio that grew only
        # because the direct call got faster (pyarrow's threaded to_pandas: 78 to 183 us
        # for one 1,000-row table, run to run) is no regression of the hub.
        grew = not by_ratio or change > threshold
        if measure > threshold and grew and row["excess_ns"] > floor_ns:
            result.regressions.append(row)
        elif measure < -threshold and -row["excess_ns"] > floor_ns:
            result.improvements.append(row)
        else:
            result.unchanged += 1
    result.missing = [f"{p}/{s}/{n}" for p, s, n in base]
    known = {lib for r in baseline["cases"] for lib in (r["src"], r["dst"])}
    current_libs = {lib for r in current["cases"] for lib in (r["src"], r["dst"])}
    result.new_libraries = sorted(current_libs - known)
    key_of = "change" if absolute else "relative_change"
    result.regressions.sort(key=lambda r: -(r[key_of] if r[key_of] is not None else r["change"]))
    result.improvements.sort(key=lambda r: r[key_of] if r[key_of] is not None else r["change"])
    return result
