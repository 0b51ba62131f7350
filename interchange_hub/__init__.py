"""interchange_hub: move data between Python data libraries, zero-copy where possible.

>>> import interchange_hub as ih
>>> ih.convert(pandas_df, to="polars")          # doctest: +SKIP
>>> print(ih.plan(pandas_df, to="polars"))      # doctest: +SKIP
"""

from __future__ import annotations

import importlib
import threading
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

# Kept equal to the distribution's version (pyproject.toml) by tests/test_api.py; a
# constant, so that reading it imports nothing.
__version__ = "0.1.0"

if TYPE_CHECKING:
    from collections.abc import Iterator

    import numpy
    import torch

    from interchange_hub._core.device import Device
    from interchange_hub._core.info import (
        Column,
        Copy,
        DataInfo,
        Estimate,
        Flag,
        Kind,
        Loss,
        Scan,
        Unroutable,
    )
    from interchange_hub._engine.plans import Plan, Step
    from interchange_hub.adapter import Adapter, Buffer, Collection, Context, Edge, Options
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
    "interchange_hub.adapter": ("Adapter", "Buffer", "Collection", "Context", "Edge", "Options"),
    # Above this module (it converts on workers with default_hub()): typed through
    # interchange_hub.partitioned, not imported here even for the type checker.
    "interchange_hub.partitioned": ("Partitioned", "PartitionedPlan"),
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
        "Scan",
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
    "Collection",
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
    "Options",
    "Partitioned",
    "PartitionedPlan",
    "Plan",
    "PluginInfo",
    "PluginWarning",
    "ProtocolError",
    "Scan",
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
    "iter_batches",
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


_T = TypeVar("_T")


@overload
def convert(
    obj: object,
    to: type[_T],
    *,
    copy: bool | None = ...,
    device: str | Device | None = ...,
    strict: bool = ...,
    dtype: object = ...,
    as_dict: Literal[False] = ...,
) -> _T: ...
@overload
def convert(
    obj: object,
    to: type[_T],
    *,
    copy: bool | None = ...,
    device: str | Device | None = ...,
    strict: bool = ...,
    dtype: object = ...,
    as_dict: Literal[True],
) -> dict[str, _T]: ...
@overload
def convert(
    obj: object,
    to: Literal["numpy", "np"],
    *,
    copy: bool | None = ...,
    device: str | Device | None = ...,
    strict: bool = ...,
    dtype: object = ...,
    as_dict: Literal[False] = ...,
) -> numpy.ndarray[Any, Any]: ...
@overload
def convert(
    obj: object,
    to: Literal["torch", "pt"],
    *,
    copy: bool | None = ...,
    device: str | Device | None = ...,
    strict: bool = ...,
    dtype: object = ...,
    as_dict: Literal[False] = ...,
) -> torch.Tensor: ...
@overload
def convert(
    obj: object,
    to: Literal["numpy", "np"],
    *,
    copy: bool | None = ...,
    device: str | Device | None = ...,
    strict: bool = ...,
    dtype: object = ...,
    as_dict: Literal[True],
) -> dict[str, numpy.ndarray[Any, Any]]: ...
@overload
def convert(
    obj: object,
    to: Literal["torch", "pt"],
    *,
    copy: bool | None = ...,
    device: str | Device | None = ...,
    strict: bool = ...,
    dtype: object = ...,
    as_dict: Literal[True],
) -> dict[str, torch.Tensor]: ...
@overload
def convert(
    obj: object,
    to: object,
    *,
    copy: bool | None = ...,
    device: str | Device | None = ...,
    strict: bool = ...,
    dtype: object = ...,
    as_dict: bool = ...,
) -> Any: ...


