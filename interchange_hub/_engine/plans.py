"""Plans: the steps a conversion will take, what each copies, and why."""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from interchange_hub._core.info import Kind, RouteChanged, label
from interchange_hub.adapter import Context
from interchange_hub.errors import ConversionError, InterchangeError

if TYPE_CHECKING:
    from interchange_hub._core.device import Device
    from interchange_hub._core.info import Copy, DataInfo, Estimate, Loss
    from interchange_hub.adapter import Edge


def format_bytes(n: int) -> str:
    if n < 0:
        return "?"
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # pragma: no cover


@dataclass(frozen=True, slots=True)
class Request:
    """What the caller asked for."""

    target: str  # a node: a library name, "arrow" or "dlpack"
    kind: Kind | None = None
    target_type: type | None = None
    copy: bool | None = None
    device: Device | None = None
    strict: bool = False

    def context(self, info: DataInfo, fresh: bool = False) -> Context:
        return Context(
            info,
            self.kind,
            self.target_type,
            self.copy,
            self.strict,
            fresh,
            self.target,
            self.device,
        )


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a plan: an edge and its data-aware estimate."""

    edge: Edge
    before: DataInfo
    estimate: Estimate
    fresh: bool = False  # the step's input is memory made by an earlier step

    @property
    def copies(self) -> tuple[Copy, ...]:
        return self.estimate.copies

    @property
    def losses(self) -> tuple[Loss, ...]:
        return self.estimate.losses

    @property
    def copied_bytes(self) -> int:
        """Bytes this step copies; -1 when some size is unknown."""
        sizes = [c.nbytes for c in self.estimate.copies]
        return -1 if any(n < 0 for n in sizes) else sum(sizes)

    @property
    def zero_copy(self) -> bool:
        return not self.estimate.copies

    @property
    def device(self) -> str:
        return str(self.estimate.out.device)

    def line(self) -> str:
        e = self.edge
        mode = "zero-copy" if self.zero_copy else f"copy {format_bytes(self.copied_bytes)}"
        if self.estimate.moves_device:
            mode += f" (device move {self.before.device} -> {self.device})"
        why = self.estimate.why or "-"
        return (
            f"{e.adapter:<10} {e.source:>9} -> {e.target:<9} via {e.protocol:<24} "
            f"{self.device:<6} {mode:<16} {why}  [{format_bytes(self.before.nbytes)}]"
        )


@dataclass(frozen=True, slots=True)
class Plan:
    """What ``convert`` will do, computed from the data before anything runs.

    ``print(plan)`` shows one line per step: adapter, nodes, protocol, device, copy or
    zero-copy, why, and the estimated bytes entering the step.
    """

    source: str
    target: str
    info: DataInfo
    steps: tuple[Step, ...]
    notes: tuple[str, ...] = ()
    deferred: bool = False  # the route is found only when the data is read (see notes)
    # The result shares read-only memory of the source in a library that ignores the
    # flag (Adapter.writes_through): running the plan warns with WriteThroughWarning.
    write_through: bool = False
    request: Request | None = field(default=None, compare=False, repr=False)

    @property
    def zero_copy(self) -> bool:
        """True when no step copies data (False while the route is deferred: unknown)."""
        return not self.deferred and all(s.zero_copy for s in self.steps)

    @property
    def copies(self) -> tuple[Copy, ...]:
        return tuple(c for s in self.steps for c in s.copies)

    @property
    def copied_columns(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c.column for c in self.copies))

    @property
    def losses(self) -> tuple[Loss, ...]:
        return tuple(loss for s in self.steps for loss in s.losses)

    @property
    def lossless(self) -> bool:
        return not self.losses

    @property
    def copied_bytes(self) -> int:
        """Bytes the plan copies; -1 when some size is unknown."""
        sizes = [s.copied_bytes for s in self.steps]
        return -1 if any(n < 0 for n in sizes) else sum(sizes)

    @property
    def device_moves(self) -> int:
        return sum(1 for s in self.steps if s.estimate.moves_device)

    @property
    def result(self) -> DataInfo:
        return self.steps[-1].estimate.out if self.steps else self.info

    def __str__(self) -> str:
        verdict = "zero-copy" if self.zero_copy else f"copies {format_bytes(self.copied_bytes)}"
        if self.device_moves:
            verdict += f" ({self.device_moves} device move{'s' if self.device_moves > 1 else ''})"
        if self.deferred:
            verdict = "route planned when the stream is read"
        head = f"Plan {self.source} -> {self.target}: {verdict}"
        if not self.deferred:
            head += f", {len(self.steps)} step(s)"
        lines = [head]
        if not self.steps and not self.deferred:
            lines.append("  (no steps: the object is returned as is)")
        for i, step in enumerate(self.steps, 1):
            lines.append(f"  {i}. {step.line()}")
            lines.extend(f"       copies {label(c.column)}: {c.reason}" for c in step.copies)
            lines.extend(f"       LOSSY {loss.message()}" for loss in step.losses)
        lines.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(lines)

    def __repr__(self) -> str:
        kind = "zero-copy" if self.zero_copy else "copy"
        return f"<Plan {self.source} -> {self.target} ({len(self.steps)} steps, {kind})>"

    def _repr_html_(self) -> str:
        rows = []
        for i, s in enumerate(self.steps, 1):
            color = "#d4f4dd" if s.zero_copy else "#fde2c8"
            details = "<br>".join(html.escape(f"{c.column}: {c.reason}") for c in s.copies)
            details += "".join(f"<br><b>lossy</b> {html.escape(x.message())}" for x in s.losses)
            cells = [
                str(i),
                s.edge.adapter,
                f"{s.edge.source} &rarr; {s.edge.target}",
                s.edge.protocol,
                s.device,
                "zero-copy" if s.zero_copy else f"copy {format_bytes(s.copied_bytes)}",
                html.escape(s.estimate.why) + (f"<br>{details}" if details else ""),
            ]
            tds = "".join(f"<td>{c}</td>" for c in cells)
            rows.append(f'<tr style="background:{color}">{tds}</tr>')
        head = "".join(
            f"<th>{h}</th>" for h in ("#", "adapter", "step", "protocol", "device", "copy", "why")
        )
        title = html.escape(f"{self.source} -> {self.target}")
        verdict = "zero-copy" if self.zero_copy else f"copies {format_bytes(self.copied_bytes)}"
        return f"<div><b>Plan {title}</b>: {verdict}<table><tr>{head}</tr>{''.join(rows)}</table></div>"


Runs = tuple[tuple["Edge", "Context"], ...]
#: A route made ready to run: one call, value in, result out (see :func:`compile_runs`).
Compiled = Callable[[Any], Any]


def runs_of(plan: Plan, request: Request) -> Runs:
    """The edges of a plan with the context each step runs in."""
    return tuple((s.edge, request.context(s.before, s.fresh)) for s in plan.steps)


def compile_runs(runs: Runs) -> Compiled:
    """One function that runs the steps in order, as the first conversion and the fast path
    both call it: every edge bound to its context once (:meth:`Edge.bound`), passthrough
    steps left out, and a library's exception turned into a :class:`ConversionError`
    naming the step. A one-step route costs the bound call and one Python frame.
    :class:`RouteChanged` passes through, for the planner to plan the object afresh."""
    numbered = [(n, edge, edge.bound(ctx)) for n, (edge, ctx) in enumerate(runs, 1)]
    steps = tuple((n, edge, fn) for n, edge, fn in numbered if fn is not None)
    if not steps:
        return _identity
    if len(steps) == 1:
        ((number, edge, only),) = steps

        def run_one(obj: Any) -> Any:
            try:
                return only(obj)
            except (InterchangeError, RouteChanged):
                raise
            except (KeyboardInterrupt, SystemExit, GeneratorExit):
                raise
            except BaseException as exc:
                raise _failed(number, edge, exc) from exc

        return run_one
    fns = tuple(fn for _, _, fn in steps)

    def run_all(obj: Any) -> Any:
        value, i = obj, 0
        try:
            for fn in fns:
                value = fn(value)
                i += 1
        except (InterchangeError, RouteChanged):
            raise
        except (KeyboardInterrupt, SystemExit, GeneratorExit):
            raise
        except BaseException as exc:
            number, edge, _ = steps[i]
            raise _failed(number, edge, exc) from exc
        return value

    return run_all


def _identity(obj: Any) -> Any:
    return obj


def _failed(number: int, edge: Edge, exc: BaseException) -> ConversionError:
    return ConversionError(
        f"step {number} ({edge.source} -> {edge.target} via {edge.protocol}, adapter "
        f"{edge.adapter}) failed: {type(exc).__name__}: {exc}"
    )
