"""The command line: demo, matrix, explain and plugins; its errors, partial installs and
packaging (the torch pin lives in constraints.txt, not in the extras)."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import torch

import interchange_hub as ih
from interchange_hub import cli
from interchange_hub.cli import main
from tests.fake_plugins import boxes

ROOT = Path(__file__).resolve().parents[1]

# Makes the modules named in BLOCK_MODULES (a comma list) "not installed": importing one
# raises ModuleNotFoundError and importlib.util.find_spec reports it missing, as on a
# machine without it. Loaded as sitecustomize, so the command runs as `python -m ...`.
SITECUSTOMIZE = """
import os, sys

BLOCKED = set(filter(None, os.environ.get("BLOCK_MODULES", "").split(",")))


class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, Blocker())
"""


def run_cli(
    *args: str, blocked: str = "", tmp_path: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m interchange_hub ARGS`` in a subprocess, with ``blocked`` modules missing."""
    # COLUMNS: argparse wraps its usage lines to it.
    environ = {**os.environ, "RUST_BACKTRACE": "0", "COLUMNS": "80", **(env or {})}
    if blocked:
        assert tmp_path is not None
        (tmp_path / "sitecustomize.py").write_text(SITECUSTOMIZE)
        environ["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(ROOT)])
        environ["BLOCK_MODULES"] = blocked
    return subprocess.run(
        [sys.executable, "-m", "interchange_hub", *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env=environ,
    )


def no_traceback(text: str) -> bool:
    return not re.search(r"^Traceback \(most recent call last\)", text, re.MULTILINE)


# -- the reports --------------------------------------------------------------------------------
def test_demo_prints_a_verified_matrix(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--rows", "200"]) == 0
    out = capsys.readouterr().out
    assert "from \\ to" in out and "pandas" in out
    assert "Every cell's claim matched the measured buffer addresses." in out
    assert "C: each column is copied into one column-major 2-D tensor" in out
    assert "left out" not in out


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
    assert out.rstrip().endswith("Every cell's claim matched the measured buffer addresses.")


def test_matrix_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["matrix", "--rows", "100", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["libraries"][:2] == ["pyarrow", "nanoarrow"]
    assert len(data["cells"]) == 2 * len(data["libraries"]) ** 2
    assert data["missing"] == []
    cells = len(data["cells"])
    assert data["summary"] == {
        "cells": cells,
        "checked": cells,
        "matched": cells,
        "wrong": 0,
        "failed": 0,
        "no_route": 0,
    }
    cell = next(c for c in data["cells"] if c["source"] == "pandas" and c["target"] == "polars")
    assert cell["status"] == "zero-copy" and cell["verified"] and cell["checked"]
    assert cell["shared_bytes"] == cell["source_bytes"] > 0


def test_explain_prints_the_plan_and_checks_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "pandas", "polars", "--rows", "1000"]) == 0
    out = capsys.readouterr().out
    assert "sample: 1,000-row table in pandas (DataFrame)" in out
    assert "Plan pandas.DataFrame -> polars: zero-copy" in out
    assert (
        "ran it: result polars.dataframe.frame.DataFrame; 15.6 KiB of the source's 15.6 KiB" in out
    )


def test_explain_json_and_markdown(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "pandas", "polars", "--rows", "1000", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["sample"] == {
        "library": "pandas",
        "kind": "table",
        "rows": 1000,
        "type": "pandas.DataFrame",
    }
    assert data["plan"]["zero_copy"] and data["plan"]["steps"][0]["protocol"] == "pl.from_pandas"
    assert data["result"]["type"] == "polars.dataframe.frame.DataFrame"
    assert data["result"]["shared_bytes"] == data["result"]["source_bytes"] == 16_000
    assert main(["explain", "numpy", "polars", "--rows", "10", "--format", "markdown"]) == 0
    out = capsys.readouterr().out
    assert "**Plan numpy.ndarray -> polars: copies" in out
    assert "| # | adapter | step | protocol | device | copy | why | bytes in |" in out


def test_explain_with_copy_false_reports_the_refusal(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "numpy", "polars", "--copy", "false", "--rows", "10"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("interchange-hub explain: CopyRequiredError: copy=False")
    assert err.count("\n") == 1  # one line


def test_explain_json_refusal_is_a_json_report(capsys: pytest.CaptureFixture[str]) -> None:
    # A refusal to plan left stdout empty, where a failure to run printed the plan with
    # its error: a script reading the JSON got nothing to parse. Both print a report now.
    argv = ["explain", "numpy", "polars", "--copy", "false", "--rows", "10", "--format", "json"]
    assert main(argv) == 1
    out, err = capsys.readouterr()
    assert err.startswith("interchange-hub explain: CopyRequiredError: copy=False")
    data = json.loads(out)
    assert data["sample"]["library"] == "numpy" and data["plan"] is None
    assert data["result"] is None and data["error"] == err.split(": ", 1)[1].strip()
    assert main(["explain", "numpy", "polrs", "--format", "json"]) == 2  # usage: no report
    assert capsys.readouterr().out == ""


@pytest.mark.skipif(torch.cuda.is_available(), reason="this torch reaches a GPU")
def test_explain_shows_a_device_move_before_it_fails_without_a_gpu(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["explain", "numpy", "torch", "--kind", "column", "--rows", "10", "--device", "cuda:0"]
    assert main(argv) == 1
    out, err = capsys.readouterr()
    assert "(device move cpu -> cuda:0)" in out
    assert "DeviceError: this torch cannot reach a GPU" in err


def test_explain_names_an_unknown_library(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "pandsa", "polars"]) == 2
    assert capsys.readouterr().err == (
        "interchange-hub explain: error: unknown source library 'pandsa' (did you mean "
        "'pandas'?); installed: pyarrow, nanoarrow, polars, pandas, numpy, torch\n"
    )


def test_explain_names_an_unknown_target_as_a_usage_mistake(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # a mistyped source exited 2, a mistyped target 1 (the epilog: 2 is a usage mistake)
    assert main(["explain", "pandas", "polrs"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("interchange-hub explain: error: ") and "'polars'" in err


def test_explain_rejects_a_library_of_no_cpu_data(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "cupy", "polars"]) == 2
    assert "no sample can be built in 'cupy' (it holds no CPU data)" in capsys.readouterr().err


# -- plugins: third-party by default, --all adds the built-ins (as `llm plugins --all`) ---------
@pytest.fixture
def boxes_hub(monkeypatch: pytest.MonkeyPatch) -> None:
    hub = ih.Hub(autoload=False, plugins=[*ih.builtin_plugins(), boxes])
    monkeypatch.setattr(cli, "_hub", lambda default: hub)


@pytest.mark.usefixtures("boxes_hub")
def test_plugins_lists_third_party_plugins_only(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plugins"]) == 0
    out = capsys.readouterr().out
    # "not loaded": the installed entry points (the tests turn autoload off)
    head = (
        r"interchange_hub plugins: 10 loaded \(9 built-in, 1 third-party\), "
        r"\d+ not loaded, 0 failed"
    )
    assert re.match(head, out)
    assert "tests.fake_plugins.boxes" in out and "boxes" in out
    assert "interchange_hub.adapters._polars" not in out
    assert out.rstrip().endswith("(--all also lists the 9 built-in plugins)")


@pytest.mark.usefixtures("boxes_hub")
def test_plugins_all_adds_the_builtins(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plugins", "--all"]) == 0
    out = capsys.readouterr().out
    assert "tests.fake_plugins.boxes" in out
    assert re.search(r"_polars +\S+ +\S* ?\S* +polars +register_adapters +loaded\n", out)
    assert "--all also lists" not in out


def test_plugins_builtins_with_all(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plugins", "--all"]) == 0
    out = capsys.readouterr().out
    assert "interchange_hub plugins: 9 loaded (9 built-in, 0 third-party)" in out
    assert re.search(
        r"\n  interchange_hub\.adapters\._polars +built-in +interchange-hub 0\.1\.0", out
    )
    assert "register_edges" in out
    assert main(["plugins"]) == 0
    assert "interchange_hub.adapters._polars" not in capsys.readouterr().out


def test_plugins_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plugins", "--format", "json", "--all"]) == 0
    data = json.loads(capsys.readouterr().out)
    polars = next(p for p in data if p["name"] == "interchange_hub.adapters._polars")
    assert polars["adapters"] == ["polars"] and polars["distribution"] == "interchange-hub"
    assert polars["version"] == ih.__version__
    assert main(["plugins", "--format", "json"]) == 0
    assert all(p["source"] != "built-in" for p in json.loads(capsys.readouterr().out))


def test_plugins_json_alias_still_works(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plugins", "--json", "--all"]) == 0
    out, err = capsys.readouterr()
    assert any(p["name"] == "interchange_hub.adapters._polars" for p in json.loads(out))
    assert err == "interchange-hub plugins: --json is deprecated; use --format json\n"


# -- one --format everywhere, help on every option, --version -----------------------------------
REPORTS = {
    "plugins": ["plugins", "--all"],
    "explain": ["explain", "numpy", "torch", "--rows", "10"],
    "matrix": ["matrix", "--rows", "10", "--kind", "column"],
    "demo": ["demo", "--rows", "10"],
}


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    top = cli.parser()
    action = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_command_takes_the_same_format_option() -> None:
    commands = _subparsers()
    assert set(commands) == set(REPORTS)
    for name, sub in commands.items():
        fmt = next(a for a in sub._actions if "--format" in a.option_strings)
        assert fmt.choices == ("text", "markdown", "json") and fmt.default == "text", name


@pytest.mark.parametrize("command", sorted(REPORTS))
def test_every_report_prints_json_and_markdown(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*REPORTS[command], "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) and err == ""
    assert main([*REPORTS[command], "--format", "markdown"]) == 0
    assert "|---|" in capsys.readouterr().out


def test_every_option_has_help() -> None:
    parsers = {"interchange-hub": cli.parser(), **_subparsers()}
    for name, sub in parsers.items():
        for action in sub._actions:
            if isinstance(action, argparse._SubParsersAction):
                continue
            assert action.help, f"{name}: {action.option_strings or action.dest} has no help"
            if action.help == argparse.SUPPRESS:  # only the deprecated alias is hidden
                assert action.option_strings == ["--json"]


def test_numeric_options_are_validated() -> None:
    for name, sub in _subparsers().items():
        for action in sub._actions:
            assert action.type not in (int, float), f"{name} {action.option_strings}: bare type"


def test_version() -> None:
    done = run_cli("--version")
    assert (done.returncode, done.stdout, done.stderr) == (
        0,
        f"interchange-hub {ih.__version__}\n",
        "",
    )


def test_the_console_script_and_module_agree() -> None:
    done = run_cli("--help")
    assert done.returncode == 0
    for command in ("plugins", "explain", "matrix", "demo", "--version", "exit status"):
        assert command in done.stdout


# -- bad numbers: a short usage error, exit 2 ---------------------------------------------------
@pytest.mark.parametrize("command", ["demo", "matrix", "explain"])
@pytest.mark.parametrize("value", ["-1", "0", "abc", "1e3", "100000001", ""])
def test_bad_rows_are_a_usage_error(
    command: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [command, *(["pandas", "polars"] if command == "explain" else []), "--rows", value]
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == (
        f"interchange-hub {command}: error: argument --rows: expected a whole number "
        f"from 1 to 100,000,000, got {value!r}"
    )


def test_bad_rows_in_a_subprocess_print_no_traceback() -> None:
    done = run_cli("matrix", "--rows", "-1")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        "usage: interchange-hub matrix [-h] [--format {text,markdown,json}]",
        "                              [--kind {table,column,all}] [--rows N] [--debug]",
        (
            "interchange-hub matrix: error: argument --rows: expected a whole number from 1 "
            "to 100,000,000, got '-1'"
        ),
    ]


def test_rows_take_underscores(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "numpy", "torch", "--rows", "1_000", "--kind", "column"]) == 0
    assert "sample: 1,000-row column in numpy" in capsys.readouterr().out


# -- errors: one line, a bug report asked for, the traceback only with --debug ------------------
def _crash(*args: object) -> int:
    raise RuntimeError("the adapter table is\ncorrupt")


def test_an_unexpected_error_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "plugins_command", _crash)
    monkeypatch.delenv(cli.DEBUG_ENV, raising=False)
    assert main(["plugins"]) == 1
    assert capsys.readouterr().err == (
        "interchange-hub plugins: unexpected RuntimeError: the adapter table is corrupt; "
        "please report this as a bug (rerun with --debug or INTERCHANGE_HUB_DEBUG=1 for "
        "the traceback)\n"
    )


@pytest.mark.parametrize(
    ("argv", "env"),
    [(["--debug", "plugins"], ""), (["plugins", "--debug"], ""), (["plugins"], "1")],
)
def test_debug_shows_the_traceback(
    argv: list[str],
    env: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(cli, "plugins_command", _crash)
    monkeypatch.setenv(cli.DEBUG_ENV, env)
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):")
    assert "in _crash" in err
    assert err.endswith(
        "interchange-hub plugins: unexpected RuntimeError: the adapter table is corrupt; "
        "please report this as a bug\n"
    )


def test_a_library_panic_is_reported_not_raised(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    class PanicException(BaseException):  # what pyo3 raises for a Rust panic
        pass

    def panic(*args: object) -> int:
        raise PanicException("called `Option::unwrap()` on a `None` value")

    monkeypatch.setattr(cli, "plugins_command", panic)
    monkeypatch.delenv(cli.DEBUG_ENV, raising=False)
    assert main(["plugins"]) == 1
    assert "unexpected PanicException: called `Option::unwrap()`" in capsys.readouterr().err


# -- partial installs: rows and columns left out, install hints, an honest footer ---------------
def test_demo_without_numpy(tmp_path: Path) -> None:
    done = run_cli("demo", "--rows", "100", blocked="numpy", tmp_path=tmp_path)
    assert no_traceback(done.stderr), done.stderr
    out = done.stdout
    assert (
        "left out, not installed: numpy\n  install them with: pip install 'interchange-hub[numpy]'"
        in out
    )
    # pandas needs numpy: installed here, but it cannot be imported
    assert "left out, pandas is installed but importing it fails: ImportError:" in out
    assert "from \\ to  pyarrow    nanoarrow  polars     torch\n" in out
    assert "  pyarrow    Z          Z          Z          -\n" in out
    assert "Every cell's claim matched" not in out
    assert re.search(r"\n\d+ of 32 cells were checked, .* Not shown: pandas, numpy\.\n", out)
    # Each failed cell (E) says why; failures exit 1 and ask for a bug report.
    failed = out.count("E!")
    assert done.returncode == (1 if failed else 0)
    if failed:
        assert "  E: " in out and f"{failed} conversion(s) failed (E): please report" in out


def test_matrix_with_polars_alone(tmp_path: Path) -> None:
    # What `pip install 'interchange-hub[polars]'` brings: polars and pyarrow.
    blocked = "numpy,pandas,torch,nanoarrow"
    done = run_cli(
        "matrix", "--kind", "column", "--rows", "100", blocked=blocked, tmp_path=tmp_path
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == (
        "conversion matrix: 100-row samples, 2 libraries\n"
        "left out, not installed: nanoarrow, pandas, numpy, torch\n"
        "  install them with: pip install 'interchange-hub[nanoarrow,pandas,numpy,torch]'\n"
        "\n"
        f"{cli.LEGEND}\n"
        "\n"
        "columns: one int64 column (numpy/torch: a 1-D tensor)\n"
        "  from \\ to  pyarrow    polars\n"
        "  pyarrow    Z          Z\n"
        "  polars     Z          Z\n"
        "\n"
        "4 of 4 cells were checked, and each claim matched the measured buffer addresses. "
        "Not shown: nanoarrow, pandas, numpy, torch.\n"
    )


def test_matrix_json_without_numpy(tmp_path: Path) -> None:
    done = run_cli(
        "matrix", "--format", "json", "--kind", "column", "--rows", "50",
        blocked="numpy", tmp_path=tmp_path,
    )  # fmt: skip
    data = json.loads(done.stdout)  # stdout is the JSON alone
    assert "numpy" not in data["libraries"] and "polars" in data["libraries"]
    numpy = next(m for m in data["missing"] if m["library"] == "numpy")
    assert numpy == {
        "library": "numpy",
        "module": "numpy",
        "reason": "not installed",
        "install": "pip install 'interchange-hub[numpy]'",
    }
    summary = data["summary"]
    assert summary["checked"] == sum(c["checked"] for c in data["cells"]) > 0
    assert all(c["verified"] is None for c in data["cells"] if not c["checked"])
    assert "interchange-hub: left out, not installed: numpy\n" in done.stderr
    assert no_traceback(done.stderr)


def test_explain_names_the_missing_library(tmp_path: Path) -> None:
    done = run_cli("explain", "numpy", "polars", blocked="numpy", tmp_path=tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "interchange-hub explain: error: source library 'numpy': not installed; "
        "install it with: pip install 'interchange-hub[numpy]'\n"
    )


def test_demo_without_pyarrow(tmp_path: Path) -> None:
    done = run_cli("demo", "--rows", "10", blocked="pyarrow", tmp_path=tmp_path)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        "interchange-hub demo: MissingDependencyError: pyarrow is required to build the "
        "samples but is not installed. Install it with: pip install 'interchange-hub[pyarrow]'\n"
    )


# -- progress on stderr, only on a terminal -----------------------------------------------------
def test_progress_shows_on_a_terminal_and_stdout_stays_json() -> None:
    import pty

    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "interchange_hub", "matrix", "--kind", "column", "--rows", "10"]
        + ["--format", "json"],
        stdout=subprocess.PIPE,
        stderr=slave,
        cwd=ROOT,
    )
    os.close(slave)
    err = b""
    while True:  # read while it runs: a terminal's buffer is small
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        err += chunk
    out, _ = proc.communicate(timeout=120)
    os.close(master)
    assert proc.returncode == 0
    data = json.loads(out)
    total = len(data["cells"])
    text = err.decode()
    assert f"verifying 1/{total} pairs: column: pyarrow -> pyarrow" in text
    assert f"verifying {total}/{total} pairs" in text
    assert text.endswith("\r\x1b[K")  # the counter is cleared at the end


def test_no_progress_when_stderr_is_not_a_terminal() -> None:
    done = run_cli("matrix", "--kind", "column", "--rows", "10")
    assert done.returncode == 0 and done.stderr == ""


# -- packaging: no torch pin in the extras; CI pins the CPU wheel through constraints.txt -------
def test_the_extras_take_a_torch_range_and_the_constraints_pin_it() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    for extra in ("torch", "cpu"):
        (req,) = [r for r in extras[extra] if re.match(r"torch\b", r)]
        assert "==" not in req and ">=" in req, f"[{extra}] pins torch exactly: {req}"
    assert not any("==" in r for reqs in extras.values() for r in reqs if r.startswith("torch"))
    pins = [
        line.strip()
        for line in (ROOT / "constraints.txt").read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    assert re.fullmatch(r"torch==\d+\.\d+\.\d+", next(p for p in pins if p.startswith("torch")))


def test_scripts_install_passes_the_constraints_to_every_pip_install(tmp_path: Path) -> None:
    # Run the real script against a stand-in python that records its arguments.
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "install").write_text((ROOT / "scripts" / "install").read_text())
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    python = tmp_path / ".venv" / "bin" / "python"
    python.write_text('#!/bin/sh\necho "$@" >> "$PIP_LOG"\n')
    python.chmod(0o755)
    log = tmp_path / "pip.log"
    env = {**os.environ, "PIP_LOG": str(log)}
    for extras in ("test", "cpu"):
        log.unlink(missing_ok=True)
        subprocess.run(["sh", "scripts/install", extras], cwd=tmp_path, env=env, check=True)
        calls = log.read_text().splitlines()
        assert len(calls) == (4 if extras == "test" else 2)
        assert calls[1].endswith(f"-e .[{extras}]")
        if extras == "test":  # the earlier pyarrow and pandas, apart (scripts/check uses them)
            assert calls[3].endswith("--target .venv/previous -r scripts/previous-releases.txt")
        for call in calls:
            assert call.startswith("-m pip install --quiet -c constraints.txt "), call
