"""The router: finds the cheapest chain of edges for some data, and runs it.

The graph's nodes are library names and the protocol nodes ``"arrow"`` and
``"dlpack"``; the device is part of the data, so a device move is an edge like any
other. A route's cost is, in order: information lost, bytes copied (device moves
weigh four times), columns copied, steps, protocol nodes passed. Routes are kept in the hub's route cache per
source type, data signature and request (and per power of two of the data's bytes, where
an estimate of the search said its choice depends on the size); estimates are recomputed
for every call (they are cheap).
"""

from __future__ import annotations

import threading
import weakref
from collections import defaultdict
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from interchange_hub._core.info import (
    DataInfo,
    Estimate,
    Flag,
    Kind,
    Loss,
    Unroutable,
    label,
    report_losses,
)
from interchange_hub._core.records import record
from interchange_hub._engine.plans import (
    Compiled,
    Plan,
    Request,
    Step,
    compile_runs,
    format_bytes,
    runs_of,
)
from interchange_hub.adapter import PROTOCOL_NODES
from interchange_hub.errors import (
    ConsumedSourceError,
    CopyRequiredError,
    InterchangeError,
    NoRouteError,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from interchange_hub._core.info import Copy
    from interchange_hub._engine.cache import RouteCache
    from interchange_hub._engine.registry import Registry
    from interchange_hub.adapter import Adapter, Context, Edge


MAX_STEPS = 6
MAX_LISTED = 8  # reasons a NoRouteError lists below its first line (all are in .reasons)
MAX_COPIES_LISTED = 3  # copies a CopyRequiredError names (all columns are in .columns)

# What a plan notes when the result views read-only memory of the source and the target
# adapter has no note of its own (Adapter.readonly_note).
READONLY_NOTE = (
    "the result views read-only memory it shares with the source: writing to it raises "
    "ValueError ('assignment destination is read-only'). Pass copy=True for writable, "
    "independent memory"
)


# A route's cost (:func:`_cost`): losses, bytes copied, columns scanned, columns copied,
# steps, protocol hops; compared as a tuple, the first part first.
_Cost = tuple[int, int, int, int, int, int]


@record(frozen=False)
class _Route:
    steps: list[Step]
    cost: _Cost
    # An estimate made in the search that found it said its choice depends on the data's
    # size (Estimate.by_size): the route is kept for this size class alone.
    by_size: bool = False


@record(frozen=False)
class _Failure:
    """Why the search stopped somewhere: at an edge that cannot carry the data, or at the
    target when the data is not what was asked for (``edge`` None)."""

    why: str
    edge: Edge | None = None
    depth: int = 0  # the steps taken before it
    fix: str = ""  # what to do, where ``why`` does not say it

    @property
    def optional(self) -> bool:
        """A shortcut between two libraries, or a library's step to itself (a copy, a cast,
        a move): where one does not apply the general route through a protocol node does
        the work, so its reason rarely explains a missing route."""
        e = self.edge
        if e is None or e.source in PROTOCOL_NODES:
            return False
        return e.target == e.source or e.target not in PROTOCOL_NODES

    def rank(self, target: str) -> tuple[bool, bool, bool, int, bool]:
        """Most relevant first: the general route before optional steps, the target's own
        refusal (why that library cannot take the data), then steps into a protocol node
        before detours through another library, steps near the source (about the data as
        given) before later ones, and a reason that says what to do."""
        e = self.edge
        own = e is not None and e.target == target
        detour = e is not None and e.target not in PROTOCOL_NODES and e.target != target
        fixless = not self.fix and "; " not in self.why
        return (self.optional, not own, detour, self.depth, fixless)

    def line(self) -> str:
        where = f"{self.edge.source} -> {self.edge.target}" if self.edge else "at the target"
        return f"{where}: {self.why}"

    def lead(self) -> str:
        """The reason as the message's first line says it."""
        if self.edge is not None and self.why.startswith("takes memory on"):
            return f"the step {self.edge.source} -> {self.edge.target} {self.why}"
        return self.why


class Router:
    """Plans and executes conversions over the edges of a registry."""

    def __init__(self, registry: Registry, cache: RouteCache) -> None:
        self._registry = registry
        self._cache = cache
        self._by_source: dict[str, list[Edge]] | None = None
        self._passable_nodes: frozenset[str] | None = None
        self._consumed: weakref.WeakSet[Any] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._index_lock = threading.Lock()

    def invalidate(self) -> None:
        """Forget the edge index and the cached routes (after registering adapters). The
        cache's generation goes up first: an index built before then is not kept."""
        self._cache.clear()
        with self._index_lock:
            self._by_source = None  # rebuilt on the next search
            self._passable_nodes = None

    def _index(self) -> dict[str, list[Edge]]:
        index = self._by_source
        if index is None:
            generation = self._cache.generation
            built: dict[str, list[Edge]] = defaultdict(list)
            for edge in self._registry.edges(load=False):
                built[edge.source].append(edge)
            index = dict(built)
            with self._index_lock:  # kept only if no adapter came in while it was built
                if generation == self._cache.generation:
                    self._by_source = index
        return index

    def _passable(self) -> frozenset[str]:
        """The nodes a route may pass through: the protocol nodes and the waypoints."""
        nodes = self._passable_nodes
        if nodes is None:
            generation = self._cache.generation
            waypoints = {a.name for a in self._registry.adapters(load=False) if a.waypoint}
            nodes = frozenset(PROTOCOL_NODES) | waypoints
            with self._index_lock:
                if generation == self._cache.generation:
                    self._passable_nodes = nodes
        return nodes

    # -- planning -------------------------------------------------------------------------
    def plan(
        self, obj: object, start: str, source: Adapter, info: DataInfo, request: Request
    ) -> Plan:
        names = (_type_name(obj), _target_name(request))
        if self._is_identity(obj, start, info, request):
            return Plan(names[0], names[1], info, (), request=request)
        if not info.known:
            note = (
                "the stream's schema shows only once it is read: it is read once into "
                "Arrow (zero-copy), and the rest of the route is planned then"
            )
            return Plan(names[0], names[1], info, (), (note,), deferred=True, request=request)
        key = (type(obj), info.signature, request)
        size_class = info.nbytes.bit_length()  # (unknown, -1: as 1 byte)
        cached, sized = self._cache.route(key, size_class)
        if cached is not None:
            steps = self._replay(cached, info, request)
            # (a route kept for every size whose steps now say size matters: searched anew)
            if steps is not None and (sized or not any(s.estimate.by_size for s in steps)):
                return self._finish(names, info, steps, request, source.is_one_shot(obj))
        generation = self._cache.generation
        route = self._search(start, info, request, names)
        self._cache.remember_route(
            key,
            tuple(s.edge for s in route.steps),
            generation,
            size_class if route.by_size else None,
        )
        return self._finish(names, info, route.steps, request, source.is_one_shot(obj))

    def _is_identity(self, obj: object, start: str, info: DataInfo, req: Request) -> bool:
        if start != req.target or req.copy or not _fits(info, req):
            return False
        if req.device is not None and info.device != req.device:
            return False
        return req.target_type is None or isinstance(obj, req.target_type)

    def _replay(self, edges: Sequence[Edge], info: DataInfo, req: Request) -> list[Step] | None:
        """Re-estimate a cached route for new data; None if it no longer fits the request."""
        start = info
        steps: list[Step] = []
        fresh = False
        for edge in edges:
            try:
                est = _estimate(edge, req.context(info, fresh, not steps))
            except Unroutable:
                return None
            steps.append(Step(edge, info, est, fresh))
            fresh = fresh or est.copies_all
            info = est.out
        if req.copy is False and any(s.copies for s in steps):
            return None
        if req.copy and not fresh:
            return None
        if not _fits(info, req):
            return None
        if _keep_names(start, steps, req) is not steps:
            return None  # the route loses these columns' names: look for one that keeps them
        return steps

    def _search(self, start: str, info: DataInfo, req: Request, names: tuple[str, str]) -> _Route:
        index = self._index()
        passable = self._passable() | {start}
        best: _Route | None = None
        by_size = False  # (see _Route.by_size)
        cheapest_copying: _Route | None = None
        failures: list[_Failure] = []
        direct_first = req.device is None and req.dtype is None and not req.arrow

        def visit(
            node: str,
            data: DataInfo,
            steps: list[Step],
            seen: frozenset[str],
            sat: bool,
            cost: _Cost,
        ) -> None:
            nonlocal best, cheapest_copying, by_size
            if best is not None and cost >= best.cost:
                # Branch and bound: every part of the cost only grows with each step, and
                # each step adds one, so no route on from here can be cheaper than the best
                # found (the search picks what the whole search would, estimating less).
                return
            misplaced = req.device is not None and data.device != req.device
            if steps and node == req.target and misplaced:
                # A loop edge of the target (Tensor.to) may still move it.
                why = f"the data ends on {data.device}, not on device={str(req.device)!r}"
                fix = "no step moves it there: move it with its own library, or pass device=None"
                failures.append(_Failure(why, depth=len(steps), fix=fix))
            elif steps and node == req.target and not _fits(data, req):
                # A loop edge of the target (a cast) may still give the dtype asked for.
                if req.arrow:
                    why = "the route's last step gives columns that are not Arrow-backed"
                    fix = "leave dtype out for the target's default columns"
                else:
                    why = f"the route gives {_dtype_of(data)}, not dtype={req.dtype!r}"
                    fix = "no step casts it: cast it in its own library first, or leave dtype out"
                failures.append(_Failure(why, depth=len(steps), fix=fix))
            elif steps and node == req.target:
                if req.copy and not sat:
                    return
                kept = _keep_names(info, steps, req)
                route = _Route(kept, _cost(kept))
                if any(s.copies for s in steps) and req.copy is False:
                    if cheapest_copying is None or route.cost < cheapest_copying.cost:
                        cheapest_copying = route
                    return
                if best is None or route.cost < best.cost:
                    best = route
                return
            if len(steps) >= MAX_STEPS:
                return
            edges = index.get(node, ())
            # The edges into the target first, where reaching it ends the route (no device
            # or dtype asked, which a loop edge of the target may still give): a route found
            # early bounds the rest of the search. It picks the same route: of routes equal
            # in cost, the first found wins, and those it finds sooner here are a step
            # shorter than the ones they overtake (so never equal in cost).
            direct = [e for e in edges if e.target == req.target] if direct_first else ()
            if direct and len(direct) != len(edges):
                edges = [*direct, *(e for e in edges if e.target != req.target)]
            for edge in edges:
                if data.device.kind not in edge.devices:
                    why = f"takes memory on {' or '.join(edge.devices)}, and the data is on "
                    fix = (
                        "move the data with its own library first, or pick a target that "
                        f"holds {data.device.kind} memory"
                    )
                    failures.append(_Failure(why + str(data.device), edge, len(steps), fix))
                    continue
                loop = edge.target == edge.source
                if (edge.target in seen and edge.target != req.target and not loop) or (
                    loop and any(s.edge is edge for s in steps)
                ):
                    continue
                if edge.target != req.target and edge.target not in passable:
                    continue  # not a waypoint: entered only as the target (not even estimated)
                if best is not None and _added(cost, _least_step(edge)) >= best.cost:
                    continue  # no cheaper than the best found, whatever its estimate says
                try:
                    est = _estimate(edge, req.context(data, sat, not steps))
                except Unroutable as exc:
                    failures.append(_Failure(str(exc), edge, len(steps)))
                    continue
                by_size = by_size or est.by_size
                step = Step(edge, data, est, sat)
                visit(
                    edge.target,
                    est.out,
                    [*steps, step],
                    seen | {edge.target},
                    sat or est.copies_all,
                    _added(cost, _step_cost(step)),
                )

        visit(start, info, [], frozenset({start}), False, _NO_COST)
        # copy=False forbids copies, not keeping the data: where every route that does not
        # copy loses what a copying one keeps (fewer losses: the cost's first part), the
        # copy is needed
        lossless = cheapest_copying
        if best is not None and lossless is not None and lossless.cost[0] < best.cost[0]:
            raise CopyRequiredError(_copy_message(lossless, lossy=best), _copied(lossless))
        if best is not None:
            best.by_size = by_size
            return best
        if cheapest_copying is not None:
            # (where the copy would not give the kind asked for either, that is said first:
            # allowing the copy would not help)
            _check_kind(names, info, cheapest_copying.steps, req)
            raise CopyRequiredError(_copy_message(cheapest_copying), _copied(cheapest_copying))
        raise NoRouteError(
            _no_route_message(names, start, info, req, failures),
            list(dict.fromkeys(f.line() for f in failures)),
        )

    def _finish(
        self,
        names: tuple[str, str],
        info: DataInfo,
        steps: list[Step],
        req: Request,
        one_shot: bool,
    ) -> Plan:
        notes = []
        _check_kind(names, info, steps, req)
        if one_shot:
            notes.append("the source is a one-shot stream: converting it consumes it")
        write_through = False
        if _aliases_readonly(steps):
            target = self._registry.get(req.target)
            notes.append((target.readonly_note if target else "") or READONLY_NOTE)
            # Empty data shares no bytes: nothing a write could reach.
            write_through = target is not None and target.writes_through and info.nbytes != 0
        plan = Plan(
            names[0],
            names[1],
            info,
            tuple(steps),
            tuple(notes),
            request=req,
            write_through=write_through,
        )
        if req.strict:
            report_losses(plan.losses, plan.target, strict=True)
        return plan

    # -- execution ------------------------------------------------------------------------
    def execute(
        self,
        obj: object,
        plan: Plan,
        request: Request,
        one_shot: bool,
        compiled: Compiled | None = None,
    ) -> object:
        """Run ``plan`` (``compiled``: its steps, compiled by the caller to keep them)."""
        if one_shot:  # returned as it is too: the caller reads it, so the hub may not
            self._claim(obj)

        report_losses(plan.losses, plan.target, strict=False)
        if compiled is None:
            compiled = compile_runs(runs_of(plan, request))
        return compiled(obj)

    def _claim(self, obj: object) -> None:
        with self._lock:
            try:
                if obj in self._consumed:
                    raise ConsumedSourceError(
                        f"this {_type_name(obj)} was already converted, and a stream can "
                        "be read only once; create a new reader, or convert it to a table "
                        "first and convert the table"
                    )
                self._consumed.add(obj)
            except TypeError:  # not weak-referenceable: cannot be tracked
                pass


def _estimate(edge: Edge, ctx: Context) -> Estimate:
    """``edge.estimate(ctx)``; an estimate that raises anything but Unroutable, or returns
    no Estimate, leaves the edge out (a broken plugin must not break other routes)."""
    try:
        est = edge.estimate(ctx)
    except (Unroutable, InterchangeError):
        raise
    except Exception as exc:
        raise Unroutable(
            f"its estimate raised {type(exc).__name__}: {exc} (a bug of adapter "
            f"{edge.adapter!r}; the edge is left out)"
        ) from exc
    if not isinstance(est, Estimate):
        raise Unroutable(
            f"its estimate returned {type(est).__name__}, not an Estimate (a bug of adapter "
            f"{edge.adapter!r}; the edge is left out)"
        )
    if est.copies_all and est.out.alignment and est.out.alignment == ctx.info.alignment:
        # New memory keeps no measured alignment of the data it was made from (an
        # estimate's info.but(...) carries it over): unknown, unless the step says which
        # (tensors.estimate_to_tensor: 64, from a table, whose alignment is never measured).
        est = replace(est, out=est.out.but(alignment=0))
    return est


def _fits(info: DataInfo, req: Request) -> bool:
    """Whether ``info`` is what ``req`` asks of the result: a tensor of ``dtype=``, and
    Arrow-backed columns for ``dtype="arrow"`` (each marked so by the step making it)."""
    if req.arrow and (
        info.kind == Kind.TENSOR or any(Flag.ARROW_BACKED not in c.flags for c in info.columns)
    ):
        return False
    return _has_dtype(info, req.dtype)


def _has_dtype(info: DataInfo, dtype: str | None) -> bool:
    """Whether ``info`` is a tensor of ``dtype`` (always, when no dtype is asked for)."""
    return dtype is None or (
        info.kind == Kind.TENSOR and len(info.columns) == 1 and info.columns[0].dtype == dtype
    )


def _dtype_of(info: DataInfo) -> str:
    if info.kind == Kind.TENSOR and info.columns:
        dtype = info.columns[0].dtype
        return f"{'an' if dtype.startswith(tuple('aeiou')) else 'a'} {dtype} tensor"
    return f"a {info.kind.value}"


def _keep_names(start: DataInfo, steps: list[Step], req: Request) -> list[Step]:
    """``steps``, with a loss on the last step for each table column whose name the route
    does not keep: a table that goes through a tensor comes back as column_0, ..., or as
    one array of all its columns (an xarray DataArray), and leaves its index out; unless
    one array is what the caller asked for (``to=xr.DataArray``: a tensor kind)."""
    if not steps:
        return steps
    out = steps[-1].estimate.out
    tables = (Kind.TABLE, Kind.STREAM)
    if start.kind not in tables or out.kind not in tables or not out.known:
        return steps
    told = {(x.column, x.target) for s in steps for x in s.losses}  # an adapter said it
    before, after = [c.name for c in start.data_columns], [c.name for c in out.data_columns]
    lost: list[Loss] = []
    if req.kind != Kind.TENSOR and any(s.estimate.out.kind == Kind.TENSOR for s in steps):
        kept = {c.name for c in out.columns}
        why = "the route makes one array of the columns, without their names or index"
        lost += [
            Loss(c.name, f"index {c.name!r}", "none", why)
            for c in start.columns
            if Flag.INDEX in c.flags and c.name not in kept and (c.name, "none") not in told
        ]
        if len(before) != len(after):
            lost += [
                Loss(name, f"name {name!r}", "none", why)
                for name in before
                if (name, "none") not in told
            ]
    if len(before) == len(after) and before != after:
        lost += [
            Loss(old, f"name {old!r}", f"name {new!r}", "the route does not keep column names")
            for old, new in zip(before, after, strict=True)
            if old != new and (old, f"name {new!r}") not in told
        ]
    return _with_losses(steps, tuple(lost))


def _with_losses(steps: list[Step], renamed: tuple[Loss, ...]) -> list[Step]:
    """``steps``, with ``renamed`` added to the last step's losses."""
    if not renamed:
        return steps
    last = steps[-1]
    estimate = replace(last.estimate, losses=last.estimate.losses + renamed)
    return [*steps[:-1], replace(last, estimate=estimate)]


def _aliases_readonly(steps: Sequence[Step]) -> bool:
    """Whether the result shares read-only memory that came from the source."""
    for step in reversed(steps):
        if step.estimate.copies_all:
            return False
        if step.estimate.shared_readonly:
            return not step.fresh  # a view of memory an earlier step made is not the source's
    return False


def _cost(steps: Sequence[Step]) -> _Cost:
    """Information lost, bytes copied (device moves weigh four times), columns scanned
    (read in full without a copy: of two routes that copy as much, the one that does not
    also read every value, as pandas' export to Arrow does for NaN, so a Series reaches
    jax through its numpy view: 772 -> 237 us at 1e5 rows), columns copied, steps, then
    protocol nodes passed: of two routes equal in all else, the one through
    the libraries' own calls (torch -> numpy -> Arrow: ``Tensor.numpy``, ``pa.array``)
    beats the one through more protocol hops (torch -> DLPack -> Arrow: ``np.from_dlpack``
    costs 2 us more)."""
    total = _NO_COST
    for step in steps:
        total = _added(total, _step_cost(step))
    return total


def _step_cost(step: Step) -> _Cost:
    """One step's part of :func:`_cost` (each part at least 0, the steps' count 1)."""
    weight = 4 if step.estimate.moves_device else 1
    copies = step.copies
    return (
        len(step.losses),
        sum(max(c.nbytes, 0) * weight for c in copies),
        len(step.estimate.scans),
        len(copies),
        1,
        int(step.edge.target in PROTOCOL_NODES),
    )


def _least_step(edge: Edge) -> _Cost:
    """The least a step through ``edge`` can cost, before its estimate is known."""
    return _HOP if edge.target in PROTOCOL_NODES else _STEP


def _added(a: _Cost, b: _Cost) -> _Cost:
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3], a[4] + b[4], a[5] + b[5])


