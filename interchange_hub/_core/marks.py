"""The built-in plugins' hook marker, without pluggy: the built-in adapters load without
importing pluggy (4-5 ms of a fresh process's first conversion) unless a plugin manager
is needed (entry points, ``Hub.plugin_manager``, plugins given to a hub).

``hookimpl`` records its options under an attribute of its own; the hub's plugin manager
turns them into pluggy's own mark (``interchange_hub.hookspecs.hookimpl``) when it
registers the module, so a built-in module is an ordinary pluggy plugin there. Plugin
authors use ``interchange_hub.hookimpl``, pluggy's marker.
"""

from __future__ import annotations

from typing import Any, TypeVar

_F = TypeVar("_F")

# What the marker sets: the keyword arguments it was given (pluggy's names).
MARK = "interchange_hub_builtin_impl"

# The hooks of interchange_hub.hookspecs, in the order pluggy calls a plugin's (a test
# checks them against the specifications).
HOOKS = ("register_adapters", "register_edges")


def hookimpl(function: _F) -> _F:
    """Mark a built-in plugin's hook implementation (no options: none of them take any)."""
    setattr(function, MARK, {})
    return function


def marked(value: Any) -> bool:
    """Whether ``value`` is a function marked by :func:`hookimpl`."""
    return callable(value) and isinstance(getattr(value, MARK, None), dict)
