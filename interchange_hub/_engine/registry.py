"""The registry: adapters and edges collected from plugins, and object ownership."""

from __future__ import annotations

import difflib
import sys
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from interchange_hub._core.deps import installed
from interchange_hub.adapter import PROTOCOL_NODES, Adapter, Edge
from interchange_hub.errors import UnknownTargetError

if TYPE_CHECKING:
    from interchange_hub._core.info import Kind


@dataclass(frozen=True, slots=True)
class AdapterRecord:
    """An adapter in a registry, with the plugin that registered it."""

    adapter: Adapter
    plugin: str
    edges: tuple[Edge, ...] = field(default=())


class Registry:
    """Adapters and edges by name, and a cache of which adapter owns which type."""

    def __init__(self) -> None:
        self._records: dict[str, AdapterRecord] = {}
        self._aliases: dict[str, str] = {}  # alias -> adapter name (Adapter.aliases)
        self._extra_edges: list[tuple[Edge, str]] = []
        self._owner_cache: dict[type, Adapter | None] = {}
        self._lock = threading.Lock()

    # -- registration -------------------------------------------------------------------
    def add_adapter(self, adapter: object, plugin: str = "") -> str:
        """Store ``adapter``; return why it was refused ("" when stored).

        Names and aliases are taken first come, first served: the built-in plugins
        register first, so their names and aliases win over a third-party plugin's.
        """
        if not isinstance(adapter, Adapter) or not adapter.name:
            return f"it registered {adapter!r}, which is not a named interchange_hub.Adapter"
        aliases = [a.strip().lower() for a in adapter.aliases]  # as to= is read
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
            self._records[adapter.name] = AdapterRecord(adapter, plugin, tuple(adapter.edges()))
            self._aliases.update(dict.fromkeys(aliases, adapter.name))
            self._owner_cache.clear()
        return ""

    def _taken_by(self, name: str) -> str:
        """Who already uses ``name`` as an adapter name or alias ("" when it is free)."""
        record = self._records.get(self._aliases.get(name, name))
        return f"plugin {record.plugin!r}" if record else ""

    def add_edge(self, edge: Edge, plugin: str = "") -> None:
        with self._lock:
            self._extra_edges.append((edge, plugin))

    # -- queries --------------------------------------------------------------------------
    def adapters(self) -> list[Adapter]:
        return [r.adapter for r in self._records.values()]

    def records(self) -> list[AdapterRecord]:
        return list(self._records.values())

    def get(self, name: str) -> Adapter | None:
        record = self._records.get(self._aliases.get(name, name))
        return record.adapter if record else None

    def edges(self) -> list[Edge]:
        """All edges whose required modules are installed."""
        found = [e for r in self._records.values() for e in r.edges]
        found += [e for e, _ in self._extra_edges]
        return [e for e in found if all(installed(m) for m in e.requires)]

    def owner(self, obj: object) -> Adapter | None:
        """The adapter that owns ``obj``, looked up once per type."""
        cls = type(obj)
        try:
            return self._owner_cache[cls]
        except KeyError:
            pass
        found = None
        for record in self._records.values():
            adapter = record.adapter
            if sys.modules.get(adapter.module) is None:
                continue
            try:
                if adapter.owns(obj):
                    found = adapter
                    break
            except Exception:  # noqa: BLE001, S112 - a broken adapter must not break ownership
                continue
        self._owner_cache[cls] = found
        return found

    def supported_types(self) -> list[str]:
        return [t for r in self._records.values() for t in r.adapter.types]

    def resolve_target(self, to: object) -> tuple[Adapter, Kind | None, type | None]:
        """Turn ``to=`` (a name or a type) into (adapter, requested kind, requested type)."""
        if isinstance(to, str):
            adapter = self.get(to.strip().lower())
            if adapter is not None:
                return adapter, None, None
            raise UnknownTargetError(to, self.names(), self._suggest(to))
        if isinstance(to, type):
            for adapter in self.adapters():
                if sys.modules.get(adapter.module) is None:
                    continue
                kinds = adapter.type_kinds()
                if to in kinds:
                    return adapter, kinds[to], to
            raise UnknownTargetError(
                f"{to.__module__}.{to.__qualname__}", self.names() + self.supported_types(), []
            )
        raise UnknownTargetError(to, self.names(), [])

    def names(self) -> list[str]:
        return sorted(self._records)

    def _suggest(self, name: str) -> list[str]:
        candidates = [*self._records, *self._aliases]
        close = difflib.get_close_matches(name.lower(), candidates, n=3, cutoff=0.5)
        return list(dict.fromkeys(self._aliases.get(c, c) for c in close))

    def holders(self, kind: str) -> list[str]:
        """The adapters whose objects can live on devices of ``kind`` ("cuda", ...)."""
        return [r.adapter.name for r in self._records.values() if kind in r.adapter.devices]
