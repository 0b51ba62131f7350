"""The ``interchange-hub`` command (also ``python -m interchange_hub``).

Every command that prints a report takes ``--format text|markdown|json``; JSON goes to
stdout alone (progress and notes go to stderr). Errors are one line on stderr: an
:class:`~interchange_hub.errors.InterchangeError` or a failed check exits 1, a usage
mistake 2 (argparse's convention), and an unexpected exception exits 1 asking for a bug
report, with its traceback only under ``--debug`` or ``INTERCHANGE_HUB_DEBUG=1``.
``explain --format json`` prints its report when planning or running fails too, with
the error beside the sample (and the plan, where there is one).
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
import warnings
from typing import TYPE_CHECKING, Any, TextIO

from interchange_hub import __version__
from interchange_hub._core.deps import installed
from interchange_hub._core.info import Kind
from interchange_hub._engine.plans import format_bytes
from interchange_hub._tools import matrix
from interchange_hub.errors import InterchangeError, UnknownTargetError
from interchange_hub.plugins import BUILTIN, DEFAULT_PLUGINS

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    from interchange_hub._engine.plans import Plan, Step
    from interchange_hub.hub import Hub
    from interchange_hub.plugins import PluginInfo

PROG = "interchange-hub"
FORMATS = ("text", "markdown", "json")
DEBUG_ENV = "INTERCHANGE_HUB_DEBUG"
MAX_ROWS = 100_000_000
LEGEND = (
    "Z = zero-copy, C = copy, as planned and then verified by buffer addresses;\n"
    "! = the plan's claim was wrong, - = no route, E = the conversion failed."
)
EPILOG = f"""\
exit status: 0 done (and every check passed), 1 an error or a failed check,
2 a mistake on the command line.

Set {DEBUG_ENV}=1 (or pass --debug) to see the traceback of an unexpected error.
Run `{PROG} COMMAND --help` for a command's options."""


class UsageError(Exception):
    """A mistake on the command line found after parsing (an unknown library name)."""


def _hub(default: bool) -> Hub:
    """The process-wide hub (plugins from entry points) or one of built-ins only."""
    from interchange_hub import default_hub
    from interchange_hub.hub import Hub

    return default_hub() if default else Hub(autoload=False)


def _write_json(data: object, out: TextIO) -> None:
    json.dump(data, out, indent=2)
    out.write("\n")


