"""Direct edges between two libraries where one call beats the protocol route.

numpy <-> torch through ``torch.from_numpy`` / ``Tensor.numpy`` share memory just as
DLPack does, at a third of the cost per call. They take only plain, writable,
positively strided CPU data; everything else takes the DLPack route.
"""

from __future__ import annotations

from typing import Any

from interchange_hub.adapter import Context, Edge
from interchange_hub.dependencies import require
from interchange_hub.hookspecs import hookimpl
from interchange_hub.model import Estimate, Kind, Unroutable, is_numeric

FASTPATH = "fastpath"
_NEEDS = ("numpy", "torch")


def _plain(ctx: Context) -> None:
    """Refuse what the one-call route cannot share as it is."""
    info = ctx.info
    if info.kind != Kind.TENSOR or not info.device.is_cpu:
        raise Unroutable("CPU tensors only")
    if ctx.copy:
        raise Unroutable("copy=True takes the general route")
    (col,) = info.columns
    if info.layout == "negative" or col.nulls > 0 or col.flags or info.readonly:
        raise Unroutable("negative strides, masks, lazy views and read-only memory take DLPack")
    if not (is_numeric(col.dtype) or col.dtype == "bool" or col.dtype.startswith("complex")):
        raise Unroutable(f"{col.dtype} takes the general route")


def _from_numpy_estimate(ctx: Context) -> Estimate:
    _plain(ctx)
    return Estimate(ctx.info, why="torch.from_numpy shares the array's memory")


def _from_numpy(value: Any, ctx: Context) -> Any:
    torch = require("torch")
    if not value.flags.writeable:  # made read-only by an earlier step (Arrow memory):
        return torch.from_dlpack(value)  # shared like from_numpy, without its warning
    return torch.from_numpy(value)


def _to_numpy_estimate(ctx: Context) -> Estimate:
    _plain(ctx)
    if ctx.info.columns[0].dtype == "bfloat16":
        raise Unroutable("numpy has no bfloat16")
    return Estimate(ctx.info, why="Tensor.numpy shares the tensor's memory")


def _to_numpy(value: Any, ctx: Context) -> Any:
    return value.detach().numpy() if value.requires_grad else value.numpy()


@hookimpl
def register_edges(register: Any) -> None:
    register(
        Edge(
            "numpy",
            "torch",
            FASTPATH,
            "torch.from_numpy",
            _from_numpy_estimate,
            _from_numpy,
            _NEEDS,
        )
    )
    register(
        Edge("torch", "numpy", FASTPATH, "Tensor.numpy", _to_numpy_estimate, _to_numpy, _NEEDS)
    )
