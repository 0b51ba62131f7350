"""The conversion matrix: every ordered pair of installed libraries, planned, run and
checked by buffer addresses. Used by ``interchange-hub matrix`` and the demo.

A partial install is reported, not crashed on: :func:`survey` sorts the libraries into
those that import and those that are missing (with the pip extra that brings each), and
without numpy the samples are built from plain Python values through pyarrow."""

from __future__ import annotations

import importlib
import random
import time
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from interchange_hub._core.deps import installed
from interchange_hub._core.info import Kind
from interchange_hub._core.records import record
from interchange_hub._tools.samples import OWN_API, sample
from interchange_hub.errors import (
    InterchangeError,
    LossyConversionWarning,
    MissingDependencyError,
)
from interchange_hub.plugins import BUILTIN

if TYPE_CHECKING:
    from collections.abc import Sequence

    from interchange_hub.hub import Hub

TITLES = {
    Kind.TABLE: "tables: two float64 columns (numpy/torch: a 2-D tensor)",
    Kind.COLUMN: "columns: one int64 column (numpy/torch: a 1-D tensor)",
}


@record
class Cell:
    """One conversion: what the plan claimed and what the buffer addresses showed.

    ``verified`` is ``None`` where there was no claim to check (no route, or no sample).
    """

    source: str
    target: str
    kind: str
    status: str  # "zero-copy", "copy", "no route" or "failed"
    verified: bool | None = None  # the claim matched the addresses; None: nothing checked
    shared_bytes: int = 0
    source_bytes: int = 0
    seconds: float = 0.0
    reasons: tuple[str, ...] = ()
    error: str = ""
    warnings: tuple[str, ...] = ()  # what the conversion warned, one line each

    @property
    def mark(self) -> str:
        mark = {"zero-copy": "Z", "copy": "C", "no route": "-", "failed": "E"}[self.status]
        return mark + "!" if self.verified is False else mark

    @property
    def checked(self) -> bool:
        """Whether a plan's claim was compared with the buffer addresses."""
        return self.status in ("zero-copy", "copy")

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "kind": self.kind,
            "status": self.status,
            "checked": self.checked,
            "verified": self.verified,
            "shared_bytes": self.shared_bytes,
            "source_bytes": self.source_bytes,
            "seconds": self.seconds,
            "reasons": list(self.reasons),
            "error": self.error,
            "warnings": list(self.warnings),
        }


Progress = Callable[[int, int, str], None]


@record
class Missing:
    """A library the matrix leaves out: not installed, or installed but failing to import."""

    library: str
    module: str
    reason: str  # "not installed", or why importing it fails (one line)
    extra: str = ""  # the pip extra of interchange-hub that installs it ("" for plugins')

    @property
    def installed(self) -> bool:
        return self.reason != "not installed"

    @property
    def install(self) -> str:
        """The command that installs it, or "" where no extra of ours does."""
        return f"pip install 'interchange-hub[{self.extra}]'" if self.extra else ""

    def as_dict(self) -> dict[str, str]:
        return {
            "library": self.library,
            "module": self.module,
            "reason": self.reason,
            "install": self.install,
        }


@record
class Summary:
    """What a matrix showed, counted: only ``checked`` cells had a claim to verify."""

    cells: int
    checked: int
    matched: int
    wrong: int  # a claim the addresses contradicted
    failed: int  # planned, but the conversion raised
    no_route: int

    @property
    def ok(self) -> bool:
        """Nothing wrong, nothing failed and at least one claim checked."""
        return not self.wrong and not self.failed and self.checked > 0

    @property
    def complete(self) -> bool:
        """Every cell had a claim and every claim matched."""
        return self.ok and self.matched == self.cells

    def as_dict(self) -> dict[str, int]:
        return {
            "cells": self.cells,
            "checked": self.checked,
            "matched": self.matched,
            "wrong": self.wrong,
            "failed": self.failed,
            "no_route": self.no_route,
        }


def summarize(cells: Sequence[Cell]) -> Summary:
    return Summary(
        cells=len(cells),
        checked=sum(c.checked for c in cells),
        matched=sum(c.checked and c.verified is True for c in cells),
        wrong=sum(c.checked and c.verified is False for c in cells),
        failed=sum(c.status == "failed" for c in cells),
        no_route=sum(c.status == "no route" for c in cells),
    )


def import_problem(module: str) -> str:
    """ "" if ``module`` imports, "not installed" if it is absent, else why it fails."""
    try:
        with warnings.catch_warnings():  # a probe: torch warns when numpy is missing
            warnings.simplefilter("ignore")
            importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name == module or module.startswith(f"{exc.name}."):
            return "not installed"
        return f"importing it fails: {_one_line(exc)}"
    except Exception as exc:  # noqa: BLE001 - a broken library is reported, whatever it raises
        return f"importing it fails: {_one_line(exc)}"
    return ""


def _one_line(exc: BaseException | Warning | str) -> str:
    """``Type: message`` on one line, cut at 160 characters of message."""
    text = " ".join(str(exc).split())
    text = text if len(text) <= 160 else text[:157] + "..."
    if isinstance(exc, str):
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def builtin_libraries(hub: Hub) -> list[str]:
    """The adapters of ``hub``'s built-in plugins that hold data on the CPU, in the order
    of ``DEFAULT_PLUGINS``, installed or not."""
    names = [n for info in hub.plugins() if info.source == BUILTIN for n in info.adapters]
    adapters = {a.name: a for a in hub.adapters()}
    return [n for n in names if "cpu" in adapters[n].devices]


