"""Concurrent conversions through one hub give correct results and no errors.

Eight threads start together (a ``threading.Barrier``) on a fresh ``Hub(autoload=False)``,
whose plugins load lazily on the first call: the first calls race on that loading, on the
route cache and on the fast path's remembered routes. Each thread makes its own random
data (never shared), converts it through several pairs and kinds (tables, columns, 2-D
and 1-D tensors, a stream, copy=True) and checks the values against its own expectation.
A tiny thread switch interval makes the interleavings dense. The default hub, created
lazily by ``ih.convert``, is raced the same way in a fresh interpreter.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import nanoarrow as na
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import torch

import interchange_hub as ih

ROOT = Path(__file__).resolve().parents[1]
THREADS = 8
ROUNDS = 24  # conversions per thread (each a different task of the list below, in turn)

Task = tuple[str, Any, object, dict[str, Any], Callable[[Any], Any], Any]


def tasks(rng: np.random.Generator) -> list[Task]:
    """(name, source, to, options, read(result), expected) with fresh random data."""
    n = int(rng.integers(1, 300))
    dtype = rng.choice(["float64", "float32", "int64", "int32", "int16", "uint8"])
    ints = rng.integers(-(10**9), 10**9, n)
    floats = rng.standard_normal(n) * 1000
    strings = [f"s{v}" for v in rng.integers(0, 10**6, n)]
    matrix = (rng.standard_normal((n, 3)) * 100).astype(dtype)
    table = pa.table({"i": ints, "f": floats, "s": strings})
    expected_table = table.to_pydict()
    numeric = pa.table({"a": matrix[:, 0], "b": matrix[:, 1], "c": matrix[:, 2]})

    def rows(obj: Any) -> Any:
        return obj.tolist() if isinstance(obj, np.ndarray) else obj.numpy().tolist()

    def reader() -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=64))

    return [
        ("numpy->torch", matrix, "torch", {}, rows, matrix.tolist()),
        ("torch->numpy", torch.from_numpy(matrix.copy()), "numpy", {}, rows, matrix.tolist()),
        ("numpy->pyarrow", np.asfortranarray(matrix), pa.Table, {}, _columns, matrix.T.tolist()),
        ("pyarrow->numpy", numeric, "numpy", {}, rows, matrix.tolist()),
        ("pyarrow->polars", table, "polars", {}, _polars_dict, expected_table),
        ("polars->pandas", pl.from_arrow(table), "pandas", {}, _pandas_dict, expected_table),
        ("pandas->pyarrow", table.to_pandas(), "pyarrow", {}, _arrow_dict, expected_table),
        ("pyarrow->nanoarrow", table, "nanoarrow", {}, _nanoarrow_dict, expected_table),
        ("nanoarrow->polars", na.Array(table), pl.DataFrame, {}, _polars_dict, expected_table),
        ("series->torch", pl.Series("f", floats), "torch", {}, rows, floats.tolist()),
        ("column->pandas", pa.array(strings), pd.Series, {}, _list, strings),
        ("torch->pyarrow", torch.from_numpy(ints.copy()), "pyarrow", {}, _list, ints.tolist()),
        ("pyarrow->pyarrow copy", table, pa.Table, {"copy": True}, _arrow_dict, expected_table),
        ("numpy->torch copy", matrix, "torch", {"copy": True}, rows, matrix.tolist()),
        ("reader->polars", reader(), "polars", {}, _polars_dict, expected_table),
        ("reader->pandas", reader(), "pandas", {}, _pandas_dict, expected_table),
    ]


def _list(obj: Any) -> Any:
    return obj.tolist() if isinstance(obj, pd.Series) else obj.to_pylist()


def _columns(table: pa.Table) -> list[list[Any]]:
    return [c.to_pylist() for c in table.columns]


def _arrow_dict(table: pa.Table) -> Any:
    return table.to_pydict()


def _polars_dict(frame: pl.DataFrame) -> dict[str, list[Any]]:
    return frame.to_dict(as_series=False)


def _lazy_dict(frame: pl.LazyFrame) -> dict[str, list[Any]]:
    return frame.collect().to_dict(as_series=False)


def _pandas_dict(frame: pd.DataFrame) -> dict[str, list[Any]]:
    return {str(k): v for k, v in frame.to_dict(orient="list").items()}


def _nanoarrow_dict(arr: na.Array) -> Any:
    return pa.Table.from_struct_array(pa.chunked_array(arr)).to_pydict()


@contextmanager
def dense_switching() -> Iterator[None]:
    """Switch threads every microsecond, so that races show."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def run_threads(convert: Callable[..., Any], seed: int) -> tuple[list[str], int]:
    """(failures, conversions checked) of THREADS threads converting through ``convert``."""
    barrier = threading.Barrier(THREADS)
    failures: list[str] = []
    done = [0] * THREADS

    def work(index: int) -> None:
        rng = np.random.default_rng([seed, index])
        try:
            batch = tasks(rng)
            barrier.wait(timeout=60)
            for step in range(ROUNDS):
                if step and step % len(batch) == 0:
                    batch = tasks(rng)  # fresh data (and fresh one-shot readers)
                # Each thread starts at another task, so that different pairs race.
                name, src, to, options, read, expected = batch[(index + step) % len(batch)]
                try:
                    got = read(convert(src, to, **options))
                except Exception:  # noqa: BLE001 - every failure is reported
                    failures.append(f"thread {index}, {name}:\n{traceback.format_exc()}")
                    continue
                if got != expected:
                    failures.append(f"thread {index}, {name}: wrong values")
                done[index] += 1
        except threading.BrokenBarrierError:
            failures.append(f"thread {index}: the barrier broke")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(THREADS)]
    with dense_switching():
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    return failures, sum(done)


def test_threads_race_on_a_fresh_hub() -> None:
    for seed in range(3):  # each round a new hub: the lazy loading races again
        hub = ih.Hub(autoload=False)
        failures, checked = run_threads(hub.convert, seed)
        assert not failures, "\n".join(failures[:5])
        assert checked == THREADS * ROUNDS


def test_threads_share_the_route_cache_of_a_warm_hub() -> None:
    hub = ih.Hub(autoload=False)
    for name, src, to, options, read, expected in tasks(np.random.default_rng(99)):
        assert read(hub.convert(src, to, **options)) == expected, name
    failures, checked = run_threads(hub.convert, seed=7)
    assert not failures, "\n".join(failures[:5])
    assert checked == THREADS * ROUNDS


DEFAULT_HUB_SCRIPT = """
import sys, threading
sys.path.insert(0, {root!r})
import interchange_hub as ih
assert "interchange_hub.hub" not in sys.modules  # nothing loaded before the race
from tests.test_threads import run_threads, THREADS, ROUNDS
hubs = []
def convert(src, to, **options):
    hubs.append(ih.default_hub())
    return ih.convert(src, to, **options)
failures, checked = run_threads(convert, seed=11)
assert not failures, "\\n".join(failures[:5])
assert checked == THREADS * ROUNDS, checked
assert len({{id(h) for h in hubs}}) == 1, "threads saw different default hubs"
print("ok", checked)
"""


def test_default_hub_races_in_a_fresh_interpreter() -> None:
    # The default hub loads the installed plugins too (entry points): they race as well.
    env = {k: v for k, v in os.environ.items() if k != "INTERCHANGE_HUB_DISABLE_PLUGIN_AUTOLOAD"}
    run = subprocess.run(
        [sys.executable, "-c", DEFAULT_HUB_SCRIPT.format(root=str(ROOT))],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    assert run.stdout.startswith("ok"), run.stdout
