"""xarray -> dlpack (the values) and xarray -> arrow (the long table).

Which of the two a conversion takes is decided by its target: a tensor library takes the
values, zero-copy when numpy holds them; anything else takes the long table. The hub's
edges see only the name of the library a conversion ends in (``Context.target``), not
what kind of data that library holds, hence the list of tensor libraries below; a
``to=`` type (``to=torch.Tensor``) says its kind itself.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from interchange_hub import arrowkit
from interchange_hub.adapter import (
    Column,
    Context,
    Copy,
    DataInfo,
    Estimate,
    Flag,
    Kind,
    Unroutable,
    is_float,
    is_integer,
    mixed_objects_error,
)

from interchange_hub_xarray import _describe as d
from interchange_hub_xarray._import import buildable

if TYPE_CHECKING:
    from collections.abc import Callable

    from interchange_hub_xarray._describe import Entry, Layout

# Libraries whose results are tensors (``to=`` names). Any other target takes the long
# table; ``to=<type>`` is decided by the kind the type stands for.
TENSOR_LIBRARIES = frozenset({"numpy", "torch", "cupy", "jax", "tensorflow", "mlx", "dlpack"})
_NO_NUMPY_TENSOR = ("bfloat16", "float128")


def tensor_target(ctx: Context) -> bool:
    if ctx.kind is not None:
        return ctx.kind == Kind.TENSOR
    return ctx.target in TENSOR_LIBRARIES


def _what(col: Column) -> str:
    if d.DATAARRAY in col.flags:
        return "the DataArray's data"
    return f"{'coordinate' if Flag.INDEX in col.flags else 'variable'} {col.name!r}"


def refuse_unreadable(col: Column) -> None:
    """Raise :class:`Unroutable` for data only its own library can produce."""
    if d.CHUNKED in col.flags:
        raise Unroutable(
            f"{_what(col)} is a chunked array (dask or another chunk manager), whose values "
            "exist only once computed; call .compute() (or .load()) on it first"
        )
    for flag in col.flags:
        if flag.startswith(d.FOREIGN):
            raise Unroutable(
                f"{_what(col)} is a {flag.removeprefix(d.FOREIGN)}, not a numpy array; "
                "call .as_numpy() on it first (xarray converts it)"
            )


def between_xarray(ctx: Context) -> str:
    """Why a step out of xarray does not apply to a conversion from xarray to xarray (the
    xarray -> xarray step does it): that step's own reason where it cannot either."""
    info = ctx.info
    wants_dataarray = ctx.target_type is not None and ctx.target_type.__name__ == "DataArray"
    if wants_dataarray and not d.is_dataarray(info) and len(info.data_columns) != 1:
        return many_variables(info.data_columns, "DataArray")
    return "xarray to xarray is the xarray -> xarray step (to_dataset, ds[name], copy)"


# -- the values: xarray -> dlpack -----------------------------------------------------------
def _itemsize(dtype: str) -> int:
    if dtype == "bool":
        return 1
    return int("".join(ch for ch in dtype if ch.isdigit()) or 64) // 8


def _dlpack_dtype(dtype: str) -> bool:
    return (
        is_integer(dtype) or is_float(dtype) or dtype == "bool" or dtype.startswith("complex")
    ) and dtype not in _NO_NUMPY_TENSOR


def many_variables(data: tuple[Column, ...], what: str = "tensor") -> str:
    """Why a Dataset of several data variables (or none) is not one tensor or DataArray."""
    if not data:
        return f"the Dataset has no data variables, so no {what}"
    names = ", ".join(repr(c.name) for c in data[:4]) + (", ..." if len(data) > 4 else "")
    head = f"a Dataset of {len(data)} data variables ({names}) is not one {what}"
    if what == "DataArray":
        return f"{head}; select one (ds[{data[0].name!r}]), or stack them: ds.to_dataarray()"
    return (
        f"{head}; convert one of them (ds[{data[0].name!r}]), or pass as_dict=True for a "
        "tensor per variable"
    )