def survey(hub: Hub) -> tuple[list[str], list[Missing]]:
    """The CPU libraries of ``hub`` that import (ordered as :func:`libraries`), and those
    left out: built-ins that are not installed or fail to import, and plugin libraries
    whose module fails to import (a plugin's library that is simply absent is not listed,
    as :func:`libraries` leaves it out too).

    Raises :class:`MissingDependencyError` when pyarrow is missing: every sample is
    built with it."""
    if import_problem("pyarrow"):
        raise MissingDependencyError("pyarrow", "pyarrow", "to build the samples")
    builtin = builtin_libraries(hub)
    adapters = {a.name: a for a in hub.adapters()}
    others = sorted(
        n
        for n, a in adapters.items()
        if n not in builtin and "cpu" in a.devices and not a.source_only  # not engines
    )
    usable: list[str] = []
    missing: list[Missing] = []
    for name in [*builtin, *others]:
        module = adapters[name].module
        problem = import_problem(module)
        if not problem:
            usable.append(name)
        elif name in builtin:
            missing.append(Missing(name, module, problem, extra=name))
        elif problem != "not installed":
            missing.append(Missing(name, module, problem))
    return usable, missing


def libraries(hub: Hub) -> list[str]:
    """The installed CPU libraries of ``hub``: built-ins first, then plugins' in name order."""
    builtin = builtin_libraries(hub)
    names = [
        a.name
        for a in hub.adapters()
        if installed(a.module) and "cpu" in a.devices and not a.source_only  # not engines
    ]
    return [n for n in builtin if n in names] + sorted(n for n in names if n not in builtin)


def make_sample(hub: Hub, library: str, kind: Kind, rows: int) -> Any:
    """A sample of ``kind`` in ``library``: built with its own API for built-ins, through
    the hub from pyarrow for plugin libraries (and for every library without numpy)."""
    has_numpy = not import_problem("numpy")
    if library in OWN_API and has_numpy:
        return sample(library, kind, rows)
    base = sample("pyarrow", kind, rows) if has_numpy else plain_sample(kind, rows)
    if library == "pyarrow":
        return base
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LossyConversionWarning)
        return hub.convert(base, to=library)


def plain_sample(kind: Kind, rows: int, seed: int = 0) -> Any:
    """The pyarrow sample of :func:`~interchange_hub._tools.samples.sample` (same kinds,
    dtypes and ranges, other values), built from Python values: it needs no numpy."""
    pa = importlib.import_module("pyarrow")
    rng = random.Random(seed)
    if kind == Kind.TABLE:
        return pa.table(
            {
                "x": pa.array([rng.gauss(0.0, 1.0) for _ in range(rows)], pa.float64()),
                "y": pa.array([rng.gauss(0.0, 1.0) for _ in range(rows)], pa.float64()),
            }
        )
    if kind == Kind.COLUMN:
        return pa.array([rng.randint(-(10**12), 10**12) for _ in range(rows)], pa.int64())
    raise ValueError(f"samples exist for tables and columns, not {kind.value}")


def cell(hub: Hub, src: Any, source: str, target: str, kind: Kind) -> Cell:
    """Plan and run one conversion, and check the plan's claim by buffer addresses.

    A conversion that raises something other than an :class:`InterchangeError` (a bug,
    here or in a library) is a ``failed`` cell, not the end of the matrix; warnings (a
    torch result writing through, say) are kept in the cell, not printed."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            plan = hub.plan(src, to=target)
        except InterchangeError as exc:
            return Cell(source, target, kind.value, "no route", error=str(exc))
        except BaseException as exc:  # noqa: BLE001 - see _unexpected
            return Cell(source, target, kind.value, "failed", False, error=_unexpected(exc))
        started = time.perf_counter()
        try:
            result = hub.convert(src, to=target)
        except BaseException as exc:  # noqa: BLE001 - see _unexpected
            why = str(exc) if isinstance(exc, InterchangeError) else _unexpected(exc)
            return Cell(source, target, kind.value, "failed", False, error=why)
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
        warnings=tuple(dict.fromkeys(_one_line(w.message) for w in caught)),
    )


def _unexpected(exc: BaseException) -> str:
    """The text of an exception that is not an InterchangeError; re-raises those that
    end the program (Ctrl-C, exit). Others (a Rust panic of a library is a BaseException)
    are recorded: they are bugs to report, in the hub or the library."""
    if isinstance(exc, KeyboardInterrupt | SystemExit | GeneratorExit):
        raise exc
    return f"unexpected {_one_line(exc)}"


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
            except BaseException as exc:  # noqa: BLE001 - see _unexpected
                text = str(exc) if isinstance(exc, InterchangeError) else _unexpected(exc)
                for target in libs:
                    why = f"no {source} sample: {text}"
                    cells.append(Cell(source, target, kind.value, "no route", error=why))
                continue
            for target in libs:
                if progress is not None:
                    progress(len(cells) + 1, total, f"{kind.value}: {source} -> {target}")
                if hub.is_one_shot(src):
                    src = make_sample(hub, source, kind, rows)
                cells.append(cell(hub, src, source, target, kind))
    return cells
