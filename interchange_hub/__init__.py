"""interchange_hub: move data between Python data libraries, zero-copy where possible.

>>> import interchange_hub as ih
>>> ih.convert(pandas_df, to="polars")          # doctest: +SKIP
>>> print(ih.plan(pandas_df, to="polars"))      # doctest: +SKIP
"""

from __future__ import annotations

import threading
from typing import Any

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
)
from interchange_hub.hookspecs import hookimpl
from interchange_hub.hub import Hub
from interchange_hub.model import Column, Copy, DataInfo, Estimate, Kind, Loss, Unroutable
from interchange_hub.plans import Plan, Step
from interchange_hub.plugins import PluginInfo, builtin_plugins
from interchange_hub.protocols import Device

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
