"""The plugin manager: built-in adapters and third-party plugins from entry points."""

from __future__ import annotations

import importlib
import os
import warnings
from typing import TYPE_CHECKING

import pluggy

from interchange_hub import hookspecs

if TYPE_CHECKING:
    from collections.abc import Iterable

ENTRY_POINT_GROUP = "interchange_hub"
LOAD_PLUGINS_ENV = "INTERCHANGE_HUB_LOAD_PLUGINS"
DISABLE_AUTOLOAD_ENV = "INTERCHANGE_HUB_DISABLE_PLUGIN_AUTOLOAD"

# Built-in plugins, registered by import path: they work from a plain checkout.
DEFAULT_PLUGINS = (
    "interchange_hub.adapters._pyarrow",
    "interchange_hub.adapters._nanoarrow",
    "interchange_hub.adapters._polars",
    "interchange_hub.adapters._pandas",
    "interchange_hub.adapters._numpy",
    "interchange_hub.adapters._torch",
    "interchange_hub.adapters._bridge",
)


def make_plugin_manager(
    *, autoload: bool | None = None, plugins: Iterable[object] | None = None
) -> pluggy.PluginManager:
    """Build a new plugin manager.

    :param autoload: load third-party plugins from the ``interchange_hub`` entry-point
        group; None follows the environment (``INTERCHANGE_HUB_LOAD_PLUGINS``,
        ``INTERCHANGE_HUB_DISABLE_PLUGIN_AUTOLOAD``).
    :param plugins: plugins to register; None registers the built-in adapters.
    """
    pm = pluggy.PluginManager(ENTRY_POINT_GROUP)
    pm.add_hookspecs(hookspecs)
    if plugins is None:
        for path in DEFAULT_PLUGINS:
            pm.register(importlib.import_module(path), name=path)
    else:
        for plugin in plugins:
            pm.register(plugin)
    if autoload is None:
        autoload = os.environ.get(DISABLE_AUTOLOAD_ENV, "") in ("", "0")
    if autoload:
        _load_entry_points(pm)
    pm.check_pending()
    return pm


def _load_entry_points(pm: pluggy.PluginManager) -> None:
    names = os.environ.get(LOAD_PLUGINS_ENV)
    try:
        if names is None:
            pm.load_setuptools_entrypoints(ENTRY_POINT_GROUP)
            return
        for name in filter(None, (n.strip() for n in names.split(","))):
            if pm.load_setuptools_entrypoints(ENTRY_POINT_GROUP, name=name) == 0:
                warnings.warn(
                    f"{LOAD_PLUGINS_ENV} names {name!r}, but no installed distribution has "
                    f"an entry point of that name in the {ENTRY_POINT_GROUP!r} group",
                    stacklevel=3,
                )
    except Exception as exc:  # noqa: BLE001 - a broken plugin must not break the hub
        warnings.warn(f"loading interchange_hub plugins failed: {exc!r}", stacklevel=3)