def tensor_estimate(ctx: Context) -> Estimate:
    info = ctx.info
    if ctx.target == d.NAME:
        raise Unroutable(between_xarray(ctx))
    if not tensor_target(ctx):
        raise Unroutable(
            f"{ctx.target} is no tensor library: it takes the long table (xarray -> arrow), "
            "not the bare values"
        )
    data = info.data_columns
    if len(data) != 1:
        raise Unroutable(many_variables(data))
    col = data[0]
    refuse_unreadable(col)
    if any(f.startswith(d.EXTENSION) for f in col.flags):
        raise Unroutable(
            f"{_what(col)} is a pandas extension array ({col.dtype}), which no tensor holds; "
            "convert it first (e.g. .astype(float): nulls become NaN)"
        )
    if not _dlpack_dtype(col.dtype):
        raise Unroutable(
            f"DLPack cannot carry {col.dtype} values; take .values for a numpy array, or "
            "cast them first (e.g. .astype('int64'))"
        )
    nbytes = math.prod(info.shape) * _itemsize(col.dtype)
    tensor = Column("", col.dtype, nbytes, 0)
    rows = info.shape[0] if info.shape else 1
    out = DataInfo(
        Kind.TENSOR,
        (tensor,),
        rows=rows,
        shape=info.shape,
        layout=info.layout,
        readonly=info.readonly,
        alignment=info.alignment,  # where .values starts: jax shares 64-byte aligned data
    )
    if d.LAZY in col.flags:
        # Loading may hand back memory xarray caches: not certainly new (copies_all False).
        reason = f"{_what(col)} is not in memory: .values loads it from its backend"
        fresh = out.but(layout="C", readonly=False, alignment=0)  # new memory: unknown
        return Estimate(fresh, (Copy("", nbytes, reason),), why=reason)
    if d.PANDAS_INDEX in col.flags:
        reason = f"{_what(col)} lives in a pandas Index: copied into a new numpy array"
        fresh = out.but(layout="C", readonly=False, alignment=0)  # new memory: unknown
        return Estimate(fresh, (Copy("", nbytes, reason),), why=reason, copies_all=True)
    why = "the values are a numpy array, a DLPack producer (dims, coords, name, attrs stay)"
    return Estimate(out, why=why, shared_readonly=info.readonly)


def tensor_bind(ctx: Context) -> Any:
    """:func:`to_tensor` for the hot path: a DataArray's numpy values read from its slots
    (0.2 us, against 1.5 us through ``sole_variable`` and ``backing``); anything else as
    :func:`to_tensor` takes it."""
    data_array, ndarray = d.xr_module().DataArray, d.np_module().ndarray

    def run(value: Any) -> Any:
        if type(value) is data_array:
            held = value._variable._data
            if type(held) is ndarray:
                return held
        return to_tensor(value, ctx)

    return run


def to_tensor(value: Any, ctx: Context) -> Any:
    var = d.sole_variable(value)
    held = d.backing(var)
    if held == "numpy":
        return var._data
    np = d.np_module()
    if held == "index":
        return np.array(var.values, copy=True)
    return np.asarray(var.values)  # lazy: loaded


# -- the long table: xarray -> arrow ---------------------------------------------------------
def _arrow_dtype(col: Column) -> str:
    """The Arrow type (hub name) the column becomes, or raise :class:`Unroutable`."""
    dtype = col.dtype
    for flag in col.flags:
        if flag.startswith(d.ARROW):
            return flag.removeprefix(d.ARROW)
    for flag in col.flags:
        if flag.startswith(d.EXTENSION):
            arrow = flag.removeprefix(d.EXTENSION)
            if arrow == "unknown":
                raise Unroutable(f"pyarrow cannot take {_what(col)} (a pandas {dtype} array)")
            return arrow
        if flag.startswith(d.OBJECT):
            return flag.removeprefix(d.OBJECT)
    if is_integer(dtype) or is_float(dtype) or dtype == "bool":
        if dtype in _NO_NUMPY_TENSOR:
            raise Unroutable(f"Arrow has no {dtype} type ({_what(col)}); cast it to float64")
        return dtype
    if dtype.startswith(("timestamp[", "duration[")):
        return dtype
    if dtype == "numpy_datetime64[D]":
        return "date32[day]"
    if dtype == "numpy_str":
        return "string"
    if dtype == "numpy_bytes":
        return "binary"
    if dtype.startswith("complex"):
        raise Unroutable(
            f"Arrow has no complex type ({_what(col)}: {dtype}); split it into .real and "
            ".imag first"
        )
    raise Unroutable(f"no Arrow type holds {dtype} ({_what(col)}); cast it first")


def _table_copy(col: Column) -> str:
    """Why the column is copied into the long table ("" when it is shared)."""
    dtype, flags = col.dtype, col.flags
    if d.LAZY in flags:
        return "not in memory: loaded from its backend"
    if any(f.startswith(d.EXTENSION) for f in flags):
        return f"a pandas {dtype} array: pyarrow builds its Arrow array (data and mask)"
    if d.POSITIONS in flags:
        return "a dimension without coordinate: its positions are written for every row"
    kept = next((f.removeprefix(d.ARROW) for f in flags if f.startswith(d.ARROW)), "")
    if kept:
        return f"made {kept} again: the Arrow type kept in the variable's encoding"
    if d.SPREAD in flags:
        return "broadcast or reordered over the table's dimensions: one row per element"
    if d.PANDAS_INDEX in flags:
        return "an index coordinate: its values are copied out of its pandas Index"
    if d.RAVEL in flags:
        return "not C-contiguous: raveled in C order (a Fortran-ordered or strided view)"
    if dtype == "bool":
        return "Arrow booleans are bit-packed; numpy uses a byte each"
    if dtype in ("numpy_str", "numpy_bytes"):
        return "numpy's fixed-width text becomes Arrow strings"
    if dtype == "object":
        return "Python objects are converted by pyarrow"
    if dtype == "numpy_datetime64[D]":
        return "datetime64[D] days become date32"
    return ""


