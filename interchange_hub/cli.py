"""The ``interchange-hub`` command (also ``python -m interchange_hub``)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, TextIO

from interchange_hub._core.deps import installed
from interchange_hub._core.info import Kind
from interchange_hub._engine.plans import format_bytes
from interchange_hub._tools import matrix
from interchange_hub.errors import InterchangeError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from interchange_hub.hub import Hub
    from interchange_hub.plugins import PluginInfo

LEGEND = (
    "Z = zero-copy, C = copy, as planned and then verified by buffer addresses;\n"
    "! = the plan's claim was wrong, - = no route, E = the conversion failed."
)


def _hub(default: bool) -> Hub:
    """The process-wide hub (plugins from entry points) or one of built-ins only."""
    from interchange_hub import default_hub
    from interchange_hub.hub import Hub

    return default_hub() if default else Hub(autoload=False)


# -- plugins ------------------------------------------------------------------------------------
def plugins_command(everything: bool, as_json: bool, out: TextIO) -> int:
    hub = _hub(default=True)
    infos = hub.plugins(everything=everything)
    if as_json:
        json.dump([_with_version(i).as_dict() for i in infos], out, indent=2)
        out.write("\n")
        return 0
    loaded = sum(i.loaded for i in infos)
    failed = [i for i in infos if i.error]
    out.write(f"interchange_hub plugins: {loaded} loaded, {len(failed)} failed\n\n")
    rows = [("plugin", "source", "distribution", "adapters", "hooks")]
    for info in map(_with_version, infos):
        dist = f"{info.distribution} {info.version}".strip() or "-"
        adapters = ", ".join(_adapter_label(hub, a) for a in info.adapters) or "-"
        hooks = ", ".join(info.hooks) or "-"
        rows.append((info.name, info.source, dist, adapters, hooks))
    _table(rows, out)
    for info in infos:
        if info.error:
            out.write(f"\nFAILED {info.name}: {info.error}\n")
        elif info.skipped:
            out.write(f"\nnot loaded {info.name}: {info.skipped}\n")
    if not everything:
        out.write("\n(--all also lists installed entry points that were not loaded)\n")
    return 1 if failed else 0


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


def _table(rows: Sequence[Sequence[str]], out: TextIO) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for n, row in enumerate(rows):
        out.write("  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        out.write("\n")
        if n == 0:
            out.write("  " + "  ".join("-" * w for w in widths) + "\n")


# -- explain ------------------------------------------------------------------------------------
def explain_command(
    source: str, target: str, kind: Kind, rows: int, copy: bool | None, device: str | None = None
) -> int:
    hub = _hub(default=True)
    name = hub.registry.get(source)
    if name is None:
        raise SystemExit(
            f"interchange-hub explain: unknown source library {source!r}; "
            f"installed: {', '.join(matrix.libraries(hub))}"
        )
    src = matrix.make_sample(hub, name.name, kind, rows)
    plan = hub.plan(src, to=target, copy=copy, device=device)
    print(f"sample: {rows:,}-row {kind.value} in {name.name} ({type(src).__qualname__})")
    print(plan)
    if plan.deferred:
        return 0
    sys.stdout.flush()  # the plan shows even if running it fails (no GPU here, say)
    result = hub.convert(src, to=target, copy=copy, device=device)
    total = sum(b.size for b in hub.buffers(src))
    shared = hub.shared_bytes(src, result)
    print(
        f"ran it: result {type(result).__module__}.{type(result).__qualname__}; "
        f"{format_bytes(shared)} of the source's {format_bytes(total)} shared (by address)"
    )
    return 0


# -- matrix and demo ----------------------------------------------------------------------------
def matrix_command(kinds: Sequence[Kind], rows: int, fmt: str, default_hub: bool) -> int:
    hub = _hub(default=default_hub)
    libs = matrix.libraries(hub)
    cells = matrix.compute(hub, kinds, rows, libs, progress=_progress(sys.stderr))
    if fmt == "json":
        json.dump(
            {"rows": rows, "libraries": libs, "cells": [c.as_dict() for c in cells]},
            sys.stdout,
            indent=2,
        )
        print()
    elif fmt == "markdown":
        _markdown(cells, kinds, libs)
    else:
        print(f"conversion matrix: {rows:,}-row samples, {len(libs)} libraries")
        print(LEGEND + "\n")
        _text(cells, kinds, libs)
    wrong = [c for c in cells if not c.verified]
    if wrong and fmt == "text":
        print(f"{len(wrong)} cell(s) claimed the wrong thing; please report this as a bug.")
    elif fmt == "text":
        print("Every cell's claim matched the measured buffer addresses.")
    return 1 if wrong else 0


def _progress(stream: TextIO) -> matrix.Progress | None:
    if not stream.isatty():
        return None

    def show(done: int, total: int, what: str) -> None:
        end = "\n" if done == total else ""
        stream.write(f"\r\033[K[{done}/{total}] {what}{end}")
        stream.flush()

    return show


def _grid(cells: Sequence[matrix.Cell], kind: Kind) -> dict[tuple[str, str], matrix.Cell]:
    return {(c.source, c.target): c for c in cells if c.kind == kind.value}


def _text(cells: Sequence[matrix.Cell], kinds: Sequence[Kind], libs: Sequence[str]) -> None:
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
        print()


def _markdown(cells: Sequence[matrix.Cell], kinds: Sequence[Kind], libs: Sequence[str]) -> None:
    for kind in kinds:
        grid = _grid(cells, kind)
        print(f"### {matrix.TITLES[kind]}\n")
        print("| from \\ to | " + " | ".join(libs) + " |")
        print("|---" * (len(libs) + 1) + "|")
        for src in libs:
            print(f"| **{src}** | " + " | ".join(grid[src, d].mark for d in libs) + " |")
        print()
    print(LEGEND.replace("\n", " "))


def demo_command(rows: int) -> int:
    """The pair matrix of the built-in libraries, each claim checked by address."""
    hub = _hub(default=False)
    libs = matrix.libraries(hub)
    missing = [lib for lib in matrix.builtin_libraries(hub) if lib not in libs]
    print(f"interchange_hub demo: {rows:,}-row samples, {len(libs)} libraries")
    if missing:
        print(f"not installed (pip install 'interchange-hub[cpu]'): {', '.join(missing)}")
    print(LEGEND + "\n")
    cells = matrix.compute(hub, tuple(matrix.TITLES), rows, libs, progress=_progress(sys.stderr))
    _text(cells, tuple(matrix.TITLES), libs)
    wrong = [c for c in cells if not c.verified]
    if wrong:
        print(f"{len(wrong)} plan(s) claimed the wrong thing; please report this as a bug.")
        return 1
    print("Every cell's claim matched the measured buffer addresses.")
    return 0


# -- entry point --------------------------------------------------------------------------------
def _kinds(value: str) -> tuple[Kind, ...]:
    return tuple(matrix.TITLES) if value == "all" else (Kind(value),)


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="interchange-hub",
        description="Move data between Python data libraries: see plugins, plans and the "
        "conversion matrix.",
    )
    commands = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    cmd = commands.add_parser("plugins", help="list plugins, their adapters and any failure")
    cmd.add_argument("--all", action="store_true", help="also list entry points not loaded")
    cmd.add_argument("--json", action="store_true", help="print JSON")
    cmd = commands.add_parser("explain", help="print the plan for a sample conversion")
    cmd.add_argument("source", help="library of the sample, e.g. pandas")
    cmd.add_argument("target", help="target library, e.g. polars")
    cmd.add_argument("--kind", choices=["table", "column"], default="table")
    cmd.add_argument("--rows", type=int, default=100_000)
    cmd.add_argument("--copy", choices=["none", "true", "false"], default="none")
    cmd.add_argument("--device", help="where the result must live: cpu, cuda or cuda:N")
    cmd = commands.add_parser("matrix", help="zero-copy or copy for every library pair")
    cmd.add_argument("--format", choices=["text", "markdown", "json"], default="text")
    cmd.add_argument("--kind", choices=["table", "column", "all"], default="all")
    cmd.add_argument("--rows", type=int, default=100_000)
    cmd = commands.add_parser("demo", help="the matrix of the built-in libraries")
    cmd.add_argument("--rows", type=int, default=100_000, help="rows per sample")
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        if args.command == "plugins":
            return plugins_command(args.all, args.json, sys.stdout)
        if args.command == "explain":
            copy = {"none": None, "true": True, "false": False}[args.copy]
            kind = Kind(args.kind)
            return explain_command(args.source, args.target, kind, args.rows, copy, args.device)
        if args.command == "matrix":
            return matrix_command(_kinds(args.kind), args.rows, args.format, default_hub=True)
        return demo_command(args.rows)
    except InterchangeError as exc:
        print(f"interchange-hub {args.command}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
