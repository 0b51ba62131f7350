"""Plans: the steps a conversion will take, what each copies, and why."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from interchange_hub._core.info import Kind, RouteChanged, label
from interchange_hub._core.records import field, record
from interchange_hub.adapter import Context
from interchange_hub.errors import ConversionError, InterchangeError, library_message

if TYPE_CHECKING:
    from interchange_hub._core.device import Device
    from interchange_hub._core.info import Copy, DataInfo, Estimate, Loss, Scan
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


@record
class Request:
    """What the caller asked for."""

    target: str  # a node: a library name, "arrow" or "dlpack"
    kind: Kind | None = None
    target_type: type | None = None
    copy: bool | None = None
    device: Device | None = None
    strict: bool = False
    dtype: str | None = None  # dtype= of a tensor result
    arrow: bool = False  # dtype="arrow": Arrow-backed columns (Flag.ARROW_BACKED)
    # the Arrow types the target keeps text in as they are (Adapter.arrow_string_type, ...)
    string_type: str = ""
    binary_type: str = ""

    def context(self, info: DataInfo, fresh: bool = False, at_source: bool = False) -> Context:
        return Context(
            info,
            self.kind,
            self.target_type,
            self.copy,
            self.strict,
            fresh,
            self.target,
            self.device,
            self.dtype,
            at_source,
            self.arrow,
            self.string_type,
            self.binary_type,
        )


@record
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


@record
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
    # as_dict=True: the plan of each column, after ``steps`` took the table to Arrow.
    columns: tuple[tuple[str, Plan], ...] = ()

    @property
    def zero_copy(self) -> bool:
        """True when no step copies data (False while the route is deferred: unknown)."""
        return (
            not self.deferred
            and all(s.zero_copy for s in self.steps)
            and all(p.zero_copy for _, p in self.columns)
        )

    @property
    def all_steps(self) -> tuple[Step, ...]:
        """The steps, then those of each column's plan (as_dict=True)."""
        return self.steps + tuple(s for _, p in self.columns for s in p.all_steps)

    @property
    def copies(self) -> tuple[Copy, ...]:
        """Each column copied, by each step (as_dict=True: named by their column)."""
        own = tuple(c for s in self.steps for c in s.copies)
        return own + tuple(
            replace(c, column=c.column or name) for name, p in self.columns for c in p.copies
        )

    @property
    def copied_columns(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c.column for c in self.copies))

    @property
    def scans(self) -> tuple[Scan, ...]:
        """Each column read in full (O(n)) by a step, though not copied, and why."""
        own = tuple(x for s in self.steps for x in s.estimate.scans)
        return own + tuple(
            replace(x, column=x.column or name) for name, p in self.columns for x in p.scans
        )

    @property
    def losses(self) -> tuple[Loss, ...]:
        own = tuple(loss for s in self.steps for loss in s.losses)
        return own + tuple(
            replace(x, column=x.column or name) for name, p in self.columns for x in p.losses
        )

    @property
    def lossless(self) -> bool:
        return not self.losses

    @property
    def copied_bytes(self) -> int:
        """Bytes the plan copies; -1 when some size is unknown."""
        sizes = [s.copied_bytes for s in self.all_steps]
        return -1 if any(n < 0 for n in sizes) else sum(sizes)

    @property
    def device_moves(self) -> int:
        return sum(1 for s in self.all_steps if s.estimate.moves_device)

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
            lines.extend(f"       scans {label(x.column)}: {x.reason}" for x in step.estimate.scans)
            lines.extend(f"       LOSSY {loss.message()}" for loss in step.losses)
        for name, sub in self.columns:
            lines.append(f"  column {name!r}: " + str(sub).split(": ", 1)[1].split("\n")[0])
            lines.extend("    " + line for line in str(sub).split("\n")[1:])
        lines.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(lines)

    def __repr__(self) -> str:
        kind = "zero-copy" if self.zero_copy else "copy"
        return f"<Plan {self.source} -> {self.target} ({len(self.steps)} steps, {kind})>"

    def _repr_html_(self) -> str:
        """The plan as an HTML table (Jupyter shows it): one row per step with its copies,
        losses and device moves, then each column's plan (``as_dict=True``) and the notes.
        Inline styles only, no script, every text escaped; colours are set with the text,
        so a dark theme keeps it legible.
        """
        parts = [f'<div style="margin:0 0 4px 0">{_html_title(self)}</div>', _html_table(self)]
        for name, sub in self.columns:
            head = f"<b>column {_escape(repr(name))}</b>: {_escape(_html_verdict(sub))}"
            parts.append(
                f'<div style="margin:8px 0 0 16px"><div style="margin:0 0 4px 0">{head}</div>'
                f"{_html_table(sub)}{_html_notes(sub)}</div>"
            )
        parts.append(_html_notes(self))
        return f'<div style="{_BOX}">{"".join(parts)}</div>'


