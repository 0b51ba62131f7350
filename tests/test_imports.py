"""``import interchange_hub`` must stay light: no data library is imported."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ["pyarrow", "nanoarrow", "polars", "pandas", "numpy", "torch", "cupy"]


def _imported_after(code: str) -> list[str]:
    probe = f"import sys\n{code}\nprint(','.join(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout.strip()
    return [m for m in out.split(",") if m]


def test_import_leaves_data_libraries_unimported() -> None:
    assert _imported_after("import interchange_hub") == []


def test_building_the_hub_leaves_data_libraries_unimported() -> None:
    code = "import interchange_hub as ih\nh = ih.Hub(autoload=False)\nh.adapters()"
    assert _imported_after(code) == []


def test_converting_numpy_imports_only_what_the_route_needs() -> None:
    code = (
        "import numpy, interchange_hub as ih\n"
        "ih.Hub(autoload=False).convert(numpy.arange(3), to='numpy', copy=True)"
    )
    assert set(_imported_after(code)) == {"numpy"}
