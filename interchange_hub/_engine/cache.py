"""The route cache of one hub: both kinds of remembered routes, one lock, one eviction rule.

- **By call** (the fast path): ``(type, to, copy, device, strict)`` -> the source's adapter,
  its route key function for that type (:meth:`Adapter.route_key_of`, asked once) and,
  per route key, the compiled steps to rerun. A repeated conversion then costs a route
  key and the steps themselves: nothing is described or planned.
- **By data signature**: ``(type, DataInfo.signature, request)`` -> the edges of the route
  the router found, re-estimated for new data of the same signature (cheap) instead of
  searched again. Where an estimate of the search said its choice depends on the data's
  size (``Estimate.by_size``), the signature's routes are kept per size class instead
  (the power of two of the data's bytes), each found by a search of its own.

Reads take no lock (a dict lookup is atomic; the planner reads ``calls`` itself, inline,
on the hot path); writes take the one lock, and tables are only ever cleared, never
replaced. The one eviction
rule: a table that is full starts over. Nothing here names a library.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Final

from interchange_hub._core.records import field, record

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable

    from interchange_hub._engine.plans import Compiled, Request
    from interchange_hub.adapter import Adapter, Edge

#: (type of the object, to=, copy=, device=, strict=, dtype=) as passed to convert.
CallKey = tuple[type, object, object, object, object, object]
#: (type of the object, DataInfo.signature, Request).
RouteKey = tuple[type, tuple[object, ...], "Request"]
#: A RouteKey and the size class of the data (see RouteCache.route).
SizedKey = tuple[type, tuple[object, ...], "Request", int]

MAX_CALLS = 1024  # distinct calls kept by the fast path
MAX_KEYS_PER_CALL = 64  # route keys kept for one call (one per distinct layout, say)
MAX_ROUTES = 4096  # routes kept by data signature


@record(frozen=False)
class FastRoutes:
    """What the fast path keeps for one call: the source's adapter, the route key function
    it gave for the call's type (:meth:`Adapter.route_key_of`) and the routes per key."""

    source: Adapter
    key: Callable[[Any], Hashable | None]
    #: The call's own copy= and strict= objects (None, True or False). A call is kept by
    #: a dict key, and ``0 == False`` and ``1 == True`` there, so the fast path checks
    #: these by identity: ``copy=0`` is refused, cached or not.
    copy: object = None
    strict: object = False
    runs: dict[Hashable, Compiled] = field(default_factory=dict)


class RouteCache:
    """Routes remembered by call and by data signature (see the module docstring)."""

    def __init__(self) -> None:
        # Read directly by the hot paths of ih.convert and Hub.convert: cleared, never
        # replaced (Final).
        self.calls: Final[dict[CallKey, FastRoutes]] = {}
        self._routes: Final[dict[RouteKey | SizedKey, tuple[Edge, ...]]] = {}
        self._by_size: Final[dict[RouteKey, None]] = {}  # signatures kept per size class
        self._lock = threading.Lock()
        # How many times the cache was cleared: a route planned while adapters were added
        # (in another thread) is not kept past the clear that follows their addition.
        self.generation = 0

    # -- by call ---------------------------------------------------------------------------
    def remember_runs(
        self,
        call: CallKey,
        source: Adapter,
        obj: object,
        runs: Compiled,
        generation: int | None = None,
    ) -> None:
        """Keep ``runs`` (the compiled steps) for objects with ``obj``'s route key (none:
        nothing is kept), unless the cache was cleared since ``generation``. The key is
        computed by the function the fast path will call (:meth:`Adapter.route_key_of`
        for ``call``'s type, asked when the call is first kept)."""
        fast = self.calls.get(call)
        keyer = fast.key if fast is not None and fast.source is source else None
        if fast is not None and (fast.copy is not call[2] or fast.strict is not call[4]):
            return  # (not a valid call: the planner refuses such options before this)
        try:
            if keyer is None:
                keyer = source.route_key_of(call[0])
            key = keyer(obj)
        except Exception:  # noqa: BLE001 - a plugin's broken key: plan every call instead
            return
        if key is None:
            return
        with self._lock:
            if generation is not None and generation != self.generation:
                return
            fast = self.calls.get(call)
            if fast is None or fast.source is not source:
                _make_room(self.calls, MAX_CALLS)
                fast = self.calls[call] = FastRoutes(source, keyer, call[2], call[4])
            _make_room(fast.runs, MAX_KEYS_PER_CALL)
            fast.runs[key] = runs

    # -- by data signature -----------------------------------------------------------------
    def route(self, key: RouteKey, size_class: int) -> tuple[tuple[Edge, ...] | None, bool]:
        """The edges kept for ``key`` (and ``size_class``, where its routes are kept per
        size class; None if none are), and whether they are kept per size class."""
        if key in self._by_size:
            return self._routes.get((*key, size_class)), True
        return self._routes.get(key), False

    def remember_route(
        self,
        key: RouteKey,
        edges: tuple[Edge, ...],
        generation: int | None = None,
        size_class: int | None = None,
    ) -> None:
        """Keep ``edges`` for ``key`` (for ``key`` and ``size_class`` alone, when given:
        the signature's routes are then kept per size class), unless the cache was
        cleared since ``generation`` (the route was searched over adapters that have
        changed since)."""
        with self._lock:
            if generation is not None and generation != self.generation:
                return
            _make_room(self._routes, MAX_ROUTES)
            if size_class is None:
                self._routes[key] = edges
                return
            _make_room(self._by_size, MAX_ROUTES)
            self._by_size[key] = None
            self._routes.pop(key, None)  # (one found before a search said size matters)
            self._routes[(*key, size_class)] = edges

    # -- both ------------------------------------------------------------------------------
    def clear(self) -> None:
        """Forget every route (after adapters or edges are registered)."""
        with self._lock:
            self.generation += 1
            self.calls.clear()
            self._routes.clear()
            self._by_size.clear()

    def sizes(self) -> tuple[int, int]:
        """(calls kept by the fast path, routes kept by data signature)."""
        return len(self.calls), len(self._routes)


def _make_room(table: dict[Any, Any], limit: int) -> None:
    """The eviction rule: a full table starts over (called with the lock held)."""
    if len(table) >= limit:
        table.clear()
