"""The registry: adapters and edges collected from plugins, and object ownership."""

from __future__ import annotations

import difflib
import sys
import threading
from typing import TYPE_CHECKING

from interchange_hub.adapter import PROTOCOL_NODES, Adapter, AdapterRecord, Edge
from interchange_hub.dependencies import installed
from interchange_hub.errors import UnknownTargetError

if TYPE_CHECKING:
    from collections.abc import Iterable

    from interchange_hub.model import Kind

# Short names people type for the built-in libraries.
ALIASES = {
    "pa": "pyarrow",
    "arrow": "pyarrow",
    "na": "nanoarrow",
    "pl": "polars",
    "pd": "pandas",
    "np": "numpy",
    "pt": "torch",
}


class Registry:
    """Adapters and edges by name, and a cache of which adapter owns which type."""

    def __init__(self) -> None:
        self._records: dict[str, AdapterRecord] = {}
        self._extra_edges: list[tuple[Edge, str]] = []
        self._owner_cache: dict[type, Adapter | None] = {}
        self._lock = threading.Lock()

    # -- registration -------------------------------------------------------------------
    def add_adapter(self, adapter: Adapter, plugin: str = "") -> str:
        """Store ``adapter``; return why it was refused ("" when stored)."""
        if not isinstance(adapter, Adapter) or not adapter.name:
            return f"it registered {adapter!r}, which is not a named interchange_hub.Adapter"
        with self._lock:
            existing = self._records.get(adapter.name)
            if existing is not None or adapter.name in PROTOCOL_NODES or adapter.name in ALIASES:
                owner = f"plugin {existing.plugin!r}" if existing else "the hub"
                return (
                    f"it registered an adapter named {adapter.name!r}, a name {owner} already "
                    "uses; rename the adapter"
                )
            self._records[adapter.name] = AdapterRecord(adapter, plugin, tuple(adapter.edges()))
            self._owner_cache.clear()
        return ""

    def add_edge(self, edge: Edge, plugin: str = "") -> None:
        with self._lock:
            self._extra_edges.append((edge, plugin))

    # -- queries --------------------------------------------------------------------------
    def adapters(self) -> list[Adapter]:
        return [r.adapter for r in self._records.values()]

    def records(self) -> list[AdapterRecord]:
        return list(self._records.values())

    def get(self, name: str) -> Adapter | None:
        record = self._records.get(ALIASES.get(name, name))
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
        candidates: Iterable[str] = list(self._records) + list(ALIASES)
        close = difflib.get_close_matches(name.lower(), list(candidates), n=3, cutoff=0.5)
        return list(dict.fromkeys(ALIASES.get(c, c) for c in close))