def _table(rows: Sequence[Sequence[str]], out: TextIO, fmt: str) -> None:
    """Aligned columns (text) or a pipe table (markdown); ``rows[0]`` is the header."""
    if fmt == "markdown":
        out.write("| " + " | ".join(rows[0]) + " |\n")
        out.write("|" + "---|" * len(rows[0]) + "\n")
        out.writelines(
            "| " + " | ".join(c.replace("|", "\\|") for c in row) + " |\n" for row in rows[1:]
        )
        return
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for n, row in enumerate(rows):
        out.write("  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        out.write("\n")
        if n == 0:
            out.write("  " + "  ".join("-" * w for w in widths) + "\n")


# -- plugins ------------------------------------------------------------------------------------
def plugins_command(everything: bool, fmt: str, out: TextIO) -> int:
    """Third-party plugins (loaded, failed or found but not loaded), and with
    ``everything`` the built-in ones too, as ``llm plugins --all`` does. A plugin that
    failed always shows. Exits 1 when one failed."""
    hub = _hub(default=True)
    infos = hub.plugins(everything=True)
    shown = [i for i in infos if everything or not _builtin(i) or i.error]
    hidden = len(infos) - len(shown)
    failed = [i for i in infos if i.error]
    if fmt == "json":
        _write_json([_with_version(i).as_dict() for i in shown], out)
        return 1 if failed else 0
    builtin = sum(i.loaded and _builtin(i) for i in infos)
    third = sum(i.loaded and not _builtin(i) for i in infos)
    idle = sum(not i.loaded and not i.error for i in infos)
    head = (
        f"interchange_hub plugins: {builtin + third} loaded ({builtin} built-in, {third} "
        f"third-party), {idle} not loaded, {len(failed)} failed"
    )
    out.write(f"**{head}**\n\n" if fmt == "markdown" else f"{head}\n\n")
    if shown:
        rows = [("plugin", "source", "distribution", "adapters", "hooks", "status")]
        for info in map(_with_version, shown):
            dist = f"{info.distribution} {info.version}".strip() or "-"
            adapters = ", ".join(_adapter_label(hub, a) for a in info.adapters) or "-"
            hooks = ", ".join(info.hooks) or "-"
            rows.append((info.name, info.source, dist, adapters, hooks, _status(info)))
        _table(rows, out, fmt)
    else:
        out.write("No third-party plugins are installed.\n")
    for info in shown:
        if info.error:
            out.write(f"\nFAILED {info.name}: {info.error}\n")
        elif info.skipped:
            out.write(f"\nnot loaded {info.name}: {info.skipped}\n")
    if hidden:
        out.write(f"\n(--all also lists the {hidden} built-in plugins)\n")
    return 1 if failed else 0


def _builtin(info: PluginInfo) -> bool:
    """Shipped with interchange-hub (also when given to ``Hub(plugins=...)`` by hand)."""
    return info.source == BUILTIN or info.name in DEFAULT_PLUGINS


def _status(info: PluginInfo) -> str:
    if info.error:
        return "failed"
    return "loaded" if info.loaded else "not loaded"


def _with_version(info: PluginInfo) -> PluginInfo:
    if info.distribution and not info.version:
        from dataclasses import replace
        from importlib.metadata import PackageNotFoundError, version

        try:
            return replace(info, version=version(info.distribution))
        except PackageNotFoundError:
            return info
    return info


def _adapter_label(hub: Hub, name: str) -> str:
    adapter = hub.registry.get(name)
    if adapter is None or installed(adapter.module):
        return name
    return f"{name} (needs {adapter.module})"


# -- explain ------------------------------------------------------------------------------------
def explain_command(
    source: str,
    target: str,
    kind: Kind,
    rows: int,
    copy: bool | None,
    device: str | None = None,
    fmt: str = "text",
) -> int:
    hub = _hub(default=True)
    name = _source_library(hub, source)
    src = matrix.make_sample(hub, name, kind, rows)
    sample = f"{rows:,}-row {kind.value} in {name} ({type(src).__qualname__})"
    report: dict[str, Any] = {
        "sample": {"library": name, "kind": kind.value, "rows": rows, "type": _qualname(src)},
        "plan": None,
        "result": None,
    }
    try:
        plan = hub.plan(src, to=target, copy=copy, device=device)
    except UnknownTargetError:
        raise  # (a usage mistake: exit 2, no report)
    except InterchangeError as exc:
        if fmt == "json":  # a refusal to plan is a report too: stdout holds it as JSON
            report["error"] = f"{type(exc).__name__}: {_one_line(exc)}"
            _write_json(report, sys.stdout)
        raise
    report["plan"] = _plan_dict(plan)
    if fmt == "text":
        print(f"sample: {sample}")
        print(plan)
        sys.stdout.flush()  # the plan shows even if running it fails (no GPU here, say)
    elif fmt == "markdown":
        print(f"**sample**: {sample}\n")
        _plan_markdown(plan)
        sys.stdout.flush()
    if plan.deferred:
        if fmt == "json":
            _write_json(report, sys.stdout)
        return 0
    try:
        result = hub.convert(src, to=target, copy=copy, device=device)
    except InterchangeError as exc:
        if fmt == "json":  # the plan is still worth having: the error goes beside it
            report["error"] = f"{type(exc).__name__}: {_one_line(exc)}"
            _write_json(report, sys.stdout)
        raise
    total = sum(b.size for b in hub.buffers(src))
    shared = hub.shared_bytes(src, result)
    report["result"] = {"type": _qualname(result), "shared_bytes": shared, "source_bytes": total}
    if fmt == "json":
        _write_json(report, sys.stdout)
        return 0
    if fmt == "markdown":
        print()
    print(
        f"ran it: result {_qualname(result)}; "
        f"{format_bytes(shared)} of the source's {format_bytes(total)} shared (by address)"
    )
    return 0


def _source_library(hub: Hub, source: str) -> str:
    """The adapter name for ``source`` (an alias works), or a usage error that says what
    is installed, the nearest name, or how to install a known library."""
    adapter = hub.registry.get(source)
    usable_here = adapter is not None and "cpu" in adapter.devices
    if adapter is not None and usable_here and not matrix.import_problem(adapter.module):
        return adapter.name
    usable, missing = matrix.survey(hub)
    for gone in missing:
        if adapter is not None and gone.library == adapter.name:
            fix = f"; install it with: {gone.install}" if gone.install else ""
            raise UsageError(f"source library {gone.library!r}: {gone.reason}{fix}")
    if adapter is not None:
        raise UsageError(
            f"no sample can be built in {adapter.name!r} (it holds no CPU data); "
            f"choose one of: {', '.join(usable)}"
        )
    near = difflib.get_close_matches(source, usable, n=1)
    hint = f" (did you mean {near[0]!r}?)" if near else ""
    raise UsageError(f"unknown source library {source!r}{hint}; installed: {', '.join(usable)}")


def _qualname(obj: object) -> str:
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


def _plan_dict(plan: Plan) -> dict[str, Any]:
    return {
        "source": plan.source,
        "target": plan.target,
        "zero_copy": plan.zero_copy,
        "deferred": plan.deferred,
        "copied_bytes": plan.copied_bytes,
        "device_moves": plan.device_moves,
        "steps": [_step_dict(s) for s in plan.steps],
        "notes": list(plan.notes),
    }


def _step_dict(step: Step) -> dict[str, Any]:
    return {
        "adapter": step.edge.adapter,
        "source": step.edge.source,
        "target": step.edge.target,
        "protocol": step.edge.protocol,
        "device": step.device,
        "zero_copy": step.zero_copy,
        "copied_bytes": step.copied_bytes,
        "moves_device": step.estimate.moves_device,
        "why": step.estimate.why,
        "bytes_in": step.before.nbytes,
        "copies": [
            {"column": c.column, "bytes": c.nbytes, "reason": c.reason} for c in step.copies
        ],
        "losses": [loss.message() for loss in step.losses],
    }


def _plan_markdown(plan: Plan) -> None:
    head = str(plan).splitlines()[0]
    print(f"**{head}**\n")
    if plan.steps:
        rows = [("#", "adapter", "step", "protocol", "device", "copy", "why", "bytes in")]
        for i, s in enumerate(plan.steps, 1):
            mode = "zero-copy" if s.zero_copy else f"copy {format_bytes(s.copied_bytes)}"
            if s.estimate.moves_device:
                mode += f" (device move {s.before.device} -> {s.device})"
            why = "; ".join(
                [s.estimate.why or "-"]
                + [f"copies {c.column or 'the data'}: {c.reason}" for c in s.copies]
                + [f"LOSSY {loss.message()}" for loss in s.losses]
            )
            step = f"{s.edge.source} -> {s.edge.target}"
            cells = (str(i), s.edge.adapter, step, s.edge.protocol, s.device, mode, why)
            rows.append((*cells, format_bytes(s.before.nbytes)))
        _table(rows, sys.stdout, "markdown")
    for note in plan.notes:
        print(f"- note: {note}")


# -- matrix and demo ----------------------------------------------------------------------------
def matrix_command(kinds: Sequence[Kind], rows: int, fmt: str, default_hub: bool) -> int:
    """Every ordered pair of the installed libraries, each claim checked by address."""
    hub = _hub(default=default_hub)
    libs, missing = matrix.survey(hub)
    title = f"conversion matrix: {rows:,}-row samples, {len(libs)} libraries"
    return _matrix_report(hub, title, kinds, rows, libs, missing, fmt)


def demo_command(rows: int, fmt: str = "text") -> int:
    """The pair matrix of the built-in libraries, each claim checked by address."""
    hub = _hub(default=False)
    libs, missing = matrix.survey(hub)
    title = f"interchange_hub demo: {rows:,}-row samples, {len(libs)} libraries"
    return _matrix_report(hub, title, tuple(matrix.TITLES), rows, libs, missing, fmt)


def _matrix_report(
    hub: Hub,
    title: str,
    kinds: Sequence[Kind],
    rows: int,
    libs: Sequence[str],
    missing: Sequence[matrix.Missing],
    fmt: str,
) -> int:
    notes = _missing_lines(missing)
    if fmt == "json":
        for line in notes:  # stdout holds the JSON alone
            print(f"{PROG}: {line.strip()}", file=sys.stderr)
    elif fmt == "markdown":
        print(f"**{title}**\n")
        print("".join(f"{line.strip()}  \n" for line in notes))
    else:
        print(title)
        print("".join(f"{line}\n" for line in notes))
        print(LEGEND + "\n")
    sys.stdout.flush()
    cells = matrix.compute(hub, kinds, rows, libs, progress=_progress(sys.stderr))
    summary = matrix.summarize(cells)
    if fmt == "json":
        _write_json(
            {
                "rows": rows,
                "libraries": list(libs),
                "missing": [m.as_dict() for m in missing],
                "summary": summary.as_dict(),
                "cells": [c.as_dict() for c in cells],
            },
            sys.stdout,
        )
    else:
        if fmt == "markdown":
            _markdown(cells, kinds, libs)
        else:
            _text(cells, kinds, libs)
        print(_footer(summary, missing))
    return 0 if summary.ok else 1


def _missing_lines(missing: Sequence[matrix.Missing]) -> list[str]:
    """What the matrix leaves out and the pip command that brings it back."""
    absent = [m for m in missing if not m.installed]
    broken = [m for m in missing if m.installed]
    lines = []
    if absent:
        names = ", ".join(m.library for m in absent)
        lines.append(f"left out, not installed: {names}")
        extras = [m.extra for m in absent if m.extra]
        if extras:
            lines.append(f"  install them with: pip install 'interchange-hub[{','.join(extras)}]'")
    for m in broken:
        fix = f"; reinstall it with: {m.install}" if m.install else ""
        lines.append(f"left out, {m.library} is installed but {m.reason}{fix}")
    return lines


def _footer(summary: matrix.Summary, missing: Sequence[matrix.Missing]) -> str:
    """What the matrix checked, claiming nothing it did not check."""
    if summary.complete and not missing:
        return "Every cell's claim matched the measured buffer addresses."
    if not summary.checked:
        text = f"Nothing was checked: none of the {summary.cells} cells has a route."
    elif summary.matched == summary.checked:
        text = (
            f"{summary.matched} of {summary.cells} cells were checked, and each claim "
            "matched the measured buffer addresses."
        )
    else:
        text = (
            f"{summary.matched} of {summary.cells} cells were checked and matched the "
            "measured buffer addresses."
        )
    if summary.no_route:
        text += f" {summary.no_route} had no route (`{PROG} explain SOURCE TARGET` says why)."
    if missing:
        text += f" Not shown: {', '.join(m.library for m in missing)}."
    problems = []
    if summary.wrong:
        problems.append(f"{summary.wrong} claim(s) were wrong (!)")
    if summary.failed:
        problems.append(f"{summary.failed} conversion(s) failed (E)")
    if problems:
        text += f"\n{' and '.join(problems)}: please report this as a bug."
    return text


def _progress(stream: TextIO) -> matrix.Progress | None:
    """A one-line counter on ``stream`` when it is a terminal (else silent)."""
    isatty = getattr(stream, "isatty", None)
    if isatty is None or not isatty():
        return None

    def show(done: int, total: int, what: str) -> None:
        stream.write(f"\r\033[Kverifying {done}/{total} pairs: {what}")
        if done == total:
            stream.write("\r\033[K")
        stream.flush()

    return show


def _grid(cells: Sequence[matrix.Cell], kind: Kind) -> dict[tuple[str, str], matrix.Cell]:
    return {(c.source, c.target): c for c in cells if c.kind == kind.value}


def _text(cells: Sequence[matrix.Cell], kinds: Sequence[Kind], libs: Sequence[str]) -> None:
    if not libs:
        return
    width = max(11, *(len(lib) + 2 for lib in libs))
    for kind in kinds:
        grid = _grid(cells, kind)
        print(matrix.TITLES[kind])
        print(
            ("  " + "from \\ to".ljust(width) + "".join(lib.ljust(width) for lib in libs)).rstrip()
        )
        reasons: dict[str, None] = {}
        for src in libs:
            row = "".join(grid[src, dst].mark.ljust(width) for dst in libs)
            print(("  " + src.ljust(width) + row).rstrip())
            for dst in libs:
                reasons.update(dict.fromkeys(grid[src, dst].reasons))
        for reason in reasons:
            print(f"  C: {reason}")
        for line in _failures(grid.values()):
            print(f"  E: {line}")
        print()


def _failures(cells: Iterable[matrix.Cell]) -> list[str]:
    """``source -> targets: error`` for the failed cells, one line per source and error."""
    failed: dict[tuple[str, str], list[str]] = {}
    for c in cells:
        if c.status == "failed":
            failed.setdefault((c.source, c.error), []).append(c.target)
    return [
        f"{source} -> {', '.join(targets)}: {error if len(error) < 200 else error[:197] + '...'}"
        for (source, error), targets in failed.items()
    ]


def _markdown(cells: Sequence[matrix.Cell], kinds: Sequence[Kind], libs: Sequence[str]) -> None:
    if not libs:
        return
    for kind in kinds:
        grid = _grid(cells, kind)
        print(f"### {matrix.TITLES[kind]}\n")
        print("| from \\ to | " + " | ".join(libs) + " |")
        print("|---" * (len(libs) + 1) + "|")
        for src in libs:
            print(f"| **{src}** | " + " | ".join(grid[src, d].mark for d in libs) + " |")
        print()
        for line in _failures(grid.values()):
            print(f"- E: {line}")
        print()
    print(LEGEND.replace("\n", " ") + "\n")


# -- the command line ---------------------------------------------------------------------------
def _kinds(value: str) -> tuple[Kind, ...]:
    return tuple(matrix.TITLES) if value == "all" else (Kind(value),)


def count(low: int, high: int) -> Callable[[str], int]:
    """An argparse ``type``: a whole number from ``low`` to ``high`` (``1_000`` works)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"expected a whole number from {low:,} to {high:,}, got {text!r}"
            )
        return value

    return parse


def _format_option(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument(
        "--format",
        choices=FORMATS,
        default="text",
        help="how to print the report: text (default), markdown or json (stdout holds "
        "only the JSON)",
    )


def _common(cmd: argparse.ArgumentParser) -> None:
    # SUPPRESS: given before the command, --debug is not reset by the command's default.
    cmd.add_argument(
        "--debug",
        action="store_true",
        default=argparse.SUPPRESS,
        help=f"show the traceback of an unexpected error (or set {DEBUG_ENV}=1)",
    )


def _rows_option(cmd: argparse.ArgumentParser, default: int) -> None:
    cmd.add_argument(
        "--rows",
        type=count(1, MAX_ROWS),
        default=default,
        metavar="N",
        help=f"rows of each sample, 1 to {MAX_ROWS:,} (default: {default:,})",
    )


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog=PROG,
        description="Move data between Python data libraries: see plugins, plans and the "
        "conversion matrix.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    top.add_argument(
        "--version",
        action="version",
        version=f"{PROG} {__version__}",
        help="print the version and exit",
    )
    top.add_argument(
        "--debug",
        action="store_true",
        help=f"show the traceback of an unexpected error (or set {DEBUG_ENV}=1)",
    )
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    cmd = commands.add_parser(
        "plugins",
        help="list third-party plugins (--all: the built-in ones too) and any failure",
        description="List the installed third-party plugins: loaded, failed, or found but "
        "not loaded, with their distributions, adapters and hooks. Built-in plugins are "
        "left out unless --all is given (a built-in that failed always shows). Exits 1 "
        "when a plugin failed.",
    )
    cmd.add_argument(
        "--all",
        action="store_true",
        help="include the built-in plugins (the adapters shipped with interchange-hub), "
        "as `llm plugins --all` does",
    )
    _format_option(cmd)
    # Deprecated spelling of --format json, kept for scripts that used it.
    cmd.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    _common(cmd)

    cmd = commands.add_parser(
        "explain",
        help="print the plan for a sample conversion, then run it and check it",
        description="Build a sample in SOURCE, print the plan for converting it to TARGET, "
        "then run the conversion and measure the memory shared by address.",
    )
    cmd.add_argument("source", help="library of the sample, e.g. pandas")
    cmd.add_argument("target", help="target library, e.g. polars")
    cmd.add_argument(
        "--kind",
        choices=["table", "column"],
        default="table",
        help="a table (2-D tensor for numpy/torch) or one column (1-D tensor); default: table",
    )
    _rows_option(cmd, 100_000)
    cmd.add_argument(
        "--copy",
        choices=["none", "true", "false"],
        default="none",
        help="the copy policy: none copies only where needed (default), true always "
        "copies, false refuses any copy",
    )
    cmd.add_argument("--device", help="where the result must live: cpu, cuda or cuda:N")
    _format_option(cmd)
    _common(cmd)

    cmd = commands.add_parser(
        "matrix",
        help="zero-copy or copy for every pair of installed libraries, checked",
        description="Convert a sample between every ordered pair of installed libraries "
        "(plugins' included) and check each plan's claim against buffer addresses. Exits 1 "
        "when a claim was wrong or a conversion failed.",
    )
    _format_option(cmd)
    cmd.add_argument(
        "--kind",
        choices=["table", "column", "all"],
        default="all",
        help="which samples to convert (default: all)",
    )
    _rows_option(cmd, 100_000)
    _common(cmd)

    cmd = commands.add_parser(
        "demo",
        help="the matrix of the built-in libraries",
        description="The conversion matrix of the built-in libraries (no plugins), tables "
        "and columns, each claim checked by buffer addresses.",
    )
    _rows_option(cmd, 100_000)
    _format_option(cmd)
    _common(cmd)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    debug = args.debug or os.environ.get(DEBUG_ENV, "").strip().lower() not in (
        "",
        "0",
        "false",
        "no",
    )
    where = f"{PROG} {args.command}"
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        try:
            status = _run(args)
            sys.stdout.flush()  # a closed pipe shows here, not at exit
            return status
        except UsageError as exc:
            print(f"{where}: error: {exc}", file=sys.stderr)
            return 2
        except UnknownTargetError as exc:  # (a mistyped target, as a mistyped source: 2)
            print(f"{where}: error: {_one_line(exc)}", file=sys.stderr)
            return 2
        except InterchangeError as exc:
            _traceback(debug)
            print(f"{where}: {type(exc).__name__}: {_one_line(exc)}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print(f"{where}: interrupted", file=sys.stderr)
            return 130
        except BrokenPipeError:
            # The reader went away (`| head`): stop quietly, as other tools do.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            return 1
        except MemoryError:
            _traceback(debug)
            print(f"{where}: out of memory; try fewer --rows", file=sys.stderr)
            return 1
        except BaseException as exc:  # any bug becomes one line, not a traceback
            if isinstance(exc, SystemExit | GeneratorExit):
                raise
            # Exception, and what a library's Rust panic raises (a BaseException).
            _traceback(debug)
            hint = "" if debug else f" (rerun with --debug or {DEBUG_ENV}=1 for the traceback)"
            print(
                f"{where}: unexpected {type(exc).__name__}: {_one_line(exc)}; please report "
                f"this as a bug{hint}",
                file=sys.stderr,
            )
            return 1


def _run(args: argparse.Namespace) -> int:
    if args.command == "plugins":
        fmt = args.format
        if args.json:
            print(f"{PROG} plugins: --json is deprecated; use --format json", file=sys.stderr)
            fmt = "json"
        return plugins_command(args.all, fmt, sys.stdout)
    if args.command == "explain":
        copy = {"none": None, "true": True, "false": False}[args.copy]
        kind = Kind(args.kind)
        return explain_command(
            args.source, args.target, kind, args.rows, copy, args.device, args.format
        )
    if args.command == "matrix":
        return matrix_command(_kinds(args.kind), args.rows, args.format, default_hub=True)
    return demo_command(args.rows, args.format)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _traceback(debug: bool) -> None:
    if debug:
        import traceback

        traceback.print_exc()


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """Warnings as one line (``interchange-hub: PluginWarning: ...``), no source line."""
    stream = file if file is not None else sys.stderr
    stream.write(f"{PROG}: {category.__name__}: {' '.join(str(message).split())}\n")
