"""Views of benchmark results for readers (the comparison notebook): figures and short tables.

- :func:`heatmap`: hub ÷ fastest direct call per pair, shape and size on a labelled log
  colour scale that covers the largest ratio, with the hub's median time in every cell;
- :func:`memory_plot`: the hub's peak extra memory against the direct call's and against
  the memory the result needs;
- :func:`targets_table`, :func:`slowest_cells`, :func:`memory_outliers`: rows (dicts) for
  ``pandas.DataFrame``, a line per target or per case worth reading.

``report.py`` keeps the CLI's outputs (``report.md``, ``heatmap.png``); these take the same
``results`` dict (``{"cases": [...]}`` from :func:`bench.run_matrix` + :func:`bench.evaluate`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import bench
from bench import ratio

if TYPE_CHECKING:
    from collections.abc import Sequence

    from matplotlib.figure import Figure

MiB = 2**20
ZERO_COPY_COLOUR = "#1a7f37"
COPY_COLOUR = "#d1600f"
SHAPE_MARKERS = {"numeric": "o", "string": "s", "mixed": "D", "column": "^", "tensor2d": "v"}


def fmt_time(ns: float | None) -> str:
    """A duration in the unit that keeps 2-3 digits: 850 ns, 8.7 µs, 87 µs, 1.2 ms, 12 s."""
    if ns is None:
        return "-"
    for unit, scale in (("ns", 1.0), ("µs", 1e3), ("ms", 1e6)):
        value = ns / scale
        if value < 1000:
            return f"{value:.1f} {unit}" if value < 10 else f"{value:.0f} {unit}"
    value = ns / 1e9
    return f"{value:.1f} s" if value < 10 else f"{value:.0f} s"


def fmt_ratio(q: float) -> str:
    return f"{q:.2f}×" if q < 10 else f"{q:.0f}×"


def _where(r: dict[str, Any]) -> str:
    return f"{r['src']} → {r['dst']}, {r['shape']}, {r['rows']:,} rows"


def _contrast_text(rgba: Sequence[float]) -> str:
    """Black or white, whichever contrasts more with the colour (WCAG relative luminance)."""

    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(c) for c in rgba[:3])
    lum = 0.2126 * r + 0.7152 * g + 0.0722 * b
    return "#ffffff" if (1.05 / (lum + 0.05)) > ((lum + 0.05) / 0.05) else "#111111"


# -- heatmap ------------------------------------------------------------------------------------
def heatmap(results: dict[str, Any], dpi: int = 100) -> Figure:
    """Pairs × (shape, size): each cell coloured by hub ÷ fastest direct call on a log scale
    (greens at or below the 1.05× target, yellow to dark red above, up to the largest ratio
    measured) and labelled with the ratio and the hub's median time; Z: zero-copy by address."""
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.colors import ListedColormap, Normalize
    from matplotlib.patches import Rectangle

    cases = results["cases"]
    shapes = [s for s in bench.SHAPES if any(r["shape"] == s for r in cases)]
    sizes = sorted({r["rows"] for r in cases})
    pairs = list(dict.fromkeys(r["pair"] for r in cases))
    by_key = {(r["pair"], r["shape"], r["rows"]): r for r in cases}
    ratios = [
        q
        for r in bench.ok_cases(results)
        if (q := ratio(r["hub"]["median_ns"], r["best_direct_ns"])) is not None
    ]
    target = bench.COPY_SPEED_TARGET
    lo = min([*ratios, 0.5])
    hi = max([*ratios, 2.0])
    # One log scale from the smallest to the largest ratio (an even colour bar), the
    # colours turning from green to yellow at the target.
    norm = Normalize(vmin=math.log2(lo), vmax=math.log2(hi))
    n_green = max(1, round(512 * float(norm(math.log2(target)))))
    greens = plt.get_cmap("Greens")(np.linspace(0.85, 0.3, n_green))
    warm = plt.get_cmap("YlOrRd")(np.linspace(0.08, 1.0, 512 - n_green))
    cmap = ListedColormap(np.vstack([greens, warm]))
    cmap.set_bad("white")  # numpy/torch cannot hold the shape: no case

    fig, axes = plt.subplots(
        1,
        len(shapes),
        figsize=(1.5 + 0.86 * len(sizes) * len(shapes), 2.6 + 0.34 * len(pairs)),
        sharey=True,
        squeeze=False,
        layout="constrained",
        dpi=dpi,
    )
    for ax, shape in zip(axes[0], shapes, strict=True):
        values = np.full((len(pairs), len(sizes)), np.nan)
        for i, pair in enumerate(pairs):
            for j, rows in enumerate(sizes):
                r = by_key.get((pair, shape, rows))
                if r is None:
                    continue  # numpy/torch cannot hold this shape: left blank
                if r["status"] != "ok":
                    ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, color="#d9d9d9", zorder=0.5))
                    what = "error" if r["status"] == "error" else "no route"
                    ax.text(j, i, what, ha="center", va="center", fontsize=7, color="#444")
                    continue
                q = ratio(r["hub"]["median_ns"], r["best_direct_ns"])
                if q is not None:
                    values[i, j] = math.log2(q)
                colour = "#111111" if q is None else _contrast_text(cmap(norm(math.log2(q))))
                zero = " · Z" if r["verified_zero_copy"] else ""
                ax.text(
                    j,
                    i - 0.17,
                    fmt_ratio(q) if q is not None else "no direct call",
                    ha="center",
                    va="center",
                    fontsize=8,
                    fontweight="bold",
                    color=colour,
                )
                ax.text(
                    j,
                    i + 0.22,
                    fmt_time(r["hub"]["median_ns"]) + zero,
                    ha="center",
                    va="center",
                    fontsize=7,
                    color=colour,
                )
        image = ax.imshow(values, cmap=cmap, norm=norm, aspect="auto", interpolation="nearest")
        ax.set_title(shape, fontsize=10, fontweight="bold", pad=4)
        ax.set_xticks(range(len(sizes)), [f"{n:,}" for n in sizes], fontsize=8)
        ax.set_xlabel("rows", fontsize=8)
        ax.set_yticks(range(len(pairs)), [p.replace(":", " → ") for p in pairs], fontsize=8.5)
        ax.tick_params(length=0)
        # Thin white lines between cells and a stronger one between source libraries.
        ax.set_xticks(np.arange(-0.5, len(sizes)), minor=True)
        ax.set_yticks(np.arange(-0.5, len(pairs)), minor=True)
        ax.grid(which="minor", color="white", linewidth=1.0)
        ax.tick_params(which="minor", length=0)
        for i in range(1, len(pairs)):
            if pairs[i].split(":")[0] == pairs[i - 1].split(":")[0]:
                continue
            for j, rows in enumerate(sizes):  # a line between source libraries, where cells are
                if any((p, shape, rows) in by_key for p in pairs[i - 1 : i + 1]):
                    ax.plot([j - 0.5, j + 0.5], [i - 0.5, i - 0.5], color="#555555", lw=1.2)
        for side in ax.spines.values():
            side.set_visible(False)
    axes[0][0].set_ylabel("source → target", fontsize=9)
    bar = fig.colorbar(
        image, ax=axes[0].tolist(), location="bottom", shrink=0.7, aspect=50, pad=0.01
    )
    vmin, vmax = math.log2(lo), math.log2(hi)  # the norm's limits
    ticks: list[float] = list(range(math.ceil(vmin), math.floor(vmax) + 1))
    labels = [f"{2.0**t:g}×" if t >= 0 else f"1/{2**-t}×" for t in ticks]
    if vmax - ticks[-1] < 0.6:  # the largest ratio measured ends the scale: label it
        ticks.pop()
        labels.pop()
    ticks.append(vmax)
    labels.append(f"{fmt_ratio(hi)} (max)")
    bar.set_ticks(ticks, labels=labels, fontsize=8)
    bar.ax.axvline(math.log2(target), color="#111111", linewidth=1.5)
    bar.set_label(
        f"hub time ÷ fastest direct call (log scale; green: at most {target:g}×, the black line)",
        fontsize=9,
    )
    fig.suptitle(
        "Hub time ÷ fastest direct call (bold) and the hub's median time; "
        "Z: zero-copy by buffer address",
        fontsize=11,
    )
    return fig


