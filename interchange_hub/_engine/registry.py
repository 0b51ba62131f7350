"""The registry: adapters and edges collected from plugins, and object ownership."""

from __future__ import annotations

import sys
import threading
from types import ModuleType
from typing import TYPE_CHECKING

from interchange_hub._core.deps import installed
from interchange_hub._core.records import field, record
from interchange_hub.adapter import PROTOCOL_NODES, Adapter, Edge
from interchange_hub.errors import UnknownTargetError

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from interchange_hub._core.info import Kind

# How close a misspelled target must be to a registered name to be suggested (difflib's
# ratio): "polrs" -> "polars" is 0.91, "tf" -> "pt" only 0.5.
SUGGEST_CUTOFF = 0.75


@record
class AdapterRecord:
    """An adapter in a registry, with the plugin that registered it."""

    adapter: Adapter
    plugin: str
    edges: tuple[Edge, ...] = field(default=())


#: Types whose owner is remembered; past this, the table starts over (as the route cache).
MAX_OWNER_TYPES = 1024


class Registry:
    """Adapters and edges by name, and a cache of which adapter owns which type.

    Registration replaces the tables instead of changing them (copy on write), so that a
    lookup running in another thread while plugins are added late (entry points, read on
    first need) iterates a table that does not change under it.

    ``more``: a function the registry calls when a lookup finds nothing, or a listing is
    asked for, while adapters may still be missing (built-in adapters of libraries that
    were not imported yet, entry points not read yet). Each call adds the next of them (or
    raises) and returns whether it did; a lookup looks again after each, a listing calls
    it until nothing is left.
    """

    def __init__(self) -> None:
        self._records: dict[str, AdapterRecord] = {}
        self._aliases: dict[str, str] = {}  # alias -> adapter name (Adapter.aliases)
        self._extra_edges: list[tuple[Edge, str]] = []
        self._owner_cache: dict[type, Adapter | None] = {}
        self._device_kinds: tuple[str, ...] = ()  # what the adapters hold, for messages
        self._lock = threading.Lock()
        self.more: Callable[[], bool] | None = None

    def _load_more(self) -> bool:
        """Add the next adapters still missing; whether there were any to add."""
        more = self.more
        return more is not None and more()

    def _load_all(self) -> None:
        """Add every adapter still missing (for a listing)."""
        while self._load_more():
            pass

    @property
    def complete(self) -> bool:
        """Whether every plugin is in (no entry points left to read)."""
        return self.more is None

    # -- registration -------------------------------------------------------------------
    def add_adapter(self, adapter: object, plugin: str = "") -> str:
        """Store ``adapter``; return why it was refused ("" when stored).

        Names and aliases are taken first come, first served: the built-in plugins
        register first, so their names and aliases win over a third-party plugin's.
        """
        if not isinstance(adapter, Adapter) or not adapter.name:
            return f"it registered {adapter!r}, which is not a named interchange_hub.Adapter"
        aliases = [a.strip().lower() for a in adapter.aliases]  # as to= is read
        try:
            edges = tuple(adapter.edges())
        except Exception as exc:  # noqa: BLE001 - a plugin's bug leaves out its adapter alone
            return f"its adapter's edges() raised {type(exc).__name__}: {exc}"
        wrong = [e for e in edges if not isinstance(e, Edge)]
        if wrong:
            return f"its adapter's edges() returned {wrong[0]!r}, not an interchange_hub.Edge"
        with self._lock:
            for name in (adapter.name, *aliases):
                # A protocol node cannot be an adapter's name (the graph would mix them
                # up), but it can be an alias: to="arrow" means pyarrow.
                node = name == adapter.name and name in PROTOCOL_NODES
                taken = "the hub" if node else self._taken_by(name)
                if taken:
                    what = "an adapter named" if name == adapter.name else "the alias"
                    return (
                        f"it registered {what} {name!r}, a name {taken} already uses; "
                        "rename the adapter or drop the alias"
                    )
            self._records = {**self._records, adapter.name: AdapterRecord(adapter, plugin, edges)}
            self._aliases = {**self._aliases, **dict.fromkeys(aliases, adapter.name)}
            self._device_kinds = tuple(dict.fromkeys([*self._device_kinds, *adapter.devices]))
            self._owner_cache = {}
        return ""

    def _taken_by(self, name: str) -> str:
        """Who already uses ``name`` as an adapter name or alias ("" when it is free)."""
        record = self._records.get(self._aliases.get(name, name))
        return f"plugin {record.plugin!r}" if record else ""

    def add_edge(self, edge: Edge, plugin: str = "") -> None:
        with self._lock:
            self._extra_edges = [*self._extra_edges, (edge, plugin)]

    def order(self, plugins: Sequence[str]) -> None:
        """Put the adapters and edges of ``plugins`` first, in that order (the others
        after them, as they came): built-in adapters registered late keep the places a
        load of every plugin at once gives them (listings, ownership, ties of routes)."""
        rank = {name: i for i, name in enumerate(plugins)}
        last = len(rank)
        with self._lock:
            records = sorted(self._records.items(), key=lambda r: rank.get(r[1].plugin, last))
            self._records = dict(records)
            self._extra_edges = sorted(self._extra_edges, key=lambda e: rank.get(e[1], last))
            kinds = [k for _, r in records for k in r.adapter.devices]
            self._device_kinds = tuple(dict.fromkeys([*kinds, *self._device_kinds]))
            self._owner_cache = {}

    # -- queries --------------------------------------------------------------------------
    def adapters(self, *, load: bool = True) -> list[Adapter]:
        """Every adapter (``load=False``: those registered so far, entry points unread)."""
        if load:
            self._load_all()
        return [r.adapter for r in self._records.values()]

    def records(self) -> list[AdapterRecord]:
        self._load_all()
        return list(self._records.values())

    def get(self, name: str) -> Adapter | None:
        record = self._records.get(self._aliases.get(name, name))
        while record is None and self._load_more():
            record = self._records.get(self._aliases.get(name, name))
        return record.adapter if record else None

    def edges(self, *, load: bool = True) -> list[Edge]:
        """All edges whose required modules are installed (``load=False``: of the
        adapters registered so far)."""
        if load:
            self._load_all()
        found = [e for r in self._records.values() for e in r.edges]
        found += [e for e, _ in self._extra_edges]
        return [e for e in found if all(installed(m) for m in e.requires)]

    def losses_keyed(self, edge: Edge) -> bool:
        """Whether ``edge``'s losses are fixed by route keys: it says so, or it is one of
        the edges of an adapter that says so (:attr:`Adapter.keyed_losses`)."""
        if edge.keyed_losses:
            return True
        record = self._records.get(edge.adapter)
        return record is not None and record.adapter.keyed_losses and edge in record.edges

    def owner(self, obj: object) -> Adapter | None:
        """The adapter that owns ``obj``, looked up once per type."""
        cls = type(obj)
        cache = self._owner_cache  # the table this lookup fills (a registration replaces it)
        try:
            return cache[cls]
        except KeyError:
            pass
        found = self._find_owner(obj)
        if found is None and self._load_more():
            return self.owner(obj)
        if len(cache) >= MAX_OWNER_TYPES:  # short-lived classes must not pile up
            cache.clear()
        cache[cls] = found
        return found

    def _find_owner(self, obj: object) -> Adapter | None:
        found = None
        for entry in self._records.values():
            adapter = entry.adapter
            if sys.modules.get(adapter.module) is None:
                continue
            try:
                if adapter.owns(obj):
                    found = adapter
                    break
            except Exception:  # noqa: BLE001, S112 - a broken adapter must not break ownership
                continue
        return found

    def clear(self) -> None:
        """Forget every adapter and edge (a plugin load that was interrupted)."""
        with self._lock:
            self._records, self._aliases, self._extra_edges = {}, {}, []
            self._owner_cache = {}
            self._device_kinds = ()

    def snapshot(self) -> tuple[object, ...]:
        """The tables as they are, for :meth:`restore` (a late load that was interrupted)."""
        return (self._records, self._aliases, self._extra_edges, self._device_kinds)

    def restore(self, state: tuple[object, ...]) -> None:
        with self._lock:
            self._records, self._aliases, self._extra_edges, self._device_kinds = state  # type: ignore[assignment]
            self._owner_cache = {}

    def supported_types(self) -> list[str]:
        self._load_all()
        return [t for r in self._records.values() for t in r.adapter.types]

    def resolve_target(self, to: object) -> tuple[Adapter, Kind | None, type | None]:
        """Turn ``to=`` (a name, a type or a library's module) into (adapter, requested
        kind, requested type)."""
        if isinstance(to, str):
            adapter = self.get(to.strip().lower())
            if adapter is not None:
                return adapter, None, None
            raise UnknownTargetError.for_name(to, self.names(), self._suggest(to))
        if isinstance(to, type):
            found = self._type_target(to)
            while found is None and self._load_more():
                found = self._type_target(to)
            if found is not None:
                return found
            owner = self._library_of(to.__module__)
            raise UnknownTargetError.for_type(
                to,
                self.names(),
                self.supported_types(),
                owner.name if owner else "",
                tuple(owner.types) if owner else (),
            )
        if isinstance(to, ModuleType):
            self._load_all()
            adapter = self._module_adapter(to.__name__)
            if adapter is not None:
                return adapter, None, None
            library = self._library_of(to.__name__)
            near = [library.name] if library is not None else []
            raise UnknownTargetError.for_module(to.__name__, self.names(), near)
        owner = self.owner(to)
        raise UnknownTargetError.for_object(to, self.names(), owner.name if owner else "")

    def _type_target(self, to: type) -> tuple[Adapter, Kind | None, type | None] | None:
        for adapter in self.adapters(load=False):
            if sys.modules.get(adapter.module) is None:
                continue
            kinds = adapter.type_kinds()
            if to in kinds:
                return adapter, kinds[to], to
        return None

    def names(self) -> list[str]:
        """The names ``to=`` takes (source-only adapters left out)."""
        self._load_all()
        return sorted(n for n, r in self._records.items() if not r.adapter.source_only)

    def _module_adapter(self, module: str) -> Adapter | None:
        """The adapter ``to=<module>`` stands for: the module's name is the adapter's name,
        one of its aliases, or the module it recognises objects by (``Adapter.module``)."""
        adapter = self.get(module.lower())
        if adapter is not None:
            return adapter
        return next((a for a in self.adapters() if a.module == module), None)

    def _library_of(self, module: str) -> Adapter | None:
        """The adapter whose library ``module`` belongs to (its top-level package)."""
        top = module.split(".")[0]
        for adapter in self.adapters():
            if adapter.module and adapter.module.split(".")[0] == top:
                return adapter
        return None

    def _suggest(self, name: str) -> list[str]:
        """Close spellings of registered names and aliases (a high cutoff: ``"polrs"``
        finds ``"polars"``, two letters never find a five-letter name), or the adapter of
        a dotted name's first part (``"pl.DataFrame"`` finds ``"polars"``)."""
        key = name.strip().lower()
        head = self.get(key.split(".")[0]) if "." in key else None
        if head is not None:
            return [head.name]
        import difflib  # (on a misspelled name only: 0.7 ms of the first conversion)

        candidates = [*self._records, *self._aliases]
        close = difflib.get_close_matches(key, candidates, n=3, cutoff=SUGGEST_CUTOFF)
        found = dict.fromkeys(self._aliases.get(c, c) for c in close)
        return [n for n in found if n != key]

    @property
    def device_kinds(self) -> tuple[str, ...]:
        """The device kinds the registered adapters hold ("cpu", "cuda", ...)."""
        self._load_all()
        return self._device_kinds

    def holders(self, kind: str) -> list[str]:
        """The adapters whose objects can live on devices of ``kind`` ("cuda", ...)."""
        self._load_all()
        return [r.adapter.name for r in self._records.values() if kind in r.adapter.devices]