_NO_COST: _Cost = (0, 0, 0, 0, 0, 0)
_STEP: _Cost = (0, 0, 0, 0, 1, 0)
_HOP: _Cost = (0, 0, 0, 0, 1, 1)


def _copied(route: _Route) -> list[str]:
    return list(dict.fromkeys(c.column for s in route.steps for c in s.copies))


def _no_route_message(
    names: tuple[str, str],
    start: str,
    info: DataInfo,
    req: Request,
    failures: Sequence[_Failure],
) -> str:
    """The most relevant reason first, then what to do; the other reasons of the general
    route below it, one a line (optional steps that do not apply are left to ``.reasons``)."""
    head = f"cannot convert {names[0]} to {names[1]}"
    ranked = sorted(failures, key=lambda f: f.rank(req.target))  # stable: search order breaks ties
    if not ranked:
        return (
            f"{head}: no route from {start} ({info.kind.value}) to {req.target}; no adapter's "
            "steps connect them (a plugin can add one)"
        )
    lead = ranked[0]
    text = lead.lead()
    first = f"{head}: {text}"
    if lead.fix:
        first += f"; {lead.fix}"
    elif "; " not in text:
        first += (
            "; change the data first (cast or leave out what cannot go), or pick another target"
        )
    others = list(
        dict.fromkeys(f.line() for f in ranked[1:] if not f.optional and f.why != lead.why)
    )
    lines = [first]
    if others:
        lines.append("Also tried:")
        lines.extend(f"  {line}" for line in others[:MAX_LISTED])
        if len(others) > MAX_LISTED:
            lines.append(f"  ... and {len(others) - MAX_LISTED} more (the error's .reasons)")
    return "\n".join(lines)


