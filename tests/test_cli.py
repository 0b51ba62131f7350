"""The command line: the demo matrix."""

from __future__ import annotations

import pytest

from interchange_hub.__main__ import main


def test_demo_prints_a_verified_matrix(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--rows", "200"]) == 0
    out = capsys.readouterr().out
    assert "from \\ to" in out and "pandas" in out
    assert "Every cell's claim matched the measured buffer addresses." in out
    assert "C: a 2-D tensor interleaves the columns" in out