# -- Plan._repr_html_ helpers: inline styles (a notebook's own CSS right-aligns and stripes
# tables; these set alignment, colours and text colour explicitly).
_HTML_HEADER = ("#", "adapter", "step", "via", "device", "copy", "data in", "why")
_BOX = (
    "font-family:system-ui,-apple-system,'Segoe UI',sans-serif;font-size:13px;color:#1f2328;"
    "background:#ffffff;border-collapse:collapse;line-height:1.35;max-width:100%;overflow-x:auto;"
    "padding:4px 0"
)
_CELL = "text-align:left;vertical-align:top;padding:3px 8px;border-bottom:1px solid #d0d7de;"
_TH = _CELL + "background:#f6f8fa;color:#1f2328;font-weight:600;white-space:nowrap"
_TD = _CELL + "color:#1f2328;"
_NOTE = (
    "margin:6px 0 0 0;padding:4px 8px;border-left:4px solid #bf8700;background:#fff8c5;"
    "color:#1f2328;max-width:60em"
)
_ZERO_COPY = "#e6f4ea"  # green: the step shares memory
_COPY = "#fdebd3"  # orange: the step copies
_MOVE = "#e4e2fb"  # violet: the step moves the data between devices
_LOSSY = "#ffe3e3"  # red: the step loses information


def _html_verdict(plan: Plan) -> str:
    if plan.deferred:
        return "route planned when the stream is read"
    verdict = "zero-copy" if plan.zero_copy else f"copies {format_bytes(plan.copied_bytes)}"
    if plan.device_moves:
        moves = plan.device_moves
        verdict += f" ({moves} device move{'s' if moves > 1 else ''})"
    if plan.losses:
        verdict += f", lossy ({len(plan.losses)})"
    return verdict + f", {len(plan.steps)} step{'' if len(plan.steps) == 1 else 's'}"


def _html_title(plan: Plan) -> str:
    title = f"{_escape(plan.source)} &rarr; {_escape(plan.target)}"
    return f"<b>Plan {title}</b>: {_escape(_html_verdict(plan))}"


def _html_table(plan: Plan) -> str:
    rows = [_html_step(i, s) for i, s in enumerate(plan.steps, 1)]
    if not plan.steps:
        empty = (
            "the route is planned when the stream is read"
            if plan.deferred
            else "no steps: the object is returned as is"
        )
        rows.append(f'<tr><td colspan="{len(_HTML_HEADER)}" style="{_TD}">{empty}</td></tr>')
    head = "".join(f'<th style="{_TH}">{h}</th>' for h in _HTML_HEADER)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _html_notes(plan: Plan) -> str:
    return "".join(f'<div style="{_NOTE}"><b>note:</b> {_escape(n)}</div>' for n in plan.notes)