def table_estimate(ctx: Context) -> Estimate:
    info = ctx.info
    if ctx.target == d.NAME:
        raise Unroutable(between_xarray(ctx))
    if tensor_target(ctx):
        raise Unroutable(f"{ctx.target} takes the values (xarray -> dlpack), not the long table")
    copies, columns = [], []
    full = 0
    for col in info.columns:
        refuse_unreadable(col)
        if d.CLASH in col.flags:
            raise Unroutable(
                f"the long table would have two columns named {col.name!r} (the values and "
                "a coordinate); rename the DataArray first (da.rename('...'))"
            )
        arrow = _arrow_dtype(col)
        reason = _table_copy(col)
        nbytes = col.nbytes
        made = arrowkit.text_type(ctx, arrow) if _encoded(col) else arrow
        if made != arrow:
            arrow, nbytes = made, _text_bytes(nbytes, info.rows, made)
            reason += f", as {made}, the type {ctx.target} asks for"
        nulls = max(col.nulls, 0)
        if reason:
            copies.append(Copy(col.name, nbytes, reason))
            # A load may hand back memory xarray caches, and pyarrow may share a pandas
            # extension array's data: not certainly new memory.
            if d.LAZY not in col.flags and not any(f.startswith(d.EXTENSION) for f in col.flags):
                full += 1
        elif nulls:
            # pyarrow shares the values and builds a validity bitmap for the NaT.
            why = f"{nulls} NaT become nulls: a validity bitmap is built (the values stay shared)"
            copies.append(Copy(col.name, info.rows // 8 + 1, why))
        flags = frozenset({Flag.INDEX}) if Flag.INDEX in col.flags else frozenset()
        columns.append(Column(col.name, arrow, nbytes, nulls, 1, flags))
    out = DataInfo(info.kind, tuple(columns), rows=info.rows)
    if info.kind == Kind.COLUMN:
        why = "the values, raveled in C order, as one Arrow column"
    else:
        why = "the long table: one row per element, then dims and coords as columns"
    return Estimate(out, tuple(copies), why=why, copies_all=bool(columns) and full == len(columns))


def _encoded(col: Column) -> bool:
    """Whether the long table's column ``col`` is text encoded anew from Python objects or
    numpy's fixed-width text (not a type kept in the encoding, nor a pandas extension
    array's), which pyarrow can make the text type the target keeps."""
    if any(f.startswith((d.ARROW, d.EXTENSION)) for f in col.flags):
        return False
    return col.dtype in ("numpy_str", "numpy_bytes") or any(
        f.startswith(d.OBJECT) for f in col.flags
    )


def _text_bytes(nbytes: int, rows: int, made: str) -> int:
    """The size of a text column of type ``made`` whose plain type's size is estimated
    ``nbytes`` (4 bytes of offset a row, and the characters): 8 bytes of offset a row for
    the large types; 16 bytes a row for views, and the characters of values longer than
    12 (judged by their mean), which the views point to."""
    if rows <= 0 or nbytes < 0:
        return nbytes
    chars = max(nbytes - 4 * rows, 0)
    if made.endswith("_view"):
        return 16 * rows + (chars if chars > 12 * rows else 0)
    return 8 * rows + chars if made.startswith("large_") else nbytes


def _flat(entry: Entry, lay: Layout, ctx: Context | None = None) -> Any:
    """The long table's column of ``entry`` as an Arrow array; text encoded anew as the
    type the conversion's target keeps (``ctx``: :func:`arrowkit.text_type`), as the
    estimate says (:func:`_encoded`)."""
    pa, np = arrowkit.pa_module(), d.np_module()
    if entry.var is None:
        return pa.array(d.positions(entry, lay))
    var = entry.var
    held = d.backing(var)
    vdims = tuple(var.dims)
    if held == "extension":
        arr = pa.array(var._data.array)
        if vdims != lay.dims:  # 1-D: repeat it over the other dimensions
            index = d.spread_view(np.arange(len(arr)), vdims, lay).ravel()
            arr = arr.take(pa.array(index))
        return arr
    if held == "numpy":
        values = var._data
    elif held == "index":
        values = np.array(var.values, copy=True)
    else:
        values = np.asarray(var.values)
    flat = d.spread_view(values, vdims, lay).ravel()
    kept = var.encoding.get(d.ARROW_TYPE)
    if d.restorable(values, kept):
        restored = _restore(pa, flat, kept)
        if restored is not None:
            return restored
    if flat.dtype.kind == "O":
        text = d.object_type(values)
        try:
            if (made := arrowkit.text_type(ctx, text)) != text:
                return pa.array(flat, type=getattr(pa, made)(), from_pandas=True)
            declared = _declared().get(text)
            return pa.array(flat, type=declared() if declared else None, from_pandas=True)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            present = [
                v
                for v in flat.tolist()
                if v is not None and not (isinstance(v, float) and math.isnan(v))
            ]
            what = f"xarray variable {entry.name!r}"
            explained = mixed_objects_error(what, present, exc, "for example da.astype(str)")
            if explained is None:
                raise
            raise explained from exc
    plain = {"U": "string", "S": "binary"}.get(flat.dtype.kind, "")
    if (made := arrowkit.text_type(ctx, plain)) != plain:
        return pa.array(flat, type=getattr(pa, made)())
    return pa.array(flat)


def _restore(pa: Any, flat: Any, kept: Any) -> Any:
    """``flat`` as the Arrow type the way in kept, or None where its values no longer fit
    it (then pyarrow infers the type)."""
    if flat.dtype.kind == "M":
        return _attempt(pa, lambda: pa.array(flat).cast(kept))
    return _build(pa, flat, kept)


def _build(pa: Any, flat: Any, typ: Any) -> Any:
    """An Arrow array of ``typ`` from the Python objects ``flat``, or None. An extension
    type whose Python values its storage does not take (bool8's bools) is cast to, or
    wrapped around its storage; where pyarrow cannot build ``typ`` itself (an older
    pyarrow and a view type), the plain type :func:`buildable` names. NaN stands for
    null at the top level of a flat type (xarray writes NaN for the None of a str object
    array); inside a list or struct it is a value."""
    storage = typ.storage_type if isinstance(typ, pa.BaseExtensionType) else typ
    nan_is_null = not pa.types.is_nested(storage)
    out = _attempt(pa, lambda: pa.array(flat, type=typ, from_pandas=nan_is_null))
    if out is not None or not isinstance(typ, pa.BaseExtensionType):
        if out is None and (plain := buildable(pa, typ)) is not None and plain != typ:
            out = _attempt(pa, lambda: pa.array(flat, type=plain, from_pandas=nan_is_null))
        return out
    out = _attempt(pa, lambda: pa.array(flat).cast(typ))
    if out is not None:
        return out
    inner = _build(pa, flat, storage)
    if inner is None:
        return None
    return _attempt(pa, lambda: pa.ExtensionArray.from_storage(typ, inner))


def _attempt(pa: Any, make: Callable[[], Any]) -> Any:
    try:
        return make()
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return None


def _declared() -> dict[str, Any]:
    pa = arrowkit.pa_module()
    return {
        "string": pa.string,
        "binary": pa.binary,
        "bool": pa.bool_,
        "int64": pa.int64,
        "float64": pa.float64,
        "null": pa.null,
    }


def table_bind(ctx: Context) -> Any:
    """:func:`to_table` for the hot path. Data without coordinates along one dimension
    whose variables are 1-D numpy numbers or booleans (what the long table then is: one
    column per variable, no labels) goes straight from the variables' slots to
    ``pa.array`` (4 us for a DataArray, against 9 us through :func:`layout`); anything
    else as :func:`to_table` takes it."""
    pa, xr, ndarray = arrowkit.pa_module(), d.xr_module(), d.np_module().ndarray
    data_array, dataset = xr.DataArray, xr.Dataset
    array, from_arrays = pa.array, pa.Table.from_arrays
    column = ctx.info.kind == Kind.COLUMN

    def plain(var: Any) -> Any:
        held = var._data
        if type(held) is ndarray and held.ndim == 1 and held.dtype.kind in "biuf":
            return held
        return None

    def run(value: Any) -> Any:
        cls = type(value)
        if cls is data_array and not value._coords:
            held = plain(value._variable)
            if held is not None:
                arr = array(held.ravel())
                return arr if column else from_arrays([arr], names=[d.value_name(value)])
        elif cls is dataset and not column and not value._coord_names and len(value._dims) == 1:
            variables = value._variables
            arrays = []
            for var in variables.values():
                held = plain(var)
                if held is None:
                    break
                arrays.append(array(held.ravel()))
            else:
                if arrays:
                    return from_arrays(arrays, names=[str(k) for k in variables])
        return to_table(value, ctx)

    return run


def to_table(value: Any, ctx: Context) -> Any:
    pa = arrowkit.pa_module()
    lay = d.layout(value)
    arrays = [_flat(e, lay, ctx) for e in lay.entries]
    if ctx.info.kind == Kind.COLUMN:
        return arrays[0]
    names = [e.name for e in lay.entries]
    if not arrays:
        return pa.table({})
    return pa.Table.from_arrays(arrays, names=names)
