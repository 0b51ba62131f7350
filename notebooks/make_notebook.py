"""Write compare_libraries.ipynb (no outputs) from the cells below: ``python notebooks/make_notebook.py``.

The notebook is generated so that it stays reproducible and reviewable: edit the cells
here, run this script, commit both files. Cell ids are fixed, so regenerating an
unchanged notebook gives the same file. ``python notebooks/run.py`` executes it and
renders it to ``build/notebook.html``.

The cells are written for a reader: no set-up lines (``benchkit.py``, next to the notebook,
makes ``benchmarks/`` importable; the kernel starts in this folder), no lint comments (ruff
does not lint this folder), figures and tables from ``benchmarks/views.py``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent
NOTEBOOK = HERE / "compare_libraries.ipynb"

CELLS: list[tuple[str, str]] = [
    (
        "md",
        """\
# Moving data between Python data libraries with `interchange_hub`

`interchange_hub` converts data between pyarrow, nanoarrow, polars, pandas, numpy and
torch with one call, `ih.convert(obj, to="polars")`, sharing memory wherever the layouts
allow and saying where they do not; plugin packages add JAX, Hugging Face `datasets` and
xarray. This notebook measures what that costs against the call you would write by hand,
for every ordered pair of the six built-in libraries, and for each plugin library that is
installed, to and from the two libraries it is most used with (JAX: numpy and torch;
`datasets`: polars and pandas; xarray: pandas and numpy):

1. **Sample data**: the five kinds of data measured;
2. **Speed**: the hub's time against the fastest direct call, per pair, shape and size;
3. **Memory**: the peak extra memory of each conversion;
4. **Plans**: what a conversion will do (copies, losses, warnings) before it runs;
5. **Devices**: moves between CPU and GPU, explicit steps of a plan.

The data is small (1,000 and 100,000 rows, short measurements) so that the notebook runs
in about half a minute; its ratios are indicative. `python benchmarks/run.py` measures
every pair of the installed libraries, up to 10 million rows (see `benchmarks/README.md`).

**Running it**: in a checkout, `pip install -e '.[bench]'`, then open this file in Jupyter
or VS Code (which start the kernel in `notebooks/`, where `benchkit.py` makes the
benchmark code importable), or run `python notebooks/run.py`, which executes it and
writes `build/notebook.html`.""",
    ),
    (
        "code",
        """\
import textwrap
import time

import numpy as np
import pandas as pd
import torch
from IPython.display import Markdown, display

import interchange_hub as ih
from benchkit import bench, views""",
    ),
    (
        "md",
        """\
## 1. Sample data

Each shape is built once in Arrow and handed to each library through the library's own
API (`bench.make_source`). numpy, torch and jax hold the tables as 2-D tensors and cannot
hold the `string`, `mixed` and `nulls` tables; `datasets` holds each shape as a `Dataset`, xarray
the tensors as a `DataArray` and the other tables as a `Dataset`. The plugin libraries
measured here, and any skipped (not installed, or the plugin does not load), are listed
below the shapes.""",
    ),
    (
        "code",
        """\
rows = "\\n".join(f"| `{shape}` | {doc} |" for shape, doc in bench.SHAPE_DOC.items())
display(Markdown("| shape | data |\\n|---|---|\\n" + rows))
print("plugin libraries measured:", ", ".join(bench.PLUGINS) or "none")
for name, why in bench.SKIPPED_LIBRARIES.items():
    print(f"skipped: {name} ({why})")""",
    ),
    (
        "md",
        """\
The `mixed` table in pandas and in polars, and the `numeric` table as a numpy array:""",
    ),
    (
        "code",
        """\
mixed = bench.arrow_data("mixed", 5)
display(bench.make_source("pandas", "mixed", mixed))
display(bench.make_source("polars", "mixed", mixed))
bench.make_source("numpy", "numeric", bench.arrow_data("numeric", 3))""",
    ),
    (
        "md",
        """\
## 2. Speed: the hub against the fastest direct call

For each ordered pair of libraries, shape and size, the hub's call
(`ih.Hub().convert(x, to=...)`, the route already cached) is timed against every direct
call a user might write for that pair (`pl.from_arrow(x)`, `df.to_numpy()`,
`torch.from_numpy(x)`, …), interleaved, and compared with the fastest of them.

