"""Reports of benchmark results: the markdown table, the targets summary, the heatmap."""

from __future__ import annotations

import math
import statistics
from typing import TYPE_CHECKING, Any

import bench
from bench import fmt_bytes, fmt_us, ratio

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from matplotlib.figure import Figure


def _r(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _status(r: dict[str, Any]) -> str:
    targets = r.get("targets", {})
    misses = [t["text"] for t in targets.values() if not t["ok"]]
    text = "MISS: " + "; ".join(misses) if misses else ("PASS" if targets else "-")
    if r.get("beats_every_direct"):
        text += " (beats every direct call)"
    if not r.get("plan_matches", True):
        text += " **PLAN CLAIM WRONG**"
    return text


def _zero_copy(r: dict[str, Any]) -> str:
    verdict = "Z" if r["verified_zero_copy"] else "C"
    claim = "Z" if r["plan_zero_copy"] else "C"
    return verdict if verdict == claim else f"{verdict} (plan said {claim}!)"


def _memory(r: dict[str, Any]) -> str:
    mem = r.get("memory", {}).get("hub")
    if mem is None:
        return "-"
    return f"{fmt_bytes(mem['peak_extra'])} / {fmt_bytes(bench.result_size(r))}"


def case_rows(results: dict[str, Any]) -> list[list[str]]:
    rows = []
    for r in results["cases"]:
        head = [f"{r['src']} → {r['dst']}", r["shape"], f"{r['rows']:,}"]
        if r["status"] != "ok":
            what = f"error: {r['error']}" if r["status"] == "error" else "no route"
            rows.append([*head, what, "", "", "", "", "", "", ""])
            continue
        hub = r["hub"]["median_ns"]
        best = r["best_direct"]
        direct = "-"
        if best:
            z = " [Z]" if r.get("direct_zero_copy") else ""
            direct = f"{fmt_us(r['best_direct_ns'] / 1e3)} (`{best}`{z})"
        nw = r.get("narwhals")
        pdr = r.get("pandas_route")
        rows.append(
            [
                *head,
                fmt_us(hub / 1e3),
                direct,
                _r(ratio(hub, r["best_direct_ns"])),
                _r(ratio(hub, nw["median_ns"])) if nw else "-",
                _r(ratio(hub, pdr["median_ns"])) if pdr else "-",
                _zero_copy(r),
                _memory(r),
                _status(r),
            ]
        )
    return rows


HEADER = [
    "pair",
    "shape",
    "rows",
    "hub µs",
    "best direct µs (call)",
    "hub/direct",
    "hub/narwhals",
    "hub/pandas route",
    "zero-copy",
    "peak extra / result",
    "targets",
]


def markdown_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    def cell(text: str) -> str:
        return str(text).replace("|", "\\|")

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def summary_lines(results: dict[str, Any]) -> list[str]:
    """The targets summary, one markdown bullet (or table) per target."""
    out: list[str] = []
    ok = list(bench.ok_cases(results))
    no_route = sum(1 for r in results["cases"] if r["status"] == "no route")
    errors = [r for r in results["cases"] if r["status"] == "error"]

    def count(name: str, pred: Any = None) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        rows = [r for r in ok if name in r.get("targets", {}) and (pred is None or pred(r))]
        return [r for r in rows if r["targets"][name]["ok"]], [
            r for r in rows if not r["targets"][name]["ok"]
        ]

    def where(r: dict[str, Any]) -> str:
        return f"{r['src']}→{r['dst']} {r['shape']} {r['rows']:,}"

    def verdict(passed: Sequence[Any], missed: Sequence[Any]) -> str:
        if not passed and not missed:
            return "n/a"
        return "PASS" if not missed else "MISS"

    head = bench.headline(results["cases"])
    if head["cells"]:
        share = head["within"] / head["cells"]
        out.append(
            f"**Headline: {head['within']} of {head['cells']} cells ({share:.0%}) at ≤ "
            f"{bench.COPY_SPEED_TARGET:g}× the fastest direct call; {len(head['above_cap'])} "
            f"above {bench.HEADLINE_CAP:g}×; {len(head['zero_copy_lost'])} where a direct call "
            f"shares memory the hub copies** (target: ≥ {bench.HEADLINE_SHARE:.0%}, none "
            f"above {bench.HEADLINE_CAP:g}×, none lost): {'PASS' if head['ok'] else 'MISS'}."
        )
        out.append(
            f"**Overhead ≤ {bench.OVERHEAD_TARGET_US:g} µs + "
            f"{bench.COPY_SPEED_TARGET - 1:.0%} of the fastest direct call: "
            f"{head['overhead_ok']} of {head['cells']} cells; built-in pairs "
            f"{head['builtin_overhead_ok']} of {head['builtin']}**."
        )
        out += reason_lines(head, where)
        out += overhead_reason_lines(head, where)
        if head["zero_copy_lost"]:
            out.append(
                "Zero-copy lost (FAIL): " + ", ".join(where(r) for r in head["zero_copy_lost"][:40])
            )
        if head["above_cap"]:
            worst = ", ".join(f"{where(r)} ({q:.2f}×)" for q, r in head["above_cap"][:15])
            more = len(head["above_cap"]) - 15
            out.append(f"Worst: {worst}" + (f", … {more} more" if more > 0 else ""))
        out.append("")
    out.append(f"{len(ok)} measured cases, {no_route} without a route.")
    if errors:
        out.append(
            f"**{len(errors)} case(s) raised** (a plugin library's conversion failed with "
            "something other than an InterchangeError; FAIL): "
            + "; ".join(f"{where(r)}: {r['error']}" for r in errors[:10])
        )
    out.append("")

    dispatch = results.get("dispatch") or []
    if dispatch:
        worst = max(d["overhead_us"] for d in dispatch)
        ok_d = worst <= bench.DISPATCH_TARGET_US
        keyed = any("keyed_ns" in d for d in dispatch)
        out.append(
            f"- **Dispatch overhead ≤ {bench.DISPATCH_TARGET_US:g} µs** "
            f"({bench.DISPATCH_ROWS}-row inputs, cached plan): "
            f"{'PASS' if ok_d else 'MISS'} (worst {worst:.1f} µs)"
            + (
                "; beside it, the fastest direct call through a wrapper that checks the route "
                "key as the hub does (`bench.KeyedWrapper`): what any hub in Python that "
                "checks each call adds"
                if keyed
                else ""
            )
        )
        out.append("")

        def keyed_over(d: dict[str, Any]) -> str:
            if "keyed_ns" not in d:
                return "-"
            return f"{(d['keyed_ns'] - d['direct_ns']) / 1e3:.1f}"

        out.append(
            markdown_table(
                [
                    "pair",
                    "shape",
                    "hub µs",
                    "direct µs",
                    "direct call",
                    "overhead µs",
                    "keyed wrapper's µs",
                    "status",
                ],
                [
                    [
                        d["pair"].replace(":", " → "),
                        d["shape"],
                        fmt_us(d["hub_ns"] / 1e3),
                        fmt_us(d["direct_ns"] / 1e3),
                        f"`{d['direct']}`",
                        f"{d['overhead_us']:.1f}",
                        keyed_over(d),
                        "PASS" if d["overhead_us"] <= bench.DISPATCH_TARGET_US else "MISS",
                    ]
                    for d in dispatch
                ],
            )
        )
        out.append("")
    prof = results.get("dispatch_profile")
    if prof:
        out.append(
            f"  cProfile of {prof['pair']} ({prof['shape']}), per conversion "
            f"(profiled total {prof['profiled_us_per_convert']:.0f} µs, inflated by profiling); "
            "interchange_hub functions by cumulative time:"
        )
        out.append("")
        out.append(
            markdown_table(
                ["function", "calls", "cumulative µs", "self µs"],
                [
                    [
                        f"`{f['function']}`",
                        f"{f['calls_per_convert']:.1f}",
                        f"{f['cumtime_us']:.1f}",
                        f"{f['tottime_us']:.1f}",
                    ]
                    for f in prof["interchange_hub_by_cumulative_time"]
                ],
            )
        )
        out.append("")

    imp = results.get("import")
    if imp:
        heavy = sorted({*imp["heavy_modules"], *imp.get("heavy_after_first_use", [])})
        ok_i = imp["overhead_ms"] <= bench.IMPORT_TARGET_MS and not heavy
        top = ", ".join(f"{m['module']} {m['self_ms']:.1f}" for m in imp["top_modules"][:5])
        first_use = imp.get("first_use_ms")
        out.append(
            f"- **Import overhead ≤ {bench.IMPORT_TARGET_MS:g} ms**: "
            f"{'PASS' if ok_i else 'MISS'}: `import interchange_hub` costs "
            f"{imp['overhead_ms']:.1f} ms once `pluggy` and `importlib.metadata` are imported "
            f"(cold: {imp['hub_ms']:.1f} ms; `import pluggy, importlib.metadata` alone: "
            f"{imp['base_ms']:.1f} ms"
            + (f"; first use, `Hub().adapters()`: {first_use:.1f} ms" if first_use else "")
            + f"; medians of {imp['runs']} fresh interpreters). Heavy modules imported: "
            f"{', '.join(heavy) or 'none'}. Largest self times in `-X importtime` (ms): {top}"
        )
    cold = results.get("cold_start")
    if cold:
        ms = cold["first_convert_ms"]
        imported = cold["plugin_modules_imported"]
        ok_c = ms <= bench.COLD_START_TARGET_MS and not imported
        out.append(
            f"- **Cold start ≤ {bench.COLD_START_TARGET_MS:g} ms**: "
            f"{'PASS' if ok_c else 'MISS'}: the first `ih.convert(pa.table, to='polars')` in "
            f"a fresh process (pyarrow and polars imported and used once) costs {ms:.1f} ms "
            f"(median of {cold['runs']} interpreters, the environment's plugins installed); "
            f"plugin modules it imported: {', '.join(imported) or 'none'}"
        )
    passed, missed = count("zero_copy_scaling")
    out.append(
        f"- **Zero-copy pairs: t(largest)/t(smallest) ≤ {bench.ZERO_COPY_SCALING_TARGET:g}** "
        f"(where the plan says a scan is forced, pandas' NaN into nulls: at most "
        f"{bench.OVERHEAD_TARGET_US:g} µs + {bench.COPY_SPEED_TARGET - 1:.0%} over the direct "
        "call, which scans too): "
        f"{verdict(passed, missed)}, {len(passed)} pass, {len(missed)} miss"
        + _list(missed, "zero_copy_scaling", where)
    )
    for name, title in (
        ("vs_direct", f"Copy pairs: hub ≤ {bench.COPY_SPEED_TARGET:g} × fastest direct call"),
        ("vs_narwhals", "Copy pairs: hub not slower than narwhals"),
        ("vs_pandas_route", "Copy pairs: hub not slower than the route through pandas"),
    ):
        passed, missed = count(name)
        again = [
            r
            for r in missed
            if r["targets"][name].get("again", math.inf) <= r["targets"][name]["limit"]
        ]
        out.append(
            f"- **{title}**: {verdict(passed, missed)}, {len(passed)} pass, {len(missed)} miss"
            + (
                f" ({len(again)} of them within it when timed again, interleaved: the miss "
                "did not repeat)"
                if again
                else ""
            )
            + _list(missed, name, where)
        )
    out += copy_speed_lines(ok)
    passed, missed = count("memory", lambda r: not r["verified_zero_copy"])
    out.append(
        f"- **Copy pairs: peak extra memory ≤ {bench.COPY_MEMORY_TARGET:g} × result size** "
        "(its buffers and the Python objects of its object arrays) "
        f"(results ≥ {fmt_bytes(bench.COPY_MEMORY_MIN_RESULT)}): "
        f"{verdict(passed, missed)}, {len(passed)} pass, {len(missed)} miss"
        + _list(missed, "memory", where)
    )
    passed, missed = count("memory", lambda r: r["verified_zero_copy"])
    out.append(
        f"- **Zero-copy pairs: peak extra memory < 1 MiB** (beyond the validity bitmaps the "
        "result holds of its own: pandas' NaN made nulls, as the plan's scans say): "
        f"{verdict(passed, missed)}, "
        f"{len(passed)} pass, {len(missed)} miss" + _list(missed, "memory", where)
    )
    beats = [r for r in ok if r.get("beats_every_direct") and not r["verified_zero_copy"]]
    beats_z = [r for r in ok if r.get("beats_every_direct") and r["verified_zero_copy"]]
    out.append(
        f"- **Hub faster than every direct call**: {len(beats)} copy case(s)"
        + (": " + ", ".join(where(r) for r in beats) if beats else "")
        + f"; and {len(beats_z)} zero-copy case(s)"
    )
    wrong = [r for r in ok if not r.get("plan_matches", True)]
    out.append(
        f"- **Plan claims checked by address**: {len(ok) - len(wrong)} right, {len(wrong)} wrong"
        + (": " + ", ".join(where(r) for r in wrong) if wrong else "")
    )
    out += parts_lines(ok, where)
    return out


def reason_lines(head: dict[str, Any], where: Any) -> list[str]:
    """The headline's misses counted by what explains each (``bench.miss_reason``): the
    floor that no hub written in Python gets under, the checks each call makes, and the
    misses that are the hub's own (its dispatch, a slower run), those listed."""
    reasons = head["reasons"]
    missed = sum(len(cells) for cells in reasons.values())
    if not missed:
        return []
    target = bench.COPY_SPEED_TARGET
    said = "; ".join(
        f"{len(reasons.get(key, ()))}: {text}" for key, text in bench.MISS_REASONS.items()
    )
    wrapped = any("floor_ns" in (r.get("parts") or {}) for cells in reasons.values() for r in cells)
    bound = head["reachable"]
    out = [
        f"**The {missed} cells above {target:g}×, by what explains each** (their parts timed "
        "again, interleaved: the hub, its kept run, its route key, the direct call, and the "
        "direct call made through a bare wrapper with the hub's signature and through one "
        f"that checks the route key: `bench.BareWrapper`, `bench.KeyedWrapper`): {said}."
        + (
            f" A hub written in Python that checks each call can reach at most {bound} of "
            f"{head['cells']} cells ({bound / head['cells']:.0%}) in this run."
            if wrapped
            else " (This run did not time the wrappers.)"
        )
    ]
    keyed = [
        (r["parts"]["hub_ns"] - r["parts"]["keyed_ns"], r)
        for cells in reasons.values()
        for r in cells
        if "keyed_ns" in (r.get("parts") or {})
    ]
    if keyed:
        over = sorted(((d, r) for d, r in keyed if d > 1000), key=lambda x: -x[0])
        shown = ", ".join(f"{where(r)} ({d / 1e3:.1f} µs)" for d, r in over[:30])
        more = f", … {len(over) - 30} more" if len(over) > 30 else ""
        median = sorted(d for d, _ in keyed)[len(keyed) // 2]
        out.append(
            "The hub's call over the keyed wrapper's, in the same timings (what the hub's "
            "dispatch and its run add to a call that checks the route key): median "
            f"{median / 1e3:.2f} µs; above 1 µs in {len(over)} of {len(keyed)} cells"
            + (f": {shown}{more}" if over else "")
            + "."
        )
    keys = ("dispatch", "warns", "writes", "cached", "run")
    return out + _own_lines(
        reasons, keys, lambda key: f"The hub's own ({bench.MISS_REASONS[key]})", where
    )


def _own_lines(
    reasons: dict[str, list[dict[str, Any]]], keys: Sequence[str], said: Any, where: Any
) -> list[str]:
    """A line for each of ``keys`` with cells in ``reasons``: ``said(key)``, then the
    cells (60 at most, and how many more)."""
    out = []
    for key in keys:
        cells = reasons.get(key, [])
        if cells:
            shown = ", ".join(where(r) for r in cells[:60])
            more = f", … {len(cells) - 60} more" if len(cells) > 60 else ""
            out.append(f"{said(key)}: {shown}{more}.")
    return out


def overhead_reason_lines(head: dict[str, Any], where: Any) -> list[str]:
    """The overhead target's misses (above 3 µs + 5 % of the fastest direct call) by what
    explains each, from the same parts as the headline's (``bench.miss_reason`` with the
    allowance's fixed part), the built-in pairs' apart; the hub's own listed."""
    reasons = head.get("overhead_reasons") or {}
    missed = [r for cells in reasons.values() for r in cells]
    if not missed:
        return []
    slack = (
        f"{bench.COPY_SPEED_TARGET:g}× the fastest direct call + {bench.OVERHEAD_TARGET_US:g} µs"
    )
    builtin = {id(r) for r in missed if bench.builtin_pair(r)}

    def counted(cells: Sequence[dict[str, Any]]) -> str:
        inside = sum(id(r) in builtin for r in cells)
        return f"{len(cells)} ({inside} built-in)"

    said = "; ".join(
        f"{counted(reasons[key])}: {text}"
        for key, text in bench.OVERHEAD_REASONS.items()
        if reasons.get(key)
    )
    out = [
        (
            f"**The {len(missed)} cells above {slack} ({len(builtin)} of built-in pairs), by "
            f"what explains each** (the same parts, against the allowance): {said}."
        )
    ]
    keys = ("dispatch", "warns", "writes", "cached", "run", "several")
    return out + _own_lines(
        reasons, keys, lambda key: f"Above {slack}, the hub's own ({key})", where
    )


def parts_lines(ok: Sequence[dict[str, Any]], where: Any) -> list[str]:
    """Where the time of the cells above the target ratio goes (``bench.measure_parts``).

    The misses within the per-call allowance (3 µs + 5 %) and those outside it; those
    whose kept run alone is within the target of the direct call (the miss is the
    per-call dispatch and route key) and those whose run is slower, with what the run
    does on every call that the direct calls do not (a warning per lossy column, the
    write-through warning's call site); the slower runs outside the allowance listed;
    the median route key and dispatch per source library."""
    timed = [r for r in ok if r.get("parts")]
    untimed = [r for r in ok if "parts" in r and not r["parts"]]
    if not timed and not untimed:
        return []
    target = bench.COPY_SPEED_TARGET

    def run_ratio(r: dict[str, Any]) -> float:
        parts = r["parts"]
        return float(parts["run_ns"] / parts["direct_ns"])

    def extra(r: dict[str, Any]) -> str:
        said = []
        if r.get("plan_losses"):
            said.append(f"warns {r['plan_losses']} lossy column(s)")
        if r.get("plan_write_through"):
            said.append("write-through site")
        return "; ".join(said)

    def item(r: dict[str, Any]) -> str:
        parts, more = r["parts"], extra(r)
        return (
            f"{where(r)} (run/direct {run_ratio(r):.2f}; key {parts['key_ns'] / 1e3:.2f} µs, "
            f"dispatch {parts['dispatch_ns'] / 1e3:.2f} µs" + (f"; {more}" if more else "") + ")"
        )

    allowed = [r for r in timed if bench.overhead_ok(r)]
    outside = [r for r in timed if not bench.overhead_ok(r)]
    floor = [r for r in timed if run_ratio(r) <= target]
    slower = [r for r in timed if run_ratio(r) > target]
    warned = [r for r in slower if r.get("plan_losses")]
    sited = [r for r in slower if r.get("plan_write_through")]
    # Timed again (the parts' hub call against the parts' direct call): misses that did
    # not repeat, and cells outside the allowance that came within it.
    again = [r for r in timed if r["parts"]["hub_ns"] <= target * r["parts"]["direct_ns"]]
    back = [
        r
        for r in outside
        if r["parts"]["hub_ns"] <= target * r["parts"]["direct_ns"] + bench.OVERHEAD_TARGET_US * 1e3
    ]
    listed = sorted((r for r in slower if not bench.overhead_ok(r)), key=lambda r: -run_ratio(r))
    shown = "; ".join(item(r) for r in listed[:60])
    more = f"; … {len(listed) - 60} more" if len(listed) > 60 else ""
    out = [
        f"- **Where the misses' time goes** (each cell above {target:g}× timed again: the "
        "hub's call, the run it keeps for the source's route alone, the route key alone, "
        "and the fastest direct call, interleaved; the dispatch is the rest): "
        f"{len(timed)} cells timed, {len(untimed)} without parts (no kept run: planned on each "
        "call, or a kept run that raised"
        + (": " + ", ".join(where(r) for r in untimed[:20]) if untimed else "")
        + f"). {len(allowed)} are within the per-call allowance of "
        f"{bench.OVERHEAD_TARGET_US:g} µs + {target - 1:.0%}, {len(outside)} outside it. "
        f"Timed again, {len(again)} are within {target:g}× (the miss did not repeat) and "
        f"{len(back)} of the {len(outside)} outside the allowance are within it. "
        f"**{len(floor)} where the run alone is within {target:g}× of the direct call**: "
        f"the miss is the dispatch and the route key. **{len(slower)} where the run is "
        f"slower**; of them {len(warned)} warn of lossy columns on every call (the direct "
        f"calls change those values silently) and {len(sited)} look up the call site of "
        "the write-through warning (shown once per site). "
        f"The {len(listed)} slower runs outside the allowance"
        + (": " + shown + more if shown else "")
        + ".",
        "",
    ]
    by_source: dict[str, list[dict[str, Any]]] = {}
    for r in timed:
        by_source.setdefault(r["src"], []).append(r)
    rows = []
    for src, cells in sorted(by_source.items()):
        keys = sorted(r["parts"]["key_ns"] for r in cells)
        dispatch = sorted(r["parts"]["dispatch_ns"] for r in cells)
        rows.append(
            [
                src,
                str(len(cells)),
                f"{keys[len(keys) // 2] / 1e3:.2f}",
                f"{dispatch[len(dispatch) // 2] / 1e3:.2f}",
                str(sum(run_ratio(r) <= target for r in cells)),
            ]
        )
    out.append(
        markdown_table(
            [
                "source",
                "cells timed",
                "route key µs (median)",
                "dispatch µs (median)",
                f"run ≤ {target:g}× direct",
            ],
            rows,
        )
    )
    out.append("")
    return out


def _list(rows: Sequence[dict[str, Any]], name: str, where: Any, limit: int = 40) -> str:
    if not rows:
        return ""
    items = [f"{where(r)} ({r['targets'][name]['text']})" for r in rows[:limit]]
    more = f"; … {len(rows) - limit} more" if len(rows) > limit else ""
    return ": " + "; ".join(items) + more


def _skipped(meta: dict[str, Any]) -> list[str]:
    """A line naming the plugin libraries this run could not measure, and why."""
    skipped = meta.get("skipped_libraries") or {}
    if not skipped:
        return []
    why = "; ".join(f"{lib} ({reason})" for lib, reason in skipped.items())
    return [f"Not measured (library or plugin not importable): {why}.", ""]


def _gbs(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.2f}"  # (NaN: no direct call)


def copy_speed_lines(ok: Sequence[dict[str, Any]]) -> list[str]:
    """The copies' speed at the run's largest size beside a plain numpy copy of as many
    bytes (``bench.copy_speeds``): one bullet, the medians and how many copies reach half
    and all of the numpy copy's speed."""
    speeds = [s for s in map(bench.copy_speeds, ok) if s is not None]
    if not speeds:
        return []
    share = [s["hub"] / s["numpy_copy"] for s in speeds]
    direct = [s["direct"] for s in speeds if not math.isnan(s["direct"])]
    copies = f"{len(speeds)} cop{'y' if len(speeds) == 1 else 'ies'}"
    return [
        f"- **Copy speed** ({copies} at the run's largest size whose results hold "
        f"{fmt_bytes(bench.COPY_MEMORY_MIN_RESULT)} or more of their own, and "
        f"{bench.COPY_SPEED_MIN_SHARE:.0%} or more of their bytes: GB/s of those "
        "bytes, in the hub's time, the fastest direct call's and that of "
        "`ndarray.copy()` of as many bytes timed in the same rounds; table below): medians: hub "
        f"{statistics.median(s['hub'] for s in speeds):.2f} GB/s, the fastest direct call "
        + (f"{statistics.median(direct):.2f}" if direct else "-")
        + f", the numpy copy {statistics.median(s['numpy_copy'] for s in speeds):.2f}; the hub "
        f"at half the numpy copy's speed or more in {sum(x >= 0.5 for x in share)}, at its "
        f"speed or more in {sum(x >= 1.0 for x in share)} (median "
        f"{statistics.median(share):.2f} of it)"
    ]


def copy_speed_table(results: dict[str, Any]) -> list[str]:
    """The ``## Copy speed`` section: each copy timed beside the numpy copy, slowest
    (against the numpy copy) first."""
    rows = []
    for r in bench.ok_cases(results):
        s = bench.copy_speeds(r)
        if s is not None:
            rows.append((s["hub"] / s["numpy_copy"], r, s))
    if not rows:
        return []
    rows.sort(key=lambda x: x[0])
    body = [
        [
            f"{r['src']} → {r['dst']}",
            r["shape"],
            f"{r['rows']:,}",
            fmt_bytes(s["bytes"]),
            _gbs(s["hub"]),
            _gbs(s["direct"]),
            _gbs(s["numpy_copy"]),
            f"{share:.2f}",
        ]
        for share, r, s in rows
    ]
    header = [
        "pair",
        "shape",
        "rows",
        "result's own bytes",
        "hub GB/s",
        "fastest direct GB/s",
        "numpy copy GB/s",
        "hub ÷ numpy copy",
    ]
    return [
        "## Copy speed",
        "",
        (
            "Copies at the run's largest size whose results hold "
            f"{fmt_bytes(bench.COPY_MEMORY_MIN_RESULT)} or more of their own, and "
            f"{bench.COPY_SPEED_MIN_SHARE:.0%} or more of their bytes (a result that shares "
            "nearly all its memory "
            "spends its time on the rest of the conversion): "
            "the bytes the hub's result holds of its own "
            "(its buffers and the Python objects of its object arrays) per second of the "
            "hub's call, of the fastest direct call and of a plain `ndarray.copy()` of as "
            "many bytes (new memory each call, as a result's), timed in the same interleaved "
            "rounds. A conversion that makes Python objects, casts or fills nulls does more "
            "than copy bytes; bytes that fit in the cache (a `--quick` run's 100,000 rows) "
            "are copied at the cache's speed, not memory's."
        ),
        "",
        markdown_table(header, body),
        "",
    ]


def markdown(results: dict[str, Any]) -> str:
    meta = results["meta"]
    versions = ", ".join(f"{k} {v}" for k, v in meta["versions"].items())
    lines = [
        "# interchange_hub benchmark",
        "",
        (
            f"{meta['date']}, commit {str(meta.get('commit'))[:12]}, Python {meta['python']}, "
            f"{meta['cpus']} CPUs, {meta['memory_gib']} GiB, {meta['platform']}; "
            f"run took {meta.get('duration_s', '?')} s (load average "
            f"{meta.get('loadavg', '?')} at the start, {meta.get('loadavg_end', '?')} at the end)."
            + (
                f" Uncommitted changes to: {', '.join(meta['uncommitted'])}."
                if meta.get("uncommitted")
                else ""
            )
        ),
        "",
        f"Versions: {versions}.",
        "",
        *_skipped(meta),
        (
            "Times are medians per call (µs). Ratios are hub ÷ other (below 1: the hub is "
            "faster). `best direct` is the fastest of the direct calls tried for the pair "
            "([Z]: it shares all source memory). Zero-copy: Z/C as measured by buffer address "
            "(the plan's claim is shown if it differs). Peak extra memory: max(RSS high-water "
            "mark, Arrow pool peak) during the hub's conversion, against the result's size."
        ),
        "",
        "Shapes: " + "; ".join(f"**{k}**: {v}" for k, v in meta["shapes"].items()) + ".",
        "",
        "## Targets",
        "",
        *summary_lines(results),
        "",
        *copy_speed_table(results),
        "## Cases",
        "",
        markdown_table(HEADER, case_rows(results)),
        "",
    ]
    return "\n".join(lines)


# -- heatmap ------------------------------------------------------------------------------------
def heatmap(results: dict[str, Any], path: Path | None = None) -> Figure:
    """Pairs × sizes per shape, coloured by hub ÷ best direct; Z marks zero-copy cells."""
    import matplotlib

    if path is not None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import TwoSlopeNorm

    cases = results["cases"]
    shapes = [s for s in bench.SHAPES if any(r["shape"] == s for r in cases)]
    sizes = sorted({r["rows"] for r in cases})
    pairs = list(dict.fromkeys(r["pair"] for r in cases))
    by_key = {(r["pair"], r["shape"], r["rows"]): r for r in cases}
    cmap = plt.get_cmap("RdYlGn_r").copy()
    cmap.set_bad("#dddddd")
    # The colour turns at the 1.05x target: green at or below it, yellow to red above.
    norm = TwoSlopeNorm(vmin=-2.0, vcenter=math.log2(bench.COPY_SPEED_TARGET), vmax=4.0)
    fig, axes = plt.subplots(
        1,
        len(shapes),
        figsize=(
            1.2 + 0.75 * len(sizes) * len(shapes) + 0.9 * len(shapes),
            1.5 + 0.28 * len(pairs),
        ),
        sharey=True,
        squeeze=False,
        layout="constrained",
    )
    image = None
    for ax, shape in zip(axes[0], shapes, strict=True):
        values = [[math.nan] * len(sizes) for _ in pairs]
        for i, pair in enumerate(pairs):
            for j, rows in enumerate(sizes):
                r = by_key.get((pair, shape, rows))
                if r is None:
                    continue
                if r["status"] != "ok":
                    mark = "error" if r["status"] == "error" else "–"
                    ax.text(j, i, mark, ha="center", va="center", fontsize=7, color="#777777")
                    continue
                q = ratio(r["hub"]["median_ns"], r["best_direct_ns"])
                if q is not None:
                    values[i][j] = math.log2(q)
                mark = ("Z " if r["verified_zero_copy"] else "") + (_r(q) if q else "?")
                ax.text(j, i, mark, ha="center", va="center", fontsize=6.5)
        image = ax.imshow(values, cmap=cmap, norm=norm, aspect="auto")
        ax.set_title(shape, fontsize=9)
        ax.set_xticks(range(len(sizes)), [bench.size_label(n) for n in sizes], fontsize=7)
        ax.set_yticks(range(len(pairs)), [p.replace(":", " → ") for p in pairs], fontsize=7)
        ax.set_xlabel("rows", fontsize=7)
    fig.suptitle(
        "hub time ÷ fastest direct call: green at or below 1.05× (as fast as the direct call), "
        "yellow to red above (Z: zero-copy by address; –: no route; grey: no data)",
        fontsize=9,
    )
    if image is not None:
        bar = fig.colorbar(image, ax=axes[0].tolist(), shrink=0.6)
        ticks = [-2, -1, 0, 1, 2, 3, 4]
        bar.set_ticks(ticks, labels=[f"{2.0**t:g}×" for t in ticks], fontsize=7)
    if path is not None:
        fig.savefig(path, dpi=130, bbox_inches="tight")
        plt.close(fig)
    return fig


def memory_rows(results: dict[str, Any]) -> list[dict[str, Any]]:
    """One flat row per measured case: memory figures (for a DataFrame in the notebook)."""
    rows = []
    for r in bench.ok_cases(results):
        mem = r.get("memory", {})
        hub, direct = mem.get("hub"), mem.get("direct")
        rows.append(
            {
                "pair": r["pair"].replace(":", " → "),
                "shape": r["shape"],
                "rows": r["rows"],
                "zero_copy": r["verified_zero_copy"],
                "result_MiB": bench.result_size(r) / 2**20,
                "new_result_MiB": r["result_new_bytes"] / 2**20,
                "hub_peak_extra_MiB": hub["peak_extra"] / 2**20 if hub else None,
                "hub_arrow_peak_MiB": hub["arrow_peak"] / 2**20 if hub else None,
                "direct_peak_extra_MiB": direct["peak_extra"] / 2**20 if direct else None,
                "direct_call": r["best_direct"],
            }
        )
    return rows


def comparison_text(
    cmp: bench.Comparison,
    threshold: float,
    absolute: bool = False,
    loads: tuple[object, object] | None = None,
) -> str:
    def pct(value: float | None) -> str:
        return "-" if value is None else f"{value:+.1%}"

    def table(rows: Sequence[dict[str, Any]]) -> str:
        return markdown_table(
            [
                "case",
                "baseline µs",
                "current µs",
                "change",
                "direct call's change",
                "hub/direct before → now",
                "ratio change",
                "µs over the baseline's ratio",
            ],
            [
                [
                    f"{r['pair'].replace(':', ' → ')} {r['shape']} {r['rows']:,}",
                    fmt_us(r["baseline_ns"] / 1e3),
                    fmt_us(r["current_ns"] / 1e3),
                    pct(r["change"]),
                    pct(r["direct_change"]),
                    f"{_r(r.get('baseline_ratio'))} → {_r(r.get('current_ratio'))}",
                    pct(r.get("relative_change")),
                    f"{r['excess_ns'] / 1e3:+,.1f}" if "excess_ns" in r else "-",
                ]
                for r in rows
            ],
        )

    how = "hub medians (--absolute)" if absolute else "hub ÷ fastest direct call ratios"
    lines = [
        (
            f"Compared {how} per (pair, shape, size): {len(cmp.regressions)} "
            f"regression(s) (> {threshold:.0%} and > {bench.REGRESSION_FLOOR_NS / 1e3:g} µs "
            f"slower), {len(cmp.improvements)} "
            f"improvement(s), {cmp.unchanged} within ±{threshold:.0%}; "
            f"{len(cmp.missing)} baseline case(s) not run; {len(cmp.new)} new case(s) not "
            "in the baseline (not compared)"
            + (
                f"; {len(cmp.cleared)} case(s) cleared by the baseline's commit measured here."
                if cmp.cleared
                else "."
            )
        ),
    ]
    if cmp.new_libraries:
        lines.append(f"Libraries the baseline does not have: {', '.join(cmp.new_libraries)}.")
    if loads is not None:
        lines.append(
            f"Load average at the start: baseline {loads[0]}, this run {loads[1]} "
            "(2 cores: a load above ~1 means other work shared the machine)."
        )
    if cmp.recheck_error:
        lines.append(
            f"The baseline's commit ({cmp.recheck_commit or 'none recorded'}) could not be "
            f"measured on this machine ({cmp.recheck_error}): the regressions stand."
        )
    if cmp.regressions:
        lines += ["", "Regressions:", "", table(cmp.regressions)]
    if cmp.cleared:
        lines += [
            "",
            (
                f"Not regressions on this machine: {len(cmp.cleared)} case(s) whose ratio grew "
                "against the baseline but not against the baseline's commit "
                f"({(cmp.recheck_commit or '')[:10]}) measured here, each in a fresh "
                "interpreter (a ratio shifts between machines: the hub's Python dispatch and "
                "a direct call's C code scale differently with the CPU):"
            ),
            "",
            markdown_table(
                [
                    "case",
                    "hub/direct in the baseline",
                    "baseline's commit here",
                    "this commit here",
                ],
                [
                    [
                        f"{r['pair'].replace(':', ' → ')} {r['shape']} {r['rows']:,}",
                        _r(r.get("baseline_ratio")),
                        _r(r.get("recheck_then")),
                        _r(r.get("recheck_now")),
                    ]
                    for r in cmp.cleared
                ],
            ),
        ]
    if cmp.improvements:
        lines += ["", "Improvements:", "", table(cmp.improvements)]
    return "\n".join(lines)
