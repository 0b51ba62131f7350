"""pandas' own construction of a Series, called the way ``pd.Series`` ends it, for the
hub's bound runs.

``pd.Series(array, copy=False)`` of a plain 1-D numpy array of numbers spends most of its
9-10 us on Python that decides what to do with its arguments (a dict? an Index? a
manager? which dtype?); for such an array it then makes a default index, leaves the array
as it is (``sanitize_array``), wraps it in a block manager (``SingleBlockManager.from_array``)
and the manager in a Series. A bound run has checked the array already (its plan, and the
route key that finds it again), so it makes those last calls alone: 4-5 us, the index
included (a RangeIndex of its own for each result: an index's name can be set in place,
so results share none).

The maker is checked once, on a small array of each dtype, against what ``pd.Series``
makes (values, dtype, index, name, shared memory): a pandas whose internals differ or are
missing gets ``pd.Series`` back, unchanged.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

from interchange_hub._c.ndarray import ndarray_address
from interchange_hub._core.deps import require
from interchange_hub._core.dtypes import TENSOR_DTYPES

if TYPE_CHECKING:
    from collections.abc import Callable

# The numpy dtypes pd.Series keeps as they are (numbers and booleans, native byte order):
# the tensor dtypes but float16, which pandas supports only in part (left to pd.Series).
_KEPT_DTYPES = frozenset(TENSOR_DTYPES) - {"float16"}


@lru_cache(maxsize=16)
def numpy_series(dtype: str) -> Callable[..., Any]:
    """``pd.Series(array, name=name, copy=False)`` of a 1-D numpy array of ``dtype`` (a
    numpy dtype's name), made by the calls ``pd.Series`` ends in, where the array is a
    plain ndarray of numpy's own ``np.dtype(dtype)``; anything else, and any other dtype,
    goes to ``pd.Series`` itself. ``name``: a string or None."""
    pd = require("pandas", "to make pandas objects")

    def public(value: Any, name: str | None = None) -> Any:
        return pd.Series(value, name=name, copy=False)

    if dtype not in _KEPT_DTYPES:
        return public
    try:
        np = require("numpy")
        from pandas.core.internals import SingleBlockManager  # (pandas' own)

        from_array, from_mgr, index = (
            SingleBlockManager.from_array,
            pd.Series._from_mgr,
            pd.RangeIndex,
        )
        ndarray, plain = np.ndarray, np.dtype(dtype)
        setattr_ = object.__setattr__

        def native(value: Any, name: str | None = None) -> Any:
            manager = from_array(value, index(len(value)))
            series = from_mgr(manager, manager.axes)
            setattr_(series, "_name", name)  # (as pandas' own _constructor_from_mgr)
            return series

        probe = np.arange(3).astype(dtype)
        made, made_public = native(probe, "p"), public(probe, "p")
        same = type(made) is type(made_public) and made.equals(made_public)
        same = same and made.dtype == made_public.dtype and made.name == made_public.name
        same = same and type(made.index) is type(made_public.index)
        same = same and made.index.equals(made_public.index)
        same = same and ndarray_address(made.to_numpy()) == ndarray_address(probe)
    except Exception:  # noqa: BLE001 - another pandas: its public call
        same = False
    if not same:
        return public

    def series(value: Any, name: str | None = None) -> Any:
        if type(value) is ndarray and value.dtype is plain and value.ndim == 1:
            return native(value, name)
        return public(value, name)

    return series


@lru_cache(maxsize=16)
def _frame_native(dtype: str) -> Callable[[Any], Callable[[Any], Any]] | None:
    """``build(columns)``: the maker of a DataFrame of a 2-D numpy array of ``dtype`` by
    the calls ``pd.DataFrame`` ends in (one block of the array's transpose, a block
    manager over ``columns`` and a RangeIndex of its own, ``DataFrame._from_mgr``),
    checked once, on two columns in both orders, against ``pd.DataFrame`` (values,
    columns, index, dtypes, one block, its address and strides); None for another dtype
    or a pandas where they differ."""
    if dtype not in _KEPT_DTYPES:
        return None
    try:
        pd, np = require("pandas", "to make pandas objects"), require("numpy")
        from pandas._libs.internals import BlockPlacement  # (pandas' own)
        from pandas.core.internals import BlockManager
        from pandas.core.internals.blocks import new_block

        from_mgr, index = pd.DataFrame._from_mgr, pd.RangeIndex

        def build(columns: Any) -> Callable[[Any], Any]:
            placement = BlockPlacement(slice(0, len(columns)))

            def native(value: Any) -> Any:
                block = new_block(value.T, placement=placement, ndim=2)
                axes = [columns, index(len(value))]
                manager = BlockManager((block,), axes, verify_integrity=False)
                return from_mgr(manager, manager.axes)

            return native

        names = pd.Index(["a", "b"])
        native = build(names)
        for order in ("C", "F"):
            probe = np.arange(6).astype(dtype).reshape((3, 2), order=order)
            made, public = native(probe), pd.DataFrame(probe, columns=names, copy=False)
            same = type(made) is type(public) and made.equals(public)
            same = same and made.columns.equals(public.columns)
            same = same and type(made.index) is type(public.index)
            same = same and made.index.equals(public.index)
            same = same and list(made.dtypes) == list(public.dtypes)
            blocks, public_blocks = made._mgr.blocks, public._mgr.blocks
            same = same and len(blocks) == len(public_blocks) == 1
            same = same and ndarray_address(blocks[0].values) == ndarray_address(probe)
            same = same and blocks[0].values.strides == public_blocks[0].values.strides
            if not same:
                return None
    except Exception:  # noqa: BLE001 - another pandas: its public call
        return None
    return build


def numpy_frame(dtype: str, columns: Any) -> Callable[[Any], Any]:
    """``pd.DataFrame(array, columns=columns, copy=False)`` of a 2-D numpy array of
    ``dtype`` and ``len(columns)`` columns (``columns``: a pandas Index), made by the
    calls ``pd.DataFrame`` ends in for it (:func:`_frame_native`). 4 x 1,000 float64:
    8.5 us by ``pd.DataFrame``, 4.5. Where the array is no plain ndarray of numpy's own
    ``np.dtype(dtype)`` and that width, and for any other dtype or pandas,
    ``pd.DataFrame`` itself."""
    pd = require("pandas", "to make pandas objects")
    width = len(columns)

    def public(value: Any) -> Any:
        return pd.DataFrame(value, columns=columns, copy=False)

    build = _frame_native(dtype) if width else None
    if build is None:
        return public
    native = build(columns)
    ndarray, plain = require("numpy").ndarray, require("numpy").dtype(dtype)

    def frame(value: Any) -> Any:
        if (
            type(value) is ndarray
            and value.dtype is plain
            and value.ndim == 2
            and value.shape[1] == width
        ):
            return native(value)
        return public(value)

    return frame
