"""interchange_hub plugin for xarray: ``DataArray`` and ``Dataset`` as sources and targets.

As a source an xarray object takes one of two routes, chosen by the target:

* **tensor libraries** (numpy, torch, cupy, jax, ...) get the values through DLPack:
  ``DataArray.values`` is a numpy array, so this is zero-copy when numpy holds the data
  (strided views too; the tensor library decides about negative strides). A Dataset goes
  this way only when it has one data variable. Dims, coordinates, name and attrs stay
  behind, as a pandas index stays behind in ``DataFrame.to_numpy()``.
* **everything else** (table libraries) gets the *long table*: one row per element in C
  order, the values (or each data variable) first, then each dimension's coordinate (or
  its positions, for two dimensions or more) and each other coordinate. The values column
  is shared where it is C-contiguous numbers or times; the label columns are broadcast to
  every row, a copy the plan names column by column.

As a target, ``to="xarray"`` makes a ``Dataset`` from a table (one variable per column,
along dimension ``index``, or along the pandas index travelling with the data) and a
``DataArray`` from a column (dimension ``index``) or a tensor (``dim_0``, ``dim_1``, ...,
zero-copy over the tensor's memory through ``np.from_dlpack``); ``to=xr.DataArray`` and
``to=xr.Dataset`` choose. A pandas frame or Series of numpy numbers and booleans goes
there in one step, its columns' arrays shared read-only and NaN kept as it is (the Arrow
route would scan them to make nulls, which xarray turns back into NaN). The xarray -> xarray step turns one into the other
(``to_dataset()``, ``ds[name]``, both zero-copy) and makes ``copy=True`` copies.

Chunked (dask) variables are refused rather than computed, foreign duck arrays (pint,
sparse, cupy) rather than converted, and a lazily opened variable is loaded, a copy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from interchange_hub.adapter import (
    ARROW,
    DLPACK,
    Adapter,
    Buffer,
    DataInfo,
    Edge,
    Kind,
    mixed_parts,
)
from interchange_hub.errors import ConversionError
from interchange_hub.hookspecs import hookimpl

from interchange_hub_xarray import _describe, _export, _import
from interchange_hub_xarray._describe import NAME
from interchange_hub_xarray._export import TENSOR_LIBRARIES

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable, Mapping, Sequence

__all__ = ["NAME", "TENSOR_LIBRARIES", "XarrayAdapter", "register_adapters"]

_NEEDS = ("xarray", "numpy")
_NEEDS_ARROW = ("xarray", "numpy", "pyarrow")


class XarrayAdapter(Adapter):
    name = NAME
    aliases = ("xr",)
    module = "xarray"
    requirement = "xarray"
    types = ("xarray.DataArray", "xarray.Dataset")

    def owns(self, obj: object) -> bool:
        xr = _describe.xr_module()
        return isinstance(obj, (xr.DataArray, xr.Dataset))

    def type_kinds(self) -> Mapping[type, Kind | None]:
        xr = _describe.xr_module()
        return {xr.DataArray: Kind.TENSOR, xr.Dataset: Kind.TABLE}

    def describe(self, obj: Any) -> DataInfo:
        return _describe.describe(obj)

    def route_key(self, obj: Any) -> Hashable | None:
        return _describe.route_key(obj)

    def route_key_of(self, cls: type) -> Callable[[Any], Hashable | None]:
        if type(self).route_key is not XarrayAdapter.route_key:  # (a subclass keys its own way)
            return self.route_key
        return _describe.route_key_of(cls)  # type: ignore[no-any-return]

    def buffers(self, obj: Any) -> list[Buffer]:
        return [Buffer(address, size) for address, size in _describe.buffers_of(obj)]

    def concat(self, parts: Sequence[Any]) -> Any:
        """``xr.concat`` along the first dimension of the parts (the one the conversion
        made: ``index``, the pandas index's name, ``dim_0``): a copy. Only what has that
        dimension is joined, the rest is the first part's; other indexes must agree."""
        xr = _describe.xr_module()
        if not any(all(isinstance(p, cls) for p in parts) for cls in (xr.DataArray, xr.Dataset)):
            raise mixed_parts(parts)
        dim = _first_dim(parts[0], len(parts))
        options: dict[str, Any] = {"coords": "minimal", "compat": "override", "join": "exact"}
        if isinstance(parts[0], xr.Dataset):
            options["data_vars"] = "minimal"
        return xr.concat(list(parts), dim=dim, **options)

    def edges(self) -> Sequence[Edge]:
        return (
            Edge(
                NAME,
                DLPACK,
                self.name,
                "DataArray.values",
                _export.tensor_estimate,
                _export.to_tensor,
                _NEEDS,
                bind=_export.tensor_bind,
            ),
            Edge(
                NAME,
                ARROW,
                self.name,
                "long table (pa.array)",
                _export.table_estimate,
                _export.to_table,
                _NEEDS_ARROW,
                bind=_export.table_bind,
            ),
            Edge(
                ARROW,
                NAME,
                self.name,
                "xr.Dataset(Array.to_numpy)",
                _import.arrow_estimate,
                _import.from_arrow,
                _NEEDS_ARROW,
                # Its losses depend on the columns' names, types and whether they hold
                # nulls, which the sources' route keys fix: a lossy route is kept, and
                # warns on every call (a stream's late losses are found as it is read).
                keyed_losses=True,
            ),
            Edge(
                "pandas",
                NAME,
                self.name,
                "xr.Dataset(Series.to_numpy)",
                _import.pandas_estimate,
                _import.from_pandas,
                ("xarray", "numpy", "pandas"),
                bind=_import.pandas_bind,
            ),
            Edge(
                DLPACK,
                NAME,
                self.name,
                "xr.DataArray(np.from_dlpack)",
                _import.dlpack_estimate,
                _import.from_dlpack,
                _NEEDS,
            ),
            Edge(
                NAME,
                NAME,
                self.name,
                "to_dataset/ds[name]/copy",
                _import.loop_estimate,
                _import.loop,
                _NEEDS,
            ),
        )


def _first_dim(obj: Any, count: int) -> Hashable:
    """The dimension partitions are joined along: a DataArray's first, a Dataset's first
    data variable's (the first of its dimensions, without variables)."""
    variables = (
        [obj] if isinstance(obj, _describe.xr_module().DataArray) else obj.data_vars.values()
    )
    first = next(iter(variables), None)
    dims = tuple(first.dims if first is not None else obj.dims)
    if not dims:
        raise ConversionError(
            f"cannot join {count} partitions of 0-d xarray {type(obj).__name__}s: a 0-d result "
            "has no dimension to join along; take them one by one with .partitions()"
        )
    return dims[0]  # type: ignore[no-any-return]


@hookimpl
def register_adapters(register: Callable[[Adapter], None]) -> None:
    register(XarrayAdapter())
