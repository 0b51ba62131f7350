"""The planner: carries one conversion from an object to a plan and from a plan to a result.

It finds where the object enters the graph (its adapter, or the protocol it speaks),
describes it, turns ``to=``/``copy=``/``device=``/``strict=`` into a :class:`Request`,
asks the router for a plan, and runs it, keeping lossless routes in the route cache for
the next call. Nothing here names a library: aliases, devices and notes are the adapters'.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from interchange_hub import arrowkit
from interchange_hub._bridge.protocol_source import PROTOCOL_SOURCE, entry, read_once
from interchange_hub._core.deps import installed
from interchange_hub._core.device import Device
from interchange_hub._core.dtypes import ARROW_DTYPE, TENSOR_DTYPES, tensor_dtype
from interchange_hub._core.info import Flag, Kind, RouteChanged, loss_warning
from interchange_hub._engine.plans import Request, compile_runs, runs_of
from interchange_hub.adapter import ARROW, Adapter, Options
from interchange_hub.errors import (
    ConversionError,
    CopyRequiredError,
    DeviceError,
    InterchangeError,
    InvalidOptionError,
    LossyConversionWarning,
    MissingDependencyError,
    NoRouteError,
    ProtocolError,
    UnsupportedObjectError,
    WriteThroughWarning,
    library_message,
    type_name,
    warn,
    warn_all,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable

    from interchange_hub._core.info import DataInfo
    from interchange_hub._engine.cache import RouteCache
    from interchange_hub._engine.plans import Compiled, Plan
    from interchange_hub._engine.registry import Registry
    from interchange_hub._engine.router import Router
    from interchange_hub.adapter import Collection


# The to= slot of the call key under which the way of a table to its columns is kept
# (as_dict=True); no target has this name.
_COLUMNS = "<as_dict columns>"


class Planner:
    """Plans and runs conversions over one registry, router and route cache."""

    def __init__(self, registry: Registry, router: Router, cache: RouteCache) -> None:
        self.registry = registry
        self._router = router
        self._cache = cache
        self._calls = cache.calls  # read without a lock on the hot path (see RouteCache)
        self.hub: object = None  # the Hub this planner serves, handed to collections

    # -- the verbs -------------------------------------------------------------------------
    def convert(
        self,
        obj: object,
        to: object,
        copy: bool | None,
        device: str | Device | None,
        strict: bool,
        dtype: object = None,
        was_read: bool = False,
    ) -> Any:
        """Plan ``obj``'s conversion, run it, and keep the run for the next object of the
        same call and route key. The fast path that finds a kept run is not here but in
        the entry points, ``ih.convert`` and :meth:`Hub.convert`, written out in each
        (one Python frame less on every repeated conversion: 0.15-0.25 us); they call
        this where it has none, or its run raised :class:`RouteChanged`."""
        call = (type(obj), to, copy, device, strict, dtype)
        collection = self.collection(obj)
        if collection is not None:  # partition-wise, on the engine's workers
            return collection.convert(self.hub, to, Options(copy, device, strict, dtype))
        generation = self._cache.generation  # (a plan made as adapters came in: not kept)
        plan, request, source = self._plan(obj, to, copy, device, strict, dtype)
        if plan.deferred:  # a stream of unknown schema: read it once, then plan for real
            if was_read:
                raise ConversionError(
                    f"the {type(obj).__name__} was read from a stream, but its schema is "
                    "still unknown; report this as a bug, with the stream's producer"
                )
            return self.convert(read_once(obj), to, copy, device, strict, dtype, was_read=True)
        one_shot = source.is_one_shot(obj)
        # The first call runs the very function the fast path keeps.
        compiled = _compiled(plan, request)
        try:
            result = self._router.execute(obj, plan, request, one_shot, compiled)
        except RouteChanged as exc:  # planned for this very object: the adapter is wrong
            raise ConversionError(
                f"the route planned for this {type(obj).__name__} does not fit it ({exc}); "
                "report this as a bug, with the object's schema"
            ) from exc
        self._check_result(result, plan, request)
        # A lossy route warns on every call: it is kept, with its warnings, only where
        # the route key fixes them (the edges' losses depend on nothing else); a move to
        # a default device is not kept: the default (the current GPU) may change.
        if not (one_shot or (plan.device_moves and device is None)):
            if not plan.losses:
                self._cache.remember_runs(call, source, obj, compiled, generation)
            elif all(self.registry.losses_keyed(s.edge) for s in plan.steps if s.losses):
                warned = _warns_losses(compiled, plan)
                self._cache.remember_runs(call, source, obj, warned, generation)
        return result

    def _check_result(self, result: object, plan: Plan, request: Request) -> None:
        """Refuse a result that is no object of the target library: an edge's run (a
        plugin's) that returns something else would hand it to the user. Checked on the
        first call of a route, which the kept run then repeats."""
        target = self.registry.get(request.target)
        if target is None or not plan.steps:
            return  # (no steps: nothing ran, the object is the one the target took)
        try:
            if target.owns(result) or self.registry.owner(result) is not None:
                # (an adapter may leave a type it shares with another library to that
                # one's owns: a result some adapter owns is taken)
                return
        except Exception:  # noqa: BLE001 - a broken owns() must not break conversions
            return
        edge = plan.steps[-1].edge
        raise ConversionError(
            f"the route to {request.target} gave a {type_name(result)}, which the "
            f"{request.target} adapter does not own: its last step, {edge.protocol!r} of adapter "
            f"{edge.adapter!r}, returned it. Report this to that adapter's authors (the "
            "conformance kit, interchange_hub.testing, finds it too)"
        )

    def kept_route(
        self,
        obj: object,
        to: object,
        copy: bool | None = None,
        device: str | Device | None = None,
        strict: bool = False,
        dtype: object = None,
    ) -> tuple[Callable[[Any], Hashable | None], Callable[[Any], Any]] | None:
        """The two calls a repeated :meth:`convert` of ``obj`` makes on its fast path: the
        source adapter's route key function (:meth:`Adapter.route_key_of`) and the run
        kept for that key; None where ``convert`` would plan (nothing kept yet, or a route
        that is never kept). For profiles of where a conversion's time goes: the rest of
        a call is the dispatch."""
        try:
            fast = self._calls.get((type(obj), to, copy, device, strict, dtype))
        except TypeError:  # an unhashable to= or device=
            return None
        if fast is None or fast.copy is not copy or fast.strict is not strict:
            return None
        key = fast.key
        try:
            run = fast.runs.get(key(obj))
        except Exception:  # noqa: BLE001 - convert plans such an object, as here: None
            return None
        return None if run is None else (key, run)

    def plan(
        self,
        obj: object,
        to: object,
        copy: bool | None,
        device: str | Device | None,
        strict: bool,
        dtype: object = None,
    ) -> Plan:
        collection = self.collection(obj)
        if collection is not None:
            plan: Plan = collection.plan(self.hub, to, Options(copy, device, strict, dtype))
            return plan
        return self._plan(obj, to, copy, device, strict, dtype)[0]

    def convert_planned(
        self,
        obj: object,
        to: object,
        copy: bool | None,
        device: str | Device | None,
        strict: bool,
        dtype: object = None,
    ) -> tuple[Any, Plan]:
        """Convert ``obj`` as :meth:`convert` does, planning it once: the result and the
        plan it ran (for reports of what a worker did; the route cache is left alone)."""
        plan, request, source = self._plan(obj, to, copy, device, strict, dtype)
        if plan.deferred:
            return self.convert_planned(read_once(obj), to, copy, device, strict, dtype)
        compiled = _compiled(plan, request)
        result = self._router.execute(obj, plan, request, source.is_one_shot(obj), compiled)
        return result, plan

    def collection(self, obj: object) -> Collection | None:
        """``obj`` as a partitioned collection (its adapter says), or None: local data."""
        owner = self.registry.owner(obj)
        if owner is None or type(owner).collection is Adapter.collection:
            return None
        try:
            return owner.collection(obj)
        except InterchangeError:
            raise
        except Exception as exc:
            raise ProtocolError(
                f"cannot read the {type(obj).__name__} as a partitioned collection: the "
                f"{owner.name} adapter failed with {type(exc).__name__}: {exc}"
            ) from exc

    # -- as_dict=True: one result per column -----------------------------------------------
    def convert_columns(
        self,
        obj: object,
        to: object,
        copy: bool | None,
        device: str | Device | None,
        strict: bool,
        dtype: object = None,
    ) -> Any:
        """``{name: result}``: the table taken to Arrow (zero-copy where it can be), then
        each column converted on its own, in its own dtype unless ``dtype=`` says."""
        collection = self.collection(obj)
        if collection is not None:  # each partition gives a dict, on its worker
            options = Options(copy, device, strict, dtype, as_dict=True)
            return collection.convert(self.hub, to, options)
        columns = self._cached_columns(obj, copy)
        if columns is None:
            columns = self._split(obj, copy, strict, remember=True)[1]
        # Every column planned before any runs (a refusal comes before another column's
        # warning), each under its own name (the Arrow column has none): messages name it,
        # and a target that names its result (a polars or pandas Series) takes it.
        planned = [
            (name, col, *self._plan(col, to, copy, device, strict, dtype, name))
            for name, col in columns
        ]
        results = {}
        outer = type_name(obj)
        for name, col, plan, request, source in planned:
            if plan.deferred:
                results[name] = self.convert(col, to, copy, device, strict, dtype)
                continue
            if plan.write_through:  # (its warning names the column and what it came from)
                plan = replace(plan, source=f"column {name!r} of the {outer}")
            compiled = _compiled(plan, request)
            one_shot = source.is_one_shot(col)
            try:
                results[name] = self._router.execute(col, plan, request, one_shot, compiled)
            except RouteChanged as exc:  # planned for this very column: the adapter is wrong
                raise ConversionError(
                    f"the route planned for column {name!r} does not fit it ({exc}); "
                    "report this as a bug, with the object's schema"
                ) from exc
        return results

    def _cached_columns(self, obj: object, copy: bool | None) -> list[tuple[str, Any]] | None:
        """The columns of a table whose way to Arrow was kept for its route key, or None."""
        try:
            fast = self._calls.get((type(obj), _COLUMNS, copy, None, False, None))
        except TypeError:
            return None
        if fast is None or fast.copy is not copy:
            return None
        try:
            run = fast.runs.get(fast.key(obj))
        except Exception:  # noqa: BLE001 - the slow path says what failed
            return None
        if run is None:
            return None
        try:
            columns: list[tuple[str, Any]] = run(obj)
        except RouteChanged:
            return None
        return columns

    def plan_columns(
        self,
        obj: object,
        to: object,
        copy: bool | None,
        device: str | Device | None,
        strict: bool,
        dtype: object = None,
    ) -> Plan:
        """The plan of :meth:`convert_columns`: the way to Arrow, then one plan per column."""
        collection = self.collection(obj)
        if collection is not None:
            options = Options(copy, device, strict, dtype, as_dict=True)
            plan: Plan = collection.plan(self.hub, to, options)
            return plan
        if self.is_one_shot(obj):
            raise InvalidOptionError(
                f"planning as_dict=True would read the one-shot {type(obj).__name__}; read "
                "it into a table first and plan the table"
            )
        head, columns = self._split(obj, copy, strict)
        plans = tuple(
            (name, self._plan(col, to, copy, device, strict, dtype, name)[0])
            for name, col in columns
        )
        target = plans[0][1].target if plans else str(to)
        return replace(head, target=f"dict[str, {target}]", columns=plans)

    def _split(
        self, obj: object, copy: bool | None, strict: bool, remember: bool = False
    ) -> tuple[Plan, list[tuple[str, Any]]]:
        """The plan to Arrow and the named columns (``strict``: a loss on the way there is
        refused); with ``remember``, the way is kept for objects of ``obj``'s route key
        (when it is lossless and ``obj`` can be read twice: then ``strict`` changes
        nothing)."""
        generation = self._cache.generation
        start, source = self.source(obj)
        info = self.describe(source, obj)
        if info.kind == Kind.TENSOR:
            raise InvalidOptionError(
                f"as_dict=True gives one result per column of a table, and this "
                f"{type(obj).__name__} is a tensor; convert it without as_dict"
            )
        request = Request(ARROW, copy=False if copy is False else None, strict=strict)
        plan = self._router.plan(obj, start, source, info, request)
        kind = Kind.COLUMN if info.kind == Kind.COLUMN else Kind.TABLE
        index = {c.name for c in info.columns if Flag.INDEX in c.flags}

        # A column's own name, which its Arrow column (a ChunkedArray) does not carry
        own = info.columns[0].name if kind == Kind.COLUMN and len(info.columns) == 1 else None

        def named_columns(value: Any) -> list[tuple[str, Any]]:
            named = arrowkit.named_columns(value, kind)
            if own is not None:
                return [(own, c) for _, c in named]
            return [(n, c) for n, c in named if n not in index]  # as DataFrame.to_numpy() does

        value = self.run(obj, plan)
        try:
            named = named_columns(value)
        except InterchangeError:
            raise
        except Exception as exc:  # (a stream whose producer failed part-way)
            raise ConversionError(
                f"reading the {type_name(obj)} into columns failed ({type(exc).__name__}: "
                f"{library_message(exc)}); the source is consumed: make a new one to read it "
                "again"
            ) from exc
        names = [n for n, _ in named]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise InvalidOptionError(
                f"as_dict=True needs unique column names, and {', '.join(map(repr, repeated))} "
                "repeat; rename the columns first"
            )
        if remember and not (plan.deferred or plan.losses or source.is_one_shot(obj)):
            compiled = compile_runs(runs_of(plan, request))

            def columns(o: object) -> list[tuple[str, Any]]:
                return named_columns(compiled(o))

            self._cache.remember_runs(
                (type(obj), _COLUMNS, copy, None, False, None), source, obj, columns, generation
            )
        return plan, named

    def plan_to_node(
        self, obj: object, node: str, copy: bool | None = None, strict: bool = False
    ) -> Plan:
        """Plan the way to a protocol node (``"arrow"`` or ``"dlpack"``), for exports and
        batches: ``copy=False`` refuses a way that copies, ``strict`` one that loses."""
        start, source = self.source(obj)
        request = Request(node, copy=False if copy is False else None, strict=strict)
        return self._router.plan(obj, start, source, self.describe(source, obj), request)

    def run(self, obj: object, plan: Plan) -> Any:
        """Run a plan made by :meth:`plan` or :meth:`plan_to_node` for ``obj``."""
        request = plan.request or Request(plan.target)
        if plan.deferred:  # read the stream once, then plan for the data as read
            data = read_once(obj)
            start, owner = self.source(data)
            plan = self._router.plan(data, start, owner, self.describe(owner, data), request)
            return self._router.execute(data, plan, request, one_shot=False)
        return self._router.execute(obj, plan, request, self.is_one_shot(obj))

    # -- the steps -------------------------------------------------------------------------
    def source(self, obj: object) -> tuple[str, Adapter]:
        """Where ``obj`` enters the graph: its node and the adapter that describes it."""
        owner = self.registry.owner(obj)
        if owner is not None:
            return owner.name, owner
        node = entry(obj)
        if node is None:
            raise UnsupportedObjectError(obj, self.registry.supported_types())
        return node, PROTOCOL_SOURCE

    def describe(self, source: Adapter, obj: object) -> DataInfo:
        try:
            return source.describe(obj)
        except InterchangeError:
            raise
        except Exception as exc:
            kind = "the adapter" if source is not PROTOCOL_SOURCE else "its protocol export"
            raise ProtocolError(
                f"cannot describe the {type(obj).__name__}: {kind} failed with "
                f"{type(exc).__name__}: {exc}. If the object is valid, report this as a bug"
            ) from exc

    def is_one_shot(self, obj: object) -> bool:
        """Whether converting ``obj`` consumes it (a reader-like stream)."""
        return self.source(obj)[1].is_one_shot(obj)

    def _plan(
        self,
        obj: object,
        to: object,
        copy: bool | None,
        device: str | Device | None,
        strict: bool,
        dtype: object = None,
        name: str | None = None,
    ) -> tuple[Plan, Request, Adapter]:
        """The plan, its request and the source's adapter; ``name``: a column's name, which
        its object does not carry (as_dict's Arrow columns)."""
        start, source = self.source(obj)
        if device is not None:
            # A misspelled device is reported before the data is read.
            Device.parse(device, self.registry.device_kinds)
        info = self.describe(source, obj)
        if name is not None and info.kind == Kind.COLUMN and len(info.columns) == 1:
            info = info.but(columns=(replace(info.columns[0], name=name),))
        request = self._request(to, copy, device, strict, info, dtype)
        try:
            plan = self._router.plan(obj, start, source, info, request)
        except NoRouteError as exc:
            if request.arrow and not isinstance(exc, CopyRequiredError):
                # (a route without dtype="arrow" raises its own error where there is none)
                self._router.plan(obj, start, source, info, replace(request, arrow=False))
                raise NoRouteError(
                    f"no route gives {request.target} Arrow-backed columns (dtype='arrow'); "
                    "leave dtype out for its default columns"
                ) from None
            if request.dtype is None:
                raise
            # No route gives that dtype: say so plainly when the result is no tensor at all.
            plain = self._router.plan(obj, start, source, info, replace(request, dtype=None))
            if plain.result.kind != Kind.TENSOR:
                raise InvalidOptionError(
                    f"dtype= applies to tensor results, and {plain.target} gives a "
                    f"{plain.result.kind.value}; cast the columns in their library instead"
                ) from None
            raise
        return plan, request, source

    def _request(
        self,
        to: object,
        copy: bool | None,
        device: str | Device | None,
        strict: bool,
        info: DataInfo,
        dtype: object = None,
    ) -> Request:
        adapter, kind, cls, wanted, arrow = self.check_options(to, copy, strict, dtype)
        place = self._destination(adapter, device, info)
        # (dtype="arrow" keeps the types a step makes: no text type asked)
        strings = "" if arrow else adapter.arrow_string_type
        binaries = "" if arrow else adapter.arrow_binary_type
        return Request(
            adapter.name, kind, cls, copy, place, strict, wanted, arrow, strings, binaries
        )

    def check_options(
        self, to: object, copy: bool | None, strict: bool, dtype: object = None
    ) -> tuple[Adapter, Kind | None, type | None, str | None, bool]:
        """The target's adapter, kind and class, the dtype asked for and whether it is
        ``"arrow"``: what a conversion's options say before any data is read, each checked
        (a misspelled target, copy or dtype, a target that is not installed)."""
        if not (copy is None or copy is True or copy is False):
            raise InvalidOptionError(
                f"copy must be None (copy where needed), True or False, not {copy!r}"
            )
        if not (strict is True or strict is False):
            raise InvalidOptionError(f"strict must be True or False, not {strict!r}")
        wanted = None
        arrow = type(dtype) is str and dtype == ARROW_DTYPE
        if dtype is not None and not arrow:
            wanted = tensor_dtype(dtype)
            if wanted is None:
                raise InvalidOptionError(
                    f"dtype={dtype!r} is not a tensor dtype; pass one of "
                    f"{', '.join(TENSOR_DTYPES)} (or a dtype object of that name), or "
                    f"{ARROW_DTYPE!r} for Arrow-backed columns"
                )
        adapter, kind, cls = self.registry.resolve_target(to)
        if arrow and not adapter.arrow_backed:
            takers = sorted(a.name for a in self.registry.adapters(load=False) if a.arrow_backed)
            raise InvalidOptionError(
                f"dtype={ARROW_DTYPE!r} asks for Arrow-backed columns in a library that has "
                f"other backends too ({', '.join(takers) or 'none installed'}); "
                f"{adapter.name} has no such choice: leave dtype out"
            )
        if adapter.source_only:
            raise NoRouteError(
                f"{adapter.name} is a source, not a target: the hub converts its collections "
                f"partition-wise to other libraries; {adapter.source_only}"
            )
        if not installed(adapter.module):
            raise MissingDependencyError(
                adapter.module,
                adapter.extra or adapter.module,
                f"to convert to {adapter.name}",
                adapter.requirement,
            )
        return adapter, kind, cls, wanted, arrow

    def _destination(self, adapter: Adapter, device: str | Device | None, info: DataInfo) -> Device:
        """Where the result must live: the asked device, else where the data is when the
        target can hold it there, else the target's default device (an explicit move)."""
        if device is None:
            return info.device if info.device.kind in adapter.devices else adapter.default_device()
        place = Device.parse(device, self.registry.device_kinds)
        if place.kind not in adapter.devices:
            holders = [n for n in self.registry.holders(place.kind) if n != adapter.name]
            hint = (
                f" ({' or '.join(holders)} for {place.kind})"
                if holders and not place.is_cpu
                else ""
            )
            raise DeviceError(
                f"{adapter.name} keeps data on {' or '.join(adapter.devices)}, not on {place}; "
                f"pass device=None (or one of those), or convert to a library that holds "
                f"{place.kind} memory{hint}"
            )
        return place


def _compiled(plan: Plan, request: Request) -> Compiled:
    """The plan's steps as one function, warning on each call where the result writes
    through to read-only source memory."""
    compiled = compile_runs(runs_of(plan, request))
    if not plan.write_through:
        return compiled
    # (a lossy route is kept inside _warns_losses' run: its caller one frame further down)
    return _warns_write_through(compiled, plan, 3 if plan.losses else 2)


def _warns_losses(compiled: Compiled, plan: Plan) -> Compiled:
    """``compiled``, warning of the plan's losses on each call that gives a result (as a
    planned call does; strict=True is refused when planned, so never kept). Not before
    running: a step that raises RouteChanged has the object planned, and warned, anew."""
    messages = tuple(loss_warning(plan.target, x) for x in plan.losses)  # written once

    def run(obj: Any) -> Any:
        result = compiled(obj)
        # (this run and its caller on the fast path, ih.convert or Hub.convert, are the
        # hub's frames: see _warns_write_through)
        warn_all(messages, LossyConversionWarning, inside=2)
        return result

    return _wrapping(run, compiled)


def _warns_write_through(compiled: Compiled, plan: Plan, depth: int = 2) -> Compiled:
    """``compiled``, warning on each call that its result writes through to the source;
    ``depth``: how many frames down its caller's site usually is (2: this run, called on
    the fast path by ih.convert or Hub.convert; planned, the first call is deeper, and
    the hub's frames are passed over up to the user's: never fewer)."""
    message = (
        f"the {plan.target} result shares memory with the {plan.source}, which treats it as "
        "read-only, and the target ignores read-only flags: writing to the result changes "
        "the source. Pass copy=True for independent memory (shown once per call site)"
    )

    # The call sites warned from: once per site, as the warnings registry would, without
    # its cost on every call (about 1.5 us on the fast path). A site is its code object and
    # instruction, kept by the code's id (hashing a code object hashes its bytecode and
    # constants: 0.2 us for a lambda, 0.8 for a script's module code, on every call), with
    # the code itself, held so that the id stays its own while kept.
    seen: dict[tuple[int, int], object] = {}
    own: dict[int, tuple[object, bool]] = {}  # code id -> (code, whether the hub's own)
    getframe = sys._getframe

    def run(obj: Any) -> Any:
        result = compiled(obj)
        # The caller is looked for where it usually is, below this run and ih.convert or
        # Hub.convert (getframe(depth): 0.4 us less than steps of f_back, which make a
        # frame object of each); a site warned from is found there in one lookup (only
        # the user's sites are kept). Anything else is walked.
        try:
            frame = getframe(depth)
        except ValueError:  # (a shallower stack: a caller of the planner's own)
            frame = getframe(1)
        if (id(frame.f_code), frame.f_lasti) not in seen:  # (f_lineno decodes: slower)
            _warn_site(frame, seen, own, message)
        return result

    return _wrapping(run, compiled)


def _wrapping(run: Compiled, steps: Compiled) -> Compiled:
    """``run``, a warning's layer around a route's ``steps``, marked as wrapping them
    (``__wrapped__``, as ``functools.wraps`` marks a wrapper): the benchmark times the
    steps alone, to tell a warning's cost from the route's."""
    run.__wrapped__ = steps  # type: ignore[attr-defined]
    return run


def _warn_site(
    frame: Any,
    seen: dict[tuple[int, int], object],
    own: dict[int, tuple[object, bool]],
    message: str,
) -> None:
    """Warn of writing through, once for the call site below ``frame``'s hub frames (a
    module of interchange_hub, or of a plugin, is passed over) unless it was warned from."""
    while True:
        code = frame.f_code
        entry = own.get(id(code))
        if entry is None:
            if len(own) >= 4096:
                own.clear()
            name = frame.f_globals.get("__name__", "")
            hub = isinstance(name, str) and name.startswith("interchange_hub")
            entry = own[id(code)] = (code, hub)
        if not entry[1] or frame.f_back is None:
            break
        frame = frame.f_back
    site = (id(code), frame.f_lasti)
    if site not in seen:
        if len(seen) >= 4096:
            seen.clear()
        seen[site] = code
        warn(message, WriteThroughWarning)
