"""The benchmark modules of this checkout, for the notebook: ``from benchkit import bench, views``.

The measurement code lives in ``benchmarks/`` (``bench.py``, ``report.py``, ``views.py``),
which is not a package. Jupyter, VS Code and ``notebooks/run.py`` start a notebook's kernel
in the notebook's folder, so this module is importable from the notebook as it stands; it
loads those files by path under the names they import each other by (``import bench``),
so the notebook needs no ``sys.path`` line and ``sys.path`` stays as it was.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def _load(name: str) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    if spec is None or spec.loader is None:  # pragma: no cover - the file is in the checkout
        raise ImportError(f"no {name}.py in {BENCHMARKS}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


bench = _load("bench")
report = _load("report")
views = _load("views")

__all__ = ["BENCHMARKS", "bench", "report", "views"]
