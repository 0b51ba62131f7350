"""10,000 conversions leak neither Arrow memory nor process memory.

The conversions run in a fresh subprocess (``python -m tests.test_leaks``), so that what
other tests allocated or cached does not blur the numbers. After a warm-up that fills
every cache (plan cache, fast path, the libraries' own), the worker converts a mix of
pairs 10,000 times, deletes the results, collects garbage and checks that
``pyarrow.total_allocated_bytes()`` is back where it was and that the resident set
(``/proc/self/statm``) grew by less than 20 MB. A leaked result of the smallest source
here (8 KB) would add 80 MB.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CONVERSIONS = 10_000
WARM_UP = 600
RSS_LIMIT = 20 * 2**20


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def pairs() -> list[tuple[str, Callable[[], Any], Callable[[Any], Any]]]:
    """(name, a source (fresh, or shared and left alone), the conversion)."""
    import nanoarrow as na
    import numpy as np
    import pandas as pd
    import polars as pl
    import pyarrow as pa
    import torch

    import interchange_hub as ih

    hub = ih.Hub(autoload=False)
    rng = np.random.default_rng(7)
    rows = 2_000
    floats = rng.standard_normal((rows, 4))
    table = pa.table(
        {
            "i": pa.array(rng.integers(-(10**9), 10**9, rows)),
            "f": pa.array(rng.standard_normal(rows)),
            "g": pa.array(rng.standard_normal(rows)),
            "s": pa.array([f"s{i}" for i in rng.integers(0, 10**6, rows)]),
            "n": pa.array(rng.integers(0, 100, rows), mask=rng.random(rows) < 0.2),
        }
    )
    numeric = table.select(["f", "g"])
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)
    pandas_frame = table.to_pandas()
    tensor = torch.from_numpy(floats.copy())
    column = table.column("f").combine_chunks()

    def convert(to: object, **kw: Any) -> Callable[[Any], Any]:
        return lambda obj: hub.convert(obj, to, **kw)

    def reader(data: pa.Table = table) -> pa.RecordBatchReader:
        return pa.RecordBatchReader.from_batches(data.schema, data.to_batches(max_chunksize=500))

    def collect_lazy(obj: Any) -> Any:
        out = hub.convert(obj, pl.LazyFrame)
        return out.collect()

    return [
        ("numpy->torch", lambda: floats, convert("torch")),
        ("torch->numpy", lambda: tensor, convert("numpy")),
        ("numpy->torch copy", lambda: floats, convert("torch", copy=True)),
        ("torch->pyarrow", lambda: tensor, convert("pyarrow")),
        ("pyarrow->polars", lambda: table, convert("polars")),
        ("polars->pyarrow", lambda: frame, convert("pyarrow")),
        ("pandas->pyarrow", lambda: pandas_frame, convert("pyarrow")),
        ("pyarrow->pandas", lambda: table, convert("pandas")),
        ("polars->numpy", lambda: frame.select("f", "g"), convert("numpy")),
        ("pyarrow->numpy", lambda: numeric, convert("numpy")),
        ("pyarrow->nanoarrow", lambda: table, convert("nanoarrow")),
        ("nanoarrow->polars", lambda: na.Array(table), convert("polars")),
        ("pyarrow->pyarrow copy", lambda: table, convert(pa.Table, copy=True)),
        ("column->torch", lambda: column, convert("torch")),
        ("column->pandas", lambda: column, convert(pd.Series)),
        ("reader->polars", reader, collect_lazy),
        ("reader->numpy", lambda: reader(table.select(["i", "n"])), convert("numpy")),
    ]


def worker() -> dict[str, Any]:
    import warnings

    import pyarrow as pa

    import interchange_hub as ih

    warnings.simplefilter("ignore", ih.LossyConversionWarning)  # reader->numpy: nulls -> NaN
    warnings.simplefilter("ignore", ih.WriteThroughWarning)  # torch views of Arrow memory
    mix = pairs()
    results: list[Any] = []

    def run(n: int) -> None:
        for i in range(n):
            _, source, conversion = mix[i % len(mix)]
            results.append(conversion(source()))
            if len(results) >= 50:  # hold a few results at once, as real code does
                results.clear()
        results.clear()

    run(WARM_UP)
    gc.collect()
    arrow_before, rss_before = pa.total_allocated_bytes(), rss_bytes()
    start = time.perf_counter()
    run(CONVERSIONS)
    seconds = time.perf_counter() - start
    gc.collect()
    return {
        "arrow_before": arrow_before,
        "arrow_after": pa.total_allocated_bytes(),
        "rss_before": rss_before,
        "rss_after": rss_bytes(),
        "seconds": seconds,
        "pairs": [name for name, _, _ in mix],
    }


def in_fresh_process(*argv: str) -> Any:
    """What ``python -m tests.test_leaks *argv`` measured (its last line, as JSON)."""
    run = subprocess.run(
        [sys.executable, "-m", "tests.test_leaks", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_ten_thousand_conversions_leak_nothing() -> None:
    found = in_fresh_process()
    growth = found["rss_after"] - found["rss_before"]
    print(
        f"{CONVERSIONS} conversions of {len(found['pairs'])} pairs in {found['seconds']:.1f} s: "
        f"Arrow {found['arrow_before']} -> {found['arrow_after']} bytes, "
        f"RSS +{growth / 2**20:.1f} MiB"
    )
    assert found["arrow_after"] == found["arrow_before"], found
    assert growth < RSS_LIMIT, f"RSS grew by {growth / 2**20:.1f} MiB: {found}"


def leaky_worker() -> dict[str, int]:
    """What the leak check measures when 2,000 copies (16 MB) are kept alive."""
    import numpy as np
    import pyarrow as pa

    import interchange_hub as ih

    hub = ih.Hub(autoload=False)
    source = pa.table({"x": np.arange(1_000.0)})
    gc.collect()
    before, rss = pa.total_allocated_bytes(), rss_bytes()
    kept = [hub.convert(source, pa.Table, copy=True) for _ in range(2_000)]
    found = {"arrow": pa.total_allocated_bytes() - before, "rss": rss_bytes() - rss}
    del kept
    return found


def test_the_leak_check_sees_a_leak() -> None:
    """The measurement itself: keeping the results alive is seen (else the test is blind).
    In a fresh process, as the check itself runs: in the test process the allocator may
    hand back pages other tests freed, and the resident set need not grow."""
    found = in_fresh_process("leaky")
    assert found["arrow"] >= 2_000 * 8_000, found
    assert found["rss"] >= RSS_LIMIT / 2, found  # 16 MB of copies show in the resident set


if __name__ == "__main__":
    print(json.dumps(leaky_worker() if sys.argv[1:] == ["leaky"] else worker()))
