"""The distributed cases: partition-wise conversion on Dask and Ray against the engines' own ways.

    python benchmarks/engines.py                  # 8 partitions of 1e6 rows (a few minutes)
    python benchmarks/engines.py --quick          # 8 partitions of 1e5 rows, fewer repeats
    python benchmarks/engines.py --engines dask --rows 2e6

It starts what the tests start: a ``distributed.LocalCluster`` of two worker processes
(one thread each) and ``ray.init(num_cpus=2)``, makes 8 partitions of two float64 columns
and an int64 column on the workers, and times, as medians over ``--repeat`` runs:

- each conversion through the hub (``ih.convert(collection, to=...)`` then ``.compute()``)
  against what a user of the engine writes for the same result (``to_dask_array``, the
  partitions' own ``pl.from_pandas``/``pa.Table.from_pandas`` as delayed tasks,
  ``map_batches(batch_format=...)``, ``pl.from_arrow`` of the blocks): the ratio is
  hub ÷ engine, in one process, each pair interleaved;
- the time to the first batch of ``ih.iter_batches(..., to="torch", as_dict=True)`` against
  Ray's ``iter_torch_batches`` and a loop over Dask's partitions, and the time of the whole
  pass;
- how many bytes of each partition the hub's result shares, measured by buffer address on
  the worker that converted it (``Partitioned.plan``), and of each of Ray's torch batches.

Writes ``engines.json`` and ``engines.md`` to --out and prints the table. Exit
status 0, 1 when a hub conversion raised, 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import platform
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import pyarrow as pa

import interchange_hub as ih

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

HERE = Path(__file__).resolve().parent
PARTITIONS = 8


def make_partition(i: int, rows: int) -> pd.DataFrame:
    """Partition ``i``: made where it is computed (on a worker), never on the client."""
    rng = np.random.default_rng(i)
    start = i * rows
    return pd.DataFrame(
        {
            "x": rng.random(rows),
            "y": rng.random(rows),
            "n": np.arange(start, start + rows, dtype=np.int64),
        }
    )


def make_block(i: int, rows: int) -> pa.Table:
    return pa.Table.from_pandas(make_partition(i, rows), preserve_index=False)


def _median(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times = []
    result = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
        del result
        result = None
    return statistics.median(times), result


def _pair(hub_fn: Callable[[], Any], direct_fn: Callable[[], Any], repeat: int) -> dict[str, Any]:
    """Hub and direct call, interleaved (which goes first alternates), with a collection
    before each run; medians and the ratio."""
    hub_fn()  # warm: plugins, imports, the worker's first conversion
    direct_fn()
    times: dict[str, list[float]] = {"hub": [], "direct": []}
    for i in range(repeat):
        order = [("hub", hub_fn), ("direct", direct_fn)]
        for name, fn in order if i % 2 == 0 else order[::-1]:
            gc.collect()
            start = time.perf_counter()
            out = fn()
            times[name].append(time.perf_counter() - start)
            del out
    hub_s, direct_s = statistics.median(times["hub"]), statistics.median(times["direct"])
    best_hub, best_direct = min(times["hub"]), min(times["direct"])
    return {
        "hub_s": hub_s,
        "direct_s": direct_s,
        "ratio": hub_s / direct_s,
        "best_ratio": best_hub / best_direct,
    }


def _first_batches(make: Callable[[], Iterable[Any]], repeat: int) -> tuple[float, float, int]:
    """Medians over ``repeat`` fresh iterators of :func:`_first_batch`."""
    runs = [_first_batch(make()) for _ in range(repeat)]
    return (
        statistics.median(r[0] for r in runs),
        statistics.median(r[1] for r in runs),
        runs[0][2],
    )


def _first_batch(batches: Iterable[Any]) -> tuple[float, float, int]:
    """Seconds to the first batch, seconds for the whole pass, and the batch count."""
    start = time.perf_counter()
    first = None
    count = 0
    for _batch in batches:
        if first is None:
            first = time.perf_counter() - start
        count += 1
    return first or 0.0, time.perf_counter() - start, count


# -- Dask -----------------------------------------------------------------------------------
def dask_cases(rows: int, repeat: int, batch_size: int) -> list[dict[str, Any]]:
    import dask
    import dask.dataframe as dd
    import distributed
    import polars as pl
    import torch

    cases: list[dict[str, Any]] = []
    started = time.perf_counter()
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,  # no dashboard, and its HTTP server (health
        # checks) on a free port, not 8787: another cluster on this machine may hold it
        scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},
        worker_dashboard_address=None,
        silence_logs=logging.ERROR,
    )
    client = distributed.Client(cluster)
    startup = time.perf_counter() - started
    try:
        ddf = dd.from_map(make_partition, range(PARTITIONS), rows=rows).persist()
        distributed.wait(ddf)
        parts = ddf.to_delayed()

        def by_hand(fn: Callable[[Any], Any]) -> list[Any]:
            return list(dask.compute(*[dask.delayed(fn)(p) for p in parts]))

        def torch_dict(p: pd.DataFrame) -> dict[str, Any]:
            return {c: torch.from_numpy(p[c].to_numpy()) for c in p.columns}

        def join_dicts(dicts: list[dict[str, Any]]) -> dict[str, Any]:
            return {k: torch.cat([d[k] for d in dicts]) for k in dicts[0]}

        table = [
            ("polars", "partitions' pl.from_pandas, pl.concat",
             lambda: ih.convert(ddf, to="polars").compute(),
             lambda: pl.concat(by_hand(pl.from_pandas), rechunk=False)),
            ("pyarrow", "partitions' pa.Table.from_pandas, concat_tables",
             lambda: ih.convert(ddf, to="pyarrow").compute(),
             lambda: pa.concat_tables(by_hand(
                 lambda p: pa.Table.from_pandas(p, preserve_index=False)))),
            ("numpy", "ddf.to_dask_array().compute()",
             lambda: ih.convert(ddf, to="numpy").compute(),
             lambda: ddf.to_dask_array().compute()),
            ("torch as_dict", "partitions' torch.from_numpy per column, torch.cat",
             lambda: ih.convert(ddf, to="torch", as_dict=True).compute(),
             lambda: join_dicts(by_hand(torch_dict))),
            ("pandas: the noise floor (the hub returns ddf itself)", "ddf.compute()",
             lambda: ih.convert(ddf, to="pandas").compute(),
             lambda: ddf.compute()),
        ]  # fmt: skip
        for target, direct, hub_fn, direct_fn in table:
            case = {"engine": "dask", "target": target, "direct": direct}
            case.update(_pair(hub_fn, direct_fn, repeat))
            cases.append(case)
        # The evidence from the workers: persisted, each worker converts and checks.
        plan = ih.convert(ddf, to="polars").persist().plan
        evidence = {
            "shared_bytes": plan.shared_bytes,
            "source_bytes": plan.source_bytes,
            "workers": list(plan.workers),
            "plan": str(plan),
        }
        first, whole, count = _first_batches(
            lambda: ih.iter_batches(ddf, to="torch", batch_size=batch_size, as_dict=True), repeat
        )
        d_first, d_whole, _ = _first_batches(
            lambda: (torch_dict(p.compute()) for p in ddf.to_delayed()), repeat
        )
        cases.append(
            {
                "engine": "dask",
                "target": f"iter_batches torch as_dict, batch_size={batch_size}",
                "direct": "a loop over the partitions, torch.from_numpy per column",
                "hub_s": first,
                "direct_s": d_first,
                "ratio": first / d_first if d_first else float("nan"),
                "first_batch": True,
                "pass_hub_s": whole,
                "pass_direct_s": d_whole,
                "batches": count,
            }
        )
        cases.append({"engine": "dask", "evidence": evidence, "startup_s": startup})
    finally:
        client.close()
        cluster.close()
    return cases


# -- Ray ------------------------------------------------------------------------------------
def ray_cases(rows: int, repeat: int, batch_size: int) -> list[dict[str, Any]]:
    import interchange_hub_ray
    import polars as pl
    import ray
    import torch

    started = time.perf_counter()
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        object_store_memory=max(400 * 2**20, 6 * PARTITIONS * rows * 24),
        log_to_driver=False,
        configure_logging=False,
    )
    startup = time.perf_counter() - started
    cases: list[dict[str, Any]] = []
    try:
        import ray.data

        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = False
        ctx.print_on_execution_start = False
        block = ray.remote(make_block)
        ds = ray.data.from_arrow_refs([block.remote(i, rows) for i in range(PARTITIONS)])
        ds = ds.materialize()

        def arrow_blocks() -> list[pa.Table]:
            return list(ray.get(ds.to_arrow_refs()))

        def torch_of(t: pa.Table) -> dict[str, Any]:
            return {c: torch.from_numpy(t.column(c).to_numpy()) for c in t.column_names}

        table = [
            ("polars", "pl.from_arrow of the blocks (ray.get), pl.concat",
             lambda: ih.convert(ds, to="polars").compute(),
             lambda: pl.concat([pl.from_arrow(t) for t in arrow_blocks()], rechunk=False)),
            ("numpy", "map_batches(batch_format='numpy') blocks, np.concatenate",
             lambda: ih.convert(ds, to="numpy").compute(),
             lambda: np.concatenate([np.column_stack(list(b.values())) for b in
                                     ds.iter_batches(batch_size=None, batch_format="numpy")])),
            ("pandas (stays a Ray Dataset)", "ds.map_batches(batch_format='pandas')",
             lambda: ih.convert(ds, to="pandas").materialize(),
             lambda: ds.map_batches(lambda b: b, batch_format="pandas",
                                    batch_size=None).materialize()),
            ("torch as_dict", "iter_torch_batches(batch_size=None), torch.cat",
             lambda: ih.convert(ds, to="torch", as_dict=True).compute(),
             lambda: {k: torch.cat(v) for k, v in _collect(
                 ds.iter_torch_batches(batch_size=None)).items()}),
        ]  # fmt: skip
        for target, direct, hub_fn, direct_fn in table:
            case = {"engine": "ray", "target": target, "direct": direct}
            case.update(_pair(hub_fn, direct_fn, repeat))
            cases.append(case)

        first, whole, count = _first_batches(
            lambda: ih.iter_batches(ds, to="torch", batch_size=batch_size, as_dict=True), repeat
        )
        r_first, r_whole, _ = _first_batches(
            lambda: ds.iter_torch_batches(batch_size=batch_size), repeat
        )
        cases.append(
            {
                "engine": "ray",
                "target": f"iter_batches torch as_dict, batch_size={batch_size}",
                "direct": "ds.iter_torch_batches",
                "hub_s": first,
                "direct_s": r_first,
                "ratio": first / r_first if r_first else float("nan"),
                "first_batch": True,
                "pass_hub_s": whole,
                "pass_direct_s": r_whole,
                "batches": count,
            }
        )
        _, c_whole, _ = _first_batches(
            lambda: ds.iter_torch_batches(
                batch_size=batch_size, collate_fn=interchange_hub_ray.collate()
            ),
            repeat,
        )
        cases.append(
            {
                "engine": "ray",
                "target": f"iter_torch_batches, collate_fn=collate(), batch_size={batch_size}",
                "direct": "ds.iter_torch_batches (Ray's collate)",
                "hub_s": c_whole,
                "direct_s": r_whole,
                "ratio": c_whole / r_whole if r_whole else float("nan"),
                "whole_pass": True,
            }
        )
        plan = ih.convert(ds, to="polars").persist().plan
        batch = next(iter(ds.iter_batches(batch_size=batch_size, batch_format="pyarrow")))
        hub = ih.default_hub()
        mine = interchange_hub_ray.collate()(batch)
        theirs = next(iter(ds.iter_torch_batches(batch_size=batch_size)))
        evidence = {
            "shared_bytes": plan.shared_bytes,
            "source_bytes": plan.source_bytes,
            "workers": list(plan.workers),
            "plan": str(plan),
            "collate_shared_bytes": sum(hub.shared_bytes(t, batch) for t in mine.values()),
            "default_collate_result_bytes": sum(
                t.numel() * t.element_size() for t in theirs.values()
            ),
            "batch_bytes": batch.nbytes,
        }
        cases.append({"engine": "ray", "evidence": evidence, "startup_s": startup})
    finally:
        ray.shutdown()
    return cases


def _collect(batches: Iterable[dict[str, Any]]) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for batch in batches:
        for k, v in batch.items():
            out.setdefault(k, []).append(v)
    return out


# -- the report -----------------------------------------------------------------------------
def markdown(results: dict[str, Any]) -> str:
    meta = results["meta"]
    title = (
        f"# Distributed cases: {meta['partitions']} partitions of {meta['rows']:,} rows "
        f"(x, y float64, n int64), {meta['machine']}"
    )
    lines = [
        title,
        "",
        "| engine | conversion | hub | the engine's own way | hub ÷ engine (medians) | (fastest) |",
        "|---|---|---|---|---|---|",
    ]
    for case in results["cases"]:
        if "evidence" in case:
            continue
        what = "first batch" if case.get("first_batch") else (
            "whole pass" if case.get("whole_pass") else "compute()")  # fmt: skip
        lines.append(
            f"| {case['engine']} | {case['target']} ({what}) | {_fmt(case['hub_s'])} | "
            f"{_fmt(case['direct_s'])} `{case['direct']}` | {case['ratio']:.2f}× | "
            + (f"{case['best_ratio']:.2f}× |" if "best_ratio" in case else "— |")
        )
    for case in results["cases"]:
        if case.get("first_batch"):
            lines.append("")
            lines.append(
                f"{case['engine']}: whole pass of {case['batches']} batches: hub "
                f"{_fmt(case['pass_hub_s'])}, engine {_fmt(case['pass_direct_s'])}"
            )
    for case in results["cases"]:
        ev = case.get("evidence")
        if not ev:
            continue
        head = (
            f"## {case['engine']}: started in {case['startup_s']:.1f} s; per-partition "
            f"zero-copy, by buffer address on the workers: {ev['shared_bytes']:,} of "
            f"{ev['source_bytes']:,} bytes shared ({len(ev['workers'])} workers)"
        )
        lines += [
            "",
            head,
            "",
            "```",
            ev["plan"],
            "```",
        ]
        if "collate_shared_bytes" in ev:
            lines.append(
                f"\nRay torch batch of {ev['batch_bytes']:,} bytes: collate() shares "
                f"{ev['collate_shared_bytes']:,} bytes with the Arrow batch in the object "
                f"store; Ray's own collate gives {ev['default_collate_result_bytes']:,} bytes "
                "of tensors"
            )
    return "\n".join(lines) + "\n"


def _fmt(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1e5 rows per partition, 2 repeats")
    parser.add_argument("--rows", type=float, help="rows per partition (default 1e6)")
    parser.add_argument("--repeat", type=int, help="runs per measurement (default 7)")
    parser.add_argument("--batch-size", type=int, default=4096)
    parser.add_argument("--engines", default="dask,ray", help="comma-separated: dask,ray")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    args = parser.parse_args(argv)
    rows = int(args.rows or (1e5 if args.quick else 1e6))
    repeat = args.repeat or (2 if args.quick else 7)
    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    unknown = set(engines) - {"dask", "ray"}
    if unknown or rows < 1 or repeat < 1:
        parser.error(f"engines are dask and ray, rows and repeat positive (got {args})")
    warnings.simplefilter("ignore")  # the engines' own chatter; the hub's warnings are tested
    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    results: dict[str, Any] = {
        "meta": {
            "rows": rows,
            "partitions": PARTITIONS,
            "repeat": repeat,
            "machine": f"{os.cpu_count()} cores, {platform.python_version()}",
        },
        "cases": [],
    }
    status = 0
    runners = {"dask": dask_cases, "ray": ray_cases}
    for engine in engines:
        print(f"{engine}: running", file=sys.stderr, flush=True)
        try:
            results["cases"] += runners[engine](rows, repeat, args.batch_size)
        except ImportError as exc:
            print(f"not measured: {engine} ({exc})", file=sys.stderr)
        except ih.InterchangeError as exc:
            print(f"FAIL: {engine}: {type(exc).__name__}: {exc}", file=sys.stderr)
            status = 1
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "engines.json").write_text(json.dumps(results, indent=1))
    text = markdown(results)
    (args.out / "engines.md").write_text(text)
    print(text)
    return status


if __name__ == "__main__":
    sys.exit(main())
