"""Optional libraries: recognise objects via ``sys.modules``, import only on demand."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from functools import cache
from typing import TYPE_CHECKING

from interchange_hub.errors import MissingDependencyError

if TYPE_CHECKING:
    from types import ModuleType


def loaded(name: str) -> ModuleType | None:
    """The module if it is already imported: an object of it can only exist if it is."""
    return sys.modules.get(name)


@cache
def installed(name: str) -> bool:
    """Whether ``name`` can be imported (checked once per process, without importing)."""
    if name in sys.modules:
        return sys.modules[name] is not None  # None: the import is blocked

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def require(name: str, why: str = "") -> ModuleType:
    """Import ``name`` or raise :class:`MissingDependencyError` naming the pip extra
    (``interchange-hub[<name>]``: every built-in library's extra has its name)."""
    module = sys.modules.get(name)
    if module is not None:
        return module
    try:
        return importlib.import_module(name)
    except ImportError:
        # Each built-in library's pip extra is named after it.
        raise MissingDependencyError(name, name, why) from None