Each cell shows **hub time ÷ fastest direct call** (bold) and, below it, the **hub's
median time**. The colour follows the ratio on a log scale: greens at or below 1.05×
(darker: the hub is faster), yellow to dark red above, up to the largest ratio measured.
**Z** marks results that share every byte of the source and add none, checked by buffer
address. Blank cells are shapes numpy, torch and jax cannot hold.""",
    ),
    (
        "code",
        """\
bench.prepare()
cases = bench.plan_cases([1_000, 100_000], pairs=bench.sample_pairs())
records = bench.run_matrix(cases, bench.Settings.quick())
bench.evaluate(records)
results = {"cases": records}
fig = views.heatmap(results)""",
    ),
    (
        "code",
        """\
display(Markdown(views.headline_text(results)))
views.table(views.slowest_cells(results, n=8))""",
    ),
    (
        "md",
        """\
The project's targets, counted over the cases they apply to (a copying conversion is held
to the direct call's speed and memory; a zero-copy one should not grow with the data):""",
    ),
    (
        "code",
        """\
views.table(views.targets_table(results), wrap=["worst miss"])""",
    ),
    (
        "md",
        """\
## 3. Memory

Peak extra memory of each conversion at 100,000 rows, measured once per conversion: the
larger of the resident-set high-water mark and the peak of Arrow's memory pool. The left
plot compares the hub with the fastest direct call (above the diagonal: the hub needs
more); the right one compares it with the memory the result needs beyond the source's.
Memory an allocator reuses without the operating system seeing it is not counted, so the
figures are lower bounds, and zero-copy conversions sit at (almost) zero.""",
    ),
    (
        "code",
        """\
fig = views.memory_plot(results)""",
    ),
    (
        "md",
        """\
The conversions where the hub needs the most memory beyond the direct call's:""",
    ),
    (
        "code",
        """\
views.table(views.memory_outliers(results), wrap=["direct call"])""",
    ),
    (
        "md",
        """\
## 4. Plans

`ih.plan(obj, to=...)` says what `convert` would do, step by step, before anything runs.
In a notebook it shows as a table: green rows share memory, orange rows copy, red rows
lose information, violet rows move data between devices; the notes below a table say what
to watch for, such as a torch tensor that writes through to its source.""",
    ),
    (
        "code",
        """\
pandas_df = bench.make_source("pandas", "mixed", bench.arrow_data("mixed", 1_000))
display(ih.plan(pandas_df, to="polars"))

series = bench.make_source("polars", "column", bench.arrow_data("column", 1_000))
display(ih.plan(series, to="torch"))

with_nulls = pd.DataFrame({"n": pd.array([1, None, 3], dtype="Int64"), "f": [0.5, 1.5, 2.5]})
display(ih.plan(with_nulls, to="numpy"))""",
    ),
    (
        "md",
        """\
The plugin libraries plan the same way: torch allocates at 64-byte boundaries, so JAX
shares a tensor's memory (a numpy array, 16-byte aligned, would be copied, and the plan
would say why); a `datasets.Dataset` wraps the Arrow data it is given; a `DataArray`'s
values go to a tensor as they are. These plans come from the benchmark's hub,
`bench.HUB` (the built-in adapters and the plugins that load here); `ih.plan` gives the
same once the plugins are installed, as it loads them through their entry points.""",
    ),
    (
        "code",
        """\
if "jax" in bench.PLUGINS:
    display(bench.HUB.plan(torch.arange(100_000, dtype=torch.float32), to="jax"))
if "datasets" in bench.PLUGINS:
    display(bench.HUB.plan(bench.make_source("polars", "mixed", mixed), to="datasets"))
if "xarray" in bench.PLUGINS:
    data_array = bench.make_source("xarray", "tensor2d", bench.arrow_data("tensor2d", 1_000))
    display(bench.HUB.plan(data_array, to="torch"))
missing = [name for name in bench.PLUGIN_LIBRARIES if name not in bench.PLUGINS]
if missing:
    print("not installed or not loading (see section 1), so not shown:", ", ".join(missing))""",
    ),
    (
        "md",
        """\
A plan's claim is checked against the memory the result really uses. A Fortran-ordered
matrix (columns stored one after another) becomes a polars DataFrame that shares all of
its bytes; a C-ordered one (rows stored together) has to be gathered column by column:""",
    ),
    (
        "code",
        """\
matrix_c = bench.make_source("numpy", "numeric", bench.arrow_data("numeric", 1_000))
matrix_f = np.asfortranarray(matrix_c)
display(ih.plan(matrix_c, to="polars"))
display(ih.plan(matrix_f, to="polars"))

hub = ih.default_hub()
for name, matrix in [("C-ordered", matrix_c), ("Fortran-ordered", matrix_f)]:
    frame = ih.convert(matrix, to="polars")
    zero_copy = ih.plan(matrix, to="polars").zero_copy
    shared = hub.shared_bytes(matrix, frame)
    print(f"{name:15}  plan: zero-copy={zero_copy!s:5}  shared: {shared:,} of {matrix.nbytes:,} bytes")""",
    ),
    (
        "md",
        """\
`copy=False` turns a copy into an error that names the step and the reason, before
anything runs:""",
    ),
    (
        "code",
        """\
try:
    ih.convert(matrix_c, to="polars", copy=False)
except ih.CopyRequiredError as exc:
    print(textwrap.fill(f"{type(exc).__name__}: {exc}", width=100, break_on_hyphens=False))""",
    ),
    (
        "md",
        """\
## 5. Devices

Planning runs nothing, so the device policy shows on any machine: every move between host
and GPU is a step of the plan, counted as a copy, and `copy=False` refuses it. Where a CUDA
device is present, the next cell also converts between cupy and CUDA torch (zero-copy,
checked by device pointer) and moves data to and from the CPU libraries.""",
    ),
    (
        "code",
        """\
host = np.arange(1_000_000, dtype=np.float32)
display(ih.plan(host, to="torch", device="cuda:0"))
try:
    ih.plan(host, to="torch", device="cuda:0", copy=False)
except ih.CopyRequiredError as exc:
    message = f"copy=False -> {type(exc).__name__}: {exc}"
    print(textwrap.fill(message, width=100, break_on_hyphens=False), end="\\n\\n")
try:
    ih.plan(host, to="polars", device="cuda:0")
except ih.DeviceError as exc:
    message = f"polars on cuda:0 -> {type(exc).__name__}: {exc}"
    print(textwrap.fill(message, width=100, break_on_hyphens=False))""",
    ),
    (
        "code",
        """\
if not torch.cuda.is_available():
    print("No CUDA device here (torch.cuda.is_available() is False): no GPU conversions run.")
else:
    cuda = torch.arange(1_000_000, dtype=torch.float64, device="cuda")
    try:
        import cupy
    except ImportError:
        cupy = None
    if cupy is not None:
        as_cupy = ih.convert(cuda, to="cupy")
        print("CUDA tensor -> cupy, same memory:", as_cupy.data.ptr == cuda.data_ptr())
    for target, options in [("numpy", {}), ("polars", {}), ("torch", {"device": "cpu"})]:
        display(ih.plan(cuda, to=target, **options))
        started = time.perf_counter()
        result = ih.convert(cuda, to=target, **options)
        torch.cuda.synchronize()
        took = (time.perf_counter() - started) * 1e3
        print(f"-> {target}: {type(result).__name__} in {took:.2f} ms")
    started = time.perf_counter()
    direct = cuda.cpu().numpy()
    print(f"direct cuda.cpu().numpy(): {(time.perf_counter() - started) * 1e3:.2f} ms")""",
    ),
    (
        "md",
        """\
## About this run""",
    ),
    (
        "code",
        """\
env = bench.environment()
display(Markdown(
    f"Python {env['python']} on {env['platform']}, {env['cpus']} CPUs; "
    + ", ".join(f"{name} {version}" for name, version in env["versions"].items())
))""",
    ),
]


def build() -> nbformat.NotebookNode:
    nb = new_notebook()
    nb.metadata = {
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"},
    }
    for i, (kind, source) in enumerate(CELLS):
        cell = new_markdown_cell(source) if kind == "md" else new_code_cell(source)
        cell.id = f"cell-{i:02d}"
        nb.cells.append(cell)
    nbformat.validate(nb)
    return nb


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", type=Path, default=NOTEBOOK)
    parser.add_argument(
        "--check", action="store_true", help="exit 1 if the file differs from what would be written"
    )
    args = parser.parse_args(argv)
    text = nbformat.writes(build()) + "\n"
    if args.check:
        current = args.path.read_text() if args.path.exists() else ""
        if current != text:
            print(f"{args.path} is out of date: run python notebooks/make_notebook.py")
            return 1
        print(f"{args.path} is up to date")
        return 0
    args.path.write_text(text)
    print(f"wrote {args.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
