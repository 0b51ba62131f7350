"""Hook specifications for interchange_hub plugins.

A plugin is a module or object with functions marked ``@hookimpl``; built-in adapters
are plugins of exactly this kind (see ``interchange_hub.adapters``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from collections.abc import Callable

    from interchange_hub.adapter import Adapter, Edge

PROJECT = "interchange_hub"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def register_adapters(register: Callable[[Adapter], None]) -> None:
    """Register library adapters by calling ``register(adapter)`` once per library.

    :param register: validates and stores one :class:`~interchange_hub.adapter.Adapter`;
        an adapter whose ``name`` is already taken is refused with a warning.
    """


@hookspec
def register_edges(register: Callable[[Edge], None]) -> None:
    """Register conversion edges that belong to no single library adapter.

    The built-in Arrow <-> DLPack bridge uses it; so can fast paths between two libraries.

    :param register: stores one :class:`~interchange_hub.adapter.Edge`.
    """