# -- memory -------------------------------------------------------------------------------------
def memory_plot(results: dict[str, Any], rows: int | None = None, dpi: int = 100) -> Figure:
    """Two scatter plots of the hub's peak extra memory per conversion at ``rows`` (default:
    the largest size measured): against the fastest direct call's peak (above the diagonal:
    the hub needs more) and against the memory the result needs beyond the source's."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D

    measured = [r for r in bench.ok_cases(results) if r.get("memory", {}).get("hub")]
    rows = rows if rows is not None else max(r["rows"] for r in measured)
    cases = [r for r in measured if r["rows"] == rows]
    fig, (vs_direct, vs_result) = plt.subplots(
        1, 2, figsize=(10.5, 5.6), layout="constrained", dpi=dpi
    )

    def scatter(ax: Any, xs: list[float], ys: list[float], group: list[dict[str, Any]]) -> None:
        for shape, marker in SHAPE_MARKERS.items():
            for zero, colour in ((True, ZERO_COPY_COLOUR), (False, COPY_COLOUR)):
                pts = [
                    (x, y)
                    for x, y, r in zip(xs, ys, group, strict=True)
                    if r["shape"] == shape and r["verified_zero_copy"] is zero
                ]
                if pts:
                    ax.scatter(
                        [p[0] for p in pts],
                        [p[1] for p in pts],
                        marker=marker,
                        s=42,
                        color=colour,
                        alpha=0.75,
                        edgecolors="white",
                        linewidths=0.6,
                        zorder=3,
                    )

    def diagonal(ax: Any, top: float, slope: float, text: str, style: str) -> None:
        ax.plot([0, top], [0, slope * top], style, color="#555555", lw=1, zorder=1, label=text)

    with_direct = [r for r in cases if r["memory"].get("direct")]
    xs = [r["memory"]["direct"]["peak_extra"] / MiB for r in with_direct]
    ys = [r["memory"]["hub"]["peak_extra"] / MiB for r in with_direct]
    scatter(vs_direct, xs, ys, with_direct)
    top = max([*xs, *ys, 0.1]) * 1.08
    diagonal(vs_direct, top, 1.0, "same as the direct call", "-")
    vs_direct.set(xlim=(-0.03 * top, top), ylim=(-0.03 * top, top))
    vs_direct.set_xlabel("fastest direct call: peak extra memory (MiB)", fontsize=9)
    vs_direct.set_ylabel("hub: peak extra memory (MiB)", fontsize=9)
    vs_direct.set_title("Hub against the fastest direct call", fontsize=10, fontweight="bold")

    xs = [r["result_new_bytes"] / MiB for r in cases]
    ys = [r["memory"]["hub"]["peak_extra"] / MiB for r in cases]
    scatter(vs_result, xs, ys, cases)
    top = max([*xs, *ys, 0.1]) * 1.08
    diagonal(vs_result, top, 1.0, "peak = the result's new memory", "-")
    target = bench.COPY_MEMORY_TARGET
    diagonal(vs_result, top, target, f"{target:g}× the result's new memory (target)", "--")
    vs_result.set(xlim=(-0.03 * top, top), ylim=(-0.03 * top, top))
    vs_result.set_xlabel("result: memory not shared with the source (MiB)", fontsize=9)
    vs_result.set_ylabel("hub: peak extra memory (MiB)", fontsize=9)
    vs_result.set_title("Hub against the memory the result needs", fontsize=10, fontweight="bold")
    for ax in (vs_direct, vs_result):
        ax.grid(color="#e5e5e5", linewidth=0.8, zorder=0)
        ax.tick_params(labelsize=8)
        ax.set_aspect("equal", adjustable="box")
        ax.legend(loc="upper left", fontsize=8, frameon=True, framealpha=0.9)

    handles = [
        Line2D([], [], linestyle="", marker="o", color=ZERO_COPY_COLOUR, label="zero-copy"),
        Line2D([], [], linestyle="", marker="o", color=COPY_COLOUR, label="copies"),
        *(
            Line2D([], [], linestyle="", marker=m, color="#777777", label=shape)
            for shape, m in SHAPE_MARKERS.items()
            if any(r["shape"] == shape for r in cases)
        ),
    ]
    fig.legend(
        handles=handles, loc="outside lower center", ncols=len(handles), fontsize=8, frameon=False
    )
    fig.suptitle(
        f"Peak extra memory of each conversion at {rows:,} rows ({len(cases)} conversions)",
        fontsize=11,
    )
    return fig


def memory_outliers(
    results: dict[str, Any], rows: int | None = None, n: int = 6
) -> list[dict[str, Any]]:
    """The ``n`` conversions at ``rows`` where the hub's peak exceeds the direct call's most."""
    measured = [
        r
        for r in bench.ok_cases(results)
        if r.get("memory", {}).get("hub") and r["memory"].get("direct")
    ]
    rows = rows if rows is not None else max(r["rows"] for r in measured)
    cases = [r for r in measured if r["rows"] == rows]

    def extra(r: dict[str, Any]) -> int:
        return int(r["memory"]["hub"]["peak_extra"] - r["memory"]["direct"]["peak_extra"])

    worst = sorted((r for r in cases if extra(r) > 0), key=extra, reverse=True)[:n]
    return [
        {
            "conversion": f"{r['src']} → {r['dst']}",
            "shape": r["shape"],
            "result (MiB)": round(bench.result_size(r) / MiB, 2),
            "hub peak (MiB)": round(r["memory"]["hub"]["peak_extra"] / MiB, 2),
            "direct peak (MiB)": round(r["memory"]["direct"]["peak_extra"] / MiB, 2),
            "direct call": r["best_direct"],
        }
        for r in worst
    ]


# -- tables -------------------------------------------------------------------------------------
_TARGETS = (
    (
        "vs_direct",
        None,
        f"copies: hub ≤ {bench.COPY_SPEED_TARGET:g}× the fastest direct call",
    ),
    ("vs_narwhals", None, "copies: hub not slower than narwhals"),
    ("vs_pandas_route", None, "copies: hub not slower than going through pandas"),
    (
        "zero_copy_scaling",
        None,
        f"zero-copy: time at the largest size ≤ {bench.ZERO_COPY_SCALING_TARGET:g}× the smallest",
    ),
    (
        "memory",
        False,
        f"copies: peak extra memory ≤ {bench.COPY_MEMORY_TARGET:g}× the result (≥ 1 MiB)",
    ),
    ("memory", True, "zero-copy: peak extra memory < 1 MiB beyond its own bitmaps"),
)


def targets_table(results: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per target: how many cases it applies to, pass, miss and the worst miss."""
    ok = list(bench.ok_cases(results))
    rows = []
    for name, zero, title in _TARGETS:
        applies = [
            r
            for r in ok
            if name in r.get("targets", {}) and (zero is None or r["verified_zero_copy"] is zero)
        ]
        missed = [r for r in applies if not r["targets"][name]["ok"]]
        worst = max(missed, key=lambda r: r["targets"][name]["value"], default=None)
        rows.append(
            {
                "target": title,
                "cases": len(applies),
                "pass": len(applies) - len(missed),
                "miss": len(missed),
                "worst miss": (
                    f"{_where(worst)}: {worst['targets'][name]['text']}" if worst else ""
                ),
            }
        )
    wrong = [r for r in ok if not r.get("plan_matches", True)]
    rows.append(
        {
            "target": "plans: zero-copy claim matches the buffer addresses",
            "cases": len(ok),
            "pass": len(ok) - len(wrong),
            "miss": len(wrong),
            "worst miss": _where(wrong[0]) if wrong else "",
        }
    )
    return rows