def _copy_message(route: _Route, lossy: _Route | None = None) -> str:
    """Why copy=False is refused: what ``route``, the cheapest that copies, copies; with
    ``lossy``, the best route that does not copy, what that one would lose."""
    groups: dict[tuple[str, str], list[Copy]] = {}  # columns copied at one step, for one reason
    for s in route.steps:
        for c in s.copies:
            groups.setdefault((f"{s.edge.source} -> {s.edge.target}", c.reason), []).append(c)
    parts = []
    for (step, reason), copies in groups.items():
        sizes = [c.nbytes for c in copies]
        nbytes = -1 if any(n < 0 for n in sizes) else sum(sizes)
        verb = "is" if len(copies) == 1 else "are"
        parts.append(
            f"{_columns(copies)} {verb} copied ({format_bytes(nbytes)}) at step {step}: {reason}"
        )
    listed = "; ".join(parts[:MAX_COPIES_LISTED])
    if len(parts) > MAX_COPIES_LISTED:
        listed += f"; and {len(parts) - MAX_COPIES_LISTED} more (the error's .columns)"
    if any(s.estimate.moves_device for s in route.steps):
        advice = (
            "Pass copy=None to allow the copy, or convert to a library that holds the data "
            "where it is (device= names the place)"
        )
    else:
        advice = "Pass copy=None to allow the copy, or change the data (e.g. fill nulls, rechunk)"
    if lossy is not None:
        losses = [loss.message() for s in lossy.steps for loss in s.losses]
        return (
            "copy=False, but every route that keeps the data copies: "
            + listed
            + "; the routes that do not copy lose information ("
            + "; ".join(losses[:MAX_COPIES_LISTED])
            + ("; ..." if len(losses) > MAX_COPIES_LISTED else "")
            + "). "
            + advice
        )
    return "copy=False, but every route copies: " + listed + ". " + advice


