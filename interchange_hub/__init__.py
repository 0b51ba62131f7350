"""interchange_hub: move data between Python data libraries, zero-copy where possible.

>>> import interchange_hub as ih
>>> ih.convert(pandas_df, to="polars")          # doctest: +SKIP
>>> print(ih.plan(pandas_df, to="polars"))      # doctest: +SKIP
"""

from __future__ import annotations

import importlib
import threading
from typing import TYPE_CHECKING, Any

# Kept equal to the distribution's version (pyproject.toml) by tests/test_api.py; a
# constant, so that reading it imports nothing.
__version__ = "0.1.0"

if TYPE_CHECKING:
    from interchange_hub._core.device import Device
    from interchange_hub._core.info import (
        Column,
        Copy,
        DataInfo,
        Estimate,
        Flag,
        Kind,
        Loss,
        Unroutable,
    )
    from interchange_hub._engine.plans import Plan, Step
    from interchange_hub.adapter import Adapter, Buffer, Context, Edge
    from interchange_hub.errors import (
        ConsumedSourceError,
        ConversionError,
        CopyRequiredError,
        DeviceError,
        InterchangeError,
        InvalidOptionError,
        LossyConversionError,
        LossyConversionWarning,
        MissingDependencyError,
        NoRouteError,
        PluginWarning,
        ProtocolError,
        UnknownTargetError,
        UnsupportedObjectError,
        WriteThroughWarning,
    )
    from interchange_hub.hookspecs import hookimpl
    from interchange_hub.hub import Hub
    from interchange_hub.plugins import PluginInfo, builtin_plugins

# The public names and the modules that define them: imported on first access, so that
# `import interchange_hub` costs almost nothing (no pluggy, no data library).
_LAZY = {
    "interchange_hub.adapter": ("Adapter", "Buffer", "Context", "Edge"),
    "interchange_hub.errors": (
        "ConsumedSourceError",
        "ConversionError",
        "CopyRequiredError",
        "DeviceError",
        "InterchangeError",
        "InvalidOptionError",
        "LossyConversionError",
        "LossyConversionWarning",
        "MissingDependencyError",
        "NoRouteError",
        "PluginWarning",
        "ProtocolError",
        "UnknownTargetError",
        "UnsupportedObjectError",
        "WriteThroughWarning",
    ),
    "interchange_hub.hookspecs": ("hookimpl",),
    "interchange_hub.hub": ("Hub",),
    "interchange_hub._core.info": (
        "Column",
        "Copy",
        "DataInfo",
        "Estimate",
        "Flag",
        "Kind",
        "Loss",
        "Unroutable",
    ),
    "interchange_hub._engine.plans": ("Plan", "Step"),
    "interchange_hub.plugins": ("PluginInfo", "builtin_plugins"),
    "interchange_hub._core.device": ("Device",),
}
_MODULE_OF = {name: module for module, names in _LAZY.items() for name in names}


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'interchange_hub' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_MODULE_OF))


__all__ = [
    "Adapter",
    "Buffer",
    "Column",
    "ConsumedSourceError",
    "Context",
    "ConversionError",
    "Copy",
    "CopyRequiredError",
    "DataInfo",
    "Device",
    "DeviceError",
    "Edge",
    "Estimate",
    "Flag",
    "Hub",
    "InterchangeError",
    "InvalidOptionError",
    "Kind",
    "Loss",
    "LossyConversionError",
    "LossyConversionWarning",
    "MissingDependencyError",
    "NoRouteError",
    "Plan",
    "PluginInfo",
    "PluginWarning",
    "ProtocolError",
    "Step",
    "UnknownTargetError",
    "Unroutable",
    "UnsupportedObjectError",
    "WriteThroughWarning",
    "__version__",
    "builtin_plugins",
    "convert",
    "default_hub",
    "export",
    "hookimpl",
    "plan",
]

_default: Hub | None = None
_default_lock = threading.Lock()


def default_hub() -> Hub:
    """The process-wide hub used by :func:`convert`, :func:`plan` and :func:`export`."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                from interchange_hub.hub import Hub

                _default = Hub()
    return _default


def convert(
    obj: object,
    to: object,
    *,
    copy: bool | None = None,
    device: str | Device | None = None,
    strict: bool = False,
) -> Any:
    """Convert ``obj`` to the library or type ``to``; see :meth:`Hub.convert`."""
    return default_hub().convert(obj, to, copy=copy, device=device, strict=strict)


def plan(
    obj: object,
    to: object,
    *,
    copy: bool | None = None,
    device: str | Device | None = None,
    strict: bool = False,
) -> Plan:
    """Plan the conversion of ``obj`` to ``to`` without running it; see :meth:`Hub.plan`."""
    return default_hub().plan(obj, to, copy=copy, device=device, strict=strict)


def export(obj: object) -> Any:
    """An object exposing every interchange dunder that applies to ``obj``."""
    return default_hub().export(obj)
