"""Write compare_libraries.ipynb (no outputs) from the cells below: ``python notebooks/make_notebook.py``.

The notebook is generated so that it stays reproducible and reviewable: edit the cells
here, run this script, commit both files. Cell ids are fixed, so regenerating an
unchanged notebook gives the same file. ``python notebooks/run.py`` executes it.
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

This notebook compares `interchange_hub` with the calls people write by hand for every
ordered pair of pyarrow, nanoarrow, polars, pandas, numpy and torch, on small samples
(so that it runs in about a minute on two cores; `python benchmarks/run.py` measures the
full sizes). It shows:

1. the sample data,
2. the conversion matrix as a heatmap: hub time ÷ the fastest direct call, with the
   zero-copy cells (verified by buffer address) marked **Z**,
3. the memory each conversion needs,
4. a few plans, rendered as tables (`Plan._repr_html_`),
5. the device policy in plans, and GPU conversions where a CUDA device is present.

The measurement code is `benchmarks/bench.py` (and `benchmarks/report.py` for the
heatmap), shared with the command-line benchmark.""",
    ),
    (
        "code",
        """\
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np  # noqa: TID253 - a notebook imports what it shows
import pandas as pd  # noqa: TID253
from IPython.display import Markdown, display

import interchange_hub as ih

# The benchmark code lives in <repo>/benchmarks; find it from wherever the kernel started.
HERE = Path.cwd()
ROOT = next(p for p in [HERE, *HERE.parents] if (p / "benchmarks" / "bench.py").exists())
sys.path.insert(0, str(ROOT / "benchmarks"))
import bench
import report

print("python", sys.version.split()[0], "at", sys.executable)
print("libraries:", ", ".join(f"{k} {v}" for k, v in bench.environment()["versions"].items()))
NOTEBOOK_STARTED = time.perf_counter()""",
    ),
    (
        "md",
        """\
## 1. Sample data

Five shapes, each built once in Arrow and then handed to each library with the
library's own API (`bench.make_source`): numpy and torch hold the tables as 2-D tensors
and cannot hold the string and mixed tables at all.""",
    ),
    (
        "code",
        """\
for shape, doc in bench.SHAPE_DOC.items():
    print(f"{shape:9} {doc}")

data = bench.arrow_data("mixed", 5)
display(bench.make_source("pandas", "mixed", data))
display(bench.make_source("polars", "mixed", data))
print(repr(bench.make_source("numpy", "numeric", bench.arrow_data("numeric", 3))))""",
    ),
    (
        "md",
        """\
## 2. The conversion matrix

Every installed ordered pair × shape at 1,000 and 100,000 rows, with short measurements
(`Settings.quick()`: numbers are indicative, the CLI's full run is the reference).
Each cell is the hub's median time divided by the fastest direct call for that pair
(below 1, green: the hub is faster); **Z** marks results that share every byte of the
source (checked by address with `hub.shared_bytes`), `–` a pair the hub has no route for.""",
    ),
    (
        "code",
        """\
settings = bench.Settings.quick()
started = time.perf_counter()
bench.prepare()
cases = bench.plan_cases([1_000, 100_000])
records = bench.run_matrix(cases, settings)
bench.evaluate(records)
results = {"meta": {"sizes": [1_000, 100_000]}, "cases": records}
print(f"{len(cases)} cases measured in {time.perf_counter() - started:.0f} s")
fig = report.heatmap(results)""",
    ),
    (
        "md",
        """\
The targets the project set (dispatch, scaling and memory targets are measured properly
by the CLI; here they are indicative):""",
    ),
    (
        "code",
        """\
display(Markdown("\\n".join(report.summary_lines(results))))""",
    ),
    (
        "md",
        """\
## 3. Memory

Peak extra memory of each conversion at 100,000 rows: the larger of the resident-set
high-water mark (reset through `/proc/self/clear_refs`) and the peak of a proxy Arrow
memory pool, against the size of the result (`new_result_MiB`: the part of the result
that is not the source's memory). Zero-copy conversions need (almost) nothing.""",
    ),
    (
        "code",
        """\
memory = pd.DataFrame(report.memory_rows(results))
memory = memory[memory["rows"] == 100_000].drop(columns="rows")
memory["hub_peak_vs_result"] = memory["hub_peak_extra_MiB"] / memory["result_MiB"]
pd.set_option("display.max_rows", 200)
memory.round(3).sort_values(["shape", "zero_copy", "pair"]).reset_index(drop=True)""",
    ),
    (
        "md",
        """\
## 4. Plans

`ih.plan(obj, to=...)` says what `convert` would do, step by step, before anything runs;
in a notebook it renders as a table (green: zero-copy step, orange: a step that copies).""",
    ),
    (
        "code",
        """\
mixed = bench.arrow_data("mixed", 1_000)
pandas_df = bench.make_source("pandas", "mixed", mixed)
series = bench.make_source("polars", "column", bench.arrow_data("column", 1_000))
matrix_c = bench.make_source("numpy", "numeric", bench.arrow_data("numeric", 1_000))
matrix_f = np.asfortranarray(matrix_c)

display(ih.plan(pandas_df, to="polars"))
display(ih.plan(series, to="torch"))
display(ih.plan(matrix_c, to="polars"))
display(ih.plan(matrix_f, to="polars"))""",
    ),
    (
        "md",
        """\
A plan's claim is checked against the memory the result really uses: here the
Fortran-ordered matrix becomes a polars DataFrame that shares all of its bytes, while
the C-ordered one (rows stored together) has to be gathered column by column.""",
    ),
    (
        "code",
        """\
hub = ih.default_hub()
for name, matrix in [("C-ordered", matrix_c), ("Fortran-ordered", matrix_f)]:
    frame = ih.convert(matrix, to="polars")
    shared = hub.shared_bytes(matrix, frame)
    zero_copy = ih.plan(matrix, to="polars").zero_copy
    print(f"{name:16} {shared:>7,} of {matrix.nbytes:,} bytes shared; plan zero-copy: {zero_copy}")
try:
    ih.convert(matrix_c, to="polars", copy=False)
except ih.CopyRequiredError as exc:
    print("copy=False:", type(exc).__name__, "-", str(exc)[:200], "...")""",
    ),
    (
        "md",
        """\
## 5. Devices

Planning runs nothing, so the device policy shows on any machine: every move between host
and GPU is a step of the plan, counted as a copy, and `copy=False` refuses it. Where a CUDA
device is present, the second cell converts between cupy and CUDA torch (zero-copy, checked
by device pointer) and moves data to and from the CPU libraries.""",
    ),
    (
        "code",
        """\
host = np.arange(1_000_000, dtype=np.float32)
display(ih.plan(host, to="torch", device="cuda:0"))
try:
    ih.plan(host, to="torch", device="cuda:0", copy=False)
except ih.CopyRequiredError as exc:
    print("copy=False:", type(exc).__name__, "-", str(exc)[:160], "...")
try:
    ih.plan(host, to="polars", device="cuda:0")
except ih.DeviceError as exc:
    print("device='cuda:0' to polars:", type(exc).__name__, "-", exc)""",
    ),
    (
        "code",
        """\
import torch  # noqa: TID253

if not torch.cuda.is_available():
    print("No GPU present (torch.cuda.is_available() is False): the GPU cell is skipped.")
else:
    cuda = torch.arange(1_000_000, dtype=torch.float64, device="cuda")
    try:
        import cupy  # noqa: TID253
    except ImportError:
        cupy = None
    if cupy is not None:
        as_cupy = ih.convert(cuda, to="cupy")
        print("cuda tensor -> cupy, same memory:", as_cupy.data.ptr == cuda.data_ptr())
    for target, options in [("numpy", {}), ("polars", {}), ("torch", {"device": "cpu"})]:
        plan = ih.plan(cuda, to=target, **options)
        display(plan)
        start = time.perf_counter()
        result = ih.convert(cuda, to=target, **options)
        torch.cuda.synchronize()
        took = (time.perf_counter() - start) * 1e3
        print(f"-> {target}: {type(result).__name__} in {took:.2f} ms")
    start = time.perf_counter()
    direct = cuda.cpu().numpy()
    print(f"direct cuda.cpu().numpy(): {(time.perf_counter() - start) * 1e3:.2f} ms")""",
    ),
    (
        "code",
        """\
print(f"notebook ran in {time.perf_counter() - NOTEBOOK_STARTED:.0f} s")""",
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