def _columns(copies: Sequence[Copy]) -> str:
    """``column 'a'``, or ``columns 'a', 'b', 'c' and 2 more``."""
    if len(copies) == 1:
        return label(copies[0].column)
    names = [repr(c.column) for c in copies]
    more = f" and {len(names) - 3} more" if len(names) > 3 else ""
    return f"columns {', '.join(names[:3])}{more}"


def _type_name(obj: object) -> str:
    cls = type(obj)
    return f"{cls.__module__.split('.')[0]}.{cls.__qualname__}"


def _target_name(req: Request) -> str:
    if req.target_type is not None:
        return f"{req.target_type.__module__.split('.')[0]}.{req.target_type.__qualname__}"
    return req.target + (f" ({req.kind.value})" if req.kind else "")


def _check_kind(
    names: tuple[str, str], info: DataInfo, steps: Sequence[Step], req: Request
) -> None:
    """A column asked for (``to=pa.Array``, ...) of a route that ends in a table of several
    columns is refused, saying to select one."""
    last = steps[-1].before if steps else info
    table_like = last.kind in (Kind.TABLE, Kind.STREAM)
    if req.kind == Kind.COLUMN and table_like and len(last.data_columns) != 1:
        raise NoRouteError(
            f"cannot convert {names[0]} to {names[1]}: it holds one column, and the data "
            f"is a table of {len(last.data_columns)} columns; select one column first"
        )
