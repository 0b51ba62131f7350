"""Execute compare_libraries.ipynb and render it to HTML: ``python notebooks/run.py``.

Runs every cell with nbclient in a ``python3`` kernel of this interpreter (ipykernel must
be installed here), started in ``notebooks/`` as Jupyter starts it; exits non-zero on the
first cell that raises, printing its traceback. The executed notebook is rendered to HTML
with nbconvert (``--html``, default ``build/notebook.html``; ``--no-html`` to skip), also
when a cell failed, so that the page shows how far it got. The notebook file itself is not
modified; ``--output`` saves the executed copy.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import nbformat
from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError

HERE = Path(__file__).resolve().parent
NOTEBOOK = HERE / "compare_libraries.ipynb"
HTML = HERE.parent / "build" / "notebook.html"
KERNEL = "python3"


def check_kernel() -> str | None:
    """Why the ``python3`` kernel would not run in this interpreter (None when it would)."""
    try:
        spec = KernelSpecManager().get_kernel_spec(KERNEL)
    except NoSuchKernel:
        return "no python3 kernel: pip install ipykernel"
    exe = spec.argv[0]
    if exe in ("python", "python3", "{python}"):  # ipykernel's own spec: sys.executable
        return None
    if Path(exe).resolve() != Path(sys.executable).resolve():
        return (
            f"the python3 kernel runs {exe}, not {sys.executable}; install one here with "
            f"'{sys.executable} -m ipykernel install --sys-prefix'"
        )
    return None


def execute(
    path: Path = NOTEBOOK,
    output: Path | None = None,
    timeout: int = 600,
    html: Path | None = None,
) -> float:
    """Run the notebook; return the seconds it took. Raises CellExecutionError on errors.

    ``output`` and ``html`` get the executed notebook, as far as it ran, either way."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name=KERNEL,
        resources={"metadata": {"path": str(path.parent)}},
        # The kernel's matplotlib draws inline without a display.
        env={**os.environ, "MPLBACKEND": "module://matplotlib_inline.backend_inline"},
    )
    started = time.perf_counter()
    try:
        client.execute()
    finally:
        if output is not None:
            nbformat.write(nb, output)
        if html is not None:
            render_html(nb, html)
    return time.perf_counter() - started


def render_html(nb: nbformat.NotebookNode, path: Path) -> None:
    """Write the (executed) notebook as one self-contained HTML page, images embedded."""
    from nbconvert import HTMLExporter  # the bench extra installs it

    body, _ = HTMLExporter(embed_images=True).from_notebook_node(nb)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook", nargs="?", type=Path, default=NOTEBOOK)
    parser.add_argument("--output", type=Path, help="write the executed notebook here")
    parser.add_argument(
        "--html", type=Path, default=HTML, help=f"render the executed notebook here ({HTML})"
    )
    parser.add_argument("--no-html", action="store_true", help="do not render HTML")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    args = parser.parse_args(argv)
    html = None if args.no_html else args.html
    problem = check_kernel()
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    try:
        seconds = execute(args.notebook, args.output, args.timeout, html)
    except (CellExecutionError, CellTimeoutError) as exc:
        print(f"error: {args.notebook.name} failed:\n{exc}", file=sys.stderr)
        if html is not None:
            print(f"the page as far as it ran: {html}", file=sys.stderr)
        return 1
    print(f"{args.notebook.name}: every cell ran, in {seconds:.0f} s")
    if html is not None:
        print(f"rendered to {html}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
