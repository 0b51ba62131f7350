"""``ih.convert`` is typed by its target: mypy (strict) on a file of ``reveal_type`` calls."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
EXPECTED = [
    "polars.dataframe.frame.DataFrame",  # to=pl.DataFrame
    "torch._tensor.Tensor",  # to=torch.Tensor
    "numpy.ndarray[Any, Any]",  # to="numpy"
    "torch._tensor.Tensor",  # to="torch", dtype=
    "dict[str, torch._tensor.Tensor]",  # to="torch", as_dict=True
    "dict[str, numpy.ndarray[Any, Any]]",  # to=np.ndarray, as_dict=True
    "Any",  # to="polars": a DataFrame or a Series, depending on the data
    "interchange_hub._engine.plans.Plan",  # ih.plan
    "polars.dataframe.frame.DataFrame",  # Hub.convert
]


def test_convert_is_typed_by_its_target() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "reveal_convert.py"],
        cwd=HERE / "typing",
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    revealed = re.findall(r'Revealed type is "(.*)"', done.stdout)
    assert revealed == EXPECTED, done.stdout + done.stderr
    assert "error" not in done.stdout.replace("Found 0 errors", ""), done.stdout
