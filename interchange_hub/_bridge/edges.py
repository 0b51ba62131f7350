"""The Arrow <-> DLPack bridge and the explicit copy edges, independent of any library.

``arrow_device -> arrow``: a CPU ArrowDeviceArray is imported by pyarrow, zero-copy.

``arrow -> dlpack``: a column becomes a 1-D tensor (shared when it is one chunk of a
fixed-width type without nulls), a table a 2-D tensor (always copied). ``dlpack ->
arrow``: a 1-D tensor becomes a column, a 2-D tensor a table, more dimensions a
fixed-shape tensor column. The copy edges make new buffers when ``copy=True`` asks.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from interchange_hub import arrowkit
from interchange_hub._bridge import tensors
from interchange_hub._bridge.arrow_native import array_of
from interchange_hub._core.info import Copy, Estimate, Kind, Unroutable
from interchange_hub._core.marks import hookimpl
from interchange_hub.adapter import ARROW, ARROW_DEVICE, DLPACK, Context, Edge

if TYPE_CHECKING:
    from collections.abc import Callable

BRIDGE = "bridge"
_NEEDS = ("pyarrow", "numpy")


def _to_dlpack_estimate(ctx: Context) -> Estimate:
    return tensors.estimate_arrow_to_tensor(ctx, dlpack_only=True)


def _to_dlpack(value: Any, ctx: Context) -> Any:
    return tensors.arrow_to_tensor(value, ctx, dlpack_only=True)


def _to_dlpack_bind(ctx: Context) -> Callable[[Any], Any]:
    return tensors.bind_arrow_to_tensor(ctx, dlpack_only=True)


def _from_dlpack_estimate(ctx: Context) -> Estimate:
    info = ctx.info
    if info.kind != Kind.TENSOR:
        raise Unroutable("only tensors come out of DLPack")

    return tensors.estimate_from_tensor(info)


def _from_dlpack(value: Any, ctx: Context) -> Any:
    np = tensors.np_module()
    arr = value if isinstance(value, np.ndarray) else np.from_dlpack(value)
    return tensors.ndarray_to_arrow(arr)


def _from_dlpack_bind(ctx: Context) -> Callable[[Any], Any]:
    """What :func:`_from_dlpack` does (the context changes nothing), in one frame with
    numpy's calls bound once, and a 1-D array of numbers straight to its Arrow array
    (``array_of``, what ``ndarray_to_arrow`` does for it after its own lookups: 3.25
    against 3.50 us for 1,000 float64). A jax Array's column into pyarrow, 1,000 rows,
    the kept run alone: 6.32 -> 5.72 us (``pa.array(np.asarray(x))``: 5.44)."""
    np = tensors.np_module()
    ndarray, from_dlpack = np.ndarray, np.from_dlpack
    to_arrow = tensors.ndarray_to_arrow

    def run(value: Any) -> Any:
        arr = value if isinstance(value, ndarray) else from_dlpack(value)
        if arr.ndim == 1 and arr.dtype.kind != "O":
            return array_of(arr)
        return to_arrow(arr)

    return run


def _copy_estimate(ctx: Context) -> Estimate:
    info = ctx.info
    copies = tuple(Copy(c.name, c.nbytes, "copy=True asks for new memory") for c in info.columns)
    return Estimate(info.but(readonly=False), copies, why="copy=True: new buffers", copies_all=True)


def _copy_arrow(value: Any, ctx: Context) -> Any:
    return arrowkit.deep_copy(value, ctx.info.kind)


def _copy_tensor(value: Any, ctx: Context) -> Any:
    if hasattr(value, "clone") and hasattr(value, "detach"):
        return value.detach().clone()
    np = tensors.np_module()
    arr = value if isinstance(value, np.ndarray) else np.from_dlpack(value)
    return np.array(arr, copy=True)


def _device_to_arrow_estimate(ctx: Context) -> Estimate:
    return Estimate(ctx.info, why="pyarrow imports a CPU ArrowDeviceArray without a copy")


def _device_to_arrow(value: Any, ctx: Context) -> Any:
    return arrowkit.import_device_array(value)


@hookimpl
def register_edges(register: Any) -> None:
    _register_edges(lambda edge: register(replace(edge, keyed_losses=True)))


def _register_edges(register: Any) -> None:
    """The edges, whose losses depend on dtypes and which columns hold nulls alone."""
    register(
        Edge(
            ARROW_DEVICE,
            ARROW,
            BRIDGE,
            "Array._import_from_c_device_capsule",
            _device_to_arrow_estimate,
            _device_to_arrow,
            ("pyarrow",),
        )
    )
    register(
        Edge(
            ARROW,
            DLPACK,
            BRIDGE,
            "Array.to_numpy",
            _to_dlpack_estimate,
            _to_dlpack,
            _NEEDS,
            bind=_to_dlpack_bind,
        )
    )
    register(
        Edge(
            DLPACK,
            ARROW,
            BRIDGE,
            "np.from_dlpack+pa.array",
            _from_dlpack_estimate,
            _from_dlpack,
            _NEEDS,
            bind=_from_dlpack_bind,
        )
    )
    register(Edge(ARROW, ARROW, BRIDGE, "Array.copy_to", _copy_estimate, _copy_arrow, ("pyarrow",)))
    register(Edge(DLPACK, DLPACK, BRIDGE, "copy", _copy_estimate, _copy_tensor, ("numpy",)))
