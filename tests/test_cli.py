"""The command line: demo, matrix, explain and plugins."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from interchange_hub.cli import main


def test_demo_prints_a_verified_matrix(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--rows", "200"]) == 0
    out = capsys.readouterr().out
    assert "from \\ to" in out and "pandas" in out
    assert "Every cell's claim matched the measured buffer addresses." in out
    assert "C: each column is copied into one column-major 2-D tensor" in out


def test_matrix_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["matrix", "--rows", "100", "--kind", "column"]) == 0
    out = capsys.readouterr().out
    assert "columns: one int64 column" in out and "tables:" not in out
    assert "  polars     Z          Z" in out
    assert "Every cell's claim matched" in out


def test_matrix_markdown(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["matrix", "--rows", "100", "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert "| from \\ to | pyarrow | nanoarrow | polars | pandas | numpy | torch |" in out
    assert "| **numpy** | C | C | C | Z | Z | Z |" in out


def test_matrix_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["matrix", "--rows", "100", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["libraries"][:2] == ["pyarrow", "nanoarrow"]
    assert len(data["cells"]) == 2 * len(data["libraries"]) ** 2
    cell = next(c for c in data["cells"] if c["source"] == "pandas" and c["target"] == "polars")
    assert cell["status"] == "zero-copy" and cell["verified"]
    assert cell["shared_bytes"] == cell["source_bytes"] > 0


def test_explain_prints_the_plan_and_checks_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "pandas", "polars", "--rows", "1000"]) == 0
    out = capsys.readouterr().out
    assert "sample: 1,000-row table in pandas (DataFrame)" in out
    assert "Plan pandas.DataFrame -> polars: zero-copy" in out
    assert (
        "ran it: result polars.dataframe.frame.DataFrame; 15.6 KiB of the source's 15.6 KiB" in out
    )


def test_explain_with_copy_false_reports_the_refusal(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "numpy", "polars", "--copy", "false", "--rows", "10"]) == 2
    err = capsys.readouterr().err
    assert "interchange-hub explain: CopyRequiredError" in err


@pytest.mark.skipif(torch.cuda.is_available(), reason="this torch reaches a GPU")
def test_explain_shows_a_device_move_before_it_fails_without_a_gpu(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["explain", "numpy", "torch", "--kind", "column", "--rows", "10", "--device", "cuda:0"]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert "(device move cpu -> cuda:0)" in out
    assert "DeviceError: this torch cannot reach a GPU" in err


def test_explain_names_an_unknown_library() -> None:
    with pytest.raises(SystemExit, match="unknown source library 'pandsa'; installed: pyarrow"):
        main(["explain", "pandsa", "polars"])


def test_plugins_lists_builtins(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plugins"]) == 0
    out = capsys.readouterr().out
    assert "interchange_hub plugins: 9 loaded, 0 failed" in out
    assert "interchange_hub.adapters._polars     built-in  interchange-hub 0.1.0  polars" in out
    assert "register_edges" in out


def test_plugins_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plugins", "--json", "--all"]) == 0
    data = json.loads(capsys.readouterr().out)
    polars = next(p for p in data if p["name"] == "interchange_hub.adapters._polars")
    assert polars["adapters"] == ["polars"] and polars["distribution"] == "interchange-hub"
    assert polars["version"] == "0.1.0"


def test_the_console_script_and_module_agree() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "interchange_hub", "--help"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    for command in ("plugins", "explain", "matrix", "demo"):
        assert command in done.stdout