def _html_step(number: int, step: Step) -> str:
    e, moves = step.edge, step.estimate.moves_device
    if step.losses:
        background = _LOSSY
    elif moves:
        background = _MOVE
    else:
        background = _ZERO_COPY if step.zero_copy else _COPY
    device = _escape(step.device)
    copy = "zero-copy" if step.zero_copy else f"copy {format_bytes(step.copied_bytes)}"
    if moves:
        device = f"<b>{_escape(str(step.before.device))} &rarr; {device}</b>"
        copy += "<br><b>device move</b>"
    why = [_escape(step.estimate.why or "-")]
    why += [
        f'<span style="font-size:12px">scans {_escape(label(x.column))}: {_escape(x.reason)}</span>'
        for x in step.estimate.scans
    ]
    why += [
        f'<span style="font-size:12px">copies {_escape(what)}: {_escape(reason)}</span>'
        for what, reason in _html_copies(step)
    ]
    why += [
        f'<span style="color:#a40e26"><b>lossy</b> {_escape(loss.message())}</span>'
        for loss in step.losses
    ]
    cells = [
        (str(number), True),
        (_escape(e.adapter), True),
        (f"{_escape(e.source)} &rarr; {_escape(e.target)}", True),
        (f"<code>{_escape(e.protocol)}</code>", True),
        (device, True),
        (copy, True),
        (format_bytes(step.before.nbytes), True),
        ("<br>".join(why), False),
    ]
    tds = "".join(
        f'<td style="{_TD}background:{background};{"white-space:nowrap" if nowrap else ""}">'
        f"{text}</td>"
        for text, nowrap in cells
    )
    return f"<tr>{tds}</tr>"


def _html_copies(step: Step, limit: int = 6) -> list[tuple[str, str]]:
    """(what, why) per reason a step copies: columns copied for one reason share a line."""
    by_reason: dict[str, list[str]] = {}
    for c in step.copies:
        # A copy of the whole data for the step's own reason (a device move) says it twice.
        if not c.column and c.reason == step.estimate.why:
            continue
        by_reason.setdefault(c.reason, []).append(c.column)
    lines = []
    for reason, columns in by_reason.items():
        if len(columns) == 1:
            what = label(columns[0])
        else:
            what = "columns " + ", ".join(repr(c) for c in columns[:limit])
            if len(columns) > limit:
                what += f" and {len(columns) - limit} more"
        lines.append((what, reason))
    return lines


Runs = tuple[tuple["Edge", "Context"], ...]
#: A route made ready to run: one call, value in, result out (see :func:`compile_runs`).
Compiled = Callable[[Any], Any]


def runs_of(plan: Plan, request: Request) -> Runs:
    """The edges of a plan with the context each step runs in."""
    return tuple(
        (s.edge, request.context(s.before, s.fresh, i == 0)) for i, s in enumerate(plan.steps)
    )


# What a compiled route lets through as it is: the hub's own errors, RouteChanged (for the
# planner to plan the object afresh) and interruptions; anything else names its step.
_PASSED_ON = (InterchangeError, RouteChanged, KeyboardInterrupt, SystemExit, GeneratorExit)


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
            except _PASSED_ON:
                raise
            except BaseException as exc:
                raise _failed(number, edge, exc) from exc

        return run_one
    if len(steps) == 2:  # (most routes: the loop's state and index cost 0.1-0.2 us a call)
        (first_number, first_edge, first), (second_number, second_edge, second) = steps

        def run_two(obj: Any) -> Any:
            try:
                value = first(obj)
            except _PASSED_ON:
                raise
            except BaseException as exc:
                raise _failed(first_number, first_edge, exc) from exc
            try:
                return second(value)
            except _PASSED_ON:
                raise
            except BaseException as exc:
                raise _failed(second_number, second_edge, exc) from exc

        return run_two
    fns = tuple(fn for _, _, fn in steps)

    def run_all(obj: Any) -> Any:
        value, i = obj, 0
        try:
            for fn in fns:
                value = fn(value)
                i += 1
        except _PASSED_ON:
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
        f"{edge.adapter}) failed: {type(exc).__name__}: {library_message(exc)}"
    )


def _escape(text: str) -> str:
    """``html.escape``, imported on first use: plans render as HTML only in notebooks, and
    ``html`` (with its entities table) is 1.2 ms of the first conversion."""
    import html

    return html.escape(text)