def convert(
    obj: object,
    to: object,
    *,
    copy: bool | None = None,
    device: str | Device | None = None,
    strict: bool = False,
    dtype: object = None,
    as_dict: bool = False,
) -> Any:
    """Convert ``obj`` to another library's type: zero-copy where the layouts allow, an
    explicit copy otherwise, and a warning for every column that cannot be kept exactly.

    :param obj: a pyarrow, nanoarrow, polars, pandas, numpy, torch or cupy object, a
        plugin library's object, or anything exposing the Arrow PyCapsule interface
        (``__arrow_c_stream__``, ``__arrow_c_array__``, their device variants) or DLPack.
    :param to: a library name (``"polars"``, ``"pandas"``, ``"numpy"``, ``"torch"``, an
        alias such as ``"pl"``), one of its types (``pl.Series``, ``pa.Table``), or the
        library module itself (``to=pl``).
    :param copy: None (default) copies only where needed; False raises
        :class:`CopyRequiredError` instead of copying anything; True gives a result that
        shares no memory with ``obj``.
    :param device: None keeps the data where it is; ``"cpu"`` or ``"cuda:N"`` asks for a
        place (a device move is a copy, shown in the plan).
    :param strict: raise :class:`LossyConversionError`, before converting, where the
        default warns with :class:`LossyConversionWarning` (a type or value the target
        cannot hold).
    :param dtype: the dtype of a tensor result (``"float32"``, ``np.float32``,
        ``torch.float32``): the columns are cast, a planned copy. Without it, a table of
        mixed numeric columns is promoted as ``DataFrame.to_numpy()`` does; values the cast
        cannot keep (integers above 2**53 into float64) are warned. ``dtype="arrow"``
        asks a pandas result for ``pd.ArrowDtype`` columns (pandas'
        ``dtype_backend="pyarrow"``): they wrap the Arrow data as it is, zero-copy for
        every Arrow type, and lose nothing (nulls stay nulls beside NaN, integers with
        nulls stay integers); the default is pandas' own numpy-backed columns.
    :param as_dict: give ``{column name: result}``, one result per column of a table,
        each in its own dtype and zero-copy where the column allows.
    :returns: an object of the target library (a ``dict`` of them with ``as_dict=True``).
        A result that shares memory with ``obj`` cannot change it: pandas copies a column
        on its first write, numpy views are read-only, torch warns
        (:class:`WriteThroughWarning`).
    :raises UnsupportedObjectError: no adapter or protocol recognises ``obj``.
    :raises UnknownTargetError: ``to`` names no installed library or type.
    :raises NoRouteError: no chain of adapters produces the target (the message says why).
    :raises CopyRequiredError: ``copy=False`` and every route copies.
    :raises LossyConversionError: ``strict=True`` and a column would change.
    :raises MissingDependencyError: a library the conversion needs is not installed.

    >>> import interchange_hub as ih
    >>> import pyarrow as pa
    >>> df = ih.convert(pa.table({"a": [1, 2, 3]}), to="polars")
    >>> df.shape
    (3, 1)
    >>> print(ih.plan(pa.table({"a": [1.5]}), to="numpy").zero_copy)
    True

    Use :func:`plan` to see the route, its copies and losses before anything runs.
    """
    hub = _default if _default is not None else default_hub()
    if as_dict is False:
        # Hub.convert's fast path, written out here: a repeated conversion makes no call
        # but its route key's and its run's (a test holds the two alike)
        try:
            fast = hub._calls.get((type(obj), to, copy, device, strict, dtype))
        except TypeError:  # an unhashable to= or device=: the planner explains
            fast = None
        if fast is not None and fast.copy is copy and fast.strict is strict:
            try:
                run = fast.runs.get(fast.key(obj))
            except Exception:  # noqa: BLE001 - planned: describe says what failed
                run = None
            if run is not None:
                try:
                    return run(obj)
                except _route_changed():  # the kept route does not fit this object: planned
                    pass
        return hub.planner.convert(obj, to, copy, device, strict, dtype)
    return hub.convert(
        obj, to, copy=copy, device=device, strict=strict, dtype=dtype, as_dict=as_dict
    )


def _route_changed() -> type[Exception]:
    """The exception a kept run raises where its route does not fit the object
    (``except`` reads it only once one is raised: importing it with this module would
    cost ``import interchange_hub`` 20 ms)."""
    from interchange_hub._core.info import RouteChanged

    return RouteChanged


