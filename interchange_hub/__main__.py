"""The ``interchange-hub`` command (also ``python -m interchange_hub``)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from interchange_hub.dependencies import installed
from interchange_hub.errors import InterchangeError
from interchange_hub.hub import Hub
from interchange_hub.model import Kind
from interchange_hub.samples import LIBRARIES, sample

if TYPE_CHECKING:
    from collections.abc import Sequence


def demo(rows: int) -> int:
    """Print the pair matrix for sample data, each plan's claim checked by address."""
    hub = Hub(autoload=False)
    libs = [lib for lib in LIBRARIES if installed(lib)]
    missing = [lib for lib in LIBRARIES if lib not in libs]
    print(f"interchange_hub demo: {rows:,}-row samples, {len(libs)} libraries")
    if missing:
        print(f"not installed (pip install 'interchange-hub[cpu]'): {', '.join(missing)}")
    print("Z = zero-copy, C = copy, as planned and then verified by buffer addresses;")
    print("! = the plan's claim was wrong, - = no route.\n")
    mismatches = 0
    titles = {
        Kind.TABLE: "tables: two float64 columns (numpy/torch: a 2-D tensor)",
        Kind.COLUMN: "columns: one int64 column (numpy/torch: a 1-D tensor)",
    }
    for kind, title in titles.items():
        print(title)
        print("  " + "from \\ to".ljust(11) + "".join(lib.ljust(11) for lib in libs))
        reasons: dict[str, None] = {}
        for src_lib in libs:
            cells = []
            for dst_lib in libs:
                cell, wrong, why = _cell(hub, sample(src_lib, kind, rows), dst_lib)
                mismatches += wrong
                reasons.update(dict.fromkeys(why))
                cells.append(cell.ljust(11))
            print("  " + src_lib.ljust(11) + "".join(cells))
        for reason in reasons:
            print(f"  C: {reason}")
        print()
    if mismatches:
        print(f"{mismatches} plan(s) claimed the wrong thing; please report this as a bug.")
        return 1
    print("Every cell's claim matched the measured buffer addresses.")
    return 0


def _cell(hub: Hub, src: object, dst: str) -> tuple[str, int, list[str]]:
    """The cell's mark, 1 if the plan's claim was wrong, and why it copies."""
    try:
        plan = hub.plan(src, to=dst)
        result = hub.convert(src, to=dst)
    except InterchangeError:
        return "-", 0, []
    total = sum(b.size for b in hub.buffers(src))
    shared = hub.shared_bytes(src, result)
    claim = "Z" if plan.zero_copy else "C"
    verified = shared >= total if plan.zero_copy else shared < total
    reasons = [c.reason for c in plan.copies]
    return (claim if verified else claim + "!"), int(not verified), reasons


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="interchange-hub", description="Move data between Python data libraries."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    demo_cmd = commands.add_parser("demo", help="print the pair matrix on sample data")
    demo_cmd.add_argument("--rows", type=int, default=100_000, help="rows per sample")
    args = parser.parse_args(argv)
    if args.command == "demo":
        return demo(args.rows)
    return 2  # pragma: no cover - argparse rejects unknown commands


if __name__ == "__main__":
    sys.exit(main())
