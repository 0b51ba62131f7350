"""Inputs that crash libraries the hub calls: run in a subprocess, so a crash is a failure."""

from __future__ import annotations

import subprocess
import sys

import pytest

NESTED_VIEWS = {
    "fixed_size_list": "pa.array([['a', 'b']], pa.list_(pa.string_view(), 2))",
    "map": "pa.array([[('a', 'x')]], pa.map_(pa.string_view(), pa.string_view()))",
    "list_view": "pa.array([['a'], ['b']], pa.list_view(pa.string_view()))",
    "polars_array": "pl.Series('a', [['x', 'y']], dtype=pl.Array(pl.String, 2))",
    "polars_struct": "pl.DataFrame({'s': [{'a': 'x'}]})",
}


@pytest.mark.parametrize("case", list(NESTED_VIEWS))
def test_nested_views_into_nanoarrow_do_not_crash(case: str) -> None:
    # nanoarrow 0.9 aborts the process on string_view, however deeply it is nested.
    code = (
        "import pyarrow as pa, polars as pl, interchange_hub as ih\n"
        f"out = ih.Hub(autoload=False).convert({NESTED_VIEWS[case]}, to='nanoarrow')\n"
        "import pyarrow as pa\n"
        "assert 'view' not in str(pa.chunked_array(out).type)\n"
        "print(len(out))"
    )
    command = [sys.executable, "-c", code]
    run = subprocess.run(command, check=False, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
