"""The conversion matrix: every ordered pair of installed libraries, planned, run and
checked by buffer addresses. Used by ``interchange-hub matrix`` and the demo."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from interchange_hub._core.deps import installed
from interchange_hub._core.info import Kind
from interchange_hub._tools.samples import OWN_API, sample
from interchange_hub.errors import InterchangeError, LossyConversionWarning
from interchange_hub.plugins import BUILTIN

if TYPE_CHECKING:
    from collections.abc import Sequence

    from interchange_hub.hub import Hub

TITLES = {
    Kind.TABLE: "tables: two float64 columns (numpy/torch: a 2-D tensor)",
    Kind.COLUMN: "columns: one int64 column (numpy/torch: a 1-D tensor)",
}


@dataclass(frozen=True, slots=True)
class Cell:
    """One conversion: what the plan claimed and what the buffer addresses showed."""

    source: str
    target: str
    kind: str
    status: str  # "zero-copy", "copy", "no route" or "failed"
    verified: bool = True  # the claim matched the addresses
    shared_bytes: int = 0
    source_bytes: int = 0
    seconds: float = 0.0
    reasons: tuple[str, ...] = ()
    error: str = ""

    @property
    def mark(self) -> str:
        mark = {"zero-copy": "Z", "copy": "C", "no route": "-", "failed": "E"}[self.status]
        return mark if self.verified else mark + "!"

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "kind": self.kind,
            "status": self.status,
            "verified": self.verified,
            "shared_bytes": self.shared_bytes,
            "source_bytes": self.source_bytes,
            "seconds": self.seconds,
            "reasons": list(self.reasons),
            "error": self.error,
        }


Progress = Callable[[int, int, str], None]


def builtin_libraries(hub: Hub) -> list[str]:
    """The adapters of ``hub``'s built-in plugins that hold data on the CPU, in the order
    of ``DEFAULT_PLUGINS``, installed or not."""
    names = [n for info in hub.plugins() if info.source == BUILTIN for n in info.adapters]
    adapters = {a.name: a for a in hub.adapters()}
    return [n for n in names if "cpu" in adapters[n].devices]


def libraries(hub: Hub) -> list[str]:
    """The installed CPU libraries of ``hub``: built-ins first, then plugins' in name order."""
    builtin = builtin_libraries(hub)
    names = [a.name for a in hub.adapters() if installed(a.module) and "cpu" in a.devices]
    return [n for n in builtin if n in names] + sorted(n for n in names if n not in builtin)


def make_sample(hub: Hub, library: str, kind: Kind, rows: int) -> Any:
    """A sample of ``kind`` in ``library``: built with its own API for built-ins, through
    the hub from pyarrow for plugin libraries."""
    if library in OWN_API:
        return sample(library, kind, rows)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LossyConversionWarning)
        return hub.convert(sample("pyarrow", kind, rows), to=library)


def cell(hub: Hub, src: Any, source: str, target: str, kind: Kind) -> Cell:
    """Plan and run one conversion, and check the plan's claim by buffer addresses."""
    try:
        plan = hub.plan(src, to=target)
    except InterchangeError as exc:
        return Cell(source, target, kind.value, "no route", error=str(exc))
    started = time.perf_counter()
    try:
        result = hub.convert(src, to=target)
    except InterchangeError as exc:
        return Cell(source, target, kind.value, "failed", False, error=str(exc))
    seconds = time.perf_counter() - started
    total = sum(b.size for b in hub.buffers(src))
    shared = hub.shared_bytes(src, result)
    verified = shared >= total if plan.zero_copy else shared < total or total == 0
    return Cell(
        source,
        target,
        kind.value,
        "zero-copy" if plan.zero_copy else "copy",
        verified,
        shared,
        total,
        seconds,
        tuple(dict.fromkeys(c.reason for c in plan.copies)),
    )


def compute(
    hub: Hub,
    kinds: Sequence[Kind] = (Kind.TABLE, Kind.COLUMN),
    rows: int = 100_000,
    libs: Sequence[str] | None = None,
    progress: Progress | None = None,
) -> list[Cell]:
    """Every ordered pair of ``libs`` (default: all installed) for each kind."""
    libs = list(libs) if libs is not None else libraries(hub)
    total = len(kinds) * len(libs) ** 2
    cells = []
    for kind in kinds:
        for source in libs:
            try:
                src = make_sample(hub, source, kind, rows)
            except InterchangeError as exc:
                for target in libs:
                    cells.append(Cell(source, target, kind.value, "no route", error=str(exc)))
                continue
            for target in libs:
                if progress is not None:
                    progress(len(cells) + 1, total, f"{kind.value}: {source} -> {target}")
                if hub.is_one_shot(src):
                    src = make_sample(hub, source, kind, rows)
                cells.append(cell(hub, src, source, target, kind))
    return cells