def plan(
    obj: object,
    to: object,
    *,
    copy: bool | None = None,
    device: str | Device | None = None,
    strict: bool = False,
    dtype: object = None,
    as_dict: bool = False,
) -> Plan:
    """Plan the conversion of ``obj`` to ``to`` without converting anything.

    Takes the arguments of :func:`convert`. The plan lists each step (library, protocol,
    device, zero-copy or copy and why, bytes), every lossy column and notes such as a
    read-only result; ``print(plan)`` shows it, Jupyter shows it as a table, and
    ``plan.zero_copy``, ``plan.copies``, ``plan.losses``, ``plan.copied_bytes`` and
    ``plan.device_moves`` read it.

    :raises: what :func:`convert` raises before converting (``CopyRequiredError``,
        ``LossyConversionError`` with ``strict=True``, ...).

    >>> import interchange_hub as ih
    >>> import pyarrow as pa
    >>> print(ih.plan(pa.table({"a": [1.5, 2.5]}), to="polars"))  # doctest: +ELLIPSIS
    Plan pyarrow.Table -> polars: zero-copy, 2 step(s)
    ...
    """
    return default_hub().plan(
        obj, to, copy=copy, device=device, strict=strict, dtype=dtype, as_dict=as_dict
    )


def iter_batches(
    source: object,
    to: object,
    *,
    batch_size: int | None = None,
    drop_last: bool = False,
    copy: bool | None = None,
    device: str | Device | None = None,
    strict: bool = False,
    dtype: object = None,
    as_dict: bool = False,
) -> Iterator[Any]:
    """Iterate over ``source`` in batches of ``batch_size`` rows, each converted to ``to``.

    :param source: a table, a column or a stream of any library (read as the loop goes,
        never all at once), a tensor (sliced along its first dimension), or a partitioned
        collection (a Dask DataFrame, a Ray Dataset: fetched one partition or batch at a
        time, with their plugins installed).
    :param batch_size: rows per batch; the last batch is shorter unless ``drop_last``.
        None gives the source's own chunks (record batches, partitions) as they are.
    :param as_dict: each batch as ``{column: result}`` (tensors per column, zero-copy
        where the column allows).
    :returns: an iterator. When it is made, the source, ``batch_size``, ``drop_last``
        and ``as_dict`` are checked and the route to Arrow planned (for a tensor, the
        whole conversion); the target and the other arguments, those of :func:`convert`,
        are checked with the first batch, which is converted as each batch is.

    Batches are slices of the source's memory: a batch inside one chunk converts as the
    chunk would (zero-copy where the layout allows); a batch that spans two chunks has two,
    and its conversion to a tensor copies it (``ih.plan`` of a batch says so).

    >>> import interchange_hub as ih
    >>> import pyarrow as pa
    >>> t = pa.table({"x": [1.0, 2.0, 3.0, 4.0, 5.0]})
    >>> [len(b) for b in ih.iter_batches(t, to="polars", batch_size=2)]
    [2, 2, 1]
    """
    return default_hub().iter_batches(
        source,
        to,
        batch_size=batch_size,
        drop_last=drop_last,
        copy=copy,
        device=device,
        strict=strict,
        dtype=dtype,
        as_dict=as_dict,
    )


def export(obj: object) -> Any:
    """An object exposing every interchange protocol that applies to ``obj``, for a
    consumer that takes the protocols rather than ``obj``'s library.

    :param obj: anything :func:`convert` takes.
    :returns: an object with ``__arrow_c_stream__``/``__arrow_c_schema__`` (and
        ``__arrow_c_array__`` for a single array), ``__dlpack__``/``__dlpack_device__``
        for tensors, and ``__arrow_c_device_array__``/``__arrow_c_device_stream__``; each
        export is planned like a conversion (zero-copy where the layout allows).
    :raises UnsupportedObjectError: no adapter or protocol recognises ``obj``.

    >>> import interchange_hub as ih
    >>> import numpy as np
    >>> exported = ih.export(np.arange(3.0))
    >>> hasattr(exported, "__dlpack__") and hasattr(exported, "__arrow_c_array__")
    True
    """
    return default_hub().export(obj)