def slowest_cells(results: dict[str, Any], n: int = 10) -> list[dict[str, Any]]:
    """The ``n`` cases furthest above the fastest direct call, with both absolute times."""
    cells = [
        (q, r)
        for r in bench.ok_cases(results)
        if (q := ratio(r["hub"]["median_ns"], r["best_direct_ns"])) is not None
    ]
    cells.sort(key=lambda c: -c[0])
    return [
        {
            "conversion": f"{r['src']} → {r['dst']}",
            "shape": r["shape"],
            "rows": r["rows"],
            "hub": fmt_time(r["hub"]["median_ns"]),
            "fastest direct call": fmt_time(r["best_direct_ns"]),
            "hub ÷ direct": fmt_ratio(q),
            "direct call": r["best_direct"],
            "hub zero-copy": "yes" if r["verified_zero_copy"] else "no",
        }
        for q, r in cells[:n]
    ]


def headline_text(results: dict[str, Any]) -> str:
    """The benchmark's headline in one markdown sentence (no list of cases)."""
    head = bench.headline(results["cases"])
    cells = head["cells"]
    if not cells:
        return "No case had a direct call to compare with."
    no_route = sum(1 for r in results["cases"] if r["status"] == "no route")
    errors = sum(1 for r in results["cases"] if r["status"] == "error")
    lost = len(head["zero_copy_lost"])
    return (
        f"**{head['within']} of {cells} conversions ({head['within'] / cells:.0%}) take at most "
        f"{bench.COPY_SPEED_TARGET:g}× the time of the fastest direct call**; "
        f"{len(head['above_cap'])} take more than {bench.HEADLINE_CAP:g}×; "
        f"{lost} copy data that a direct call shares"
        + (f"; {no_route} pairs have no route" if no_route else "")
        + (f"; {errors} raised an error" if errors else "")
        + "."
    )


def table(rows: Sequence[dict[str, Any]], wrap: Sequence[str] = ()) -> Any:
    """``rows`` as a pandas Styler for a notebook: no index, text left-aligned and numbers
    right-aligned (a notebook's own CSS right-aligns everything), one line per row except
    in the ``wrap`` columns."""
    import pandas as pd

    frame = pd.DataFrame(list(rows))
    numbers = [c for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c])]
    texts = [c for c in frame.columns if c not in numbers]
    cell = "padding: 3px 10px; vertical-align: top;"
    styler = frame.style.hide(axis="index").format(precision=2, thousands=",")
    styler = styler.set_table_styles(
        [{"selector": "th", "props": cell + "text-align: left; white-space: nowrap;"}]
    )
    styler = styler.set_properties(subset=numbers, **{"text-align": "right"})
    styler = styler.set_properties(subset=texts, **{"text-align": "left"})
    nowrap = [c for c in frame.columns if c not in wrap]
    styler = styler.set_properties(subset=nowrap, **{"white-space": "nowrap"})
    return styler.set_properties(**{"padding": "3px 10px", "vertical-align": "top"})
