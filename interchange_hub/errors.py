"""The exceptions and warnings of interchange_hub.

Every error a user can hit derives from :class:`InterchangeError`::

    InterchangeError
    ├── UnsupportedObjectError (also TypeError)   no adapter or protocol recognises the object
    ├── UnknownTargetError (also ValueError)      ``to=`` names no known library or type
    ├── InvalidOptionError (also ValueError)      an option has a value the hub does not take
    │   └── DeviceError                           a device is misspelled or not available
    ├── NoRouteError                              no chain of adapters can produce the target
    │   └── CopyRequiredError                     only routes that copy exist, and copy=False
    ├── LossyConversionError                      strict=True and a step would lose information
    ├── ConsumedSourceError                       a one-shot stream or capsule was already read
    ├── ProtocolError                             a producer broke the Arrow/DLPack contract
    ├── ConversionError                           a library failed while running a step
    └── MissingDependencyError (also ImportError) a library is needed but not installed

    LossyConversionWarning (UserWarning)          a step loses information (strict=False)
    PluginWarning (UserWarning)                   a plugin failed and was left out
    WriteThroughWarning (UserWarning)             writing to the result would change the source
"""

from __future__ import annotations

import sys
import warnings
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Sequence


class InterchangeError(Exception):
    """Base class of every error raised by interchange_hub."""


class UnsupportedObjectError(InterchangeError, TypeError):
    """The object is not owned by any adapter and exposes no interchange protocol."""

    def __init__(self, obj: object, supported: Sequence[str]) -> None:
        self.type_name = f"{type(obj).__module__}.{type(obj).__qualname__}"
        self.supported = tuple(supported)
        listing = ", ".join(self.supported) or "(no adapters are registered)"
        super().__init__(
            f"cannot convert an object of type {self.type_name}: no adapter owns it and it "
            "exposes neither the Arrow PyCapsule interface (__arrow_c_stream__, "
            "__arrow_c_array__) nor DLPack (__dlpack__). Supported types: "
            f"{listing}. Wrap the data in one of these, or install a plugin for its library."
        )


class UnknownTargetError(InterchangeError, ValueError):
    """``to=`` names no registered library or type."""

    def __init__(self, target: object, known: Sequence[str], suggestions: Sequence[str]) -> None:
        self.target = target
        self.known = tuple(known)
        hint = f" Did you mean {' or '.join(repr(s) for s in suggestions)}?" if suggestions else ""
        super().__init__(
            f"unknown target {target!r}.{hint} Known targets: {', '.join(self.known)}. "
            "Pass a library name or one of its types (for example to='polars' or to=pl.Series)."
        )


class InvalidOptionError(InterchangeError, ValueError):
    """An option (``copy=``, ``strict=``, ``device=``) has a value the hub does not take."""


class DeviceError(InvalidOptionError):
    """A device name cannot be parsed, or the device is not available."""


class NoRouteError(InterchangeError):
    """No chain of registered adapters can take the data to the target."""


class CopyRequiredError(NoRouteError):
    """``copy=False`` was asked for, but every route copies at least one column."""

    def __init__(self, message: str, columns: Sequence[str] = ()) -> None:
        self.columns = tuple(columns)
        super().__init__(message)


class LossyConversionError(InterchangeError):
    """``strict=True`` was asked for and a step of the plan would lose information."""


class ConsumedSourceError(InterchangeError):
    """A one-shot stream or capsule has already been read and cannot be read again."""


class ProtocolError(InterchangeError):
    """A producer returned something that breaks the Arrow PyCapsule or DLPack contract."""


class ConversionError(InterchangeError):
    """A library raised while a step of the plan was running; the cause is chained."""


class MissingDependencyError(InterchangeError, ImportError):
    """A library needed for this conversion is not installed."""

    def __init__(self, module: str, extra: str, why: str = "", requirement: str = "") -> None:
        self.module = module
        self.extra = extra
        self.requirement = requirement or f"interchange-hub[{extra}]"
        reason = f" {why}" if why else ""
        super().__init__(
            f"{module} is required{reason} but is not installed. "
            f"Install it with: pip install '{self.requirement}'",
            name=module,
        )


class LossyConversionWarning(UserWarning):
    """A conversion step cannot hold a column faithfully and changes it.

    The message names the column, the source type, the target type and what is lost.
    Pass ``strict=True`` to turn it into a :class:`LossyConversionError`.
    """


class PluginWarning(UserWarning):
    """A plugin failed to load, raised in a hook or clashed with another; it was left out.

    The message names the plugin and its distribution; ``interchange-hub plugins`` lists
    the failure too. The other adapters keep working.
    """


class WriteThroughWarning(UserWarning):
    """The result shares memory its source treats as immutable, and its library ignores
    read-only flags (torch): writing to the result would change the source.

    Pass ``copy=True`` for independent memory, or filter the warning once the result is
    only read (``warnings.filterwarnings("ignore", category=ih.WriteThroughWarning)``).
    Shown once per call site, as torch's own ``from_numpy`` warns once.
    """


def warn(message: str, category: type[Warning]) -> None:
    """Warn, pointing at the first frame outside this package (the user's code)."""
    warnings.warn(message, category, stacklevel=_caller_outside_package())


def _caller_outside_package() -> int:
    """The ``stacklevel`` that points a warning at the first frame outside this package."""
    frame = sys._getframe(2)  # the caller of warn's caller
    level = 2
    while frame is not None and frame.f_globals.get("__name__", "").startswith("interchange_hub"):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level
